"""``receval resolve`` and the rates beside the metrics wherever resolved lists are evaluated:
the terminal, JSON, the HTML report and the trackers' counts."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.report.html import render_report


@pytest.fixture
def files(tmp_path: Path) -> Path:
    pd.DataFrame(
        {
            "user": ["u", "u", "u", "v"],
            "rank": [1, 2, 3, 1],
            "text": ["Zardoz", "heat", "The Matrx", "Up (2009)"],
        }
    ).to_csv(tmp_path / "gen.csv", index=False)
    pd.DataFrame(
        {"movieId": [1, 2, 5], "title": ["Matrix, The (1999)", "Heat (1995)", "Up (2009)"]}
    ).to_csv(tmp_path / "movies.csv", index=False)
    pd.DataFrame({"user": ["u", "v"], "movieId": [1, 5]}).to_csv(
        tmp_path / "truth.csv", index=False
    )
    return tmp_path


def test_table_prints_the_counts_under_the_metrics(files: Path) -> None:
    out = CliRunner().invoke(
        main,
        [
            "resolve",
            str(files / "gen.csv"),
            str(files / "truth.csv"),
            "--catalogue",
            str(files / "movies.csv"),
            "--item-col",
            "movieId",
            "-m",
            "MRR",
            "--resolved-out",
            str(files / "rows.csv"),
        ],
    )
    assert out.exit_code == 0, out.output
    lines = [line.split() for line in out.output.splitlines()]
    assert ["MRR", "0.6667"] in lines  # u: the matrix at rank 3 (slots kept), v: 1
    assert ["unresolved", "1", "0.2500"] in lines and ["fuzzy", "1", "0.2500"] in lines
    assert ["in_history", "-", "-"] in lines
    rows = pd.read_csv(files / "rows.csv")
    assert rows["how"].tolist() == ["unresolved", "normalised", "fuzzy", "exact"]


def test_json_holds_counts_rates_and_options(files: Path) -> None:
    out = CliRunner().invoke(
        main,
        [
            "resolve",
            str(files / "gen.csv"),
            str(files / "truth.csv"),
            "--catalogue",
            str(files / "movies.csv"),
            "--item-col",
            "movieId",
            "-m",
            "MRR",
            "--slots",
            "close",
            "-f",
            "json",
        ],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["summary"]["MRR"] == 0.75  # the matrix second once Zardoz is closed up
    assert data["counts"]["generated"]["exact"] == 1
    assert data["counts"]["generated_rates"]["normalised"] == 0.25
    assert data["options"]["resolve"]["slots"] == "close"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threshold", "2"], "Invalid value for '--threshold'"),
        (["--match", "llm"], "Invalid value for '--match'"),
        (["--catalogue", "nope.csv"], "catalogue: no such file: nope.csv"),
    ],
)
def test_bad_input_is_one_line_exit_2(files: Path, args: list[str], message: str) -> None:
    base = [
        "resolve",
        str(files / "gen.csv"),
        "--catalogue",
        str(files / "movies.csv"),
        "--item-col",
        "movieId",
    ]
    out = CliRunner().invoke(main, [*base, *args])
    assert out.exit_code == 2
    (line,) = out.output.strip().splitlines()
    assert message in line


def test_html_report_and_tracker_counts_hold_the_rates() -> None:
    g = receval.text.resolve(
        {"user": [1, 1], "rank": [1, 2], "text": ["Zardoz", "heat"]},
        {"item": [7], "title": ["Heat (1995)"]},
    )
    r = receval.text.evaluate({"user": [1], "item": [7]}, g, ["MRR"])
    page = render_report(r)
    assert "<th>generated titles</th>" in page
    assert '<tr><td>unresolved</td><td class="num">1</td><td class="num">0.5000</td></tr>' in page
    assert "slots = keep" in page  # the options table
    plain = receval.evaluate({"user": [1], "item": [7]}, g.predictions, ["MRR"])
    assert "generated titles" not in render_report(plain)
    assert r.to_dict()["counts"]["generated_rates"]["unresolved"] == 0.5  # counts.json
