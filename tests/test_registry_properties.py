"""The properties the registry entries declare, checked for every entry of both registries
(:data:`receval.measures.registry.ENTRIES` and :data:`receval.beyond.names.ENTRIES`),
iterated when the test runs, never listed by hand: a family added later is checked the day it
is registered.

- ``bounds``: every defined value (per user and the summary) lies in the declared range, on
  random inputs with heavy ties, empty lists and users with nothing relevant, under random
  options;
- ``grows_with_k`` (:meth:`Entry.grows <receval.measures.entry.Entry.grows>`: it may depend
  on the options): a user's value never falls as ``k`` grows;
- ``order_free_ties``: shuffling the input rows (truth, predictions, training rows) changes
  no value, bit for bit, under each tie policy the entry declares (every entry of both
  registries: :data:`receval.options.ORDER_FREE_TIES`; the beyond-accuracy metrics read
  which tied items a list holds, ERR and the judged families which tied item comes first);
- every entry has an independent definition in tests/reference (``oracle.py``,
  ``beyond.py``) and declares its range: a family registered without either fails here
  (shown by planting one).

The checks are plain functions, so that a deliberately wrong declaration (planted with
``monkeypatch``) is shown to fail them.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import warnings
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

import receval
from receval.beyond import names as beyond_names
from receval.beyond.names import BeyondEntry
from receval.measures import registry
from receval.measures.entry import Entry
from receval.measures.family import Family
from receval.options import ORDER_FREE_TIES, Options

try:
    from tests.reference import beyond as beyond_ref
    from tests.reference import oracle
    from tests.reference.data import TIED_SCORES, Data, datasets, options
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference import beyond as beyond_ref  # type: ignore[no-redef]
    from reference import oracle  # type: ignore[no-redef]
    from reference.data import (  # type: ignore[no-redef]
        TIED_SCORES,
        Data,
        datasets,
        options,
    )

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
#: the empty policies that give every user a value or none (``error`` refuses the input)
EMPTY = st.sampled_from(["zero", "one", "skip", "nan"])
KS = (1, 2, 3, 5, 8)
#: three score values: most lists are one or two big tie groups
HEAVY_TIES = st.sampled_from(TIED_SCORES[:3])
#: the cutoffs of the growth checks, and the whole list last (``None``)
GROWTH_KS: tuple[int | None, ...] = (1, 2, 3, 4, 6, 8, None)
#: the beyond-accuracy switches: every prefix of two items is a cut point of rND/rKL/rRD
#: (at the default of 10 every short list is undefined, and the range check would be empty)
BEYOND = {"fairness_step": 1}


# --- the names the registry entries give -------------------------------------------------------


def names_at(entry: Entry, k: int | None) -> list[str]:
    """The names of ``entry`` at cutoff ``k`` (``None``: the whole list), from the entry
    alone: a family without a cutoff once, a parameter inside its declared range."""
    if entry.parameter is not None:
        _, default, low, high, _, _ = entry.parameter
        value = low + 0.3 * (high - low) if math.isfinite(high) else default + 1
        return [f"{entry.name}@{value:g}"]
    if entry.cutoff == "none":
        return [entry.name]
    if k is None:
        return [entry.name] if entry.cutoff == "optional" else []
    return [f"{entry.name}@{k}"]


def computable(opts: dict[str, Any]) -> list[Entry]:
    """The accuracy entries ``evaluate`` computes under ``opts`` (the judged families are
    undefined under ``ties="average"``: the registry says so)."""
    return [e for e in registry.ENTRIES.values()
            if opts.get("ties") != "average" or e.ties_average]


# --- running receval -------------------------------------------------------------------------


def evaluate(truth: list[tuple[Any, ...]], preds: list[tuple[Any, ...]], metrics: list[str],
             train: list[tuple[Any, Any]] | None = None,
             features: dict[Any, list[str]] | None = None,
             **opts: Any) -> receval.Result:
    extra: dict[str, Any] = {}
    if train is not None:
        extra = {"train": pd.DataFrame(train, columns=["user", "item"]),
                 "item_features": features, "beyond": BEYOND}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the inputs are odd on purpose
        return receval.evaluate(pd.DataFrame(truth, columns=["user", "item", "rating"]),
                                pd.DataFrame(preds, columns=["user", "item", "score"]),
                                metrics, **extra, **opts)


def evaluate_or_none(*args: Any, **kwargs: Any) -> receval.Result | None:
    """The result, or None where the input is refused because no user is selected."""
    try:
        return evaluate(*args, **kwargs)
    except receval.ReceValError as err:
        assert "no user" in str(err), err
        return None


def by_user(result: receval.Result) -> pd.DataFrame:
    """The per-user table indexed by user, in a fixed order."""
    frame = result.per_user.set_index("user")
    return frame.loc[sorted(frame.index, key=repr)]


# --- the checks --------------------------------------------------------------------------------


def check_range(result: receval.Result, name: str, bounds: tuple[float, float] | None) -> None:
    """Every defined value of ``name`` (per user, and its summary) lies in ``bounds``."""
    assert bounds is not None, f"{name}: no bounds declared"
    low, high = bounds
    values = [result.summary[name]]
    if name in result.per_user:
        values += result.per_user[name].tolist()
    bad = [v for v in values if not math.isnan(v) and not low <= v <= high]
    assert not bad, f"{name}: {bad} outside the declared range [{low}, {high}]"


def check_growth(table: pd.DataFrame, columns: list[str], what: str) -> None:
    """Along ``columns`` (ascending cutoffs) each row's defined values never fall."""
    for user, row in table[columns].iterrows():
        values = [v for v in row.tolist() if not math.isnan(v)]
        falls = [(a, b) for a, b in itertools.pairwise(values) if b < a]
        assert not falls, f"{what} is declared to grow with k but falls for user {user!r}: " \
                          f"{row.tolist()} over {columns}"


def check_same(base: receval.Result, other: receval.Result, names: list[str], what: str,
               rtol: float = 0.0) -> None:
    """The same values, per user and in the summary: bit for bit, or within ``rtol``."""
    a, b = by_user(base), by_user(other)
    assert a.index.tolist() == b.index.tolist()
    for name in names:
        x = np.append(a[name].to_numpy(), base.summary[name]) if name in a else \
            np.array([base.summary[name]])
        y = np.append(b[name].to_numpy(), other.summary[name]) if name in b else \
            np.array([other.summary[name]])
        assert np.allclose(x, y, rtol=rtol, atol=rtol, equal_nan=True), \
            f"{name} changed when the rows were shuffled ({what}): {x.tolist()} vs {y.tolist()}"


def orders(*tables: list[Any], seed: int) -> list[tuple[list[Any], ...]]:
    """The rows of ``tables`` in reverse order (every tie group reversed), then shuffled."""
    rng = random.Random(seed)
    mixed = [t[:] for t in tables]
    for t in mixed:
        rng.shuffle(t)
    return [tuple(t[::-1] for t in tables), tuple(mixed)]


# --- the accuracy families ---------------------------------------------------------------------


@SETTINGS
@given(data=datasets(), opts=options(empty=EMPTY), k=st.sampled_from(KS))
def test_every_family_lies_in_its_declared_range(data: Data, opts: dict[str, Any],
                                                 k: int) -> None:
    entries = computable(opts)
    names = {e.name: [*names_at(e, k), *names_at(e, None)] for e in entries}
    result = evaluate_or_none(data.truth, data.predictions,
                              sorted({n for ns in names.values() for n in ns}), **opts)
    if result is None:
        return
    for e in entries:
        for name in names[e.name]:
            check_range(result, name, e.bounds)


def check_families_grow(data: Data, opts: dict[str, Any]) -> int:
    """Every family declared to grow with k under ``opts`` does, per user; how many."""
    growing = [e for e in computable(opts)
               if e.cutoff != "none" and e.parameter is None and e.grows(Options(**opts))]
    columns = {e.name: [n for k in GROWTH_KS for n in names_at(e, k)] for e in growing}
    result = evaluate_or_none(data.truth, data.predictions,
                              [n for ns in columns.values() for n in ns], **opts)
    if result is not None:
        table = by_user(result)
        for name, cols in columns.items():
            check_growth(table, cols, name)
    return len(growing)


@SETTINGS
@given(data=datasets(), opts=options(empty=EMPTY))
def test_families_declared_to_grow_with_k_do(data: Data, opts: dict[str, Any]) -> None:
    assert check_families_grow(data, opts) > 0  # hits, Hit, RR... always grow


def check_families_order_free(data: Data, opts: dict[str, Any], seed: int) -> None:
    """Every family declared order-free under ``opts["ties"]`` gives the same values on
    shuffled rows."""
    names = sorted({n for e in computable(opts) if opts["ties"] in e.order_free_ties
                    for k in (KS[1], KS[3], None) for n in names_at(e, k)})
    base = evaluate_or_none(data.truth, data.predictions, names, **opts)
    if base is None:
        return
    for truth, preds in orders(data.truth, data.predictions, seed=seed):
        other = evaluate(truth, preds, names, **opts)
        check_same(base, other, names, f"ties={opts['ties']!r}")


@pytest.mark.parametrize("ties", sorted({t for e in registry.ENTRIES.values()
                                          for t in e.order_free_ties}))
@settings(SETTINGS, max_examples=20)
@given(data=datasets(scores=HEAVY_TIES), opts=options(empty=EMPTY),
       seed=st.integers(0, 2**32 - 1))
def test_order_free_families_ignore_the_row_order(ties: str, data: Data,
                                                  opts: dict[str, Any], seed: int) -> None:
    check_families_order_free(data, {**opts, "ties": ties}, seed)


# --- the beyond-accuracy metrics ---------------------------------------------------------------


@st.composite
def beyond_inputs(draw: st.DrawFn, heavy_ties: bool = False
                  ) -> tuple[Data, list[tuple[Any, Any]], dict[Any, list[str]]]:
    """A :func:`datasets` input, training rows over its users and items (and one user of
    its own) and item categories, some items without any."""
    data = draw(datasets(scores=HEAVY_TIES if heavy_ties else None))
    users = sorted({u for u, _, _ in data.truth + data.predictions}, key=repr)
    items = sorted({i for _, i, _ in data.truth + data.predictions}, key=repr)
    pairs = st.tuples(st.sampled_from([*users, users[0] if data.id_kind != "str" else "t"]),
                      st.sampled_from(items))
    train = draw(st.lists(pairs, min_size=1, max_size=20, unique=True))
    categories = st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=2,
                          unique=True)
    features = {i: draw(categories) for i in items if draw(st.integers(0, 4))}
    if not features:
        features = {items[0]: ["x"]}
    return data, train, features


def beyond_names_at(k: int) -> dict[str, str]:
    return {name: f"{name}@{k}" for name in beyond_names.ENTRIES}


def beyond_options(**fixed: Any) -> st.SearchStrategy[dict[str, Any]]:
    """The options the beyond-accuracy metrics read (the lists and the relevance)."""
    return options(empty=EMPTY, **fixed)


@SETTINGS
@given(case=beyond_inputs(), opts=beyond_options(), k=st.sampled_from(KS))
def test_every_beyond_metric_lies_in_its_declared_range(case: Any, opts: dict[str, Any],
                                                        k: int) -> None:
    data, train, features = case
    names = beyond_names_at(k)
    result = evaluate_or_none(data.truth, data.predictions, list(names.values()), train,
                              features, **opts)
    if result is None:
        return
    for metric, name in names.items():
        check_range(result, name, beyond_names.ENTRIES[metric].bounds)


def check_beyond_growth(data: Data, train: list[tuple[Any, Any]],
                        features: dict[Any, list[str]], opts: dict[str, Any]) -> None:
    growing = [e for e in beyond_names.ENTRIES.values() if e.grows_with_k]
    ks = [k for k in GROWTH_KS if k is not None]
    names = [f"{e.name}@{k}" for e in growing for k in ks]
    result = evaluate_or_none(data.truth, data.predictions, names, train, features, **opts)
    if result is None:
        return
    table = by_user(result)
    summary = pd.DataFrame([result.summary])
    for e in growing:
        columns = [f"{e.name}@{k}" for k in ks]
        check_growth(table if e.reduction == "user" else summary, columns, e.name)


@SETTINGS
@given(case=beyond_inputs(), opts=beyond_options())
def test_beyond_metrics_declared_to_grow_with_k_do(case: Any, opts: dict[str, Any]) -> None:
    check_beyond_growth(*case, opts)


@pytest.mark.parametrize("ties", sorted({t for e in beyond_names.ENTRIES.values()
                                          for t in e.order_free_ties}))
@settings(SETTINGS, max_examples=20)
@given(case=beyond_inputs(heavy_ties=True), opts=beyond_options(),
       seed=st.integers(0, 2**32 - 1))
def test_order_free_beyond_metrics_ignore_the_row_order(ties: str, case: Any,
                                                        opts: dict[str, Any],
                                                        seed: int) -> None:
    data, train, features = case
    opts = {**opts, "ties": ties}
    names = [f"{e.name}@{KS[2]}" for e in beyond_names.ENTRIES.values()
             if ties in e.order_free_ties]
    base = evaluate_or_none(data.truth, data.predictions, names, train, features, **opts)
    if base is None:
        return
    if any(w["code"] == "head-ties" for w in base.warnings):
        # the popular/long-tail cut goes through tied items, which the run warned: their side
        # follows their first appearance (tests/test_head_ties.py)
        cut = {"head_share", "tail_ratio"}
        names = [n for n in names
                 if not cut & set(beyond_names.parse_beyond(n).entry.options)]
    for truth, preds, rows, mixed in orders(data.truth, data.predictions, train,
                                            list(features.items()), seed=seed):
        other = evaluate(truth, preds, names, rows, dict(mixed), **opts)
        # diversity sums similarities in the order of the item codes (first seen, first):
        # the last bit may differ
        check_same(base, other, names, f"ties={ties!r}", rtol=1e-12)


# --- every entry is defined and declared -------------------------------------------------------


def undefined_in_the_reference() -> list[str]:
    """The registry names the independent references of tests/reference do not define."""
    missing = []
    for entry in registry.ENTRIES.values():
        for name in {n for k in (KS[2], None) for n in names_at(entry, k)}:
            try:
                oracle.parse(name)
            except ValueError:
                missing.append(name)
    missing += [n for n in beyond_names.ENTRIES if n not in beyond_ref.DEFINED]
    return sorted(missing)


def undeclared() -> list[str]:
    """The entries that do not declare their range."""
    return sorted([e.name for e in registry.ENTRIES.values() if e.bounds is None]
                  + [e.name for e in beyond_names.ENTRIES.values() if e.bounds is None])


def test_every_entry_has_an_oracle_and_declares_its_range() -> None:
    assert undefined_in_the_reference() == []
    assert undeclared() == []


def _plant(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new top-k family and a new beyond-accuracy metric, registered without an oracle
    or a declared range."""
    new = dataclasses.replace(registry.ENTRIES[Family.PRECISION], name="Novel",
                              aliases=("novel",), bounds=None)
    monkeypatch.setitem(registry.ENTRIES, "novel", new)  # type: ignore[index]
    monkeypatch.setitem(beyond_names.ENTRIES, "freshness",
                        BeyondEntry("freshness", ("freshness",), "user", ("train",),
                                    compute=beyond_names.ENTRIES["novelty"].compute))


def test_a_family_registered_without_an_oracle_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    _plant(monkeypatch)
    assert undefined_in_the_reference() == ["Novel@3", "freshness"]
    assert undeclared() == ["Novel", "freshness"]
    with pytest.raises(AssertionError):
        test_every_entry_has_an_oracle_and_declares_its_range()


# --- a wrong declaration fails the checks -------------------------------------------------------

#: one user, a tie at the top: stable and item order disagree; P@1 = 1 > P@2 = 1/2; nDCG@3 < 1
TIE = Data(truth=[("u", "a", 1.0), ("u", "c", 1.0)],
           predictions=[("u", "a", 1.0), ("u", "b", 1.0), ("u", "c", 0.5)], id_kind="str")


def test_a_wrong_declaration_fails_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above are not vacuous: precision declared to grow with k, nDCG to lie in
    [0, 0.5], and the input order under ``ties="stable"``, each fail them."""
    opts = {"ties": "item"}
    assert check_families_grow(TIE, opts) > 0
    p = registry.ENTRIES[Family.PRECISION]
    monkeypatch.setitem(registry.ENTRIES, Family.PRECISION,
                        dataclasses.replace(p, grows_with_k=True))
    with pytest.raises(AssertionError, match="P is declared to grow"):
        check_families_grow(TIE, {"ties": "stable"})
    monkeypatch.undo()

    result = evaluate(TIE.truth, TIE.predictions, ["nDCG@3"])
    check_range(result, "nDCG@3", registry.ENTRIES[Family.NDCG].bounds)
    with pytest.raises(AssertionError, match="outside the declared range"):
        check_range(result, "nDCG@3", (0.0, 0.5))

    check_families_order_free(TIE, {"ties": "item"}, seed=3)
    with pytest.raises(AssertionError, match="changed when the rows were shuffled"):
        reversed_rows = Data(TIE.truth, TIE.predictions[::-1], "str")
        base = evaluate(TIE.truth, TIE.predictions, ["P@1"], ties="stable")
        other = evaluate(reversed_rows.truth, reversed_rows.predictions, ["P@1"],
                         ties="stable")
        check_same(base, other, ["P@1"], "ties='stable'")
    assert "stable" not in ORDER_FREE_TIES and "ranx" not in ORDER_FREE_TIES
