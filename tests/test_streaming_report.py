"""``receval evaluate --report --memory-budget``: the report of streamed files is the in-memory
report byte for byte; the lists' facts it reads (most predicted items, deepest list) are counted
chunk by chunk and equal an independent count over the whole file."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from receval.cli import main
from receval.cli.common import cut_at_depth
from receval.streaming import facts
from receval.streaming.facts import list_facts


def _frames(text_ids: bool, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = 120
    depth = rng.integers(1, 25, n)  # lists of different lengths: the deepest one matters
    users = np.repeat(np.arange(n), depth)
    preds = pd.DataFrame(
        {"user": users, "item": rng.integers(0, 60, len(users)), "score": rng.random(len(users))}
    ).drop_duplicates(["user", "item"])
    truth = pd.DataFrame(
        {"user": np.repeat(np.arange(n), 3), "item": rng.integers(0, 60, 3 * n)}
    ).drop_duplicates()
    preds = preds.iloc[rng.permutation(len(preds))].reset_index(drop=True)
    if text_ids:  # '007'-style items: text that is not a canonical integer
        for f in (preds, truth):
            f["user"] = "u" + f["user"].astype(str)
            f["item"] = f["item"].map(lambda i: f"{i:03d}")
    return truth, preds


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=50)
    return path


def _oracle(preds: pd.DataFrame, n: int = 10) -> tuple[list[tuple[object, int]], int]:
    """Straight from the definition: rows per item, most first then by item; rows per user."""
    per_item = collections.Counter(preds["item"].tolist())
    top = sorted(per_item.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return top, max(collections.Counter(preds["user"].tolist()).values())


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("text_ids", [False, True])
def test_list_facts_equal_a_count_over_the_whole_file(
    tmp_path: Path, suffix: str, text_ids: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    truth, preds = _frames(text_ids)
    t = _write(truth, tmp_path / f"t{suffix}")
    p = _write(preds, tmp_path / f"p{suffix}")
    monkeypatch.setattr(facts, "_MERGE_ROWS", 7)  # the counts merged many times
    got = list_facts(str(t), str(p), {}, chunk_rows=13)
    assert got == _oracle(preds)
    assert all(type(item) is (str if text_ids else int) for item, _ in got[0])


def test_list_facts_items_typed_as_the_evaluation_types_them(tmp_path: Path) -> None:
    """Predictions whose items all look like integers against a truth with text items: the
    items are compared as text (as the evaluation aligns them), so '10' sorts before '9'."""
    p = tmp_path / "p.csv"
    p.write_text("user,item,score\n1,9,1\n2,9,1\n1,10,0.5\n2,10,0.5\n3,11,1\n")
    t = tmp_path / "t.csv"
    t.write_text("user,item\n1,x\n")
    assert list_facts(str(t), str(p), {})[0] == [("10", 2), ("9", 2), ("11", 1)]
    t.write_text("user,item\n1,9\n")
    assert list_facts(str(t), str(p), {})[0] == [(9, 2), (10, 2), (11, 1)]


def test_cut_at_depth() -> None:
    metrics = ["nDCG@3", "P@1", "R@1", "P@2", "R@2", "P@3", "R@3", "P@4", "R@4"]
    assert cut_at_depth(metrics, ["nDCG@3"], 2) == metrics[:5]
    assert cut_at_depth(metrics, ["nDCG@3", "P@4"], 1) == ["nDCG@3", "P@1", "R@1", "P@4"]
    assert cut_at_depth(metrics, ["nDCG@3"], 9) == metrics


#: the audit's line saying how a model's files were streamed: the one line a streamed report
#: holds that the in-memory report lacks
STREAMED_LINE = re.compile(
    r'^ *<p class="note audit">(<strong>[^<]*</strong>: )?streamed \(partitioned\)[^\n]*\n', re.M
)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("text_ids", [False, True])
def test_report_under_a_budget_is_the_in_memory_report(
    tmp_path: Path, suffix: str, text_ids: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    truth, preds = _frames(text_ids)
    t = _write(truth, tmp_path / f"t{suffix}")
    p = _write(preds, tmp_path / f"p{suffix}")
    from receval.streaming import plan

    monkeypatch.setattr(plan, "partition_rows", lambda budget: 64)  # many partitions
    if text_ids:  # the per-user values spilled to disk and read back (held with integer ids)
        monkeypatch.setattr(plan, "PER_USER_SHARE", 0.0)
    runner = CliRunner()
    base = ["evaluate", "-t", str(t), "-p", str(p), "-m", "P@5,nDCG@10,MRR", "--seed", "2"]
    plain = runner.invoke(main, [*base, "--report", str(tmp_path / "a.html")])
    streamed = runner.invoke(
        main, [*base, "--report", str(tmp_path / "b.html"), "--memory-budget", "64MiB"]
    )
    assert plain.exit_code == 0, plain.output
    assert streamed.exit_code == 0, streamed.output
    assert "streamed (partitioned)" in streamed.stdout
    a = (tmp_path / "a.html").read_text()
    b = (tmp_path / "b.html").read_text()
    assert len(STREAMED_LINE.findall(b)) == 1 and not STREAMED_LINE.findall(a)
    assert ("per-user values spilled to disk" in b) == text_ids
    assert a == STREAMED_LINE.sub("", b)
    assert plain.stderr.replace("a.html", "b.html") == streamed.stderr  # the same warnings


def test_report_of_two_models_under_a_budget(tmp_path: Path) -> None:
    truth, preds = _frames(False)
    _, other = _frames(False, seed=4)
    t = _write(truth, tmp_path / "t.csv")
    p1 = _write(preds, tmp_path / "one.csv")
    p2 = _write(other, tmp_path / "two.csv")
    runner = CliRunner()
    base = ["evaluate", "-t", str(t), "-p", str(p1), "-p", str(p2), "-m", "nDCG@5"]
    plain = runner.invoke(main, [*base, "--report", str(tmp_path / "a.html")])
    streamed = runner.invoke(
        main, [*base, "--report", str(tmp_path / "b.html"), "--memory-budget", "64MiB"]
    )
    assert plain.exit_code == 0 and streamed.exit_code == 0, streamed.output
    b = (tmp_path / "b.html").read_text()
    assert len(STREAMED_LINE.findall(b)) == 2  # one a model
    assert (tmp_path / "a.html").read_text() == STREAMED_LINE.sub("", b)
