"""Words and numbers in outputs (issue 33, item 6), each checked against the text a reader
should see."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.exceptions import ReceValError
from receval.monitor.html import _duration
from receval.monitor.windows import parse_attribution
from receval.numbers import number


def _logs(tmp_path: Path) -> list[str]:
    pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 1, 3], "rank": [1, 2, 1, 2],
                  "served_at": ["2024-01-01"] * 4}).to_csv(tmp_path / "imp.csv", index=False)
    pd.DataFrame({"user": [1, 2], "item": [1, 3], "value": [1.0, 1.0],
                  "at": ["2024-01-02"] * 2}).to_csv(tmp_path / "fb.csv", index=False)
    return ["monitor", "-i", str(tmp_path / "imp.csv"), "--feedback", str(tmp_path / "fb.csv"),
            "-m", "P@1", "--resamples", "0", "--silence", "empty-reference"]


@pytest.mark.parametrize("lateness", ["0s", "0D", "0", "0h"])
def test_a_zero_lateness_is_accepted_however_written(tmp_path: Path, lateness: str) -> None:
    out = CliRunner().invoke(main, [*_logs(tmp_path), "--lateness", lateness])
    assert out.exit_code == 0, out.output
    assert parse_attribution(lateness, "lateness", zero=True) == 0


def test_a_negative_lateness_is_refused() -> None:
    with pytest.raises(ReceValError, match="lateness must be zero or more, got '-1D'"):
        parse_attribution("-1D", "lateness", zero=True)


def test_durations_on_the_monitor_page_are_written_as_flags() -> None:
    assert [_duration(v * 10**9) for v in (0, 604_800, 43_200, 5)] == ["0s", "7D", "12h", "5s"]


def test_the_disparity_help_names_no_flag_evaluate_lacks() -> None:
    out = CliRunner().invoke(main, ["evaluate", "--help"], terminal_width=200)
    text = " ".join(out.output.split())
    assert "permuted 10,000 times" in text and "permuted --resamples" not in text


@pytest.mark.parametrize(("name", "guess"), [("NDCG10", "'nDCG@10'"), ("p10", "'P@10'"),
                                             ("ndcg_5", "'nDCG@5'")])
def test_a_cutoff_without_its_at_sign_suggests_the_canonical_name(name: str,
                                                                  guess: str) -> None:
    with pytest.raises(ReceValError, match=f"did you mean {guess}"):
        receval.parse_metric(name)


def test_one_comparison_is_singular() -> None:
    from receval.report.significance import significance

    truth = {"user": [1, 2, 3], "item": [1, 2, 3]}
    a = receval.evaluate(truth, {"user": [1, 2, 3], "item": [1, 2, 9], "score": [1.0] * 3},
                         ["P@1"])
    b = receval.evaluate(truth, {"user": [1, 2, 3], "item": [1, 9, 9], "score": [1.0] * 3},
                         ["P@1"])
    note = significance({"a": a, "b": b}, ["P@1"]).footnote()
    assert "across 1 comparison," in note


def test_an_effective_size_is_rounded_and_a_small_share_keeps_a_digit() -> None:
    assert number(746.999, "size") == "747.0" and number(12345.04, "size") == "12,345.0"
    assert number(0.002, "share") == "0.2%"


def test_counts_are_thousands_separated_in_the_counts_line() -> None:
    from receval.report.tables import counts_line

    users = list(range(1500))
    r = receval.evaluate({"user": users, "item": [1] * 1500},
                         {"user": users, "item": [1] * 1500, "score": [1.0] * 1500}, ["P@1"])
    line = counts_line(r)
    assert "users evaluated 1,500 (in truth 1,500" in line and "rows: truth 1,500" in line


def test_the_items_file_names_its_own_columns(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("user,item\n1,1\n2,3\n")
    (tmp_path / "p.csv").write_text("user,item,score\n1,1,0.9\n2,3,0.5\n")
    (tmp_path / "movies.csv").write_text("movieId,name,genres\n1,Heat,Action\n3,Alien,SciFi\n")
    base = ["evaluate", "-t", str(tmp_path / "t.csv"), "-p", str(tmp_path / "p.csv"),
            "--report", str(tmp_path / "r.html"), "--items", str(tmp_path / "movies.csv")]
    bad = CliRunner().invoke(main, base)
    assert bad.exit_code == 2 and "pass --items-columns item=NAME" in bad.output
    assert "--item-col" not in bad.output  # that flag renames the column in every file
    out = CliRunner().invoke(main, [*base, "--items-columns", "item=movieId,title=name"])
    assert out.exit_code == 0, out.output
    page = (tmp_path / "r.html").read_text()
    assert "Heat" in page and "Alien" in page and "Action" not in page
