"""One rendering layer: every door writes a number the same way (receval.numbers) and the HTML
pages share one escaping path and one Content-Security-Policy (receval.report.page).

The data: three users, relevance threshold 1. u1 and u3 have one relevant item each, u2 none.
P@3 = (1/3 + 0 + 1/3) / 3 = 2/9, written 0.2222 (4 decimals) at every door; R@1 is undefined
for u2 and empty="nan" leaves the mean undefined, written n/a at every door (machine outputs:
JSON null, an empty CSV cell). Expected strings are written by hand from these numbers.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main

TRUTH = pd.DataFrame({"user": ["u1", "u2", "u3"], "item": ["a", "a", "a"],
                      "rating": [1.0, 0.0, 3.0]})
# u1: a (hit) then c; u2: a (rated 0: not relevant) then c; u3: b then a (hit at rank 2)
PREDS = pd.DataFrame({"user": ["u1", "u1", "u2", "u2", "u3", "u3"],
                      "item": ["a", "c", "a", "c", "b", "a"],
                      "score": [3.0, 1.0, 3.0, 1.0, 3.0, 1.0]})
# b: u1 misses at rank 1, so R@1 is 1 for a and 0 for b on u1 (u3: 0 for both), u2 undefined
OTHER = PREDS.assign(item=["c", "a", "a", "c", "b", "a"])
OPTIONS = {"relevance_threshold": 1, "empty": "nan"}
P3 = "0.2222"  # 2/9
ROW = re.compile(r"R@1\W+n/a")  # the R@1 row: its value n/a, nothing else between


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the undefined-value warning says the same
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def result() -> receval.Result:
    return _quiet(receval.evaluate, TRUTH, PREDS, ["P@3", "R@1"], **OPTIONS)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("rendering")
    paths = {"truth": folder / "truth.csv", "a": folder / "a.csv", "b": folder / "b.csv"}
    TRUTH.to_csv(paths["truth"], index=False)
    PREDS.to_csv(paths["a"], index=False)
    OTHER.to_csv(paths["b"], index=False)
    return paths


def _cli(*args: str) -> str:
    out = _quiet(CliRunner().invoke, main, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.stdout


def test_the_numbers_are_what_the_data_says(result: receval.Result) -> None:
    assert result.summary["P@3"] == pytest.approx(2 / 9, abs=1e-15)
    assert result.summary["R@1"] != result.summary["R@1"]  # NaN


# --- evaluate: terminal table, Markdown, LaTeX, repr, notebook, report -----------------------

@pytest.mark.parametrize("fmt", ["table", "markdown", "latex"])
def test_evaluate_on_the_command_line_writes_nan_as_n_a(files: dict[str, Path],
                                                         fmt: str) -> None:
    text = _cli("evaluate", "-t", str(files["truth"]), "-p", str(files["a"]), "-m", "P@3",
                "-m", "R@1", "--relevance-threshold", "1", "--empty", "nan", "-f", fmt)
    assert ROW.search(text), text
    assert P3 in text and "0.222222" not in text
    assert not re.search(r"(?<!')\bnan\b(?!')", text.replace("empty=nan", ""))  # options


def test_evaluate_in_python_writes_nan_as_n_a(result: receval.Result) -> None:
    from receval.report.tables import render

    for text in (repr(result), render({"m": result}, "markdown"),
                 render({"m": result}, "latex")):
        assert ROW.search(text), text
        assert P3 in text and "0.222222" not in text


def test_notebook_view_writes_the_value_as_every_door(result: receval.Result) -> None:
    from receval.report.notebook import result_html

    html = result_html(result)
    assert f"<td>P@3</td><td>{P3}</td>" in html
    assert "<td>R@1</td><td>n/a</td>" in html
    per_user = html.split("per user (first", 1)[1]  # u2's R@1 is undefined
    assert "<td>u2</td><td>0.0000</td><td>n/a</td>" in per_user and ">nan<" not in per_user


def test_report_html_writes_nan_as_n_a(result: receval.Result) -> None:
    from receval.report.html import render_report

    other = _quiet(receval.evaluate, TRUTH, OTHER, ["P@3", "R@1"], **OPTIONS)
    page = _quiet(render_report, {"a": result, "b": other})
    summary = page.split('id="summary"', 1)[-1].split("</table>", 1)[0] if 'id="summary"' in \
        page else page
    assert re.search(r"<td[^>]*>R@1</td>\s*<td[^>]*>\s*n/a", summary), summary[:2000]
    assert P3 in page
    assert not re.search(r'class="num">\s*nan', page)  # ("nan" is an option's value)


def test_machine_outputs_keep_every_bit_and_write_nan_as_null_or_empty(
        files: dict[str, Path]) -> None:
    args = ["evaluate", "-t", str(files["truth"]), "-p", str(files["a"]), "-m", "P@3", "-m",
            "R@1", "--relevance-threshold", "1", "--empty", "nan"]
    data = json.loads(_cli(*args, "-f", "json"))
    assert data["summary"] == {"P@3": 2 / 9, "R@1": None}
    lines = _cli(*args, "-f", "csv").splitlines()
    assert lines[1:] == [f"P@3,{2 / 9!r}", "R@1,"]


# --- compare ---------------------------------------------------------------------------------

def _comparison() -> receval.Comparison:
    # R@1 is defined on u1 and u3 only: two pairs, differences -1 and 0
    return _quiet(receval.compare, TRUTH, {"a": PREDS, "b": OTHER}, ["P@3"], baseline="a",
                  n_resamples=50, **OPTIONS)


def test_compare_writes_a_missing_p_value_as_n_a() -> None:
    truth = TRUTH.assign(rating=[3.0, 0.0, 0.0])  # only u1 relevant: one pair, no t-test
    c = _quiet(receval.compare, truth, {"a": PREDS, "b": OTHER}, ["R@1"], baseline="a",
               n_resamples=50, **OPTIONS)
    assert c.table["p_value"].isna().all() and c.table["effect_size"].isna().all()
    for text in (c.to_markdown(), c.to_latex()):
        row = text.splitlines()[2 if text.startswith("|") else 4]
        # mean 0, baseline 1, delta -1, interval, p, p adjusted, d_z: n/a, P(better) 0
        assert "| n/a | n/a | n/a | 0.000 |" in row or "& n/a & n/a & n/a & 0.000 &" in row, row
    data = json.loads(c.to_json())["rows"][0]
    assert data["p_value"] is None and data["effect_size"] is None
    assert c.to_csv().splitlines()[1] == "b,a,R@1,0.0,1.0,-1.0,-1.0,-1.0,,,,0.0,0,0,1,1"


def test_compare_on_the_command_line_writes_n_a(tmp_path: Path) -> None:
    truth = tmp_path / "truth.csv"
    TRUTH.assign(rating=[3.0, 0.0, 0.0]).to_csv(truth, index=False)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    PREDS.to_csv(a, index=False)
    OTHER.to_csv(b, index=False)
    text = _cli("compare", "-t", str(truth), "-p", str(a), "-p", str(b), "-m", "R@1",
                "--relevance-threshold", "1", "--empty", "nan", "--resamples", "50")
    row = next(line for line in text.splitlines() if "R@1" in line)
    assert row.count("n/a") == 3, text  # p, p adjusted, d_z


def test_compare_means_are_written_as_evaluate_writes_them() -> None:
    c = _comparison()
    assert c.to_markdown().splitlines()[2].split(" | ")[4] == P3  # the baseline's mean


# --- monitor ---------------------------------------------------------------------------------

DAY0 = pd.Timestamp("2024-01-01", tz="UTC")


def _monitor() -> receval.Monitor:
    # week 1: the three users' lists, judged as the offline truth (u1 and u3 relevant);
    # week 2: one list, never judged: no evaluated list, so the window's value is n/a
    imp = PREDS.assign(rank=[1, 2, 1, 2, 1, 2], served_at=DAY0)
    imp = pd.concat([imp, pd.DataFrame({"user": ["u9"], "item": ["a"], "score": [1.0],
                                        "rank": [1], "served_at": [DAY0 + pd.Timedelta("8D")]})])
    fb = pd.DataFrame({"user": ["u1", "u2", "u3"], "item": ["a", "a", "a"],
                       "value": [1.0, 0.0, 3.0], "at": DAY0 + pd.Timedelta("1h")})
    return _quiet(receval.monitor, imp.drop(columns="score"), fb, ["P@3"], window="7D",
                  attribution="1D", relevance_threshold=1, n_resamples=0)


def test_monitor_page_writes_values_as_every_door_and_nan_as_n_a() -> None:
    from receval.monitor.html import render_monitor

    m = _monitor()
    assert m.windows["P@3"].iloc[0] == pytest.approx(2 / 9, abs=1e-15)
    assert m.windows["P@3"].isna().iloc[1]
    page = render_monitor(m)
    assert P3 in page and "n/a" in page and not re.search(r">\s*nan\s*<", page)


def test_monitor_on_the_command_line_writes_values_as_every_door(tmp_path: Path) -> None:
    m = _monitor()
    imp = tmp_path / "imp.parquet"
    fb = tmp_path / "fb.parquet"
    served = PREDS.assign(rank=[1, 2, 1, 2, 1, 2], served_at=DAY0).drop(columns="score")
    served = pd.concat([served, pd.DataFrame({"user": ["u9"], "item": ["a"], "rank": [1],
                                              "served_at": [DAY0 + pd.Timedelta("8D")]})])
    served.to_parquet(imp)
    pd.DataFrame({"user": ["u1", "u2", "u3"], "item": ["a", "a", "a"],
                  "value": [1.0, 0.0, 3.0], "at": DAY0 + pd.Timedelta("1h")}).to_parquet(fb)
    text = _cli("monitor", "-i", str(imp), "--feedback", str(fb), "-m", "P@3", "--window",
                "7D", "--attribution", "1D", "--relevance-threshold", "1", "--resamples", "0")
    assert len(m.windows) == 2
    assert P3 in text and "n/a" in text and not re.search(r"\bnan\b", text)


def test_monitor_writes_counts_as_every_door(tmp_path: Path) -> None:
    """1,000 served lists, each judged relevant: the evaluated count reads 1,000 in the
    monitor's table and page, as the report and evaluate's groups write counts."""
    from receval.monitor.html import render_monitor

    users = [f"u{i}" for i in range(1000)]
    imp = pd.DataFrame({"user": users, "item": "a", "rank": 1, "served_at": DAY0})
    fb = pd.DataFrame({"user": users, "item": "a", "value": 1.0,
                       "at": DAY0 + pd.Timedelta("1h")})
    m = _quiet(receval.monitor, imp, fb, ["P@1"], window="7D", attribution="1D",
               n_resamples=0)
    assert m.windows["users_evaluated"].tolist() == [1000]
    assert "<td>1.0000</td><td>n/a</td><td>1,000</td>" in render_monitor(m)
    imp.to_parquet(tmp_path / "imp.parquet")
    fb.to_parquet(tmp_path / "fb.parquet")
    text = _cli("monitor", "-i", str(tmp_path / "imp.parquet"), "--feedback",
                str(tmp_path / "fb.parquet"), "-m", "P@1", "--window", "7D", "--attribution",
                "1D", "--resamples", "0")
    row = next(line for line in text.splitlines() if "2024-01-01" in line)
    assert re.search(r"1\.0000\W+n/a\W+1,000\W+0\W+0\b", row), text
    strata = _quiet(receval.evaluate, {"user": users, "item": ["a"] * 1000},
                    {"user": users, "item": ["a"] * 1000, "score": [1.0] * 1000}, ["P@1"],
                    strata=dict.fromkeys(users, "all"))
    from rich.console import Console

    from receval.report.tables import strata_table

    console = Console(width=100, record=True)
    for table in strata_table(strata.strata):
        console.print(table)
    assert "1,000" in console.export_text()


# --- explain, gates --------------------------------------------------------------------------

def test_a_gate_writes_an_undefined_value_as_n_a() -> None:
    gate = _quiet(receval.check, {"truth": TRUTH, "predictions": PREDS,
                                  "checks": ["P@3 >= 0.1", "R@1 >= 0.5"],
                                  "options": OPTIONS, "resamples": 20})
    (p3, r1) = gate.rows()
    assert p3[2] == P3
    assert r1[:3] == ["FAIL", "R@1 >= 0.5", "n/a"]
    assert "R@1 = n/a, needs >= 0.5" in gate.outcomes[1].reason


def test_explain_writes_values_as_every_door() -> None:
    from receval.explain import Explanation, OptionDifference, format_explain

    # an option whose effect could not be computed (NaN) and values of 2/9 under both
    e = Explanation("x", "y", [OptionDifference("ties", "stable", "average", ())],
                    metrics=["P@3"], values_a={"P@3": 2 / 9}, values_b={"P@3": 2 / 9},
                    effects={"ties": {"P@3": float("nan")}})
    lines = format_explain(e).splitlines()
    assert lines[2].split()[-1] == "n/a"  # the effect of ties
    assert lines[3].split()[-1] == P3 and lines[4].split()[-1] == P3  # = x, = y
    assert str(e) == format_explain(e)


# --- one escaping path, one Content-Security-Policy -------------------------------------------

def test_the_report_and_the_monitor_page_share_one_policy_and_one_escaping(
        result: receval.Result) -> None:
    from receval.monitor.html import render_monitor
    from receval.report.html import render_report
    from receval.report.page import CSP

    meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    report = _quiet(render_report, {"<script>x</script>": result})
    monitor = render_monitor(_monitor(), title="<script>x</script>")
    for page in (report, monitor):
        assert page.count("Content-Security-Policy") == 1 and meta in page
        assert "&lt;script&gt;x&lt;/script&gt;" in page and "<script>" not in page
    assert "script-src" not in CSP and "default-src 'none'" in CSP


def test_offpolicy_page_writes_numbers_by_the_one_rule() -> None:
    """The off-policy page (receval offpolicy --html) writes values, intervals, shares and counts
    as every other door does, and a missing interval as n/a (it wrote ``.4g`` and ``nan``)."""
    import pandas as pd

    from receval.report.offpolicy import section_context

    table = pd.DataFrame({"target": ["t"], "estimator": ["ips"], "value": [2 / 9],
                          "ci_low": [float("nan")], "ci_high": [0.3], "ess": [1234.4],
                          "max_weight": [3.0], "max_weight_share": [0.125],
                          "support_missing": [0], "normal_low": [0.1], "normal_high": [0.35],
                          "n_requests": [1000], "n_rows": [1000]})
    row = section_context(table)["targets"][0]["rows"][0]
    assert (row["value"], row["ci"], row["normal"]) == ("0.2222", "n/a", "[0.1000, 0.3500]")
    assert (row["ess"], row["share"]) == ("1,234", "12.5%")
