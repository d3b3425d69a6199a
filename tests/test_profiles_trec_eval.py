"""trec_eval's interpolated precision: the NaN of an empty judged list (``-J``) and trec_eval
10.0's rounding of the recall levels (``profile="trec_eval10"``).

- pytrec_eval (trec_eval 9.0.8) with ``judged_docs_only_flag=True`` on random data: every
  ``iprec_at_recall_x`` and ``11pt_avg`` per query, NaN included (``m_iprec_at_recall.c``:
  ``num_rel_ret / num_ret`` with ``num_ret = 0``);
- trec_eval 10.0's own test output files (``test/out.test.*`` of usnistgov/trec_eval, tag
  v10.0, copied into tests/data/trec_eval/): every value receval computes, per topic and
  over all, under the flags of the Makefile's ``quicktest`` target.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import receval
from receval.exceptions import UndefinedMetricWarning
from receval.profiles import get

DATA = Path(__file__).parent / "data" / "trec_eval"
LEVELS = [i / 10 for i in range(11)]
IPREC = {f"iprec@{x:g}": f"iprec_at_recall_{x:.2f}" for x in LEVELS}
SILENCE = ["undefined", "ties", "no-match", "id-mismatch"]

Rows = list[tuple[Any, Any, float]]


def _run(truth: Rows, preds: Rows, metrics: list[str], **options: Any) -> receval.Result:
    t = pd.DataFrame(truth, columns=["user", "item", "rating"])
    p = pd.DataFrame(preds, columns=["user", "item", "score"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return receval.evaluate(t, p, metrics, silence=SILENCE, **options)


@st.composite
def judged_data(draw: st.DrawFn) -> tuple[Rows, Rows]:
    """Up to 4 users and 7 items; some users' returned items all unjudged (nothing left after
    -J), some with nothing relevant, some relevant items never returned."""
    n_users, n_items = draw(st.integers(1, 4)), draw(st.integers(1, 7))
    pairs = [(u, i) for u in range(n_users) for i in range(n_items)]
    t_pairs = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs),
                            unique=True))
    p_pairs = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs),
                            unique=True))
    truth = [(f"u{u}", f"i{i}", float(draw(st.sampled_from((0, 1, 2))))) for u, i in t_pairs]
    perm = draw(st.permutations(range(len(p_pairs))))
    preds = [(f"u{u}", f"i{i}", float(s) + 1) for (u, i), s in zip(p_pairs, perm, strict=True)]
    return truth, preds


def _pytrec_judged_only(truth: Rows, preds: Rows) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for u, i, r in truth:
        qrels[u][i] = int(r)
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for u, i, s in preds:
        run[u][i] = s
    ev = pytrec_eval.RelevanceEvaluator(dict(qrels), {"iprec_at_recall", "11pt_avg"},
                                        judged_docs_only_flag=True)
    return ev.evaluate(dict(run))


def _same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or abs(got - want) <= 1e-12


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(judged_data())
def test_iprec_nan_after_judged_only_matches_pytrec_eval(data: tuple[Rows, Rows]) -> None:
    """-J: a query whose returned documents are all unjudged has num_ret = 0 and trec_eval
    gives NaN at the levels asking for 0 relevant documents (iprec_at_recall_0.00 always,
    11pt_avg through it), 0 at the others; the profile's empty='nan' for iprec/11pt_avg does
    the same, the other metrics keep empty='zero'."""
    truth, preds = data
    want = _pytrec_judged_only(truth, preds)
    metrics = [*IPREC, "11pt_avg", "P@5"]
    names = {**IPREC, "11pt_avg": "11pt_avg"}
    if not want:
        return  # no query on both sides
    r = _run(truth, preds, metrics, profile="trec_eval", protocol="known")
    frame = r.per_user.set_index("user")
    assert set(frame.index) == set(want)
    for u, vals in want.items():
        for m, t in names.items():
            assert _same(float(frame.loc[u, m]), vals[t]), (u, m, frame.loc[u, m], vals[t])
    for m, t in names.items():  # trec_eval's mean: NaN as soon as one query is NaN
        assert _same(r.summary[m], float(np.mean([v[t] for v in want.values()]))), m
    assert not math.isnan(r.summary["P@5"])


def test_iprec_nan_only_under_judged_only() -> None:
    """u1 returns only unjudged items: under -J its list is empty. trec_eval: NaN at level 0
    (0/0), 0 at 0.5 (floor(0.5 x 2 + 0.9) = 1 relevant asked, never reached); receval's default
    empty='zero' gives 0, the profile NaN; without -J the list is a list of misses: 0."""
    truth = [("u1", "a", 1.0), ("u1", "b", 1.0), ("u2", "c", 1.0)]
    preds = [("u1", "x", 2.0), ("u1", "y", 1.0), ("u2", "c", 1.0)]
    want = _pytrec_judged_only(truth, preds)["u1"]
    assert math.isnan(want["iprec_at_recall_0.00"]) and want["iprec_at_recall_0.50"] == 0.0
    assert math.isnan(want["11pt_avg"])
    metrics = ["iprec@0", "iprec@0.5", "11pt_avg"]
    prof = _run(truth, preds, metrics, profile="trec_eval", protocol="known")
    u1 = prof.per_user.set_index("user").loc["u1"]
    assert math.isnan(u1["iprec@0"]) and u1["iprec@0.5"] == 0.0 and math.isnan(u1["11pt_avg"])
    assert math.isnan(prof.summary["iprec@0"])
    assert prof.options["per_metric"]["iprec@0"] == {"empty": "nan"}
    plain = _run(truth, preds, metrics, protocol="known")  # receval's default: 0, counted
    assert plain.per_user.set_index("user").loc["u1", "iprec@0"] == 0.0
    assert plain.counts["undefined"]["users"] == {"iprec@0": 1, "iprec@0.5": 0, "11pt_avg": 1}
    full = _run(truth, preds, metrics, profile="trec_eval")
    assert full.per_user.set_index("user").loc["u1"].tolist() == [0.0, 0.0, 0.0]
    assert full.counts["undefined"]["users"] == {"iprec@0": 0, "iprec@0.5": 0, "11pt_avg": 0}


def test_iprec_rounding_nearest_is_lround() -> None:
    """Ten documents d1..d10 in rank order. Relevant d2, d3, d6, d7 (R = 4), level 0.6: trec_eval
    9 asks floor(2.4 + 0.9) = 3 relevant, so the best precision from rank 6 on, max(3/6, 4/7) =
    4/7; trec_eval 10 asks lround(2.4) = 2, from rank 3 on: 2/3. Relevant d1, d2, d5, d6, d7
    (R = 5), level 0.5: x R = 2.5, lround (half away from zero) 3 as 9's floor(3.4): from rank
    5 on, max(3/5, 4/6, 5/7) = 5/7 (round-half-even would ask 2: 1.0)."""
    preds = [("q", f"d{j}", 10.0 - j) for j in range(1, 11)]
    truth_a = [("q", f"d{j}", 1.0) for j in (2, 3, 6, 7)]
    truth_b = [("q", f"d{j}", 1.0) for j in (1, 2, 5, 6, 7)]
    want = {"trec_eval": 4 / 7, "trec_eval10": 2 / 3}
    for profile, value in want.items():
        assert _run(truth_a, preds, ["iprec@0.6"], profile=profile)["iprec@0.6"] == \
            pytest.approx(value, abs=1e-15)
        assert _run(truth_b, preds, ["iprec@0.5"], profile=profile)["iprec@0.5"] == \
            pytest.approx(5 / 7, abs=1e-15)
    assert _run(truth_a, preds, ["iprec@0.6"], iprec_rounding="nearest")["iprec@0.6"] == \
        pytest.approx(2 / 3, abs=1e-15)
    with pytest.raises(receval.ReceValError, match="iprec_rounding"):
        receval.Options(iprec_rounding="floor")


def test_trec_eval10_profile() -> None:
    """trec_eval 10.0 = 9.0.8's options but double scores and lround levels."""
    p, p9 = get("trec_eval10"), get("trec_eval")
    assert get("trec-eval-10") is p
    assert p.options["score_dtype"] == "float64" and p.options["iprec_rounding"] == "nearest"
    assert "iprec_rounding" not in p9.options and p9.options["score_dtype"] == "float32"
    assert {k: v for k, v in p.options.items() if k not in ("score_dtype", "iprec_rounding")} \
        == {k: v for k, v in p9.options.items() if k != "score_dtype"}
    assert p.per_family == p9.per_family and p.pinned == p9.pinned


# --- trec_eval 10.0's own test output -------------------------------------------------------

#: trec_eval measure (before the cutoff) -> receval family and the options it needs beyond the
#: profile's (relative_P_k: hits@k / min(k, R))
CUT = {"P": ("P", {}), "recall": ("R", {}), "map_cut": ("AP", {}), "ndcg_cut": ("nDCG", {}),
       "success": ("Hit", {}), "relative_P": ("R", {"recall_denominator": "capped"}),
       "Rprec_mult": ("Rprec_mult", {}), "iprec_at_recall": ("iprec", {})}
UNCUT = {"map": "AP", "ndcg": "nDCG", "Rprec": "Rprec", "recip_rank": "RR",
         "num_rel_ret": "num_rel_ret", "11pt_avg": "11pt_avg", "bpref": "bpref"}

#: out file -> (qrels, run, receval options for the trec_eval flags), from the Makefile's
#: quicktest target of trec_eval 10.0
FILES = {
    "out.test": ("qrels.test", "results.test", {}),  # the default measures, over all only
    "out.test.a": ("qrels.test", "results.test", {}),  # -m all_trec
    "out.test.aq": ("qrels.test", "results.test", {}),  # -m all_trec -q
    "out.test.aqc": ("qrels.test", "results.trunc", {"users": "truth"}),  # -c
    "out.test.aqcM": ("qrels.test", "results.trunc", {"users": "truth", "max_list": 100}),
    "out.test.aql": ("qrels.rel_level", "results.test", {"relevance_threshold": 2}),  # -l2
    # -q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000
    # -m Rprec_mult.5.0,0.2,0.35 -m ndcg_cut.10,20,23.4 -msuccess.2,5,20 (and others)
    "out.test.meas_params": ("qrels.test", "results.test", {}),
}


def _metric(measure: str) -> tuple[str, dict[str, Any]] | None:
    if measure in UNCUT:
        return UNCUT[measure], {}
    base, _, cut = measure.rpartition("_")
    if base in CUT and cut.replace(".", "", 1).isdigit():
        family, opts = CUT[base]
        return f"{family}@{float(cut):g}" if "." in cut else f"{family}@{cut}", opts
    return None


def _read(path: Path, names: list[str]) -> pd.DataFrame:
    # trec_eval ignores what follows the sixth field (results.trunc holds "more junk at")
    rows = [line.split()[:len(names)] for line in path.read_text().splitlines() if line]
    frame = pd.DataFrame(rows, columns=names)
    last = "score" if "score" in names else "rating"
    return frame.astype({last: float})


def _printed(out: str, profile: str) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
    qrels_name, run_name, flags = FILES[out]
    qrels = _read(DATA / qrels_name, ["user", "iter", "item", "rating"])
    run = _read(DATA / run_name, ["user", "q0", "item", "rank", "score", "tag"])
    want: dict[tuple[str, str], str] = {}
    by_opts: dict[tuple, list[str]] = {}
    spec_of: dict[str, tuple[str, tuple]] = {}
    for line in (DATA / out).read_text().splitlines():
        measure, topic, printed = line.split()
        found = _metric(measure)
        if found is None or (measure == "bpref" and "aqc" in out):
            continue
        metric, opts = found
        key = tuple(sorted(opts.items()))
        want[(measure, topic)] = printed
        spec_of[measure] = (metric, key)
        if metric not in by_opts.setdefault(key, []):
            by_opts[key].append(metric)
    results = {key: receval.evaluate(qrels, run, names, profile=profile, silence=SILENCE,
                                     **flags, **dict(key))
               for key, names in by_opts.items()}
    got = {}
    for (measure, topic), printed in want.items():
        metric, key = spec_of[measure]
        r = results[key]
        value = (r.summary[metric] if topic == "all"
                 else r.per_user.set_index("user").loc[topic, metric])
        got[(measure, topic)] = f"{value:.4f}" if "." in printed else f"{value:g}"
    return got, want


@pytest.mark.parametrize("out", sorted(FILES))
def test_trec_eval10_own_test_output(out: str) -> None:
    """Every value of trec_eval 10.0's own test output that receval computes matches, to the
    4 printed decimals, with profile='trec_eval10'; with profile='trec_eval' (9.0.8's floor(x R
    + 0.9)) exactly the iprec_at_recall / 11pt_avg values that 10.0 changed differ."""
    got, want = _printed(out, "trec_eval10")
    assert got == want
    assert sum(m.startswith(("iprec", "11pt")) for m, _ in want) >= 11
    got9, _ = _printed(out, "trec_eval")
    differ = {k for k in want if got9[k] != want[k]}
    assert all(m.startswith(("iprec", "11pt")) for m, _ in differ)


def test_trec_eval10_changed_values_count() -> None:
    """The values trec_eval 10.0's rounding changed in these files (git diff v9.0.8 v10.0:
    28 iprec_at_recall / 11pt_avg lines, 2 of them 11pt_avg at custom levels, which receval
    does not compute) are exactly those profile 'trec_eval' gets otherwise: 26."""
    total = 0
    for out in FILES:
        _, want = _printed(out, "trec_eval10")
        got9, _ = _printed(out, "trec_eval")
        total += sum(got9[k] != want[k] for k in want)
    assert total == 26
