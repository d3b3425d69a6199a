"""A data scientist's first hour: what the README promises after `pip install .` works, and the
common mistakes (graded ratings without a threshold, the training file as truth, ids that never
match) get a warning that names the option to use, pointing at the caller's line."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.exceptions import (
    IdMismatchWarning,
    NoMatchWarning,
    ReceValError,
    ReceValWarning,
    RelevanceThresholdWarning,
)


def test_the_report_and_plot_libraries_are_core_dependencies() -> None:
    # what `pip install .` installs: the project's own dependency list
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    core = project["project"]["dependencies"]
    names = {re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower() for r in core}
    assert {"jinja2", "matplotlib", "scipy"} <= names


def test_documented_submodules_work_after_import_receval_alone() -> None:
    code = (
        "import receval\n"
        "print(receval.metrics.precision_at_k([1, 0, 1], [0.9, 0.8, 0.1], 2))\n"
        "print(receval.explain.explain('trec_eval', 'ranx').a)\n"
        "print(receval.io.model_names(['a/run.csv']))\n"
        "print(callable(receval.adapters.from_matrices))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["0.5", "trec_eval", "['run']", "True"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        receval.nope  # noqa: B018


@pytest.fixture(scope="module")
def movielens_like() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Star ratings split in train and test per user, and top-10 popularity lists of items
    unseen in training (so the training file, as truth, never meets a prediction)."""
    rng = np.random.default_rng(3)
    rows = [(u, int(i), float(rng.choice([0.5, 1, 2, 3, 3.5, 4, 5])))
            for u in range(60) for i in rng.choice(200, 30, replace=False)]
    ratings = pd.DataFrame(rows, columns=["user", "item", "rating"])
    test = ratings.groupby("user").head(10)
    train = ratings.drop(test.index)
    popular = train.groupby("item").size().sort_values(ascending=False).index
    lists = []
    for user, seen in train.groupby("user")["item"]:
        unseen = [i for i in popular if i not in set(seen)][:10]
        # scores in (0, 1], not 1..n (that reads as ranks passed as scores: its own warning)
        lists += [(user, int(i), (10 - r) / 10) for r, i in enumerate(unseen)]
    return train, test, pd.DataFrame(lists, columns=["user", "item", "score"])


def caught(call: object) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        call()  # type: ignore[operator]
    return [w for w in got if issubclass(w.category, ReceValWarning)]


def test_graded_ratings_without_threshold_warn_and_name_the_option(movielens_like) -> None:
    _, test, preds = movielens_like
    got = caught(lambda: receval.evaluate(test, preds, ["P@10"]))
    assert [w.category for w in got] == [RelevanceThresholdWarning]
    message = str(got[0].message)
    assert "relevance_threshold=4" in message and "--relevance-threshold 4" in message
    assert "0.5 to 5" in message
    # the warning points at this file (the caller), not inside receval
    assert got[0].filename == __file__


@pytest.mark.parametrize("options", [
    {"relevance_threshold": 4}, {"relevance_threshold": None}, {"silence": ["no-threshold"]},
    {"profile": "surprise"}, {"gain": "linear"},
])
def test_a_threshold_or_silence_quiets_the_threshold_warning(movielens_like, options) -> None:
    _, test, preds = movielens_like
    assert caught(lambda: receval.evaluate(test, preds, ["P@10"], **options)) == []


def test_binary_or_constant_ratings_do_not_warn(movielens_like) -> None:
    _, test, preds = movielens_like
    assert caught(lambda: receval.evaluate(test.assign(rating=1.0), preds, ["P@10"])) == []
    assert caught(lambda: receval.evaluate(test.drop(columns="rating"), preds, ["P@10"])) == []


def test_the_training_file_as_truth_warns_that_nothing_matched(movielens_like) -> None:
    train, test, preds = movielens_like
    got = caught(lambda: receval.evaluate(train, preds, ["P@10"], relevance_threshold=4))
    assert [w.category for w in got] == [NoMatchWarning]
    assert f"none of the {len(preds):,} predictions has a truth row" in str(got[0].message)
    assert "training set" in str(got[0].message)
    assert caught(lambda: receval.evaluate(test, preds, ["P@10"], relevance_threshold=4)) == []


def test_item_ids_that_barely_match_warn(movielens_like) -> None:
    _, test, preds = movielens_like
    # the truth's ids zero-padded to text, the predictions' plain text: '007' is not '7' (only
    # ids of four digits, here none, would match)
    padded = test.assign(item=test["item"].map(lambda i: f"{i:04d}"))
    got = caught(lambda: receval.evaluate(padded, preds.assign(item=preds["item"].astype(str)),
                                          ["P@10"], relevance_threshold=4))
    assert [w.category for w in got] == [NoMatchWarning]
    # ids from 0 to 179 padded, the rest equal: some users still have a hit
    padded = test.assign(item=test["item"].map(lambda i: f"{i:04d}" if i < 180 else str(i)))
    plain = preds.assign(item=preds["item"].astype(str))
    got = caught(lambda: receval.evaluate(padded, plain, ["P@10"], relevance_threshold=4))
    assert [w.category for w in got] == [IdMismatchWarning]
    assert "'007' and '7'" in str(got[0].message)
    # a weak model whose items all exist in the truth is not a mismatch
    weak = preds.assign(score=-preds["score"])
    assert caught(lambda: receval.evaluate(test, weak, ["P@1"], relevance_threshold=4)) == []


def test_an_unknown_warning_code_is_an_error(movielens_like) -> None:
    _, test, preds = movielens_like
    with pytest.raises(ReceValError, match="unknown warning code 'nope'"):
        receval.evaluate(test, preds, ["P@10"], silence=["nope"])


def test_the_command_line_prints_each_warning_on_one_line(movielens_like,
                                                          tmp_path: Path) -> None:
    train, _, preds = movielens_like
    train.to_csv(tmp_path / "train.csv", index=False)
    preds.to_csv(tmp_path / "run.csv", index=False)
    args = ["evaluate", "-t", str(tmp_path / "train.csv"), "-p", str(tmp_path / "run.csv"),
            "-m", "P@10"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    lines = [line for line in out.stderr.splitlines() if line.startswith("warning:")]
    assert len(lines) == 2, out.stderr
    assert any("--relevance-threshold 4" in line for line in lines)
    assert any("none of the" in line for line in lines)
    quiet = CliRunner().invoke(main, [*args, "--silence", "no-threshold",
                                      "--silence", "no-match"])
    assert "warning:" not in quiet.stderr


def test_the_demo_hint_passes_a_relevance_threshold() -> None:
    out = CliRunner().invoke(main, ["demo"])
    assert out.exit_code == 0
    assert "--relevance-threshold 4" in " ".join(out.output.split())


def test_the_first_run_says_it_compiles(tmp_path: Path) -> None:
    """A fresh numba cache: a bad input's error stays its one line; the first evaluation prints
    the notice once, piped or not; a later run does not."""
    import os
    import shutil

    package = Path(receval.__file__).parent
    copy = tmp_path / "site" / "receval"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(copy.parent))
    notice = "compiling receval's kernels (first run only"
    pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1]}).to_csv(tmp_path / "t.csv", index=False)
    pd.DataFrame({"user": [1, 1, 2], "item": [1, 3, 1], "score": [0.9, 0.8, 0.7]}).to_csv(
        tmp_path / "p.csv", index=False)
    cli = [sys.executable, "-m", "receval.cli"]
    bad = subprocess.run([*cli, "evaluate", "-t", str(tmp_path / "missing.csv"), "-p",
                          str(tmp_path / "p.csv")], env=env, capture_output=True, text=True,
                         timeout=600)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    # piped (a CI log), the first run says why it waits, once
    first = subprocess.run([*cli, "evaluate", "-t", str(tmp_path / "t.csv"), "-p",
                            str(tmp_path / "p.csv"), "-m", "P@1"], env=env,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert " ".join(first.stderr.split()).count(notice) == 1, first.stderr
    stderr = _stderr_on_a_terminal([*cli, "demo"], env)
    assert notice not in " ".join(stderr.split())


def test_the_notice_and_the_readme_state_one_figure() -> None:
    from receval.cli.common import COMPILE_NOTICE, COMPILE_SECONDS

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    stated = re.findall(r"compiles receval's numba kernels \(about (\d+) s", readme)
    assert stated == [str(COMPILE_SECONDS)]
    assert f"about {COMPILE_SECONDS} s" in COMPILE_NOTICE


def test_the_notice_is_printed_once_without_a_terminal(monkeypatch, tmp_path: Path) -> None:
    """CliRunner's stderr is no terminal: the notice is still printed, once per process."""
    import receval.cli.common as common
    import receval.engines.numba_engine as engine

    monkeypatch.setattr(engine, "kernels_cached", lambda: False)
    monkeypatch.setattr(common, "_notice_printed", False)
    pd.DataFrame({"user": [1, 2], "item": [1, 1]}).to_csv(tmp_path / "t.csv", index=False)
    for name in ("a", "b"):
        pd.DataFrame({"user": [1, 2], "item": [1, 2], "score": [0.9, 0.7]}).to_csv(
            tmp_path / f"{name}.csv", index=False)
    args = ["compare", "-t", str(tmp_path / "t.csv"), "-p", str(tmp_path / "a.csv"), "-p",
            str(tmp_path / "b.csv"), "-m", "P@1", "--resamples", "10"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    assert out.stderr.count("compiling receval's kernels") == 1
    again = CliRunner().invoke(main, args)
    assert "compiling receval's kernels" not in again.stderr
    monkeypatch.setattr(common, "_notice_printed", False)  # cold again: an error is one line
    bad = CliRunner().invoke(main, ["evaluate", "-t", str(tmp_path / "missing.csv"), "-p",
                                    str(tmp_path / "a.csv")])
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1


def _stderr_on_a_terminal(argv: list[str], env: dict[str, str]) -> str:
    """Run ``argv`` with stderr on a pseudo-terminal (as a person at a shell) and read it."""
    import os
    import pty

    leader, follower = pty.openpty()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=follower,
                          timeout=600)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert done.returncode == 0
    return b"".join(chunks).decode(errors="replace")


def test_the_evaluate_table_is_not_cut_when_piped(movielens_like, tmp_path: Path) -> None:
    _, test, preds = movielens_like
    test.to_csv(tmp_path / "test.csv", index=False)
    names = [f"a_rather_long_model_name_{i}" for i in range(4)]
    for name in names:
        preds.to_csv(tmp_path / f"{name}.csv", index=False)
    args = ["evaluate", "-t", str(tmp_path / "test.csv"), "--relevance-threshold", "4",
            *[a for n in names for a in ("-p", str(tmp_path / f"{n}.csv"))]]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    header = next(line for line in out.stdout.splitlines() if "metric" in line)
    assert all(name in header for name in names), header
    assert "…" not in out.stdout


def test_silence_quiets_the_ties_and_undefined_warnings_too() -> None:
    from receval.exceptions import TiesWarning, UndefinedMetricWarning

    truth = {"user": [1, 2], "item": [1, 5]}
    preds = {"user": [1, 1, 3], "item": [1, 2, 1], "score": [1.0, 1.0, 1.0]}
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        receval.evaluate(truth, preds, ["P@1", "R@1"], users="union")
    categories = {w.category for w in got}
    assert {TiesWarning, UndefinedMetricWarning} <= categories
    assert all(w.filename == __file__ for w in got)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        receval.evaluate(truth, preds, ["P@1", "R@1"], users="union", silence=["ties", "undefined"])
    assert not {TiesWarning, UndefinedMetricWarning} & {w.category for w in got}


def test_report_curves_warn_about_ties_at_the_asked_cutoffs_only(tmp_path: Path) -> None:
    truth = pd.DataFrame({"user": [1, 2], "item": [1, 5]})
    # tied scores straddle k=2 and k=3 but not k=1
    preds = pd.DataFrame({"user": [1] * 4 + [2] * 4, "item": [1, 2, 3, 4] * 2,
                          "score": [4.0, 2.0, 2.0, 2.0] * 2})
    truth.to_csv(tmp_path / "t.csv", index=False)
    preds.to_csv(tmp_path / "p.csv", index=False)
    base = ["evaluate", "-t", str(tmp_path / "t.csv"), "-p", str(tmp_path / "p.csv")]
    quiet = CliRunner().invoke(main, [*base, "-m", "P@1", "--report", str(tmp_path / "r.html")])
    assert quiet.exit_code == 0, quiet.output
    assert "tied scores" not in quiet.stderr
    loud = CliRunner().invoke(main, [*base, "-m", "P@2", "--report", str(tmp_path / "r.html")])
    line = next(x for x in loud.stderr.splitlines() if "tied scores" in x)
    assert "at k=2" in line and "at k=3" not in line


def test_evaluate_scores_judges_the_threshold_warning_as_evaluate_does() -> None:
    """One rule for both entry points: graded gains read the ratings on purpose."""
    pytest.importorskip("torch", reason="evaluate_scores runs on torch (installed in CI)")
    truth = {"user": [0, 0, 1], "item": [0, 1, 1], "rating": [1.0, 5.0, 3.0]}
    scores = np.array([[0.9, 0.1, 0.5], [0.2, 0.8, 0.4]])
    for options, warns in (({}, True), ({"gain": "linear"}, False),
                           ({"relevance_threshold": 4}, False)):
        got = caught(lambda o=options: receval.evaluate_scores(truth, scores, ["nDCG@2"], **o))
        assert ([w.category for w in got] == [RelevanceThresholdWarning]) is warns, options
