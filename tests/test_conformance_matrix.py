"""The conformance matrix, driven by the registries (scikit-learn's ``test_common.py`` is the
model): every metric family of :data:`receval.measures.registry.ENTRIES` and every
beyond-accuracy metric of :data:`receval.beyond.names.ENTRIES`, iterated (never listed by
hand), at every door -- ``evaluate`` on the numba engine, ``evaluate(engine="torch")``,
``evaluate_scores`` -- under a few option sets, on random inputs with heavy ties, empty
lists, users with nothing relevant and truth users without a row, equal to the independent
reference of tests/reference (``oracle.py``, ``beyond.py``). Where a door cannot compute a
family (what the registry entry declares: ties="average"),
the door must refuse in one line, and the reference must refuse the same cases.

A family the references do not define FAILS :func:`test_every_family_has_an_oracle`: adding
a family to a registry without its independent definition breaks CI. The matrix size is
printed by :func:`test_matrix_size` (``pytest -s``).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest
from torch_device import TORCH_DEVICE

import receval
import receval.dispatch
from receval.beyond.names import ENTRIES as BEYOND_ENTRIES
from receval.measures.entry import Entry
from receval.measures.registry import ENTRIES
from receval.options import Options

pytestmark = pytest.mark.torch_device

try:
    from tests.reference import beyond as beyond_ref
    from tests.reference import oracle
except ImportError:  # pragma: no cover - run from tests/
    from reference import beyond as beyond_ref  # type: ignore[no-redef]
    from reference import oracle  # type: ignore[no-redef]

try:
    import torch  # noqa: F401

    # every local engine of evaluate (Spark: tests/test_engine_conformance.py), then scores
    DOORS = (*(e for e in receval.dispatch.ENGINES if e != "spark"), "scores")
except ImportError:  # pragma: no cover - torch is a test dependency
    DOORS = ("numba",)

#: the option sets of the matrix (macro averages; each varies the relevance, the tie policy
#: and the empty policy)
OPTION_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "threshold3-optimistic-skip": {"relevance_threshold": 3, "ties": "optimistic",
                                   "empty": "skip"},
    "threshold4-average-exp-one": {"relevance_threshold": 4, "ties": "average",
                                   "gain": "exponential", "empty": "one"},
    "threshold2-item-known-nan": {"relevance_threshold": 2, "ties": "item",
                                  "protocol": "known", "empty": "nan"},
    # LensKit's discount, RecTools' ideal over k ranks, gdeval's ERR scale (ratings 0..5 go
    # above it)
    "threshold2-lenskit-idealk-grade4": {"relevance_threshold": 2, "discount": "log2_max2",
                                         "ideal": "k", "err_max_grade": 4,
                                         "ap_normalizer": "min_returned_relevant"},
    "threshold1-lenskit-linear-grade2.5": {"relevance_threshold": 1, "discount": "log2_max2",
                                           "gain": "linear", "err_max_grade": 2.5,
                                           "ties": "pessimistic"},
    # RBP's geometric discount; a metric no user has a value for is 0
    "threshold3-geometric-average-skip": {"relevance_threshold": 3, "discount": "geometric",
                                          "persistence": 0.7, "ties": "average",
                                          "gain": "exponential", "empty": "skip",
                                          "all_skipped": "zero"},
}
SEEDS = (0, 1)
SILENCE = ["ties", "undefined", "no-threshold", "no-match", "id-mismatch", "train-items",
           "train-overlap"]
K = 3


def sample_names(entry: Entry) -> list[str]:
    """The names the matrix asks of a family, from its registry entry alone: with a cutoff,
    the whole list where the cutoff is optional, and a parameter inside its declared range."""
    if entry.parameter is not None:
        _, default, low, high, _, _ = entry.parameter
        value = low + 0.3 * (high - low) if math.isfinite(high) else default + 1
        return [f"{entry.name}@{value:g}"]
    if entry.cutoff == "required":
        return [f"{entry.name}@{K}"]
    if entry.cutoff == "optional":
        return [f"{entry.name}@{K}", entry.name]
    return [entry.name]


FAMILY_NAMES = {entry.name: sample_names(entry) for entry in ENTRIES.values()}
BEYOND_NAMES = {name: f"{name}@{K}" for name in BEYOND_ENTRIES}


def expected_refusal(entry: Entry, door: str, options: dict[str, Any]) -> bool:
    """Where the registry entry says a door cannot compute the family."""
    return options.get("ties") == "average" and not entry.ties_average


# --- the inputs ---------------------------------------------------------------------------------


@cache
def case(seed: int) -> dict[str, Any]:
    """A score matrix with heavy ties and excluded pairs (a user with an empty list), the long
    table made from it (row-major: the ``stable`` order is the column order), a truth with
    ratings 0..5 (users with nothing relevant at a threshold), a truth user without a row in
    the matrix and truth items outside it; training rows with distinct item popularities and
    item categories (some items without)."""
    rng = np.random.default_rng(seed)
    n_users, n_items = 14, 9
    scores = (rng.integers(0, 4, (n_users, n_items)) / 2.0).astype(np.float64)
    user_ids = np.arange(n_users) * 3 + 10
    item_ids = np.sort(rng.choice(np.arange(1, 60), n_items, replace=False))
    excluded = rng.random((n_users, n_items)) < 0.3
    excluded[1] = True  # an empty list
    truth_mask = rng.random((n_users, n_items)) < 0.35
    truth_mask[2] = False  # a user whose truth is outside the matrix
    r, c = np.nonzero(truth_mask)
    truth = pd.DataFrame({"user": user_ids[r], "item": item_ids[c],
                          "rating": rng.integers(0, 6, len(r)).astype(np.float64)})
    extra = pd.DataFrame({"user": [user_ids[2], 7, 7], "item": [99, item_ids[0], 98],
                          "rating": [4.0, 5.0, 1.0]})
    truth = pd.concat([truth, extra], ignore_index=True)
    rr, cc = np.nonzero(~excluded)
    long = pd.DataFrame({"user": user_ids[rr], "item": item_ids[cc], "score": scores[rr, cc]})
    er, ec = np.nonzero(excluded)
    exclude = pd.DataFrame({"user": user_ids[er], "item": item_ids[ec]})
    # training rows: item j of the matrix has a popularity of its own (no tie in the head)
    train_rows = []
    for j, item in enumerate(item_ids[: n_items - 1]):  # the last item is cold
        users = rng.choice(user_ids, size=min(j + 1, n_users), replace=False)
        train_rows += [(int(u), int(item)) for u in users]
    train = pd.DataFrame(train_rows, columns=["user", "item"])
    cats = ["x", "y", "z", "w"]
    features = {int(i): sorted(set(rng.choice(cats, int(rng.integers(1, 3))).tolist()))
                for i in item_ids[1:]}  # the first item has no features
    return {"truth": truth, "long": long, "scores": scores, "exclude": exclude,
            "user_ids": user_ids, "item_ids": item_ids, "train": train,
            "features": features}


def run_door(door: str, seed: int, metrics: list[str], options: dict[str, Any],
             **extra: Any) -> receval.Result:
    c = case(seed)
    if door == "scores":
        return receval.evaluate_scores(c["truth"], c["scores"], metrics, exclude=c["exclude"],
                                       user_ids=c["user_ids"], item_ids=c["item_ids"],
                                       device=TORCH_DEVICE, silence=SILENCE, **options, **extra)
    engine = {} if door == "numba" else {"engine": door, "device": TORCH_DEVICE}
    return receval.evaluate(c["truth"], c["long"], metrics, silence=SILENCE, **engine,
                            **options, **extra)


def reference(seed: int, metrics: list[str], options: dict[str, Any]) -> Any:
    c = case(seed)
    truth_rows = list(c["truth"].itertuples(index=False, name=None))
    pred_rows = list(c["long"].itertuples(index=False, name=None))
    return oracle.evaluate(truth_rows, pred_rows, metrics, **options)


def close(got: float, want: float) -> bool:
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-13)


# --- the registry is covered -----------------------------------------------------------------


def test_every_family_has_an_oracle() -> None:
    """A family (or beyond-accuracy metric) without an independent definition fails here."""
    missing = []
    for samples in FAMILY_NAMES.values():
        for sample in samples:
            try:
                oracle.parse(sample)
            except ValueError:
                missing.append(sample)
    missing += [name for name in BEYOND_ENTRIES if name not in beyond_ref.DEFINED]
    assert not missing, f"no definition in tests/reference for: {', '.join(missing)}"


def test_matrix_size() -> None:
    """The size of the matrix, said (``pytest -s``): families x doors x option sets."""
    families = len(ENTRIES) + len(BEYOND_ENTRIES)
    cells = families * len(DOORS) * len(OPTION_SETS)
    print(f"\nconformance matrix: {len(ENTRIES)} families + {len(BEYOND_ENTRIES)} beyond-accuracy"
          f" metrics = {families} x {len(DOORS)} doors x {len(OPTION_SETS)} option sets = "
          f"{cells} cells, {len(SEEDS)} random cases each")
    assert families >= 35 and len(DOORS) >= 1


# --- the accuracy families: every door against the oracle ------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("option_set", list(OPTION_SETS))
def test_families_equal_the_oracle(door: str, option_set: str, seed: int) -> None:
    options = OPTION_SETS[option_set]
    computed: list[str] = []
    refused: list[str] = []
    for entry in ENTRIES.values():
        names = FAMILY_NAMES[entry.name]
        (refused if expected_refusal(entry, door, options) else computed).extend(names)
    # the reference refuses (ties="average") what the entries declare
    for entry in ENTRIES.values():
        if options.get("ties") == "average" and not entry.ties_average:
            for name in FAMILY_NAMES[entry.name]:
                with pytest.raises(oracle.OracleError):
                    reference(seed, [name], options)
    want = reference(seed, computed, options)
    got = run_door(door, seed, computed, options)
    for name in computed:
        assert close(got.summary[name], want.summary[name]), (name, got.summary[name],
                                                              want.summary[name])
    per_user = got.per_user.set_index("user")
    assert sorted(per_user.index.tolist()) == sorted(want.per_user)
    for user, values in want.per_user.items():
        for name in computed:
            if name.partition("@")[0] in ("RMSE", "MAE"):
                continue  # pooled: no per-user value to fill
            assert close(float(per_user.at[user, name]), values[name]), (name, user)
    for name in refused:  # one line that says why
        with pytest.raises(receval.ReceValError) as err:
            run_door(door, seed, [name], options)
        assert "\n" not in str(err.value) and name in str(err.value)


# --- the properties the entries declare ---------------------------------------------------


@pytest.mark.parametrize("option_set", list(OPTION_SETS))
def test_declared_bounds_and_growth_in_k(option_set: str) -> None:
    """Every entry that declares ``bounds`` keeps each defined per-user value inside them;
    every entry that declares ``grows_with_k`` never decreases from k to k + 1."""
    options = OPTION_SETS[option_set]
    usable = [e for e in ENTRIES.values() if not expected_refusal(e, "numba", options)]
    bounded = [e for e in usable if e.bounds is not None]
    growing = [e for e in usable if e.grows(Options(**options))]
    assert bounded and growing  # the declarations exist
    for seed in SEEDS:
        names = [n for e in bounded for n in FAMILY_NAMES[e.name]]
        per_user = run_door("numba", seed, names, options).per_user
        for e in bounded:
            assert e.bounds is not None
            low, high = e.bounds
            for name in FAMILY_NAMES[e.name]:
                if name in per_user:
                    values = per_user[name].dropna().to_numpy()
                    assert ((values >= low) & (values <= high)).all(), name
        ks = range(1, 7)
        names = [f"{e.name}@{k}" for e in growing for k in ks]
        per_user = run_door("numba", seed, names, options).per_user
        for e in growing:
            values = per_user[[f"{e.name}@{k}" for k in ks]].to_numpy()
            steps = np.diff(values, axis=1)
            assert (np.isnan(steps) | (steps >= 0)).all(), e.name


# --- the beyond-accuracy metrics -----------------------------------------------------------


def _lists(seed: int, options: dict[str, Any]) -> dict[object, list[object]]:
    """Each evaluated user's top-k list, ranked by the oracle's tie policy."""
    c = case(seed)
    truth = c["truth"]
    lists: dict[object, list[object]] = {}
    for user in sorted(set(truth["user"].tolist())):
        mine = c["long"][c["long"]["user"] == user]
        known = set(truth.loc[truth["user"] == user, "item"].tolist())
        rated = dict(zip(truth.loc[truth["user"] == user, "item"].tolist(),
                         truth.loc[truth["user"] == user, "rating"].tolist(), strict=True))
        threshold = options.get("relevance_threshold")
        rows = []
        for i, s in zip(mine["item"].tolist(), mine["score"].tolist(), strict=True):
            if options.get("protocol", "full") == "full" or i in known:
                rel = i in rated and (threshold is None or rated[i] >= threshold)
                # the gain too: pessimistic/optimistic order equally relevant ties by it
                gain = oracle.gain_of(rated.get(i, 0.0), rel, options.get("gain", "binary"))
                rows.append(oracle.Row(i, s, rel, float(gain)))
        lists[user] = [r.item for r in oracle.rank(rows, options.get("ties", "stable"))][:K]
    return lists


#: metrics whose undefined users are left out of the mean under empty="zero" (docs/fairness.md)
ZERO_IS_BEST = ("rND", "rKL", "rRD", "calibration", "calibration_js")

BEYOND_SETS = {name: opts for name, opts in OPTION_SETS.items()
               if opts.get("ties") != "average"}


def _check_beyond(door: str, options: dict[str, Any], seed: int, names: dict[str, str],
                  beyond: dict[str, Any] | None = None, **reference: Any) -> None:
    """Every metric of ``names`` (metric -> requested name) at ``door`` equals the reference
    (``reference``: the reference's switches matching ``beyond``)."""
    c = case(seed)
    extra: dict[str, Any] = {"train": c["train"], "item_features": c["features"]}
    if beyond is not None:
        extra["beyond"] = beyond
    got = run_door(door, seed, list(names.values()), options, **extra)
    threshold = options.get("relevance_threshold")
    truth = c["truth"]
    relevant: dict[object, set[object]] = {}
    for u, i, r in truth.itertuples(index=False, name=None):
        if threshold is None or r >= threshold:
            relevant.setdefault(u, set()).add(i)
    lists = _lists(seed, options)
    train = list(c["train"].itertuples(index=False, name=None))
    features = {i: set(v) for i, v in c["features"].items()}
    per_user = got.per_user.set_index("user")
    empty = options.get("empty", "zero")
    for metric, name in names.items():
        value, users = beyond_ref.beyond_value(metric, K, lists, train, relevant,
                                               set(truth["item"].tolist()), features,
                                               **reference)
        if metric in beyond_ref.CATALOGUE:
            want = math.nan if value is None else value
            assert close(got.summary[name], want), (name, got.summary[name], want)
            continue
        # a 0 reads as perfectly fair / calibrated: under "zero" those users are left out
        left_out = empty == "zero" and metric in ZERO_IS_BEST
        fill = math.nan if left_out else {"zero": 0.0, "one": 1.0}.get(empty, math.nan)
        filled = {u: fill if v is None else v for u, v in users.items()}
        for user, v in filled.items():
            assert close(float(per_user.at[user, name]), v), (name, user,
                                                             per_user.at[user, name], v)
        defined = [v for v in filled.values() if not math.isnan(v)]
        if empty == "nan" and any(v is None for v in users.values()):
            want = math.nan
        else:
            want = sum(defined) / len(defined) if defined else math.nan
        assert close(got.summary[name], want), (name, got.summary[name], want)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("option_set", list(BEYOND_SETS))
def test_beyond_metrics_equal_the_reference(door: str, option_set: str, seed: int) -> None:
    _check_beyond(door, BEYOND_SETS[option_set], seed, BEYOND_NAMES)


#: rND/rKL/rRD cut every 10 ranks by default: undefined on every 3-item list (checked above);
#: at fairness_step=1 every prefix of two items or more is a cut point
RANKED_FAIRNESS = {m: BEYOND_NAMES[m] for m in ("rND", "rKL", "rRD")}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("option_set", list(BEYOND_SETS))
def test_ranked_fairness_at_step_one_equals_the_reference(door: str, option_set: str,
                                                          seed: int) -> None:
    _check_beyond(door, BEYOND_SETS[option_set], seed, RANKED_FAIRNESS,
                  beyond={"fairness_step": 1}, fairness_step=1)
