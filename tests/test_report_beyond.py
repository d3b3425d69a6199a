"""The report's beyond-accuracy section: present with --train (coverage, novelty, Gini, APLT per
model, the long-tail exposure and the most recommended items with their titles), with values
worked out by hand; absent without training data."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from receval.cli import main
from receval.report.beyond import beyond_section

# training rows per item: a 3, b 1, c 1; d has none
TRAIN = pd.DataFrame({"user": [1, 1, 2, 3, 3], "item": ["a", "b", "a", "a", "c"]})
TRUTH = pd.DataFrame({"user": [1, 2, 3], "item": ["c", "b", "b"]})
# top-2 lists: user 1 [d, c], user 2 [b, c], user 3 [b, d]
SVD = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": ["d", "c", "b", "c", "b", "d"],
                    "score": [0.9, 0.8, 0.7, 0.6, 0.9, 0.1]})
# every user: [a]
POP = pd.DataFrame({"user": [1, 2, 3], "item": ["a", "a", "a"], "score": [1.0, 1.0, 1.0]})
ITEMS = "item,title\na,Alien\nb,Brazil\nc,Casablanca\nd,Dune\n"


def _cells(values: list[float]) -> list[str]:
    return [f"{v:.4f}" for v in values]


#: coverage@2, novelty@2, gini@2, APLT@2, by hand (tests/test_cli_beyond.py spells each out):
#: svd: 2 of the catalogue {a, b, c}; mean over users of -log2(rows / 5) (d cold: 0); Gini of
#: exposures 0, 2, 2, 2; tail ({c, d} or {b, d}) shares 1, 1/2, 1/2.
#: pop: 1 of 3; -log2(3/5); Gini of 0, 0, 3; a is in the head.
HAND = {"svd": _cells([2 / 3, 2 / 3 * math.log2(5), 6 / 24, 2 / 3]),
        "pop": _cells([1 / 3, math.log2(5 / 3), 6 / 9, 0.0])}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("beyond_report")
    TRAIN.to_csv(folder / "train.csv", index=False)
    TRUTH.to_csv(folder / "truth.csv", index=False)
    SVD.to_csv(folder / "svd.csv", index=False)
    POP.to_csv(folder / "pop.csv", index=False)
    (folder / "items.csv").write_text(ITEMS)
    return folder


def report(files: Path, out: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["evaluate", "-t", str(files / "truth.csv"),
                                       "-p", str(files / "svd.csv"), "-p", str(files / "pop.csv"),
                                       "-m", "nDCG@2", "--report", str(out), *args])
    assert result.exit_code == 0, result.output
    return out.read_text()


def table(page: str, css: str) -> dict[str, list[str]]:
    """The rows of ``<table class="css">``: first cell -> the other cells."""
    body = re.search(rf'<table class="{css}">(.*?)</table>', page, re.S)
    assert body is not None, css
    rows = re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", body.group(1), re.S)
    return {name: re.findall(r"<td[^>]*>(.*?)</td>", rest) for name, rest in rows}


def test_section_with_train_has_the_hand_checked_numbers(files: Path, tmp_path: Path) -> None:
    page = report(files, tmp_path / "r.html", "--train", str(files / "train.csv"),
                  "--items", str(files / "items.csv"))
    assert page.count('<section id="beyond">') == 1
    head = re.search(r'<table class="beyond-metrics">\s*<thead>(.*?)</thead>', page, re.S)
    assert head is not None
    assert re.findall(r"<th>(.*?)</th>", head.group(1))[1:] == [
        "coverage@2*", "novelty@2", "gini@2*", "APLT@2"]
    assert table(page, "beyond-metrics") == HAND
    # popularity ranks a, b, c (one item a group), unseen d; shares of the 6 and 3 slots
    exposure = table(page, "beyond-exposure")
    assert exposure["training interactions"] == ["60.0%", "20.0%", "20.0%", ""]
    assert exposure["svd"] == ["0.0%", "33.3%", "33.3%", "33.3%"]
    assert exposure["pop"] == ["100.0%", "0.0%", "0.0%", "0.0%"]
    assert "long-tail exposure" in page and "data:image/svg+xml;base64," in page
    # the most recommended items, with their titles: pop lists a for all 3 users
    tops = re.findall(r'<table class="beyond-top">(.*?)</table>', page, re.S)
    pop = re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", tops[1], re.S)
    assert [(i, re.findall(r"<td[^>]*>(.*?)</td>", rest)) for i, rest in pop] == [
        ("a", ["Alien", "3", "100.0%"])]
    svd = {i for i, _ in re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", tops[0], re.S)}
    assert svd == {"b", "c", "d"} and "Casablanca" in tops[0]
    # the summary table keeps the accuracy metrics
    summary = re.search(r'<section id="summary">(.*?)</section>', page, re.S)
    assert summary is not None and "coverage@2" not in summary.group(1)


def test_section_absent_without_train(files: Path, tmp_path: Path) -> None:
    page = report(files, tmp_path / "r.html")
    assert 'id="beyond"' not in page and "long-tail exposure" not in page


def test_asked_beyond_metrics_lead_the_section(files: Path, tmp_path: Path) -> None:
    page = report(files, tmp_path / "r.html", "--train", str(files / "train.csv"),
                  "-m", "gini@1", "-m", "novelty@1")
    head = re.search(r'<table class="beyond-metrics">\s*<thead>(.*?)</thead>', page, re.S)
    assert head is not None
    # the section's cutoff is the first beyond metric's: 1
    assert re.findall(r"<th>(.*?)</th>", head.group(1))[1:] == [
        "gini@1*", "novelty@1", "coverage@1*", "APLT@1"]
    # pop's top 1 is a for every user: novelty -log2(3/5), Gini of 0, 0, 3 over {a, b, c}
    rows = table(page, "beyond-metrics")
    assert rows["pop"][:2] == _cells([6 / 9, math.log2(5 / 3)])


def test_excluded_training_items_leave_the_exposure() -> None:
    """With exclude_train, each user's training items are not in the lists the section reads:
    user 1's top-1 from [a (trained), d] is d, unseen in training."""
    preds = pd.DataFrame({"user": [1, 1], "item": ["a", "d"], "score": [2.0, 1.0]})
    kept = beyond_section({}, {"m": preds}, TRAIN, k=1, bins=3)
    dropped = beyond_section({}, {"m": preds}, TRAIN, k=1, bins=3, exclude_train=True)
    assert kept["exposure"][1]["cells"] == ["100.0%", "0.0%", "0.0%", "0.0%"]
    assert dropped["exposure"][1]["cells"] == ["0.0%", "0.0%", "0.0%", "100.0%"]
    assert dropped["top"][0]["items"] == [["d", "", "1", "100.0%"]]


def test_python_api_results_with_beyond_metrics() -> None:
    """render_report takes results holding beyond-accuracy metrics: they go to the section
    (their values as evaluate computed them) and to the summary's last rows, untested, not to
    the curves."""
    import receval
    from receval.report.html import render_report

    metrics = ["nDCG@2", "coverage@2", "novelty@2"]
    results = {name: receval.evaluate(TRUTH, preds, metrics, train=TRAIN,
                                      silence=["no-match", "train-items"])
               for name, preds in (("svd", SVD), ("pop", POP))}
    section = beyond_section(results, {"svd": SVD, "pop": POP}, TRAIN, k=2)
    assert section["columns"] == ["coverage@2", "novelty@2"]
    assert {r["model"]: r["cells"] for r in section["rows"]} == {
        name: cells[:2] for name, cells in HAND.items()}
    page = render_report(results, beyond=section)
    assert table(page, "beyond-metrics") == {name: c[:2] for name, c in HAND.items()}
    summary = re.search(r'<section id="summary">(.*?)</section>', page, re.S)
    assert summary is not None and "nDCG@2" in summary.group(1)
    beyond = re.findall(r'<tr class="beyond[^"]*"><td>(.*?)<span', summary.group(1))
    assert beyond == ["coverage@2", "novelty@2"]
    rows = summary.group(1).split('class="beyond', 1)[1].split("</tbody>")[0]
    assert '<span class="sig"' not in rows
    assert 'id="beyond"' not in render_report(results)


def test_json_next_to_the_report_lists_only_the_asked_metrics(files: Path,
                                                              tmp_path: Path) -> None:
    import json

    result = CliRunner().invoke(main, ["evaluate", "-t", str(files / "truth.csv"),
                                       "-p", str(files / "svd.csv"), "-m", "nDCG@2",
                                       "-m", "novelty@2", "--train", str(files / "train.csv"),
                                       "--report", str(tmp_path / "r.html"), "-f", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert list(out["summary"]) == ["nDCG@2", "novelty@2"]  # not the section's extras
    assert out["options"]["beyond"]["catalogue_metrics"] == []
