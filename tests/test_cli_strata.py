"""``receval evaluate --strata``: metrics per group of users on the command line, in JSON, the
terminal table and the HTML report (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from receval.cli import main


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    # u1 finds its item at rank 1, u2 does not, u3 does, u4 (in no group) does not
    (tmp_path / "t.csv").write_text("user,item\nu1,i1\nu2,i2\nu3,i3\nu4,i4\n")
    (tmp_path / "a.csv").write_text("user,item,score\nu1,i1,0.9\nu2,i9,0.9\nu2,i2,0.1\n"
                                    "u3,i3,0.9\nu4,i9,0.9\n")
    (tmp_path / "b.csv").write_text("user,item,score\nu1,i9,0.9\nu2,i2,0.9\nu3,i3,0.9\n"
                                    "u4,i4,0.9\n")
    (tmp_path / "g.csv").write_text("user,group\nu1,new\nu2,new\nu3,old\n")
    return tmp_path


def _run(files: Path, *args: str) -> object:
    return CliRunner().invoke(main, ["evaluate", "-t", str(files / "t.csv"), "-p",
                                     str(files / "a.csv"), "-m", "P@1", "--strata",
                                     str(files / "g.csv"), *args])


def test_groups_in_json_by_hand(files: Path) -> None:
    out = _run(files, "-f", "json")
    assert out.exit_code == 0, out.output
    groups = {g["group"]: (g["users"], g["P@1"]) for g in json.loads(out.stdout)["strata"]}
    # new: u1 hit, u2 miss -> 0.5; old: u3 hit -> 1.0; (none): u4 miss -> 0.0
    assert groups == {"new": (2, 0.5), "old": (1, 1.0), "(none)": (1, 0.0)}


def test_two_models_table_and_json(files: Path) -> None:
    args = ["-p", str(files / "b.csv")]
    out = _run(files, *args, "-f", "json")
    assert out.exit_code == 0, out.output
    strata = json.loads(out.stdout)["strata"]
    # b: u1 miss, u2 hit -> new 0.5; u3 hit -> old 1.0; u4 hit -> (none) 1.0
    assert {g["group"]: g["P@1"] for g in strata["b"]} == {"new": 0.5, "old": 1.0,
                                                            "(none)": 1.0}
    table = _run(files, *args)
    assert table.exit_code == 0, table.output
    assert "a: per group of users" in table.stdout and "b: per group of users" in table.stdout


def test_groups_in_the_report(files: Path) -> None:
    out = _run(files, "--report", str(files / "r.html"))
    assert out.exit_code == 0, out.output
    page = (files / "r.html").read_text()
    section = page[page.index('<section id="strata">'):]
    section = section[:section.index("</section>")]
    assert "<td>new</td><td class=\"num\">2</td><td class=\"num\">0.5000</td>" in section
    assert "<td>old</td><td class=\"num\">1</td><td class=\"num\">1.0000</td>" in section


# --strata with --engine spark: tests/test_spark_doors.py (the same groups as here)
