"""receval.monitor: windows over served lists and delayed feedback (issue 15).

The oracles here are written from the definitions (docs/semantics.md section 14 and
receval.monitor.core): the join in plain Python loops, counts by hand, and the offline
``receval.evaluate`` on each window's joined rows.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

import receval
from receval.cli import main
from receval.exceptions import ReceValError
from receval.monitor.state import read_state

DAY = pd.Timedelta("1D")
T0 = pd.Timestamp("2024-01-01", tz="UTC")  # a Monday


def _imp(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["user", "item", "rank", "served_at"])


def _fb(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["user", "item", "value", "at"])


def _logs(seed: int = 1, days: int = 16, users: int = 25, variants: bool = False,
          delay_hours: float = 40.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    imp, fb = [], []
    for day in range(days):
        for u in range(users):
            if rng.random() < 0.3:
                continue
            s = T0 + day * DAY + pd.Timedelta(minutes=int(rng.integers(0, 24 * 60)))
            for r, i in enumerate(rng.choice(30, 5, replace=False)):
                row = (u, int(i), r + 1, s) + (("A" if u % 2 else "B"),) * variants
                imp.append(row)
                for _ in range(int(rng.integers(0, 3)) if rng.random() < 0.35 else 0):
                    fb.append((u, int(i), float(rng.integers(1, 6)),
                               s + pd.Timedelta(hours=float(rng.exponential(delay_hours)))))
    cols = ["user", "item", "rank", "served_at"] + ["variant"] * variants
    return pd.DataFrame(imp, columns=cols), _fb(fb)


# --- definitions by hand ---------------------------------------------------------------------


def test_attribution_window_edges_by_hand():
    """served_at <= at <= served_at + attribution (docs/semantics.md section 14, both ends
    included): each edge, one list per edge case."""
    s = T0 + pd.Timedelta(hours=5)
    a = pd.Timedelta("2D")
    ns = pd.Timedelta(1, "ns")
    imp = _imp([(u, 1, 1, s) for u in range(4)])
    fb = _fb([(0, 1, 1.0, s), (1, 1, 1.0, s + a - ns), (2, 1, 1.0, s + a),
              (3, 1, 1.0, s - ns)])
    m = receval.monitor(imp, fb, "P@1", window="W", attribution="2D", n_resamples=0)
    row = m.windows.iloc[0]
    # users 0, 1 and 2 judged (relevant: at s, s + 2D - 1ns and s + 2D), 3 not (before s);
    # the last event is s + 2D, so the watermark is s: the lists are still open (s < s is
    # false), user 3 is waiting
    assert (row["P@1"], row["users_evaluated"], row["users_waiting"]) == (1.0, 3, 1)
    assert not row["closed"]


def test_several_feedback_rows_the_largest_value_counts():
    imp = _imp([(1, 10, 1, T0), (1, 11, 2, T0)])
    fb = _fb([(1, 10, 2.0, T0 + DAY), (1, 10, 5.0, T0 + 2 * DAY), (1, 11, 1.0, T0 + DAY),
              (1, 11, 3.0, T0 + 9 * DAY)])  # the 3.0 comes after the attribution period
    m = receval.monitor(imp, fb, ["P@1", "P@2"], window="W", relevance_threshold=4,
                        n_resamples=0)
    assert m.windows[["P@1", "P@2"]].values.tolist() == [[1.0, 0.5]]


def test_feedback_judges_every_impression_of_the_pair_within_reach():
    """One feedback row judges the same (user, item) served on two days (both in reach)."""
    imp = _imp([(1, 10, 1, T0), (1, 10, 1, T0 + DAY)])
    fb = _fb([(1, 10, 1.0, T0 + DAY + pd.Timedelta(hours=1))])
    m = receval.monitor(imp, fb, "P@1", window="W", n_resamples=0)
    assert int(m.windows["users_evaluated"].iloc[0]) == 2


def test_min_feedback_waiting_and_unjudged_by_hand():
    """Five lists: judged items 0, 1, 2 (closed, day 0) and 1, 2 (open, day 6); min_feedback=2.

    Watermark = last event (day 6 12:00) - 3 days = day 3 12:00: day-0 lists are closed.
    """
    d6 = T0 + 6 * DAY
    imp = _imp([(u, i, i, day) for u, day in ((0, T0), (1, T0), (2, T0), (3, d6), (4, d6))
                for i in (1, 2, 3)])
    fb = _fb([(1, 1, 1.0, T0 + DAY), (2, 1, 1.0, T0 + DAY), (2, 3, 0.0, T0 + DAY),
              (3, 2, 1.0, d6), (4, 1, 0.0, d6), (4, 2, 1.0, d6 + pd.Timedelta(hours=12))])
    m = receval.monitor(imp, fb, ["P@1", "R@3"], window="W", attribution="3D",
                        min_feedback=2, relevance_threshold=1, n_resamples=0)
    row = m.windows.iloc[0]
    # counted: user 2 (P@1 1, R@3 1) and user 4 (item 1 is 0: P@1 0; R@3 1)
    assert (row["users_evaluated"], row["users_waiting"], row["users_unjudged"]) == (2, 1, 2)
    assert (row["P@1"], row["R@3"]) == (0.5, 1.0)
    assert not row["closed"]
    one = receval.monitor(imp, fb, ["P@1"], window="W", attribution="3D", n_resamples=0,
                          relevance_threshold=1, min_feedback=1)
    assert tuple(one.windows.iloc[0][["users_evaluated", "users_waiting",
                                       "users_unjudged"]]) == (4, 0, 1)
    # by default every list counts: user 0's closed list without feedback is all non-relevant
    every = receval.monitor(imp, fb, ["P@1"], window="W", attribution="3D", n_resamples=0,
                            relevance_threshold=1)
    assert tuple(every.windows.iloc[0][["users_evaluated", "users_waiting",
                                         "users_unjudged"]]) == (5, 0, 0)
    assert every.windows.iloc[0]["P@1"] == 2 / 5  # item 1 relevant for users 1 and 2 only


def test_click_log_every_served_list_counts_p_at_5_by_hand_and_offline():
    """A simulated click log (feedback only where a user clicked, p = 0.3 / rank): by default
    every served list counts once closed, so P@5 is the mean over all lists of clicks in the
    top 5 / 5 (a plain-loop oracle) and equals the offline evaluate of the same lists with
    users='predictions'. With min_feedback=1 only clicked lists count (higher P@5)."""
    rng = np.random.default_rng(19)
    imp, fb = [], []
    for day in range(7):
        for u in range(40):
            if rng.random() < 0.4:
                continue
            s = T0 + day * DAY + pd.Timedelta(minutes=int(rng.integers(0, 1440)))
            for r, i in enumerate(rng.choice(50, 5, replace=False)):
                imp.append((u, int(i), r + 1, s))
                if rng.random() < 0.3 / (r + 1):
                    fb.append((u, int(i), 1.0, s + pd.Timedelta(hours=float(rng.uniform(0, 20)))))
    imp.append((99, 0, 1, T0 + 20 * DAY))  # a late list: the first week is closed
    imp, fb = _imp(imp), _fb(fb)
    m = receval.monitor(imp, fb, "P@5", window="W", attribution="2D", n_resamples=0)
    first = m.windows.iloc[0]
    assert bool(first["closed"])
    lists: dict[str, int] = {}
    truth, preds = [], []
    clicked = {(f.user, f.item) for f in fb.itertuples()}
    for r in imp.itertuples():
        if r.served_at < T0 + 7 * DAY:
            hit = (r.user, r.item) in clicked and any(
                f.user == r.user and f.item == r.item
                and r.served_at <= f.at <= r.served_at + pd.Timedelta("2D")
                for f in fb.itertuples())
            key = f"{r.user}|{r.served_at}"
            lists[key] = lists.get(key, 0) + int(hit)
            preds.append((key, r.item, r.rank))
            truth += [(key, r.item, 1.0)] * hit
    assert sum(v > 0 for v in lists.values()) < len(lists)  # some lists got no click
    expected = sum(v / 5 for v in lists.values()) / len(lists)
    assert first["users_evaluated"] == len(lists) and first["users_unjudged"] == 0
    assert first["P@5"] == pytest.approx(expected, abs=1e-15)
    offline = receval.evaluate(pd.DataFrame(truth, columns=["user", "item", "rating"]),
                               pd.DataFrame(preds, columns=["user", "item", "rank"]),
                               "P@5", users="predictions")
    assert first["P@5"] == offline.summary["P@5"]
    clicked_only = receval.monitor(imp, fb, "P@5", window="W", attribution="2D",
                                   n_resamples=0, min_feedback=1).windows.iloc[0]
    assert clicked_only["users_unjudged"] == len(lists) - sum(v > 0 for v in lists.values())
    assert clicked_only["P@5"] > first["P@5"]


def test_times_as_text_numbers_or_naive_datetimes_are_utc():
    at = T0 + pd.Timedelta(hours=3)
    imp = _imp([(1, 1, 1, T0)])
    forms = [
        (imp, _fb([(1, 1, 1.0, at)]), {}),
        (imp, _fb([(1, 1, 1.0, "2024-01-01T04:00:00+01:00")]), {}),  # ISO text, an offset
        (imp.assign(served_at=T0.tz_localize(None)),                  # naive: UTC
         _fb([(1, 1, 1.0, at.tz_localize(None))]), {}),
        (imp, _fb([(1, 1, 1.0, int(at.timestamp()))]), {"time_unit": "s"}),
        (imp, _fb([(1, 1, 1.0, at.timestamp() + 0.0)]), {"time_unit": "s"}),
        (imp, _fb([(1, 1, 1.0, int(at.timestamp()) * 1000)]), {"time_unit": "ms"}),
        (imp, _fb([(1, 1, 1.0, at.value // 1000)]), {"time_unit": "us"}),
        (imp, _fb([(1, 1, 1.0, at.value)]), {"time_unit": "ns"}),
    ]
    states = [receval.monitor(i, fb, "P@1", n_resamples=0, **kw).counts["max_time"]
              for i, fb, kw in forms]
    assert states == [at.isoformat()] * len(forms)


def test_calendar_windows_and_origin():
    imp = _imp([(1, 1, 1, T0 + 2 * DAY), (2, 1, 1, T0 + 9 * DAY)])
    fb = _fb([(1, 1, 1.0, T0 + 2 * DAY), (2, 1, 1.0, T0 + 9 * DAY)])
    weekly = receval.monitor(imp, fb, "P@1", window="W", n_resamples=0).windows
    assert weekly["window_start"].tolist() == [T0, T0 + 7 * DAY]  # Mondays
    seven = receval.monitor(imp, fb, "P@1", window="7D", n_resamples=0).windows
    assert seven["window_start"].tolist() == [T0, T0 + 7 * DAY]  # ISO weeks: Mondays too
    two = receval.monitor(imp, fb, "P@1", window="14D", n_resamples=0).windows
    assert two["window_start"].tolist() == [pd.Timestamp("2023-12-25", tz="UTC"),
                                            pd.Timestamp("2024-01-08", tz="UTC")]  # Mondays
    epoch = receval.monitor(imp, fb, "P@1", window="3D", n_resamples=0).windows
    assert epoch["window_start"].tolist() == [T0 + 2 * DAY, T0 + 8 * DAY]  # from the epoch
    shifted = receval.monitor(imp, fb, "P@1", window="7D", origin="2024-01-03",
                              n_resamples=0).windows
    assert shifted["window_start"].tolist() == [T0 + 2 * DAY, T0 + 9 * DAY]


# --- equal to the offline evaluation ---------------------------------------------------------


def _oracle_rows(imp: pd.DataFrame, fb: pd.DataFrame, span: pd.Timedelta, min_feedback: int):
    """Per list (user, served): its impressions and judged values, by plain loops."""
    lists: dict[tuple, list] = {}
    for r in imp.itertuples(index=False):
        lists.setdefault((r.user, r.served_at), []).append(r)
    out = {}
    for key, rows in lists.items():
        judged = []
        for r in rows:
            values = [f.value for f in fb.itertuples(index=False)
                      if f.user == r.user and f.item == r.item
                      and r.served_at <= f.at < r.served_at + span]
            judged.append(max(values) if values else None)
        if sum(v is not None for v in judged) >= min_feedback:
            out[key] = (rows, judged)
    return out


@pytest.mark.parametrize("options", [
    {"relevance_threshold": 4},
    {"relevance_threshold": 3, "gain": "linear", "empty": "skip"},
    {"relevance_threshold": 4, "average": "micro"},
])
def test_each_window_equals_offline_evaluate_on_its_joined_rows(options):
    imp, fb = _logs(seed=3, days=15)
    metrics = ["P@3", "R@5", "nDCG@5", "MAP@5", "MRR"]
    m = receval.monitor(imp, fb, metrics, window="W", attribution="3D", min_feedback=1,
                        n_resamples=0, **options)
    joined = _oracle_rows(imp, fb, pd.Timedelta("3D"), 1)
    assert len(m.windows) == 3
    for _, w in m.windows.iterrows():
        truth, preds = [], []
        for (user, served), (rows, judged) in joined.items():
            if not (w["window_start"] <= served < w["window_end"]):
                continue
            key = f"{user}|{served.isoformat()}"
            for r, v in zip(rows, judged, strict=True):
                preds.append((key, r.item, r.rank))
                if v is not None:
                    truth.append((key, r.item, v))
        offline = receval.evaluate(pd.DataFrame(truth, columns=["user", "item", "rating"]),
                                   pd.DataFrame(preds, columns=["user", "item", "rank"]),
                                   metrics, silence=["undefined"], **options)
        assert {k: w[k] for k in metrics} == offline.summary  # bit for bit
        assert w["users_evaluated"] == offline.counts["users"]["evaluated"]


def test_rolling_windows_equal_offline_evaluate_on_their_joined_rows():
    imp, fb = _logs(seed=5, days=9)
    metrics = ["P@3", "nDCG@5"]
    m = receval.monitor(imp, fb, metrics, window="3D", step="1D", attribution="2D",
                        relevance_threshold=4, n_resamples=0, min_feedback=1)
    joined = _oracle_rows(imp, fb, pd.Timedelta("2D"), 1)
    # a window starts every day with lists (9 days: 9 windows), each 3 days long
    assert len(m.windows) == 9
    assert (m.windows["window_end"] - m.windows["window_start"] == 3 * DAY).all()
    assert (m.windows["window_start"].diff().dropna() == DAY).all()
    for _, w in m.windows.iterrows():
        truth, preds = [], []
        for (user, served), (rows, judged) in joined.items():
            if w["window_start"] <= served < w["window_end"]:
                key = f"{user}|{served.isoformat()}"
                preds += [(key, r.item, r.rank) for r in rows]
                truth += [(key, r.item, v) for r, v in zip(rows, judged, strict=True)
                          if v is not None]
        offline = receval.evaluate(pd.DataFrame(truth, columns=["user", "item", "rating"]),
                                   pd.DataFrame(preds, columns=["user", "item", "rank"]),
                                   metrics, relevance_threshold=4, silence=["undefined"])
        assert {k: w[k] for k in metrics} == offline.summary


def test_interval_is_the_seeded_bootstrap_of_the_per_list_values():
    imp, fb = _logs(seed=4, days=7)
    m = receval.monitor(imp, fb, ["P@3"], window="W", attribution="3D", relevance_threshold=4,
                        n_resamples=300, seed=5)
    again = receval.monitor(imp, fb, ["P@3"], window="W", attribution="3D",
                            relevance_threshold=4, n_resamples=300, seed=5)
    pd.testing.assert_frame_equal(m.windows, again.windows, check_exact=True)
    row = m.windows.iloc[0]
    assert row["P@3_ci_low"] <= row["P@3"] <= row["P@3_ci_high"]
    assert row["P@3_ci_low"] < row["P@3_ci_high"]
    other = receval.monitor(imp, fb, ["P@3"], window="W", attribution="3D",
                            relevance_threshold=4, n_resamples=300, seed=6)
    assert other.windows.iloc[0]["P@3_ci_low"] != row["P@3_ci_low"] or \
        other.windows.iloc[0]["P@3_ci_high"] != row["P@3_ci_high"]


@pytest.mark.parametrize("distinct", [2, 5000])
def test_resampled_means_have_the_bootstrap_spread(distinct):
    """Few distinct values: multinomial multiplicities; many: the index bootstrap. Either way
    the resampled means spread as sd / sqrt(n) (the bootstrap's own law)."""
    from receval.monitor.intervals import resampled_means

    values = np.arange(10_000) % distinct / distinct
    means = resampled_means(values, 4000, np.random.default_rng(0))
    expected = values.std() / math.sqrt(values.size)
    assert means.std() == pytest.approx(expected, rel=0.06)
    assert means.mean() == pytest.approx(values.mean(), abs=3 * expected / math.sqrt(4000))


# --- incremental == batch --------------------------------------------------------------------


def _daily_runs(imp, fb, tmp_path, days, feedback_lag=DAY, **kw):
    """Run day by day; each day's feedback log holds the rows dated one lag earlier (late
    delivery). After each day, compare with one batch run over the logs delivered so far."""
    state = tmp_path / "state.sqlite"
    for day in range(days + 2):
        lo, hi = T0 + day * DAY, T0 + (day + 1) * DAY
        if day == days + 1:
            hi = T0 + 1000 * DAY
        a = imp[(imp["served_at"] >= lo) & (imp["served_at"] < hi)]
        b = fb[(fb["at"] + feedback_lag >= lo) & (fb["at"] + feedback_lag < hi)]
        inc = receval.monitor(a, b, ["P@3", "nDCG@5", "MRR"], state=state, **kw)
        seen_imp = imp[imp["served_at"] < hi]
        seen_fb = fb[fb["at"] + feedback_lag < hi]
        if not len(seen_imp) and not len(seen_fb):
            continue
        batch = receval.monitor(seen_imp, seen_fb, ["P@3", "nDCG@5", "MRR"], **kw)
        pd.testing.assert_frame_equal(inc.windows, batch.windows, check_exact=True)
        pd.testing.assert_frame_equal(inc.comparisons, batch.comparisons, check_exact=True)
        assert inc.counts == batch.counts
    return inc


def test_incremental_equals_batch_bit_for_bit_with_late_feedback(tmp_path):
    imp, fb = _logs(seed=7, days=12, variants=True)
    last = _daily_runs(imp, fb, tmp_path, 12, window="W", attribution="3D", lateness="1D",
                       relevance_threshold=4, variant_col="variant", min_feedback=2,
                       n_resamples=50)
    assert last.windows["closed"].all() and len(last.comparisons)
    assert last.windows["users_evaluated"].sum() > 20


def test_incremental_equals_batch_open_windows_daily_windows(tmp_path):
    imp, fb = _logs(seed=8, days=6, delay_hours=20)
    _daily_runs(imp, fb, tmp_path, 6, window="D", attribution="2D", lateness="6h",
                relevance_threshold=3,
                empty="skip", n_resamples=20, feedback_lag=pd.Timedelta(hours=6))


def test_incremental_equals_batch_rolling_windows(tmp_path):
    imp, fb = _logs(seed=15, days=9, variants=True)
    last = _daily_runs(imp, fb, tmp_path, 9, window="4D", step="1D", attribution="2D",
                       lateness="1D", relevance_threshold=4, variant_col="variant",
                       n_resamples=30)
    assert last.windows["closed"].all() and len(last.windows) == 18


def test_feedback_after_the_watermark_is_counted_and_ignored(tmp_path):
    state = tmp_path / "s.sqlite"
    imp = _imp([(1, 1, 1, T0), (2, 1, 1, T0 + 10 * DAY)])
    first = receval.monitor(imp, _fb([(2, 1, 1.0, T0 + 10 * DAY)]), "P@1", window="W",
                            attribution="2D", state=state, n_resamples=0)
    late = receval.monitor(_imp([(3, 1, 1, T0 + DAY)]), _fb([(1, 1, 1.0, T0 + DAY)]), "P@1",
                           window="W", attribution="2D", state=state, n_resamples=0)
    assert late.counts["late_feedback_ignored"] == 1
    assert late.counts["late_impressions_ignored"] == 1
    pd.testing.assert_frame_equal(first.windows, late.windows)


# --- the state file --------------------------------------------------------------------------


def test_state_round_trip_and_parameters_checked(tmp_path):
    imp, fb = _logs(seed=9, days=5, variants=True)
    fb = fb[fb["at"] <= imp["served_at"].max()]
    state = tmp_path / "s.sqlite"
    kw = {"window": "D", "attribution": "2D", "variant_col": "variant", "n_resamples": 0,
          "relevance_threshold": 4}
    receval.monitor(imp, fb, ["P@3"], state=state, **kw)
    st = read_state(state)
    assert st.max_time == max(imp["served_at"].max(), fb["at"].max()).value
    mark = st.max_time - pd.Timedelta("2D").value
    assert (st.pending["served"] >= mark).all() and len(st.pending)
    # feedback is kept an attribution period longer (early feedback is counted at closing)
    assert (st.feedback["at"] >= mark - pd.Timedelta("2D").value).all()
    assert st.pending["user"].dtype == imp["user"].dtype
    # a second run with nothing new gives the same windows
    again = receval.monitor(imp.iloc[:0], fb.iloc[:0], ["P@3"], state=state, **kw)
    batch = receval.monitor(imp, fb, ["P@3"], **kw)
    pd.testing.assert_frame_equal(again.windows, batch.windows, check_exact=True)
    with pytest.raises(ReceValError, match="was made with window='D', this run asks "
                                           "window='W'"):
        receval.monitor(imp, fb, ["P@3"], state=state, **{**kw, "window": "W"})
    with pytest.raises(ReceValError, match="relevance_threshold"):
        receval.monitor(imp, fb, ["P@3"], state=state, **{**kw, "relevance_threshold": 3})


def test_state_refuses_to_overwrite_an_input(tmp_path):
    imp, fb = _logs(seed=9, days=2)
    path = tmp_path / "imp.parquet"
    imp.to_parquet(path)
    with pytest.raises(ReceValError, match="is the input file"):
        receval.monitor(path, fb, "P@1", state=path)
    assert pd.read_parquet(path).equals(imp)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(ReceValError, match="not a receval monitor state file"):
        receval.monitor(imp, fb, "P@1", state=tmp_path / "junk.parquet")


# --- variants and drift ----------------------------------------------------------------------


def test_variant_comparison_is_welch_on_the_per_list_values():
    # one list per user; variant A's P@1 per list: 1, 0, 1, 1; B's: 0, 0, 1
    hits = {"A": [1, 0, 1, 1], "B": [0, 0, 1]}
    imp_rows, fb_rows = [], []
    u = 0
    for variant, values in hits.items():
        for v in values:
            imp_rows.append((u, 1, 1, T0, variant))
            fb_rows.append((u, 1, float(v), T0))
            u += 1
    imp = pd.DataFrame(imp_rows, columns=["user", "item", "rank", "served_at", "variant"])
    m = receval.monitor(imp, _fb(fb_rows), "P@1", window="W", relevance_threshold=1,
                        variant_col="variant", n_resamples=200)
    row = m.comparisons.iloc[0]
    assert (row["variant"], row["baseline"], row["n"], row["baseline_n"]) == ("B", "A", 3, 4)
    assert row["delta"] == pytest.approx(1 / 3 - 3 / 4)
    expected = stats.ttest_ind(hits["B"], hits["A"], equal_var=False).pvalue
    assert row["p_value"] == pytest.approx(expected, rel=1e-12)
    assert m.windows["variant"].tolist() == ["A", "B"]


def _drop_month():
    """Four weeks; every list's P@1 is 1 except in week 3, where it is 0."""
    imp_rows, fb_rows = [], []
    for week in range(4):
        for u in range(10):
            s = T0 + week * 7 * DAY + pd.Timedelta(hours=u)
            imp_rows.append((u, 1, 1, s))
            # an hour after serving: at s itself it would also reach the list a week before
            # (s - 7D + 7D, the end of its attribution period, included)
            fb_rows.append((u, 1, 0.0 if week == 2 else 1.0, s + pd.Timedelta(hours=1)))
    return _imp(imp_rows), _fb(fb_rows)


def test_drift_flags_the_window_outside_the_reference_band():
    imp, fb = _drop_month()
    m = receval.monitor(imp, fb, "P@1", window="W", relevance_threshold=1, n_resamples=100)
    d = m.drift()
    # the reference (week 1) has every value 1: its band is [1, 1]; week 3 is 0
    assert d["flag"].tolist() == [False, False, True, False]
    assert (d["band_low"].tolist(), d["band_high"].tolist()) == ([1.0] * 4, [1.0] * 4)
    assert d["change"].tolist() == ["", "", "worse", ""]
    named = m.drift(reference="2024-01-15")  # against the bad week, the others are better:
    assert named["change"].tolist() == ["better", "better", "", "better"]
    assert not named["flag"].any()  # an improvement is no alarm (P@1: higher is better)
    with pytest.raises(ReceValError, match="reference window"):
        m.drift(reference="2024-02-15")


def _sparse_logs():
    """Week 1 (Mon 2024-01-01): three lists, no feedback; week 2: one list with a click; week
    3: ten lists, every other one clicked; a list in week 6 closes the first three weeks."""
    imp_rows, fb_rows = [], []
    for u in range(3):
        imp_rows.append((u, 1, 1, T0 + pd.Timedelta(hours=u)))
    imp_rows.append((5, 1, 1, T0 + 7 * DAY))
    fb_rows.append((5, 1, 1.0, T0 + 7 * DAY + pd.Timedelta(hours=1)))
    for u in range(10):
        s = T0 + 14 * DAY + pd.Timedelta(hours=u)
        imp_rows.append((u, 1, 1, s))
        if u % 2:
            fb_rows.append((u, 1, 1.0, s + pd.Timedelta(hours=1)))
    imp_rows.append((9, 2, 1, T0 + 40 * DAY))
    return _imp(imp_rows), _fb(fb_rows)


def test_drift_with_an_empty_reference_window_warns_or_errors():
    """Issue 19.4: the first window has no evaluated list (min_feedback=1: all unjudged)."""
    from receval.checks import EmptyReferenceWarning, silence

    imp, fb = _sparse_logs()
    m = receval.monitor(imp, fb, "P@1", window="7D", min_feedback=1, n_resamples=50)
    assert m.windows["users_evaluated"].tolist()[:3] == [0, 1, 5]
    with pytest.warns(EmptyReferenceWarning) as caught:
        d = m.drift()
    text = str(caught[0].message)
    assert "\n" not in text and "2024-01-01" in text and "reference=" in text
    assert "'2024-01-08T00:00:00+00:00'" in text  # the first window with an evaluated list
    assert not d["flag"].any()
    with pytest.raises(ReceValError, match=r"has no evaluated list.*--reference"):
        m.drift(reference="2024-01-01")
    with silence(["empty-reference"]), warnings.catch_warnings():
        warnings.simplefilter("error")
        m.drift()
        m.drift(reference="2024-01-15")  # a window with lists: no warning


def test_sparse_windows_in_the_table_and_report_say_n_a_and_n_1(tmp_path):
    """Issue 19.5: no empty cell, no "[, ]", a one-list window says n = 1, 7D windows start on
    Mondays, the report's drift table has one row per metric."""
    imp, fb = _sparse_logs()
    imp.to_csv(tmp_path / "imp.csv", index=False)
    fb.to_csv(tmp_path / "fb.csv", index=False)
    out = CliRunner().invoke(main, [
        "monitor", "-i", str(tmp_path / "imp.csv"), "--feedback", str(tmp_path / "fb.csv"),
        "-m", "P@1", "-m", "MRR", "--min-feedback", "1", "--resamples", "50",
        "--report", str(tmp_path / "m.html"), "--silence", "empty-reference"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    week1 = next(line for line in lines if "2024-01-01" in line)
    week2 = next(line for line in lines if "2024-01-08" in line)
    assert week1.count("n/a") == 4 and week2.count("n = 1") == 2 and "[" not in week2
    assert "[, ]" not in out.stdout
    assert "2023-12-28" not in out.stdout and "n = 1: one evaluated list" in out.stdout
    page = (tmp_path / "m.html").read_text()
    assert "[, ]" not in page and "<td></td>" not in page and "n = 1" in page
    drift = page[page.index("<h2>Drift</h2>"):page.index("<h2>Windows</h2>")]
    assert drift.count("<tr") == 1 + 2  # a header and one row per metric
    assert drift.count("n/a (no evaluated list in the reference)") == 2  # week 1: no band


def test_drift_rule_interval_or_value():
    # week 1: four lists all hits (band [1, 1]); week 2: hits 1, 1, 1, 0 (value 0.75, but its
    # interval reaches 1: a resample of four hits has probability 0.75^4 = 0.32)
    imp_rows, fb_rows = [], []
    for week, hits in ((0, [1, 1, 1, 1]), (1, [1, 1, 1, 0])):
        for u, h in enumerate(hits):
            s = T0 + week * 7 * DAY + pd.Timedelta(hours=u)
            imp_rows.append((u, 1, 1, s))
            fb_rows.append((u, 1, float(h), s))
    m = receval.monitor(_imp(imp_rows), _fb(fb_rows), "P@1", window="W",
                        relevance_threshold=1, n_resamples=200)
    assert m.windows["P@1_ci_high"].tolist()[1] == 1.0
    assert m.drift()["flag"].tolist() == [False, False]
    assert m.drift(rule="value")["flag"].tolist() == [False, True]
    with pytest.raises(ReceValError, match="drift rule"):
        m.drift(rule="both")


def test_plot_and_report(tmp_path):
    imp, fb = _drop_month()
    m = receval.monitor(imp, fb, ["P@1", "MRR"], window="W", relevance_threshold=1,
                        n_resamples=50)
    fig = m.plot(path=tmp_path / "drift.svg")
    assert [ax.get_ylabel() for ax in fig.axes] == ["P@1", "MRR"]
    first = (tmp_path / "drift.svg").read_bytes()
    m.plot(path=tmp_path / "drift.svg")
    assert (tmp_path / "drift.svg").read_bytes() == first
    page = m.to_html(tmp_path / "m.html")
    assert "outside" in page and "<script" not in page
    assert (tmp_path / "m.html").read_text() == page


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "message"), [
    (lambda i, f: (i.drop(columns="served_at"), f), "no column 'served_at'"),
    (lambda i, f: (i.assign(served_at=[None, *list(i["served_at"][1:])]), f),
     r"column 'served_at' has a missing time at row 0 \(value NaT; 1 bad rows\)"),
    (lambda i, f: (i, f.assign(value=["x"] + [1.0] * (len(f) - 1))),
     "column 'value' is not a number at row 0"),
    (lambda i, f: (i, f.assign(at=["yesterday"] * len(f))), "column 'at' is not a time"),
    (lambda i, f: (i.assign(rank=["a"] * len(i)), f), "column 'rank' is not a number"),
    (lambda i, f: (i.drop(columns="rank"), f), "no column 'score' or 'rank'"),
])
def test_bad_input_one_line_naming_column_row_and_count(change, message):
    imp = _imp([(1, 1, 1, T0), (1, 2, 2, T0)])
    fb = _fb([(1, 1, 1.0, T0), (1, 2, 1.0, T0)])
    imp, fb = change(imp, fb)
    with pytest.raises(ReceValError, match=message):
        receval.monitor(imp, fb, "P@1")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"window": "0D"}, "window must be positive"),
    ({"window": "soon"}, "is not a duration"),
    ({"attribution": 7}, "attribution must be a duration"),
    ({"min_feedback": 0}, "min_feedback must be a positive integer"),
    ({"window": "7D", "step": "2D"}, "must divide window"),
    ({"n_resamples": -1}, "n_resamples"),
    ({"confidence": 1.5}, "confidence"),
    ({"relevance_treshold": 4}, "unknown option"),
])
def test_bad_parameters(kwargs, message):
    imp = _imp([(1, 1, 1, T0)])
    fb = _fb([(1, 1, 1.0, T0)])
    with pytest.raises(ReceValError, match=message):
        receval.monitor(imp, fb, "P@1", **kwargs)


def test_rows_in_any_order_give_the_same_windows():
    imp, fb = _logs(seed=14, days=8)
    kw = {"window": "W", "attribution": "3D", "relevance_threshold": 4, "n_resamples": 50}
    m = receval.monitor(imp, fb, ["P@3", "MRR"], **kw)
    shuffled = receval.monitor(imp.sample(frac=1.0, random_state=3),
                               fb.sample(frac=1.0, random_state=4), ["P@3", "MRR"], **kw)
    pd.testing.assert_frame_equal(m.windows, shuffled.windows, check_exact=True)


def test_string_ids_and_ids_of_two_types_follow_receval_io():
    imp = _imp([("u1", "i1", 1, T0), ("u1", "i2", 2, T0)])
    m = receval.monitor(imp, _fb([("u1", "i2", 1.0, T0)]), "P@2", n_resamples=0)
    assert m.windows["P@2"].tolist() == [0.5]
    # integers and text: all text (receval.io.ids.align_id_types), so 7 is "7", never "007"
    imp = _imp([(7, "i1", 1, T0), (7, "i2", 2, T0)])
    m = receval.monitor(imp, _fb([("7", "i2", 1.0, T0)]), "P@2", n_resamples=0)
    assert m.windows["P@2"].tolist() == [0.5]
    m = receval.monitor(imp, _fb([("007", "i2", 1.0, T0)]), "P@2", n_resamples=0)
    assert m.windows["users_evaluated"].tolist() == [0]


def test_an_item_served_twice_in_one_list_is_named():
    imp = _imp([(7, 1, 1, T0), (7, 1, 2, T0)])
    with pytest.raises(ReceValError, match=r"item 1 served twice in one list \(user 7, "
                                           r"served_at 2024-01-01T00:00:00\+00:00\) at row 1 "
                                           r"\(1 repeated"):
        receval.monitor(imp, _fb([(7, 1, 1.0, T0)]), "P@2")
    m = receval.monitor(imp, _fb([(7, 1, 1.0, T0)]), "P@2", duplicates="first", n_resamples=0)
    assert m.windows["P@2"].tolist() == [0.5]


def test_variant_must_be_constant_within_a_list():
    imp = pd.DataFrame({"user": [1, 1], "item": [1, 2], "rank": [1, 2],
                        "served_at": [T0, T0], "variant": ["A", "B"]})
    with pytest.raises(ReceValError, match="differs within one served list"):
        receval.monitor(imp, _fb([(1, 1, 1.0, T0)]), "P@1", variant_col="variant")


@pytest.mark.parametrize(("wide", "built"), [(True, 1), (False, 0)])
def test_the_rows_list_codes_are_built_at_most_once_per_run(monkeypatch, tmp_path, wide, built):
    # a list code per row (8 bytes a row) is read by the variant check, the repeated-item
    # check and the grouping of text items, and the next state: built once when all of them
    # need it, never when none does (integer items, no variant, no state)
    from receval.monitor import kernels

    calls = []
    build = kernels._codes_per_row

    def counted(*args):
        calls.append(len(args[0]))
        return build(*args)

    monkeypatch.setattr(kernels, "_codes_per_row", counted)
    imp, fb = _logs(variants=wide)
    kw = {}
    if wide:
        imp["item"], fb["item"] = "i" + imp["item"].astype(str), "i" + fb["item"].astype(str)
        kw = {"variant_col": "variant", "state": tmp_path / "s.sqlite"}
    m = receval.monitor(imp, fb, "P@5", n_resamples=0, relevance_threshold=4, **kw)
    assert len(calls) == built and m.counts["impressions_read"] == len(imp)


# --- command line ----------------------------------------------------------------------------


def test_cli_end_to_end(tmp_path):
    imp, fb = _logs(seed=11, days=9)
    imp.to_parquet(tmp_path / "imp.parquet")
    fb.assign(at=fb["at"].map(lambda t: t.isoformat())).to_csv(tmp_path / "fb.csv",
                                                               index=False)
    args = ["monitor", "-i", str(tmp_path / "imp.parquet"), "--feedback",
            str(tmp_path / "fb.csv"), "-m", "P@3", "-m", "MRR", "--window", "W",
            "--attribution", "3D", "--relevance-threshold", "4", "--resamples", "30"]
    out = CliRunner().invoke(main, [*args, "-f", "json", "--state", str(tmp_path / "s.sqlite"),
                                    "--report", str(tmp_path / "m.html")])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["windows"]
    py = receval.monitor(imp, fb, ["P@3", "MRR"], window="W", attribution="3D",
                         relevance_threshold=4, n_resamples=30)
    assert [r["P@3"] for r in rows] == py.windows["P@3"].tolist()
    assert [r["users_waiting"] for r in rows] == py.windows["users_waiting"].tolist()
    assert (tmp_path / "m.html").exists() and (tmp_path / "s.sqlite").exists()
    table = CliRunner().invoke(main, args)
    assert table.exit_code == 0 and "users_evaluated" not in table.stdout
    assert "evaluated" in table.stdout
    csv_out = CliRunner().invoke(main, [*args, "-f", "csv"])
    assert csv_out.stdout.splitlines()[0].startswith("window_start,window_end,P@3,MRR,")
    rolling = CliRunner().invoke(main, [*args, "-f", "json", "--window", "2D", "--step", "1D"])
    py = receval.monitor(imp, fb, ["P@3", "MRR"], window="2D", step="1D", attribution="3D",
                         relevance_threshold=4, n_resamples=30)
    assert [r["MRR"] for r in json.loads(rolling.stdout)["windows"]] == py.windows["MRR"].tolist()


@pytest.mark.parametrize(("extra", "message"), [
    (["--state", "{imp}"], "is the input file"),
    (["--window", "0D"], "window must be positive"),
    (["--served-col", "when"], "no column 'when'"),
    (["--report", "{dir}/r.txt"], "--report must end in"),
])
def test_cli_bad_input_exits_2_with_one_line(tmp_path, extra, message):
    imp, fb = _logs(seed=12, days=2)
    imp.to_parquet(tmp_path / "imp.parquet")
    fb.to_parquet(tmp_path / "fb.parquet")
    extra = [e.format(imp=tmp_path / "imp.parquet", dir=tmp_path) for e in extra]
    out = CliRunner().invoke(main, ["monitor", "-i", str(tmp_path / "imp.parquet"),
                                    "--feedback", str(tmp_path / "fb.parquet"), "-m", "P@1",
                                    *extra])
    assert out.exit_code == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("error:")


def test_nan_interval_where_the_summary_is_not_a_mean():
    imp, fb = _logs(seed=13, days=3)
    m = receval.monitor(imp, fb, ["P@3"], window="W", relevance_threshold=4,
                        average="micro", n_resamples=20)
    assert math.isnan(m.windows["P@3_ci_low"].iloc[0])
