"""``receval.monitor(..., memory_budget=)`` and ``receval monitor --memory-budget``: Parquet
logs read in pieces of time give the monitor of the whole logs bit for bit (windows with their
intervals, comparisons, decisions, counts), however many pieces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from test_monitor import _logs

import receval
from receval.cli import main
from receval.exceptions import ReceValError
from receval.monitor import streamed


def _parquet(frame: pd.DataFrame, path: Path, text_ids: bool = False) -> Path:
    if text_ids:  # users 'u7'; items '7' (all canonical: narrowed) and one '007' in the file
        frame = frame.assign(user="u" + frame["user"].astype(str), item=frame["item"].astype(str))
        frame.loc[frame.index[-1], "item"] = "007"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=40)
    return path


def _same(whole: Any, parts: Any) -> None:
    counts = dict(parts.counts)
    how = counts.pop("streaming")
    assert how["mode"] == "time pieces"
    assert counts == whole.counts
    for name in ("windows", "comparisons", "decisions"):
        pd.testing.assert_frame_equal(getattr(parts, name), getattr(whole, name), check_exact=True)


@pytest.mark.parametrize("count", [1, 3, 11, 40])
@pytest.mark.parametrize("text_ids", [False, True])
def test_pieces_give_the_bits_of_one_run(
    tmp_path: Path, count: int, text_ids: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    imp, fb = _logs(seed=7, days=12, variants=True)
    i = _parquet(imp, tmp_path / "imp.parquet", text_ids)
    f = _parquet(fb, tmp_path / "fb.parquet", text_ids)
    kw: dict[str, Any] = dict(
        window="W",
        attribution="3D",
        lateness="1D",
        relevance_threshold=4,
        variant_col="variant",
        min_feedback=2,
        n_resamples=50,
    )
    whole = receval.monitor(str(i), str(f), ["P@3", "nDCG@5", "MRR"], **kw)
    real = streamed.pieces
    monkeypatch.setattr(
        streamed, "pieces", lambda *a, **k: real(*a, **{**k, "count": count, "chunk_rows": 17})
    )
    parts = receval.monitor(str(i), str(f), ["P@3", "nDCG@5", "MRR"], memory_budget="64MiB", **kw)
    assert parts.counts["streaming"]["partitions"] == count
    assert whole.windows["users_evaluated"].sum() > 20 and len(whole.comparisons)
    _same(whole, parts)


def test_rolling_windows_and_feedback_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    imp, fb = _logs(seed=15, days=9, variants=True, delay_hours=20)
    early = fb.iloc[::7].assign(at=fb["at"].iloc[::7] - pd.Timedelta("2D"))  # before serving
    fb = pd.concat([fb, early], ignore_index=True)
    i = _parquet(imp, tmp_path / "imp.parquet")
    f = _parquet(fb, tmp_path / "fb.parquet")
    kw: dict[str, Any] = dict(
        window="4D",
        step="1D",
        attribution="2D",
        relevance_threshold=4,
        variant_col="variant",
        n_resamples=30,
    )
    whole = receval.monitor(str(i), str(f), ["P@3", "MRR"], **kw)
    assert whole.counts["impressions_with_feedback_before_serving"] > 0
    real = streamed.pieces
    monkeypatch.setattr(
        streamed, "pieces", lambda *a, **k: real(*a, **{**k, "count": 9, "chunk_rows": 50})
    )
    _same(whole, receval.monitor(str(i), str(f), ["P@3", "MRR"], memory_budget="64MiB", **kw))


def test_refusals_in_one_line(tmp_path: Path) -> None:
    imp, fb = _logs(seed=1, days=3)
    i = _parquet(imp, tmp_path / "imp.parquet")
    csv = tmp_path / "fb.csv"
    fb.to_csv(csv, index=False)
    with pytest.raises(ReceValError, match="streams Parquet logs"):
        receval.monitor(str(i), str(csv), ["P@3"], memory_budget="64MiB")
    with pytest.raises(ReceValError, match="streams Parquet logs"):
        receval.monitor(imp, fb, ["P@3"], memory_budget="64MiB")
    with pytest.raises(ReceValError, match="state"):
        receval.monitor(str(i), str(i), ["P@3"], memory_budget="64MiB", state=tmp_path / "s.sqlite")
    with pytest.raises(ReceValError, match="memory_budget must be"):
        receval.monitor(str(i), str(i), ["P@3"], memory_budget="lots")


def test_cli_monitor_memory_budget(tmp_path: Path) -> None:
    imp, fb = _logs(seed=3, days=6)
    i = _parquet(imp, tmp_path / "imp.parquet")
    f = _parquet(fb, tmp_path / "fb.parquet")
    runner = CliRunner()
    base = [
        "monitor",
        "-i",
        str(i),
        "--feedback",
        str(f),
        "-m",
        "P@3",
        "--window",
        "D",
        "--format",
        "json",
        "--resamples",
        "20",
    ]
    plain = runner.invoke(main, base)
    parts = runner.invoke(main, [*base, "--memory-budget", "64MiB"])
    assert plain.exit_code == 0, plain.output
    assert parts.exit_code == 0, parts.output
    got = json.loads(parts.stdout)
    assert got["counts"].pop("streaming")["mode"] == "time pieces"
    assert got == json.loads(plain.stdout)
    bad = runner.invoke(main, [*base, "--memory-budget", "lots"])
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1, bad.output
