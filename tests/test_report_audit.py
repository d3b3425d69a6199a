"""The HTML report carries the audit the terminal prints (issue 32): one run of ``receval
evaluate --report`` gives both outputs, and each audit line, each warning and the family of
significance tests (the same comparisons under one Holm correction) appears in both."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from receval.cli import main


def _flat(text: str) -> str:
    """``text`` with every run of white space one space (rich wraps long lines)."""
    return re.sub(r"\s+", " ", text)


def _inputs(folder: Path) -> dict[str, Path]:
    """Two models' lists over 30 users; a fifth of the predictions and of the truth rows are
    training rows (the audit's warnings), and a propensity column for the debiased run."""
    rng = np.random.default_rng(1)
    train = pd.DataFrame({"user": rng.integers(0, 30, 300),
                          "item": rng.integers(0, 40, 300)}).drop_duplicates()
    truth = pd.DataFrame({"user": rng.integers(0, 30, 90),
                          "item": rng.integers(0, 40, 90)}).drop_duplicates()
    truth["p"] = rng.uniform(0.05, 1.0, len(truth))
    paths = {"train": folder / "train.csv", "truth": folder / "truth.csv"}
    train.to_csv(paths["train"], index=False)
    truth.to_csv(paths["truth"], index=False)
    for name, seed in (("a", 2), ("b", 3)):
        r = np.random.default_rng(seed)
        rows = [(u, i, 10.0 - k) for u in range(30) for k, i in enumerate(r.permutation(40)[:10])]
        paths[name] = folder / f"{name}.csv"
        pd.DataFrame(rows, columns=["user", "item", "score"]).to_csv(paths[name], index=False)
    return paths


def _run(paths: dict[str, Path], report: Path, *extra: str) -> tuple[str, str, str]:
    """stdout, stderr and the report's text (tags removed, entities read) of one run."""
    result = CliRunner().invoke(main, [
        "evaluate", "-t", str(paths["truth"]), "-p", str(paths["a"]), "-p", str(paths["b"]),
        "--train", str(paths["train"]), "--report", str(report), *extra])
    assert result.exit_code == 0, result.output
    page = html.unescape(re.sub(r"<[^>]+>", " ", report.read_text(encoding="utf-8")))
    return _flat(result.stdout), result.stderr, _flat(page)


def _holm(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"Holm correction across (\d+) comparisons", text)]


@pytest.mark.parametrize("extra", [
    ("-m", "nDCG@10", "-m", "P@5", "-m", "novelty@10", "-m", "coverage@10"),
    ("-m", "nDCG@10", "-m", "P@5", "--debias", "ips", "--propensity", "p"),
])
def test_the_report_holds_the_terminals_audit_warnings_and_tests(tmp_path: Path,
                                                                  extra: tuple[str, ...]
                                                                  ) -> None:
    paths = _inputs(tmp_path)
    out, err, page = _run(paths, tmp_path / "r.html", *extra)
    for model in ("a", "b"):  # every audit line the terminal prints, for each model
        printed = re.findall(rf"{model}: ((?:users evaluated|train audit|debias=)[^│]*?)"
                             rf"(?= [ab]: | report written|$)", out)
        assert any(p.startswith("train audit") for p in printed), out
        for line in printed:
            assert line.strip() in page, line
    warned = [_flat(w) for w in re.findall(r"^warning: (.*)$", err, flags=re.M)]
    assert any("training data" in w for w in warned)
    for text in warned:
        assert text in page, text
    assert _holm(out) and set(_holm(page)) == set(_holm(out)), (_holm(out), _holm(page))
    if "novelty@10" in extra:  # the beyond-accuracy per-user metric is in the family:
        # nDCG@10, P@5 and novelty@10 for the one pair; coverage@10 is one number per model
        assert _holm(out) == [3]
        for text in (out, page):
            assert "not tested (one number over all lists, no per-user values): coverage@10" \
                in text
    else:  # IPS values above the range: marked, and said, in both
        assert "debias=ips weights:" in out and "debias=ips weights:" in page
        assert "\u2021: some users' IPS values are above" in out
        assert "\u2021: some users' IPS values are above" in page


def test_no_letters_between_models_weighed_with_different_gammas() -> None:
    """Two models debiased with different gammas (what a gamma fitted to each model's lists
    gives): neither the terminal's summary nor the report draws a letter between them."""
    import warnings

    import receval
    from receval.report.html import render_report
    from receval.report.tables import marks, summary_lines

    truth = pd.DataFrame({"user": np.repeat(np.arange(40), 2), "item": np.tile([1, 2], 40)})
    train = pd.DataFrame({"user": 100, "item": [1, 1, 1, 2, 3]})
    good = pd.DataFrame({"user": np.arange(40), "item": 1, "score": 1.0})
    bad = pd.DataFrame({"user": np.arange(40), "item": 3, "score": 1.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same = {name: receval.evaluate(truth, run, ["P@1"], debias="snips", train=train,
                                       propensity=("popularity", 1.0))
                for name, run in (("good", good), ("bad", bad))}
        mixed = dict(same, bad=receval.evaluate(truth, bad, ["P@1"], debias="snips",
                                                train=train, propensity=("popularity", 2.0)))
    assert marks(same).marks[("good", "P@1")] == "b"  # weighed alike: a letter
    assert marks(mixed) is None
    assert [type(x).__name__ for x in summary_lines(mixed, 200)] == ["Table"]
    page = render_report(mixed)
    assert 'id="significance"' not in page and 'class="sig"' not in page
