"""Gates (issue 19): ``receval check GATE.toml`` and :func:`receval.check`. The data are built so
every number is known by hand: 11 users with 10 relevant items each; the new model puts
``u % 5 + 1`` of them in its top 10 (user u10: none), the old one a relevant item more for
every user, so the paired difference of P@10 is -0.1 for every user."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.gates import parse_check

USERS = [f"u{u}" for u in range(11)]


def hits(user: int) -> int:
    return 0 if user == 10 else user % 5 + 1


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    truth, new, old = ["user,item"], ["user,item,score"], ["user,item,score"]
    for u, name in enumerate(USERS):
        truth += [f"{name},t{u}_{j}" for j in range(10)]
        for rows, n in ((new, hits(u)), (old, hits(u) + 1)):
            ranked = [f"t{u}_{j}" for j in range(n)] + [f"x{u}_{j}" for j in range(10 - n)]
            rows += [f"{name},{item},{1 - r / 100:.2f}" for r, item in enumerate(ranked)]
    (tmp_path / "test.csv").write_text("\n".join(truth) + "\n")
    (tmp_path / "new.csv").write_text("\n".join(new) + "\n")
    (tmp_path / "old.csv").write_text("\n".join(old) + "\n")
    (tmp_path / "groups.csv").write_text(
        "user,group\n" + "".join(f"u{u},{'young' if u < 5 else 'old'}\n" for u in range(11)))
    # one truth row (u0, t0_0) is also a training row: leakage
    (tmp_path / "train.csv").write_text("user,item\nu0,t0_0\nu1,z1\nu2,z2\n")
    return tmp_path


def gate(folder: Path, checks: list[str], extra: str = "", name: str = "gate.toml") -> Path:
    body = "\n".join(f'  "{c}",' for c in checks)
    path = folder / name
    path.write_text(textwrap.dedent(f"""\
        truth = "test.csv"
        predictions = "new.csv"
        baseline = "old.csv"
        resamples = 2000
        {extra}
        checks = [
        """) + body + "\n]\n")
    return path


def run(*args: str) -> Any:
    return CliRunner().invoke(main, ["check", *args])


# --- the numbers, by hand ---------------------------------------------------------------------


def test_absolute_values_and_counts_by_hand(folder: Path) -> None:
    g = receval.check(gate(folder, ["P@10 >= 0.27", "P@10 >= 0.28", "P@10 < 0.3",
                                    "users.without_match == 1", "users.evaluated >= 12"]))
    # P@10 of the new model: (1+2+3+4+5) * 2 hits over 11 users x 10 = 30/110
    assert [o.value for o in g.outcomes[:3]] == [pytest.approx(30 / 110)] * 3
    assert [o.passed for o in g.outcomes] == [True, False, True, True, False]
    assert g.outcomes[3].value == 1 and g.outcomes[4].value == 11
    assert not g.passed and [o.name for o in g.failures] == ["P@10 >= 0.28",
                                                              "users.evaluated >= 12"]


def test_baseline_checks_read_the_interval_of_a_constant_difference(folder: Path) -> None:
    # every user: d = new - old = -0.1, so the interval is [-0.1, -0.1]
    g = receval.check(gate(folder, ["P@10 >= baseline - 0.05", "P@10 >= baseline - 0.15",
                                    "P@10 <= baseline - 0.05", "P@10 < baseline - 0.15",
                                    "P@10 > baseline"]))
    for o in g.outcomes:
        assert (o.value, o.low, o.high) == pytest.approx((-0.1, -0.1, -0.1))
    assert [o.passed for o in g.outcomes] == [False, True, True, False, False]
    assert g.comparison is not None and g.comparison.options["alpha"] == pytest.approx(0.05)


def test_a_baseline_check_needs_the_lower_end_not_the_point(folder: Path) -> None:
    # P@1: both models rank a relevant item first for u0..u9; for u10 only the old one does:
    # d = -1 for u10, 0 otherwise
    comparison = receval.compare(str(folder / "test.csv"), {"new": str(folder / "new.csv"),
                                                            "old": str(folder / "old.csv")},
                                 ["P@1"], baseline="old", alpha=0.1, n_resamples=2000)
    row = comparison.table.iloc[0]
    assert row["delta"] == pytest.approx(-1 / 11)
    assert row["ci_low"] < row["delta"]
    between = -(row["ci_low"] + row["delta"]) / 2  # the point passes, the lower end does not
    text = f"P@1 >= baseline - {between:.6f}"
    g = receval.check(gate(folder, [text], "confidence = 0.9"))
    (o,) = g.outcomes
    assert (o.low, o.high) == (row["ci_low"], row["ci_high"])  # compare's interval, same seed
    assert not o.passed and "low end" in o.reason
    assert row["ci_low"] == pytest.approx(-3 / 11)  # u10 drawn 3 times or more: about 9%
    wider = receval.check(gate(folder, ["P@1 >= baseline - 0.28"], "confidence = 0.9"))
    assert wider.passed


def test_groups_and_each_group(folder: Path) -> None:
    g = receval.check(gate(folder, ["P@10[young] >= 0.3", "P@10[*] >= 0.26",
                                    "P@10[*] >= baseline - 0.05"], 'strata = "groups.csv"'))
    names = [o.name for o in g.outcomes]
    assert names == ["P@10[young] >= 0.3", "P@10[old] >= 0.26", "P@10[young] >= 0.26",
                     "P@10[old] >= baseline - 0.05", "P@10[young] >= baseline - 0.05"]
    # young: u0..u4 hit 1..5 of 10 -> 15/50; old: u5..u9 hit 1..5, u10 none -> 15/60
    values = [o.value for o in g.outcomes]
    assert values[:3] == pytest.approx([0.3, 0.25, 0.3])
    assert values[3:] == pytest.approx([-0.1, -0.1])
    assert [o.passed for o in g.outcomes] == [True, False, True, False, False]


def test_leakage_from_train(folder: Path) -> None:
    g = receval.check(gate(folder, ["train.truth_in_train == 0", "train.rows == 3"],
                           'train = "train.csv"'))
    assert [(o.value, o.passed) for o in g.outcomes] == [(1, False), (3, True)]


def test_a_dict_with_frames_gives_the_file_s_numbers(folder: Path) -> None:
    import pandas as pd

    checks = ["P@10 >= 0.27", "P@10 >= baseline - 0.15"]
    from_file = receval.check(gate(folder, checks))
    from_dict = receval.check({"truth": pd.read_csv(folder / "test.csv"),
                               "predictions": pd.read_csv(folder / "new.csv"),
                               "baseline": pd.read_csv(folder / "old.csv"),
                               "resamples": 2000, "checks": checks})
    assert [(o.value, o.low, o.high) for o in from_file.outcomes] == \
        [(o.value, o.low, o.high) for o in from_dict.outcomes]


# --- the command: exit codes, table, JUnit ----------------------------------------------------


def test_exit_0_when_all_hold_3_when_one_fails(folder: Path) -> None:
    ok = run(str(gate(folder, ["P@10 >= 0.27", "P@10 >= baseline - 0.15"])))
    assert ok.exit_code == 0, ok.output
    assert "2 check(s), 0 failed" in ok.stdout
    bad = run(str(gate(folder, ["P@10 >= 0.27", "P@10 >= baseline - 0.05"])))
    assert bad.exit_code == 3, bad.output
    assert "FAIL P@10 >= baseline - 0.05: difference -0.1000" in bad.stdout
    assert "2 check(s), 1 failed" in bad.stdout


def test_the_table_fits_80_columns(folder: Path) -> None:
    import subprocess
    import sys

    path = gate(folder, ["P@10[*] >= baseline - 0.05", "users.without_match == 0"],
                'strata = "groups.csv"')
    done = subprocess.run([sys.executable, "-c", "from receval.cli import main; main()",
                           "check", str(path)], capture_output=True, text=True,
                          env={**__import__("os").environ, "COLUMNS": "80", "TERM": "xterm",
                               "FORCE_COLOR": "0", "TTY_COMPATIBLE": "1",
                               "TTY_INTERACTIVE": "0"}, timeout=300)
    assert done.returncode == 3, done.stderr
    import re

    shown = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)  # the colours
    table = [line for line in shown.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 80, shown
    assert "P@10[old] >=" in shown and "[-0.1000, -0.1000]" in shown


def test_junit_read_by_junitparser(folder: Path) -> None:
    junitparser = pytest.importorskip("junitparser", reason="pip install junitparser "
                                                            "(the test extra)")
    xml = folder / "out" / "gate.xml"
    out = run(str(gate(folder, ["P@10 >= 0.27", "P@10 >= baseline - 0.05",
                                "users.without_match == 1"])), "--junit", str(xml))
    assert out.exit_code == 3, out.output
    suites = list(junitparser.JUnitXml.fromfile(str(xml)))
    assert len(suites) == 1
    suite = suites[0]
    assert (suite.name, suite.tests, suite.failures, suite.errors) == ("gate", 3, 1, 0)
    cases = {case.name: case for case in suite}
    assert list(cases) == ["P@10 >= 0.27", "P@10 >= baseline - 0.05",
                           "users.without_match == 1"]
    assert cases["P@10 >= 0.27"].is_passed
    (failure,) = cases["P@10 >= baseline - 0.05"].result
    assert isinstance(failure, junitparser.Failure)
    assert failure.message.startswith("difference -0.1000; its 95% interval's low end")
    assert "gate.toml line 8" in failure.text


def test_junit_elements_ci_systems_read(folder: Path) -> None:
    xml = folder / "gate.xml"
    xml.write_text("old")
    out = run(str(gate(folder, ["P@10 >= 0.27", "P@10 > 0.9"])), "--junit", str(xml))
    assert out.exit_code == 3
    root = ET.parse(xml).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    (suite,) = root.findall("testsuite")
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == \
        {"tests": "2", "failures": "1", "errors": "0", "skipped": "0"}
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == ["receval.gate"] * 2
    assert [len(c.findall("failure")) for c in cases] == [0, 1]
    assert cases[1].find("failure").get("type") == "CheckFailed"  # type: ignore[union-attr]


def test_check_logs_the_comparison(folder: Path) -> None:
    import json

    out = run(str(gate(folder, ["P@10 >= baseline - 0.15"])), "--log", "json", "--log-dir",
              str(folder / "log"))
    assert out.exit_code == 0, out.output
    metrics = json.loads((folder / "log" / "receval.json").read_text())["metrics"]
    assert metrics["new"]["p_at_10"] == pytest.approx(30 / 110)
    assert metrics["old"]["p_at_10"] == pytest.approx(41 / 110)
    assert metrics["comparison"]["new_vs_old"]["p_at_10"]["delta"] == pytest.approx(-0.1)


def test_bad_input_leaves_the_junit_file_alone(folder: Path) -> None:
    xml = folder / "gate.xml"
    xml.write_text("old")
    out = run(str(gate(folder, ["P@10 >= 0.27", "nDCG@10 => 0.1"])), "--junit", str(xml))
    assert out.exit_code == 2
    assert xml.read_text() == "old"


# --- every error: one line, exit 2, naming the line -------------------------------------------


@pytest.mark.parametrize(("checks", "extra", "message"), [
    (["nDCG@10 => 0.1"], "", "gate.toml line 7: cannot read the check 'nDCG@10 => 0.1'"),
    (["nDCG@10 >= basline - 0.01"], "", "gate.toml line 7: check 'nDCG@10 >= basline - 0.01': "
                                        "the bound 'basline - 0.01' is neither a number"),
    (["nDCG@10 == baseline"], "", "gate.toml line 7: check 'nDCG@10 == baseline': '==' "
                                  "against the baseline"),
    (["nDCG@x >= 0.1"], "", "gate.toml line 7: check 'nDCG@x >= 0.1': "),
    (["users.without_match >= baseline"], "", "a count is compared with a number"),
    (["users.without_match[a] == 0"], "", "counts are over every user; drop the [group]"),
    (["users.withut_match == 0"], "", "gate.toml line 7: check 'users.withut_match == 0': "
                                      "users has no 'withut_match'; it has evaluated,"),
    (["users == 0"], "", "check 'users == 0': "),
    (["train.rows == 0"], "", "counts has no 'train' (train = FILE adds the training audit)"),
    (["P@10[young] >= 0.1"], "", "names a group: set strata = FILE or a built-in name"),
    (["P@10[adult] >= 0.1"], 'strata = "groups.csv"', "no group 'adult' in strata "
                                                       "(groups: old, young)"),
    (["P@10 >= 0.1"], "confidence = 95", "gate.toml line 5: 'confidence' must be a number "
                                         "between 0 and 1, got 95"),
    (["P@10 >= 0.1"], "seed = -1", "gate.toml line 5: 'seed' must be an integer >= 0, got -1"),
    (["P@10 >= 0.1"], "threshold = 4", "gate.toml line 5: unknown key 'threshold'; a gate has"),
    (["P@10 >= 0.1"], 'strata = "nothere.csv"', "strata file 'nothere.csv' does not exist"),
    ([], "", "gate.toml line 6: 'checks' must be a non-empty list"),
])
def test_bad_gate_one_line_exit_2(folder: Path, checks: list[str], extra: str,
                                  message: str) -> None:
    out = run(str(gate(folder, checks, extra)))
    assert out.exit_code == 2, out.output
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert message in lines[0], lines[0]
    assert "Traceback" not in out.output


def test_other_bad_files_one_line(folder: Path) -> None:
    (folder / "broken.toml").write_text('truth = "test.csv"\nchecks = ["P@10 >= 0.1"\n')
    (folder / "options.toml").write_text('truth = "test.csv"\npredictions = "new.csv"\n'
                                         'checks = ["P@10 >= 0.1"]\n[options]\nthreshold = 4\n')
    (folder / "notruth.toml").write_text('predictions = "new.csv"\nchecks = ["P@1 >= 0"]\n')
    (folder / "nobase.toml").write_text('truth = "test.csv"\npredictions = "new.csv"\n'
                                        'checks = ["P@1 >= baseline"]\n')
    (folder / "nofile.toml").write_text('truth = "test.csv"\npredictions = "gone.csv"\n'
                                        'checks = ["P@1 >= 0"]\n')
    cases = {"broken.toml": "broken.toml: not valid TOML: ",
             "options.toml": "options.toml line 5: 'threshold' is not an option of "
                             "receval.evaluate",
             "notruth.toml": "notruth.toml: 'truth' is missing",
             "nobase.toml": "nobase.toml line 3: check 'P@1 >= baseline' compares with the "
                            "baseline: set baseline = FILE",
             "nofile.toml": "gone.csv",
             "absent.toml": "gate file"}
    for name, message in cases.items():
        out = run(str(folder / name))
        assert out.exit_code == 2, (name, out.output)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (name, out.stderr)
    junit = run(str(gate(folder, ["P@10 >= 0.1"])), "--junit", str(folder / "gate.txt"))
    assert junit.exit_code == 2 and "--junit" in junit.stderr


def test_parse_check_grammar() -> None:
    assert parse_check("nDCG@10>=0.09").bound == 0.09
    e = parse_check('P@10["Q1 (15 rows)"] < baseline + 1e-3')
    assert (e.kind, e.group, e.op, e.bound) == ("baseline", "Q1 (15 rows)", "<", 0.001)
    assert parse_check("MRR > baseline").bound == 0.0
    assert parse_check("coverage@10 >= 0.5").kind == "metric"
    assert parse_check("rows.predictions_dropped_duplicates == 0").kind == "count"
    assert parse_check("ties_at_cutoff.10 == 0").subject == ("ties_at_cutoff", "10")
    with pytest.raises(receval.ReceValError, match="name a group between the brackets"):
        parse_check("P@10[] >= 0.1")
    with pytest.raises(receval.ReceValError, match="a check is a string"):
        parse_check(0.5)  # type: ignore[arg-type]
