"""Off-policy estimates of a Parquet log in partitions of requests (``memory_budget=``): every
number equal, bit for bit, to the in-memory estimate of the same files, for every estimator
declared, with tiny partitions; the spill folder removed on success and on error; what cannot
be exact refused in one line."""

from __future__ import annotations

import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.exceptions import ReceValError
from receval.offpolicy import Policy, estimate
from receval.offpolicy import streamed as streaming_offpolicy
from receval.offpolicy.declared import ENTRIES

ROOT = Path(__file__).resolve().parents[1]
ITEMS = [f"i{k}" for k in range(6)]


def _world(n: int = 120, seed: int = 0, text_ids: bool = False) -> dict[str, pd.DataFrame]:
    """A log of lists of 1 to 3 positions (so partitions reach different positions), rows
    shuffled; a probability target with prefix and slate columns, a score target, a reward
    model per (request, item, position) with rows beyond every list and for unlogged requests,
    and a logger for pbm."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.arange(5, 5 + n))  # 1 to 3 digits: text and number orders differ
    rows = []
    for r in ids:
        length = int(rng.integers(1, 4))
        shown = rng.choice(ITEMS, size=length, replace=False)
        prefix = 1.0
        for k, item in enumerate(shown, start=1):
            p = float(rng.uniform(0.2, 0.9))
            prefix *= p
            rows.append(
                {
                    "request": f"r{r}" if text_ids else int(r),
                    "item": item,
                    "position": k,
                    "reward": float(rng.integers(0, 2)),
                    "propensity": p,
                    "propensity_prefix": prefix,
                }
            )
    log = pd.DataFrame(rows)
    last = log.groupby("request")["propensity_prefix"].transform("last")
    log["propensity_slate"] = last
    log = log.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    target = log[["request", "item", "position"]].copy()
    target["probability"] = rng.uniform(0.05, 0.6, len(target))
    target = target.sort_values(["request", "position"])
    target["probability_prefix"] = target.groupby("request")["probability"].cumprod()
    target["probability_slate"] = target.groupby("request")["probability_prefix"].transform("last")
    extra = pd.DataFrame(
        {
            "request": log["request"].unique()[:5],
            "item": "unseen",
            "position": 1,
            "probability": 0.3,
        }
    )
    gone = pd.DataFrame(
        {
            "request": ["gone"] * 2 if text_ids else [1, 2],
            "item": "i0",
            "position": 1,
            "probability": 0.5,
        }
    )
    target = pd.concat([target, extra, gone], ignore_index=True).sample(frac=1.0, random_state=1)
    requests = log["request"].unique()
    scores = pd.DataFrame(
        {
            "request": np.repeat(requests, len(ITEMS)),
            "item": np.tile(ITEMS, len(requests)),
            "score": rng.normal(size=len(requests) * len(ITEMS)),
        }
    )
    grid = pd.MultiIndex.from_product(
        [requests, [*ITEMS, "unseen"], [1, 2, 3, 4]], names=["request", "item", "position"]
    ).to_frame(index=False)
    grid["prediction"] = rng.uniform(0, 1, len(grid))
    model = pd.concat(
        [
            grid,
            pd.DataFrame(
                {
                    "request": grid["request"]
                    .iloc[:3]
                    .map(lambda v: f"x{v}" if text_ids else -int(v)),
                    "item": "i1",
                    "position": 1,
                    "prediction": 0.5,
                }
            ),
        ],
        ignore_index=True,
    )
    pairs = log[["request", "item"]].drop_duplicates()
    logger = pairs.merge(pd.DataFrame({"position": [1, 2, 3]}), how="cross").assign(probability=0.3)
    return {"log": log, "target": target, "scores": scores, "model": model, "logger": logger}


def _files(world: dict[str, pd.DataFrame], folder: Path) -> dict[str, str]:
    out = {}
    for name, frame in world.items():
        path = folder / f"{name}.parquet"
        frame.to_parquet(path, index=False)
        out[name] = str(path)
    return out


OPTIONS = {"examination": [1.0, 0.6, 0.3], "shrinkage": 4.0, "clip": 5.0, "silence": "weights"}
BY_TABLE = [e for e in ENTRIES if e != "cascade_dr"]  # cascade_dr: a score target


def _same(streamed, in_memory) -> None:
    pd.testing.assert_frame_equal(streamed.table, in_memory.table, check_exact=True)
    assert streamed.sums == in_memory.sums
    options = dict(streamed.options)
    assert options.pop("partitions") >= 1
    assert options == in_memory.options


@pytest.mark.parametrize("text_ids", [False, True])
@pytest.mark.parametrize("parts", [1, 7, 40])
def test_every_estimator_equals_the_in_memory_path_bit_for_bit(
    tmp_path: Path, parts: int, text_ids: bool
) -> None:
    world = _world(text_ids=text_ids)
    files = _files(world, tmp_path)
    read = {k: pd.read_parquet(v) for k, v in files.items()}
    kwargs = {"estimators": BY_TABLE, "n_resamples": 50, "seed": 3, **OPTIONS}
    in_memory = estimate(
        read["log"],
        {"t": read["target"]},
        reward_model=read["model"],
        logger=read["logger"],
        **kwargs,
    )
    streamed = _with_parts(
        parts,
        files["log"],
        {"t": files["target"]},
        reward_model=files["model"],
        logger=files["logger"],
        **kwargs,
    )
    _same(streamed, in_memory)
    assert streamed.options["partitions"] == parts
    assert in_memory.options["reward_model_rows_dropped"] > 0
    assert (in_memory.table["target_rows_dropped"] > 0).all()
    assert (in_memory.table["support_missing"] > 0).all()
    assert np.isfinite(in_memory.table["ci_low"]).all()


@pytest.mark.parametrize("parts", [1, 9])
def test_score_targets_and_cascade_dr_equal_the_in_memory_path(tmp_path: Path, parts: int) -> None:
    world = _world(seed=4)
    files = _files(world, tmp_path)
    read = {k: pd.read_parquet(v) for k, v in files.items()}
    kwargs = {
        "estimators": ["cascade_dr", "rips", "ips", "snips", "dr", "dm"],
        "n_resamples": 30,
        "silence": "weights",
    }

    def targets() -> dict[str, Policy]:
        return {
            "s": Policy(read["scores"], "topk"),
            "soft": Policy(read["scores"], "softmax", None, 0.5),
        }

    in_memory = estimate(read["log"], targets(), reward_model=read["model"], **kwargs)
    streamed = _with_parts(parts, files["log"], targets(), reward_model=world["model"], **kwargs)
    _same(streamed, in_memory)


def test_by_groups_and_a_reward_model_per_item_equal_the_in_memory_path(tmp_path: Path) -> None:
    world = _world(seed=5)
    log = world["log"]
    log["variant"] = np.where(log["request"] % 3 == 0, "b", "a")
    files = _files(world, tmp_path)
    read = pd.read_parquet(files["log"])
    model = pd.DataFrame(
        {"item": [*ITEMS, "unseen"], "position": 1, "prediction": np.linspace(0, 1, 7)}
    )
    model = pd.concat([model.assign(position=k) for k in (1, 2, 3, 9)])
    kwargs = {"estimators": ["ips", "snips", "dr", "sndr"], "n_resamples": 40, "by": "variant"}
    in_memory = estimate(read, {"t": world["target"]}, reward_model=model, **kwargs)
    streamed = _with_parts(11, files["log"], {"t": world["target"]}, reward_model=model, **kwargs)
    _same(streamed, in_memory)
    assert in_memory.options["reward_model_rows_dropped"] == 7


def test_the_budget_chooses_the_partitions_and_the_folder_is_removed(
    tmp_path: Path, monkeypatch
) -> None:
    world = _world(seed=6)
    files = _files(world, tmp_path)
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill))
    monkeypatch.setattr(streaming_offpolicy, "ROW_BYTES", 1 << 20)  # 16 MiB: 16 rows a part
    r = estimate(files["log"], {"t": files["target"]}, n_resamples=10, memory_budget="16MiB")
    assert r.options["partitions"] > 10
    assert list(spill.iterdir()) == []
    with pytest.raises(ReceValError, match="no column 'reward'"):
        pd.read_parquet(files["log"]).drop(columns="reward").to_parquet(tmp_path / "bad.parquet")
        estimate(str(tmp_path / "bad.parquet"), {"t": files["target"]}, memory_budget="16MiB")
    assert list(spill.iterdir()) == []


def test_what_cannot_be_exact_is_refused_in_one_line(tmp_path: Path) -> None:
    world = _world(seed=7)
    files = _files(world, tmp_path)
    with pytest.raises(ReceValError, match="not a Parquet file"):
        estimate(world["log"], {"t": world["target"]}, memory_budget="1GiB")
    named = world["target"].rename(columns={"request": "req"})
    with pytest.raises(ReceValError, match="must name its requests by 'request'"):
        estimate(files["log"], {"t": named}, memory_budget="1GiB")
    with pytest.raises(ReceValError, match="memory_budget must be a size"):
        estimate(files["log"], {"t": world["target"]}, memory_budget="lots")


@pytest.mark.parametrize("ids", ["text", "digits"])
def test_the_command_line_streams_with_the_same_numbers(tmp_path: Path, ids: str) -> None:
    """Text ids, and text ids that all read as integers (the reader narrows them to int64 for
    the whole file: their order is the numbers' order, not the text's)."""
    world = _world(seed=8, text_ids=ids == "text")
    if ids == "digits":
        for frame in world.values():
            frame["request"] = frame["request"].astype(str)
    files = _files(world, tmp_path)

    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}

    def run(*extra: str) -> str:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "receval.cli",
                "offpolicy",
                "--log",
                files["log"],
                "--target",
                f"t={files['target']}",
                "--reward-model",
                files["model"],
                "-e",
                "ips,snips,dr",
                "--resamples",
                "20",
                "--format",
                "csv",
                *extra,
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run("--memory-budget", "64MiB") == run()
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "receval.cli",
            "offpolicy",
            "--log",
            files["log"],
            "--target",
            f"t={files['target']}",
            "--memory-budget",
            "x",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        env=env,
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def _with_parts(parts: int, log: str, targets: dict, **kwargs):
    """estimate(..., memory_budget=) with ``parts`` partitions whatever the budget."""
    real = streaming_offpolicy.streamed

    def forced(*args, **kw):
        return real(*args, **kw, parts=parts)

    streaming_offpolicy.streamed = forced
    try:
        return estimate(log, targets, memory_budget="1GiB", **kwargs)
    finally:
        streaming_offpolicy.streamed = real


def test_an_oracle_from_the_formula_agrees_on_a_hand_sized_log(tmp_path: Path) -> None:
    """IPS written straight from its formula: (1/n) sum_i sum_k (pi/mu) r."""
    log = pd.DataFrame(
        {
            "request": [3, 1, 2, 1],
            "item": ["a", "b", "a", "a"],
            "position": [1, 2, 1, 1],
            "reward": [1.0, 1.0, 0.0, 1.0],
            "propensity": [0.5, 0.25, 0.5, 0.4],
        }
    )
    log.to_parquet(tmp_path / "log.parquet")
    target = log[["request", "item", "position"]].assign(probability=[0.2, 0.5, 1.0, 0.8])
    r = _with_parts(
        3, str(tmp_path / "log.parquet"), {"t": target}, estimators=["ips"], n_resamples=0
    )
    oracle = math.fsum([0.2 / 0.5 * 1.0, 0.5 / 0.25 * 1.0, 0.0, 0.8 / 0.4 * 1.0]) / 3
    assert r.table["value"].tolist() == [oracle]


def test_a_log_named_by_user_and_served_at_equals_the_in_memory_path(tmp_path: Path) -> None:
    """Requests named by (user, served_at): partitioned by the user, ordered as the
    in-memory path orders the (user, served_at) pairs."""
    world = _world(seed=9)
    log = world["log"]
    log["user"] = log["request"] % 17
    log["served_at"] = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(
        log["request"], unit="h"
    )
    target = world["target"].merge(
        log[["request", "user", "served_at"]].drop_duplicates(), on="request"
    )
    log, target = log.drop(columns="request"), target.drop(columns="request")
    log.to_parquet(tmp_path / "log.parquet", index=False)
    kwargs = {"estimators": ["ips", "snips", "sips"], "n_resamples": 25, "silence": "weights"}
    in_memory = estimate(pd.read_parquet(tmp_path / "log.parquet"), {"t": target}, **kwargs)
    streamed = _with_parts(6, str(tmp_path / "log.parquet"), {"t": target}, **kwargs)
    _same(streamed, in_memory)
