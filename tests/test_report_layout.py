"""The HTML report's readability (issue 19, point 7): significance shown as badges with a legend
(no tiny superscripts that read as a degree sign), beyond-accuracy metrics in the summary when
computed, and the most predicted items captioned and titled when titles are given."""

from __future__ import annotations

import re
from pathlib import Path

from test_report import _expected_marks, _section, _three_models
from test_report_beyond import HAND, files, report  # noqa: F401 (files: a fixture)

import receval
from receval.report.html import render_report


def test_significance_is_a_badge_with_a_legend() -> None:
    models = _three_models()
    expected = _expected_marks(models, ["P@5", "MRR"])  # scipy's paired t, Holm by hand
    assert expected[("b", "P@5")] == "ac"
    summary = _section(render_report(models, metrics=["P@5", "MRR"]), "summary")
    assert "<sup" not in summary
    for metric in ("P@5", "MRR"):
        row = re.search(rf"<tr><td>{re.escape(metric)}</td>(.*?)</tr>", summary).group(1)
        cells = re.findall(r'<td class="num">(.*?)</td>', row)
        for name, cell in zip(models, cells, strict=True):
            badge = re.search(r'<span class="sig" title="significantly better than ([^"]*)">'
                              r"&gt; (.*?)</span>", cell)
            letters = list(expected[(name, metric)])
            assert (badge.group(2) if badge else "") == ", ".join(letters), (name, cell)
            if badge:  # the tooltip names the models
                assert badge.group(1) == ", ".join(f"{x} ({x})" for x in letters)
    note = re.search(r'<p class="note" id="significance">(.*?)</p>', summary, re.S).group(1)
    assert note.startswith('<span class="sig">&gt; b</span> after a value: significantly '
                           "better than model")
    assert "Letters: a = a; b = b; c = c." in note
    assert "no badge: no significant difference" in note
    for words in ("paired t-test", "Holm correction across 6 comparisons", "seed 0"):
        assert words in note


def test_beyond_accuracy_metrics_are_rows_of_the_summary(files: Path,  # noqa: F811
                                                         tmp_path: Path) -> None:
    page = report(files, tmp_path / "r.html", "--train", str(files / "train.csv"),
                  "-m", "coverage@2", "-m", "novelty@2", "-m", "gini@2", "-m", "APLT@2")
    summary = _section(page, "summary")
    rows = dict(re.findall(r'<tr class="beyond[^"]*"><td>(.*?)<span class="dagger">'
                           r"&dagger;</span></td>(.*?)</tr>", summary))
    assert list(rows) == ["coverage@2", "novelty@2", "gini@2", "APLT@2"]
    for i, metric in enumerate(rows):
        values = re.findall(r'<td class="num">(.*?)</td>', rows[metric])
        assert values == [HAND["svd"][i], HAND["pop"][i]], metric  # by hand
    # tested as the terminal tests them (tests/test_report_audit.py): the per-user ones
    assert 'id="beyond-note"' in summary and "tested with the accuracy metrics where the " \
        "value is a mean over users" in summary
    note = re.search(r'<p class="note" id="significance">(.*?)</p>', summary, re.S).group(1)
    assert "not tested (one number over all lists, no per-user values): coverage@2, gini@2" \
        in note


def test_no_beyond_rows_without_beyond_metrics() -> None:
    r = receval.evaluate({"user": [1], "item": [1]},
                         {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
    summary = _section(render_report(r), "summary")
    assert 'class="beyond' not in summary and "beyond-note" not in summary


def test_most_predicted_items_have_a_caption_and_titles() -> None:
    r = receval.evaluate({"user": [1], "item": [1]},
                         {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
    top = {"m": [(185, 3), (7, 1)]}
    bare = _section(render_report(r, top_items=top), "items")
    assert 'id="items-caption"' in bare and "--items FILE" in bare
    assert "<caption>m: its 2 most predicted items</caption>" in bare
    assert "<th class=\"left\">title</th>" not in bare
    titled = _section(render_report(r, top_items=top, item_titles={185: "Net, The (1995)"}),
                      "items")
    assert "<td>185</td><td class=\"left\">Net, The (1995)</td><td class=\"num\">3</td>" in titled
    assert "<td>7</td><td class=\"left\"></td><td class=\"num\">1</td>" in titled
    assert "--items FILE" not in titled


def test_cli_report_shows_item_titles(files: Path, tmp_path: Path) -> None:  # noqa: F811
    page = report(files, tmp_path / "r.html", "--items", str(files / "items.csv"))
    items = _section(page, "items")
    # svd's lists: d in 2 users' lists, c in 2, b in 2; pop: a in 3 (tests/test_report_beyond)
    assert '<td>a</td><td class="left">Alien</td><td class="num">3</td>' in items
    assert '<td class="left">Dune</td>' in items and '<td class="left">Casablanca</td>' in items
