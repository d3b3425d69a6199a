"""The registry of metric families: names and parsing from the entries, the picture a set of
metrics needs, :func:`compute` in any array namespace, and the two families added through it
(``hits@k`` and ``DCG@k``) against ranx and the oracle."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from receval.measures.family import Family
from receval.measures.registry import ENTRIES, compute, cutoffs_needed, needs, wants_parts
from receval.measures.spec import ALIASES, parse_metric, parse_metrics
from receval.options import OPTION_NAMES, Options
from receval.picture import empty_picture

try:
    from tests.reference.data import datasets, options
    from tests.test_oracle import SETTINGS, check
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference.data import datasets, options
    from test_oracle import SETTINGS, check


# --- the entries ------------------------------------------------------------------------------


def test_every_family_has_one_entry_and_aliases_are_unique():
    assert set(ENTRIES) == set(Family)
    seen: dict[str, Family] = {}
    for family, e in ENTRIES.items():
        assert e.family is family
        for alias in e.aliases:
            assert alias == alias.lower()
            assert alias not in seen, f"{alias!r} names {seen.get(alias)} and {family}"
            seen[alias] = family
    assert seen == ALIASES


def test_entries_name_real_options_and_picture_fields():
    picture_fields = set(vars(empty_picture(1, np.array([1]))))
    for e in ENTRIES.values():
        assert set(e.options) <= set(OPTION_NAMES), e.name
        assert set(e.reads) <= picture_fields, e.name
        assert e.reduction in ("mean", "pooled", "geometric", "sum")
        assert e.cutoff in ("required", "optional", "none")


def test_parsing_follows_the_entries():
    assert parse_metric("hits@5").family is Family.HITS
    assert parse_metric("Hits").k is None
    assert parse_metric("dcg@3").family is Family.DCG
    assert parse_metric("DCG").canonical == "DCG"
    assert parse_metric("hits@10").canonical == "hits@10"
    with pytest.raises(receval.ReceValError, match="takes no cutoff"):
        parse_metric("RMSE@5")
    with pytest.raises(receval.ReceValError, match="needs a cutoff"):
        parse_metric("P")


def test_cutoffs_and_fields_needed():
    specs = parse_metrics(["P@10", "nDCG@5", "MRR", "Rprec", "RMSE", "hits@3"])
    assert cutoffs_needed(specs, Options()) == [0, 3, 5, 10]
    assert cutoffs_needed(parse_metrics(["Rprec", "MAE"]), Options()) == []
    fields = needs(specs, Options())
    assert {"hits", "dcg", "idcg", "rr_sum", "hits_at_r", "sq_err"} <= fields
    assert "ap_sum" not in fields and "first" not in fields
    ap = parse_metrics(["AP@5"])
    assert "ap_over_hits" not in needs(ap, Options(ap_normalizer="hits"))
    assert "ap_over_hits" in needs(ap, Options(ties="average", ap_normalizer="hits"))
    assert not wants_parts(specs[:3], Options())
    assert wants_parts(specs[:3], Options(average="micro")) and wants_parts(specs, Options())


# --- compute ----------------------------------------------------------------------------------


def _picture(n_users: int, cutoffs: list[int], seed: int = 0):
    rng = np.random.default_rng(seed)
    pic = empty_picture(n_users, np.array(cutoffs))
    pic.n_relevant[:] = rng.integers(0, 4, n_users)
    pic.n_list[:] = rng.integers(0, 12, n_users)
    for name in ("hits", "ap_sum", "dcg", "idcg", "first", "rr_sum"):
        getattr(pic, name)[:] = rng.integers(0, 3, (n_users, len(cutoffs))).astype(float)
    pic.hits_at_r[:] = rng.integers(0, 3, n_users)
    pic.sq_err[:] = rng.random(n_users) * 4
    pic.abs_err[:] = rng.random(n_users) * 2
    pic.n_pairs[:] = rng.integers(0, 3, n_users)
    pic.gain_shift[:] = rng.integers(0, 2, n_users)
    return pic


ALL = ["P@2", "R@2", "R", "F1@2", "F0.5@5", "AP@5", "MAP", "Rprec", "nDCG@2", "nDCG", "RR@5",
       "MRR", "Hit@2", "Hit", "RMSE", "MAE", "hits@2", "hits", "DCG@5", "DCG"]


def test_compute_reads_the_picture_column_of_each_cutoff():
    pic = _picture(50, [0, 2, 5])
    out = compute(pic, parse_metrics(["P@2", "P@5", "hits", "R"]), Options())
    assert np.array_equal(out.value[:, 0], pic.hits[:, 1] / 2)
    assert np.array_equal(out.value[:, 1], pic.hits[:, 2] / 5)
    assert np.array_equal(out.value[:, 2], pic.hits[:, 0])
    has = pic.n_relevant > 0
    assert np.array_equal(out.value[has, 3], pic.hits[has, 0] / pic.n_relevant[has])
    assert np.isnan(out.value[~has, 3]).all()
    assert out.num.shape == (0, 4)


def test_compute_parts_and_den2():
    pic = _picture(30, [0, 2, 5])
    out = compute(pic, parse_metrics(["F1@2", "P@2"]), Options(), parts=True)
    assert np.array_equal(out.den2[:, 0], pic.n_relevant.astype(float))
    assert (out.den2[:, 1] == 0).all()
    assert np.array_equal(out.num[:, 1], pic.hits[:, 1])


def test_dcg_scales_back_by_the_gain_shift():
    pic = _picture(20, [0, 5])
    out = compute(pic, parse_metrics(["DCG@5"]), Options())
    assert np.array_equal(out.value[:, 0], pic.dcg[:, 1] * 2.0**pic.gain_shift)


def test_compute_on_torch_gives_the_numpy_numbers():
    """The families run on torch tensors (the torch engine's pictures) unchanged."""
    torch = pytest.importorskip("torch")
    pic = _picture(200, [0, 2, 5], seed=3)
    on_torch = empty_picture(200, torch.tensor([0, 2, 5]), xp=torch)
    for name, value in vars(pic).items():
        if value is not None and name != "cutoffs":
            setattr(on_torch, name, torch.from_numpy(value.copy()))
    for opts in (Options(), Options(precision_denominator="returned", ap_normalizer="k",
                                    recall_denominator="capped", average="micro")):
        want = compute(pic, parse_metrics(ALL), opts, parts=True)
        got = compute(on_torch, parse_metrics(ALL), opts, parts=True)
        assert isinstance(got.value, torch.Tensor)
        for a, b in zip(want, got, strict=True):  # torch's sqrt may differ in the last bit
            np.testing.assert_allclose(b.numpy(), a, rtol=1e-15, atol=0)


# --- hits@k and DCG@k against ranx -----------------------------------------------------------


def _random_run(seed: int):
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for u in range(int(rng.integers(3, 40))):
        items = rng.choice(60, size=int(rng.integers(1, 25)), replace=False)
        qrels[f"q{u}"] = {f"d{i}": int(rng.integers(0, 4)) for i in items[: len(items) // 2 + 1]}
        ranked = rng.choice(60, size=int(rng.integers(1, 30)), replace=False)
        scores = rng.permutation(len(ranked)) + rng.random()  # distinct: no tie to break
        run[f"q{u}"] = {f"d{i}": float(s) for i, s in zip(ranked, scores, strict=True)}
    return qrels, run


@pytest.mark.parametrize("seed", range(8))
def test_hits_and_dcg_agree_with_ranx(seed):
    ranx = pytest.importorskip("ranx")
    qrels, run = _random_run(seed)
    truth = [(q, d, float(r)) for q, docs in qrels.items() for d, r in docs.items()]
    preds = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    names = ["hits@1", "hits@5", "hits@10", "hits", "DCG@1", "DCG@3", "DCG@10", "DCG"]
    ranx_names = ["hits@1", "hits@5", "hits@10", "hits", "dcg@1", "dcg@3", "dcg@10", "dcg"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = receval.evaluate(
            {"user": [t[0] for t in truth], "item": [t[1] for t in truth],
             "rating": [t[2] for t in truth]},
            {"user": [p[0] for p in preds], "item": [p[1] for p in preds],
             "score": [p[2] for p in preds]},
            names, relevance_threshold=1, gain="linear")
        want = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), ranx_names, return_mean=False,
                             make_comparable=True)
    per_user = got.per_user.set_index("user")
    order = list(ranx.Qrels(qrels).keys())
    for name, rname in zip(names, ranx_names, strict=True):
        np.testing.assert_allclose(per_user.loc[order, name].to_numpy(), want[rname],
                                   rtol=1e-12, atol=1e-12, err_msg=name)
        assert math.isclose(got.summary[name], float(np.mean(want[rname])), rel_tol=1e-12,
                            abs_tol=1e-12)


# --- hits@k and DCG@k against the oracle ------------------------------------------------------

NEW = ["hits@1", "hits@3", "hits", "DCG@2", "DCG", "P@3", "nDCG@2"]


@SETTINGS
@given(data=datasets(), opts=options())
def test_hits_and_dcg_agree_with_the_oracle(data, opts):
    check(data, NEW, **opts)


@settings(SETTINGS, max_examples=30)
@given(data=datasets(), opts=options(ties="average", gain=st.sampled_from(["linear",
                                                                         "exponential"])))
def test_hits_and_dcg_average_ties_agree_with_the_oracle(data, opts):
    check(data, NEW, **opts)
