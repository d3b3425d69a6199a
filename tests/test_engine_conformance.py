"""Engine conformance: every engine gives the numba engine's numbers on the same input.

The input is a score matrix with heavy ties, short lists (excluded items), users with nothing
relevant and truth users without a row; the long table built from it (every score outside
the excluded pairs, row-major, so the ``stable`` order is the column order) goes to
``receval.evaluate`` on the numba engine, the matrix to ``receval.evaluate_scores`` on the
torch engine; the long tables also go to the Spark engine as Spark DataFrames (``local[2]``,
three partitions, so the exact merge and partitions holding one side only are exercised). Every
family, every tie policy the torch engine takes, the options one by one. Per-user values and
summaries are compared bit for bit.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from torch_device import TORCH_DEVICE

import receval
import receval.dispatch
import receval.scores
from receval.exceptions import ReceValError

pytestmark = pytest.mark.torch_device

try:
    import torch
except ImportError:  # the torch tests skip; the long-table engines (spark too) still run
    torch = None  # type: ignore[assignment]
needs_torch = pytest.mark.skipif(torch is None,
                                 reason="the torch engine needs torch (receval[torch])")

METRICS = ["P@1", "P@3", "P@25", "R@3", "R", "F1@3", "AP@3", "MAP", "nDCG@3", "nDCG", "RR@2",
           "MRR", "Hit@1", "Hit@3", "Rprec", "hits@3", "DCG@3"]
TIES = ["stable", "item", "item_ascending", "pessimistic", "optimistic", "average"]
#: engines that take a score matrix (the numba engine on the long table is the reference)
ENGINES = list(receval.scores.ENGINES)


def _case(seed: int, n_rows: int = 30, n_items: int = 12, levels: int = 4):
    rng = np.random.default_rng(seed)
    scores = (rng.integers(0, levels, (n_rows, n_items)) / 2 - 0.5).astype(np.float32)
    user_ids = np.arange(n_rows) * 3 + 100
    pool = np.arange(1, 5 * n_items + 200)
    item_ids = np.sort(rng.choice(pool, n_items, replace=False))[::-1].copy()
    excluded = rng.random((n_rows, n_items)) < 0.25
    excluded[1] = True  # a user with an empty list
    truth_mask = rng.random((n_rows, n_items)) < 0.3
    truth_mask[2] = False  # a user with no truth row in the catalog ...
    r, c = np.nonzero(truth_mask)
    ratings = rng.integers(0, 6, len(r)).astype(np.float64)
    truth = pd.DataFrame({"user": user_ids[r], "item": item_ids[c], "rating": ratings})
    extra = pd.DataFrame({"user": [user_ids[2], 7, 7], "item": [999, item_ids[0], 998],
                          "rating": [4.0, 5.0, 1.0]})  # ... items and a user without a row
    truth = pd.concat([truth, extra], ignore_index=True)
    rr, cc = np.nonzero(~excluded)
    long = pd.DataFrame({"user": user_ids[rr], "item": item_ids[cc],
                         "score": scores[rr, cc].astype(np.float64)})
    er, ec = np.nonzero(excluded)
    exclude = pd.DataFrame({"user": user_ids[er], "item": item_ids[ec]})
    return truth, scores, long, exclude, excluded, user_ids, item_ids


def _compare(a: receval.Result, b: receval.Result) -> None:
    assert list(a.summary) == list(b.summary)
    left = a.per_user.sort_values("user", kind="stable").reset_index(drop=True)
    right = b.per_user.sort_values("user", kind="stable").reset_index(drop=True)
    assert left["user"].tolist() == right["user"].tolist()
    for name in a.metrics:
        np.testing.assert_array_equal(left[name].to_numpy(), right[name].to_numpy(),
                                      err_msg=name)
        np.testing.assert_array_equal(a.summary[name], b.summary[name], err_msg=name)


def _both(engine: str, seed: int, metrics: list[str], **options):
    truth, scores, long, exclude, _, user_ids, item_ids = _case(seed)
    ref = receval.evaluate(truth, long, metrics, silence=["ties", "undefined", "no-threshold"],
                           **options)
    got = receval.evaluate_scores(truth, scores, metrics, exclude=exclude, user_ids=user_ids,
                                  item_ids=item_ids, engine=engine, device=TORCH_DEVICE,
                                  silence=["ties", "undefined", "no-threshold"], **options)
    return ref, got


@needs_torch
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("seed", [0, 1])
def test_every_family_every_tie_policy(engine: str, ties: str, seed: int) -> None:
    _compare(*_both(engine, seed, METRICS, ties=ties, relevance_threshold=2,
                    gain="exponential"))


OPTION_CASES = [
    {},
    {"relevance_threshold": "user_mean"},
    {"relevance_threshold": 3, "gain": "linear"},
    {"ap_normalizer": "relevant"},
    {"ap_normalizer": "hits"},
    {"ap_normalizer": "hits", "ties": "average"},
    {"ap_normalizer": "k"},
    {"ap_normalizer": "min_returned_relevant"},
    {"ap_normalizer": "min_returned_relevant", "ties": "average"},
    {"precision_denominator": "returned"},
    {"recall_denominator": "capped"},
    {"protocol": "known"},
    {"score_threshold": 0.4},
    {"nonpositive_scores": "irrelevant"},
    {"nonpositive_scores": "irrelevant", "protocol": "known"},
    {"truth_scope": "predicted"},
    {"users": "both"},
    {"users": "relevant", "relevance_threshold": 4},
    {"users": "predictions"},
    {"users": "union"},
    {"empty": "skip"},
    {"empty": "one"},
    {"empty": "nan"},
    {"average": "micro"},
    {"score_dtype": "float32"},
    {"item_order": "text", "ties": "item"},
    {"empty_scope": "no_relevant"},
    {"profile": "torchmetrics"},
    {"discount": "log2_max2"},
    {"discount": "log2_max2", "relevance_threshold": 2, "gain": "exponential",
     "ties": "average"},
    {"ideal": "k"},
    {"ideal": "k", "discount": "log2_max2", "ties": "average"},
    {"discount": "geometric", "persistence": 0.6},
    {"discount": "geometric", "persistence": 0.95, "ideal": "k", "ties": "average"},
]


@needs_torch
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", OPTION_CASES, ids=lambda o: ",".join(map(str, o.items())))
def test_options(engine: str, options: dict) -> None:
    _compare(*_both(engine, 3, METRICS, **options))


@needs_torch
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("grade", ["user", 4, 2.5])
def test_err_max_grade(engine: str, grade: object) -> None:
    """ERR on a fixed grade scale (gdeval's 4; 2.5 clips the ratings above it): the same bits
    on every engine."""
    _compare(*_both(engine, 6, ["ERR@3", "ERR"], err_max_grade=grade))


@needs_torch
@pytest.mark.parametrize("keep", ["first", "max"])
def test_truth_duplicates(keep: str) -> None:
    truth, scores, long, exclude, _, user_ids, item_ids = _case(4)
    truth = pd.concat([truth, truth.iloc[[0, 5]].assign(rating=[5.0, 0.0])], ignore_index=True)
    kw = {"relevance_threshold": 3, "duplicates": keep, "silence": ["ties", "undefined"]}
    ref = receval.evaluate(truth, long, METRICS, **kw)
    got = receval.evaluate_scores(truth, scores, METRICS, exclude=exclude, user_ids=user_ids,
                                  item_ids=item_ids, device=TORCH_DEVICE, **kw)
    _compare(ref, got)
    with pytest.raises(ReceValError, match="duplicate"):
        receval.evaluate_scores(truth, scores, ["P@1"], exclude=exclude, user_ids=user_ids,
                                item_ids=item_ids, device=TORCH_DEVICE)


@needs_torch
def test_sources_agree() -> None:
    """A numpy matrix, a torch tensor, a callable and a scipy.sparse exclude: one answer."""
    truth, scores, _, exclude, excluded, user_ids, item_ids = _case(5)
    kw = {"user_ids": user_ids, "item_ids": item_ids, "device": TORCH_DEVICE,
          "silence": ["ties", "no-threshold"]}
    base = receval.evaluate_scores(truth, scores, METRICS, exclude=exclude, **kw)
    tensor = torch.from_numpy(scores).to(TORCH_DEVICE)  # a model's rows live on its device
    for source in (tensor, lambda rows: tensor[rows]):
        _compare(base, receval.evaluate_scores(truth, source, METRICS, exclude=exclude, **kw))
    _compare(base, receval.evaluate_scores(truth, scores, METRICS,
                                           exclude=sp.csr_matrix(excluded), **kw))
    for batch in (1, 7):  # the blocks change nothing
        _compare(base, receval.evaluate_scores(truth, scores, METRICS, exclude=exclude,
                                               batch_size=batch, **kw))


@needs_torch
def test_boundary_ties_on_wide_rows() -> None:
    """Thousands of tied scores across every cutoff: the whole tie group is considered."""
    truth, scores, long, exclude, _, user_ids, item_ids = _case(6, n_rows=8, n_items=600,
                                                                levels=2)
    for ties in TIES:
        ref = receval.evaluate(truth, long, METRICS, ties=ties,
                               silence=["ties", "undefined", "no-threshold"])
        got = receval.evaluate_scores(truth, scores, METRICS, exclude=exclude,
                                      user_ids=user_ids, item_ids=item_ids, ties=ties,
                                      device=TORCH_DEVICE,
                                      silence=["ties", "undefined", "no-threshold"])
        _compare(ref, got)
        assert got.counts["ties_at_cutoff"] == ref.counts["ties_at_cutoff"]


@needs_torch
@pytest.mark.parametrize(("options", "metrics", "message"), [
    ({"ties": "ranx"}, ["P@1"], "ties='ranx'"),
    ({"duplicates": "keep"}, ["P@1"], "duplicates='keep'"),
    ({"not_an_option": 1}, ["P@1"], "unknown option 'not_an_option'"),
    ({"engine": "numba"}, ["P@1"], "engine 'numba'"),
])
def test_refused_with_a_clear_error(options: dict, metrics: list[str], message: str) -> None:
    truth, scores, *_ = _case(7)
    with pytest.raises(ReceValError, match=message):
        receval.evaluate_scores(truth, scores, metrics, device=TORCH_DEVICE, **options)


@needs_torch
def test_bad_scores() -> None:
    truth, scores, _, _, _, user_ids, _ = _case(8)
    truth = truth[truth["user"] >= 100]
    scores = scores.copy()
    scores[3, 4] = np.nan
    with pytest.raises(ReceValError, match=r"row 3, column 4"):
        receval.evaluate_scores(truth, scores, ["P@1"], device=TORCH_DEVICE, user_ids=user_ids)
    excluded = {"user": [user_ids[3]], "item": [4]}  # a masked score is never read
    assert receval.evaluate_scores(truth, scores, ["P@1"], device=TORCH_DEVICE, user_ids=user_ids,
                                   exclude=excluded, silence=["ties", "no-threshold"])
    with pytest.raises(ReceValError, match="no truth user is a row of scores"):
        receval.evaluate_scores(truth, scores, ["P@1"], device=TORCH_DEVICE)
    with pytest.raises(ReceValError, match="user_ids= and item_ids="):
        receval.evaluate_scores(truth, lambda rows: rows, ["P@1"], device=TORCH_DEVICE)
    with pytest.raises(ReceValError, match="user_ids has 2 ids for 30 rows"):
        receval.evaluate_scores(truth, scores, ["P@1"], device=TORCH_DEVICE, user_ids=[1, 2])


#: every engine of receval.evaluate (long tables), from its table: a new one is tested here
LONG_ENGINES = list(receval.dispatch.ENGINES)


@pytest.fixture(scope="module")
def spark(spark):
    """The run's Spark session (tests/conftest.py: a skip without pyspark or Java), for the
    Spark engine's cases only; the frames sent to it are dropped after the module."""
    yield spark
    _FRAMES.clear()


_FRAMES: dict[int, tuple[pd.DataFrame, object]] = {}  # pandas frame id -> (it, Spark frame)


def _frame(session, frame: pd.DataFrame):
    """``frame`` in Spark, sent once per module (the cases share their inputs)."""
    if id(frame) not in _FRAMES:
        _FRAMES[id(frame)] = (frame, session.createDataFrame(frame).cache())
    return _FRAMES[id(frame)][1]


def _run_long(engine: str, truth: pd.DataFrame, long: pd.DataFrame, metrics: list[str],
              request: pytest.FixtureRequest, **kw) -> receval.Result:
    """``receval.evaluate`` on ``engine``; Spark gets Spark DataFrames (the rows' order is the
    frames' order) and its per-user values are collected for the comparison."""
    if engine == "torch" and torch is None:
        pytest.skip("the torch engine needs torch (receval[torch])")
    if engine != "spark":
        return receval.evaluate(truth, long, metrics, engine=engine, **kw)
    session = request.getfixturevalue("spark")
    got = receval.evaluate(_frame(session, truth), _frame(session, long), metrics,
                           engine="spark", spark_options={"partitions": 3}, **kw)
    got.per_user = got.per_user_pandas()
    return got


@functools.cache
def _long_case(seed: int):
    """A long table of predictions with heavy ties, repeated rows and a predictions-only
    user, from :func:`_case` (one pair of frames per seed: never modified in place)."""
    truth, _, long, *_ = _case(seed)
    rng = np.random.default_rng(seed)
    long = long.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # input order
    long = pd.concat([long, pd.DataFrame({"user": [5], "item": [1], "score": [0.5]})],
                     ignore_index=True)
    truth = truth.assign(rating=truth["rating"] + rng.integers(0, 2, len(truth)) / 2)
    return truth, long


@pytest.mark.parametrize("engine", LONG_ENGINES)
@pytest.mark.parametrize("options", [
    *({"ties": t} for t in [*TIES, "ranx"]),
    *OPTION_CASES,
    {"duplicates": "keep"},
    {"relevance_threshold": 2, "gain": "exponential", "ties": "average"},
], ids=lambda o: ",".join(map(str, o.items())))
def test_long_tables(engine: str, options: dict, request: pytest.FixtureRequest) -> None:
    """``receval.evaluate(..., engine=E)`` gives the numba engine's numbers, bit for bit."""
    truth, long = _long_case(9)
    metrics = [*METRICS, "RMSE", "MAE"]
    kw = {"silence": ["ties", "undefined", "no-threshold"], **options}
    if options.get("duplicates") == "keep":
        long = pd.concat([long, long.iloc[[0, 3]]], ignore_index=True)
    ref = receval.evaluate(truth, long, metrics, engine="numba", **kw)
    got = _run_long(engine, truth, long, metrics, request, **kw)
    _compare(ref, got)
    assert got.counts == ref.counts
    assert got.options["engine"] == engine


@needs_torch
def test_long_table_duplicates_under_torch() -> None:
    truth, long = _long_case(10)
    long = pd.concat([long, long.iloc[[2]]], ignore_index=True)
    with pytest.raises(ReceValError, match="duplicate"):
        receval.evaluate(truth, long, ["P@1"], engine="torch")
    kw = {"duplicates": "max", "silence": ["ties", "no-threshold"]}
    _compare(receval.evaluate(truth, long, METRICS, **kw),
             receval.evaluate(truth, long, METRICS, engine="torch", **kw))
