"""receval.monitor left running (issue 20): the state file as a SQLite database (one writer,
a checksum, replayed batches applied once), late feedback counted and written out, every list
accounted for, times in a declared unit and range, ids by receval.io's policy.

Expected values come from the definitions (receval.monitor.core) worked by hand, or from one
batch run over the same logs (the incremental runs must equal it).
"""

from __future__ import annotations

import json
import sqlite3
import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import receval
from receval.cli import main
from receval.exceptions import ReceValError
from receval.monitor.state import (
    StateFileError,
    checksum,
    from_ipc,
    open_state,
    read_state,
    to_ipc,
)

DAY = pd.Timedelta("1D")
T0 = pd.Timestamp("2024-01-01", tz="UTC")  # a Monday
KW = {"window": "W", "attribution": "2D", "n_resamples": 0}


def _imp(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["user", "item", "rank", "served_at"])


def _fb(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["user", "item", "value", "at"])


def _days(seed: int, days: int, users: int = 6) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """One (impressions, feedback) pair per day: lists of 3 items, feedback up to 30 h later,
    delivered with the next day's logs."""
    rng = np.random.default_rng(seed)
    imp, fb = [], []
    for day in range(days):
        for u in range(users):
            if rng.random() < 0.4:
                continue
            s = T0 + day * DAY + pd.Timedelta(minutes=int(rng.integers(0, 24 * 60)))
            for r, i in enumerate(rng.choice(12, 3, replace=False)):
                imp.append((u, int(i), r + 1, s))
                if rng.random() < 0.4:
                    fb.append((u, int(i), float(rng.integers(0, 3)),
                               s + pd.Timedelta(minutes=int(rng.integers(0, 30 * 60)))))
    imp_f, fb_f = _imp(imp), _fb(fb)
    out = []
    for day in range(days + 1):
        lo, hi = T0 + day * DAY, T0 + (day + 1) * DAY
        out.append((imp_f[(imp_f["served_at"] >= lo) & (imp_f["served_at"] < hi)],
                    fb_f[(fb_f["at"] + DAY >= lo) & (fb_f["at"] + DAY < hi)]))
    return out


# --- one writer at a time ----------------------------------------------------------------------


def test_two_concurrent_runs_on_one_state_lose_no_list(tmp_path):
    """Two runs at once on one state file, each day: one feeds the even users' logs, the
    other the odd users'. Every list ends up in the state (before: both exited 0 and the last
    writer's state replaced the other's)."""
    days = _days(seed=3, days=8)
    kw = {**KW, "lateness": "1D", "relevance_threshold": 1}
    state = tmp_path / "s.sqlite"
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run(part: int) -> None:
        try:
            for imp, fb in days:
                barrier.wait(timeout=60)  # both start the day's run together
                receval.monitor(imp[imp["user"] % 2 == part], fb[fb["user"] % 2 == part],
                                ["P@3"], state=state, **kw)
        except BaseException as err:  # reported below
            errors.append(err)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(p,)) for p in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    imp = pd.concat([d[0] for d in days])
    fb = pd.concat([d[1] for d in days])
    batch = receval.monitor(imp, fb, ["P@3"], **kw)
    final = receval.monitor(imp.iloc[:0], fb.iloc[:0], ["P@3"], state=state, **kw)
    pd.testing.assert_frame_equal(final.windows, batch.windows, check_exact=True)
    assert final.counts["impressions_read"] == len(imp)


def test_a_second_run_waits_for_the_lock_then_fails_with_one_line(tmp_path):
    state = tmp_path / "s.sqlite"
    imp, fb = _days(seed=4, days=2)[0]
    locked = pytest.raises(StateFileError, match=r"^state '.*s\.sqlite' is locked by another "
                                                 r"receval monitor run \(waited 0\.2 s\)")
    with open_state(state), locked:  # another run holds the write lock
        receval.monitor(imp, fb, "P@1", state=state, lock_timeout=0.2, **KW)
    out = receval.monitor(imp, fb, "P@1", state=state, lock_timeout=0.2, **KW)
    assert out.counts["impressions_read"] == len(imp)


def test_a_second_run_waits_while_the_first_holds_the_lock(tmp_path):
    state = tmp_path / "s.sqlite"
    imp, fb = _days(seed=4, days=2)[0]
    held, release = threading.Event(), threading.Event()

    def first() -> None:
        with open_state(state):
            held.set()
            release.wait(timeout=60)

    holder = threading.Thread(target=first)
    holder.start()
    held.wait(timeout=60)
    threading.Timer(0.3, release.set).start()
    out = receval.monitor(imp, fb, "P@1", state=state, lock_timeout=60, **KW)
    holder.join()
    assert release.is_set() and out.counts["impressions_read"] == len(imp)


# --- a damaged or hand-edited state is refused ------------------------------------------------


def _state_with_values(tmp_path):
    state = tmp_path / "s.sqlite"
    # lists at T0 and T0 + 1D close (watermark T0 + 2D) in a window still open
    imp = _imp([(1, 1, 1, T0), (1, 2, 2, T0), (2, 1, 1, T0 + DAY), (3, 1, 1, T0 + 4 * DAY)])
    fb = _fb([(1, 2, 1.0, T0), (2, 1, 1.0, T0 + DAY)])
    receval.monitor(imp, fb, ["P@1", "MRR"], state=state, **KW)
    return state


def _edit(state, meta=None, rows=None, fix_checksum=True):
    """Change the stored payload by hand; with ``fix_checksum`` the checksum is recomputed
    (a careful editor), so the content checks must catch it."""
    con = sqlite3.connect(state)
    stored = dict(con.execute("SELECT key, value FROM receval_monitor"))
    m, r = bytes(stored["meta"]), bytes(stored["rows"])
    if meta is not None:
        doc = json.loads(m)
        meta(doc)
        m = json.dumps(doc).encode()
    if rows is not None:
        r = to_ipc(rows(from_ipc(r)))
    batches = [h for (h,) in con.execute("SELECT hash FROM applied_batches")]
    values = {"meta": m, "rows": r}
    if fix_checksum:
        values["checksum"] = checksum(m, r, batches).encode()
    con.executemany("UPDATE receval_monitor SET value = ? WHERE key = ?",
                    [(v, k) for k, v in values.items()])
    con.commit()
    con.close()


def _set_column(name, make):
    def edit(table):
        return table.set_column(table.schema.get_field_index(name), name, make(table))
    return edit


DAMAGE = {
    "bad kind code": (None, _set_column("kind", lambda t: pa.array(
        [7, *t.column("kind").to_pylist()[1:]], pa.int8())),
        r"has a row kind 7 \(1 rows\) that is not one of 0, 1, 2, 3"),
    "user column changed to text": (None, _set_column("user", lambda t: pa.array(
        [str(v) for v in t.column("user").to_pylist()])),
        "has user ids of type string where its meta says int64"),
    "missing buckets": (lambda m: m.update(buckets=[]), None,
                        r"per-list values outside every bucket \(missing buckets\)"),
    "garbage sums": (lambda m: m["buckets"][0].update(sums={"metrics": "garbage"}), None,
                     "has unreadable sums in the bucket of window"),
    "max_time of 2**70": (lambda m: m.update(max_time=2**70), None,
                          "has max_time 1180591620717411303424, not a time"),
    "dropped column": (None, lambda t: t.drop_columns(["x"]), "has no column 'x' in its rows"),
    "negative count": (lambda m: m["buckets"][0].update(evaluated=-1), None,
                       "has bucket counts -1"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_hand_edited_state_is_refused_with_one_line(tmp_path, case):
    state = _state_with_values(tmp_path)
    meta, rows, message = DAMAGE[case]
    _edit(state, meta, rows)
    with pytest.raises(StateFileError, match=message) as err:
        receval.monitor(_imp([]), _fb([]), ["P@1", "MRR"], state=state, **KW)
    assert "\n" not in str(err.value) and str(err.value).startswith(f"state {str(state)!r}")
    # the same edit without fixing the checksum: refused by the checksum
    state = _state_with_values(tmp_path / "again")
    _edit(state, meta, rows, fix_checksum=False)
    with pytest.raises(StateFileError, match="fails its checksum"):
        receval.monitor(_imp([]), _fb([]), ["P@1", "MRR"], state=state, **KW)


def test_a_damaged_file_an_old_parquet_state_and_the_command_line(tmp_path):
    state = _state_with_values(tmp_path)
    data = bytearray(state.read_bytes())
    data[120:4000] = b"\xff" * len(data[120:4000])  # the header and the first page
    state.write_bytes(bytes(data))
    with pytest.raises(StateFileError, match=r"damaged|not a SQLite database"):
        receval.monitor(_imp([]), _fb([]), ["P@1", "MRR"], state=state, **KW)
    old = tmp_path / "old.parquet"
    pq.write_table(pa.table({"kind": pa.array([0], pa.int8())}), old)
    with pytest.raises(StateFileError, match=r"version-1 \(Parquet\) monitor state; states "
                                             r"are now SQLite files: to migrate"):
        receval.monitor(_imp([]), _fb([]), ["P@1"], state=old, **KW)
    good = _state_with_values(tmp_path / "cli")
    _edit(good, lambda m: m.update(max_time=2**70))
    imp, fb = tmp_path / "imp.csv", tmp_path / "fb.csv"
    _imp([(1, 1, 1, "2024-01-20T00:00:00Z")]).to_csv(imp, index=False)
    _fb([(1, 1, 1.0, "2024-01-20T00:00:00Z")]).to_csv(fb, index=False)
    before = good.read_bytes()
    result = CliRunner().invoke(main, ["monitor", "-i", str(imp), "--feedback", str(fb), "-m",
                                       "P@1", "-m", "MRR", "--window", "W", "--attribution",
                                       "2D", "--resamples", "0", "--state", str(good)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "has max_time 1180591620717411303424" in lines[0]
    assert good.read_bytes() == before


# --- the same batch twice changes nothing ------------------------------------------------------


def test_a_replayed_day_is_applied_once_and_counted(tmp_path):
    days = _days(seed=5, days=6)
    kw = {**KW, "lateness": "2D", "relevance_threshold": 1}
    once, twice = tmp_path / "once.sqlite", tmp_path / "twice.sqlite"
    for d, (imp, fb) in enumerate(days):
        a = receval.monitor(imp, fb, ["P@3", "MRR"], state=once, **kw)
        b = receval.monitor(imp, fb, ["P@3", "MRR"], state=twice, **kw)
        if d in (2, 4):  # fed again, in another row order
            b = receval.monitor(imp.iloc[::-1], fb.iloc[::-1], ["P@3", "MRR"], state=twice,
                                **kw)
    pd.testing.assert_frame_equal(a.windows, b.windows, check_exact=True)
    replayed = sum(bool(len(x)) for d in (2, 4) for x in days[d])
    assert b.counts["batches_replayed"] == replayed > 0
    assert {k: v for k, v in b.counts.items() if k != "batches_replayed"} == \
        {k: v for k, v in a.counts.items() if k != "batches_replayed"}


# --- late feedback is counted and written out ---------------------------------------------------


def test_feedback_for_a_closed_list_is_counted_and_written(tmp_path):
    """List 1 (T0) closes unjudged when run 1 sees an event at T0 + 8D (watermark T0 + 1D,
    attribution 7D). Its feedback at T0 + 5D arrives in run 2: after the watermark, yet its
    list is closed: late, counted, written to late_out (before: dropped, not counted)."""
    state, late = tmp_path / "s.sqlite", tmp_path / "late.csv"
    # min_feedback=1: a list needs feedback to be judged (the default judges it all
    # non-relevant when its attribution period ends; the late row is counted all the same)
    kw = {"window": "W", "attribution": "7D", "n_resamples": 0, "min_feedback": 1}
    imp = _imp([(1, 1, 1, T0), (2, 1, 1, T0 + 8 * DAY)])
    receval.monitor(imp, _fb([]), "P@1", state=state, **kw)
    second = receval.monitor(_imp([]), _fb([(1, 1, 1.0, T0 + 5 * DAY),
                                            (2, 1, 1.0, T0 + 8 * DAY)]),
                             "P@1", state=state, late_out=late, **kw)
    assert second.counts["late_feedback_ignored"] == 1
    first = second.windows.iloc[0]
    assert (first["users_evaluated"], first["users_unjudged"]) == (0, 1)
    written = pd.read_csv(late)
    assert written[["user", "item", "value", "reason"]].values.tolist() == \
        [[1, 1, 1.0, "list_closed"]]
    assert pd.Timestamp(written["at"][0]) == T0 + 5 * DAY
    # feedback before the watermark: the other reason
    third = receval.monitor(_imp([]), _fb([(2, 1, 1.0, T0)]), "P@1", state=state,
                            late_out=late, **kw)
    assert third.counts["late_feedback_ignored"] == 2
    assert pd.read_csv(late)["reason"].tolist() == ["before_watermark"]


def test_late_out_from_the_command_line(tmp_path):
    imp, fb, state, late = (tmp_path / n for n in ("imp.csv", "fb.csv", "s.sqlite", "l.csv"))
    _imp([(1, 1, 1, "2024-01-01T00:00:00Z"), (2, 1, 1, "2024-01-09T00:00:00Z")]).to_csv(
        imp, index=False)
    _fb([(2, 1, 1.0, "2024-01-09T00:00:00Z")]).to_csv(fb, index=False)
    args = ["monitor", "-i", str(imp), "--feedback", str(fb), "-m", "P@1", "--attribution",
            "7D", "--resamples", "0", "--state", str(state), "-f", "json"]
    assert CliRunner().invoke(main, args).exit_code == 0
    _imp([(2, 1, 1, "2024-01-09T00:00:00Z")]).iloc[:0].to_csv(imp, index=False)
    _fb([(1, 1, 1.0, "2024-01-05T00:00:00Z")]).to_csv(fb, index=False)
    result = CliRunner().invoke(main, [*args, "--late-out", str(late)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["counts"]["late_feedback_ignored"] == 1
    assert pd.read_csv(late)["reason"].tolist() == ["list_closed"]


# --- every list in exactly one of evaluated / waiting / unjudged --------------------------------


def test_a_window_of_lists_judged_only_as_not_relevant_counts_them():
    """users='relevant': a window whose only judged list has no relevant item (before: in
    none of the three counts)."""
    imp = _imp([(1, 1, 1, T0), (2, 1, 1, T0), (3, 1, 1, T0 + 8 * DAY), (4, 1, 1, T0 + 20 * DAY)])
    fb = _fb([(1, 1, 0.0, T0), (3, 1, 1.0, T0 + 8 * DAY)])
    m = receval.monitor(imp, fb, "P@1", relevance_threshold=1, users="relevant", **KW)
    counts = m.windows[["users_evaluated", "users_waiting", "users_unjudged"]].values.tolist()
    assert counts == [[0, 0, 2], [1, 0, 0], [0, 1, 0]]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 20), st.integers(0, 3),
                          st.booleans(), st.integers(0, 2), st.integers(0, 60)),
                min_size=1, max_size=30),
       st.sampled_from(["relevant", "truth"]), st.integers(1, 2))
def test_every_list_is_in_exactly_one_count(rows, users, min_feedback):
    """Random logs: the counts of every window add up to the lists served, with any option
    that leaves lists out; the rows read are counted."""
    imp, fb, lists = [], [], set()
    for user, day, items, has_fb, value, hours in rows:
        s = T0 + day * DAY
        if (user, s) in lists:
            continue
        lists.add((user, s))
        for i in range(items + 1):
            imp.append((user, i, i + 1, s))
            if has_fb and i <= value:
                fb.append((user, i, float(value), s + pd.Timedelta(hours=hours)))
    m = receval.monitor(_imp(imp), _fb(fb), ["P@2", "MRR"], relevance_threshold=2,
                        users=users, min_feedback=min_feedback, **KW)
    total = m.windows[["users_evaluated", "users_waiting", "users_unjudged"]].to_numpy().sum()
    assert total == len(lists)
    assert (m.counts["impressions_read"], m.counts["feedback_read"]) == (len(imp), len(fb))


# --- times -------------------------------------------------------------------------------------


@pytest.mark.parametrize("served, unit, message", [
    ([32503680000], "s", r"column 'served_at' is outside the supported times 1677-09-22 \.\. "
                         r"2262-04-11 \(as s since 1970\) at row 0"),          # year 3000
    ([1.7e9, -1e300], "s", r"outside the supported times .* at row 1"),
    ([1704067200000], None, r"holds numbers .* pass time_unit='s', 'ms', 'us' or 'ns' "
                            r"\(--time-unit s\|ms\|us\|ns\)"),                    # ms, no unit
    (np.array(["3000-01-01"], dtype="datetime64[s]"), None,
     r"outside the supported times 1677-09-22 \.\. 2262-04-11 at row 0"),
    (["2024-01-01T00:00:00Z", "2024-01-01T05:00:00"], None,
     r"mixes times with a time zone and times without one \(naive\) at row 1"),
])
def test_times_out_of_range_or_without_a_unit_are_refused(served, unit, message):
    imp = pd.DataFrame({"user": list(range(len(served))), "item": 1, "rank": 1,
                        "served_at": served})
    with pytest.raises(ReceValError, match=message):
        receval.monitor(imp, _fb([]), "P@1", time_unit=unit, **KW)


def test_milliseconds_with_their_unit_and_zones_never_mixed(tmp_path):
    ms = int(T0.timestamp()) * 1000
    imp = pd.DataFrame({"user": [1], "item": [1], "rank": [1], "served_at": [ms]})
    fb = pd.DataFrame({"user": [1], "item": [1], "value": [1.0], "at": [ms + 1000]})
    m = receval.monitor(imp, fb, "P@1", time_unit="ms", **KW)
    assert m.counts["max_time"] == (T0 + pd.Timedelta(seconds=1)).isoformat()
    with pytest.raises(ReceValError, match="impressions column 'served_at' holds times with a "
                                           "time zone and feedback column 'at' times without"):
        receval.monitor(_imp([(1, 1, 1, T0)]), _fb([(1, 1, 1.0, T0.tz_localize(None))]),
                        "P@1", **KW)
    state = tmp_path / "s.sqlite"
    receval.monitor(_imp([(1, 1, 1, T0)]), _fb([]), "P@1", state=state, **KW)
    with pytest.raises(ReceValError, match="holds times with a time zone, this run's logs "
                                           "times without a time zone"):
        receval.monitor(_imp([(2, 1, 1, T0.tz_localize(None))]), _fb([]), "P@1",
                        state=state, **KW)


def test_time_unit_on_the_command_line(tmp_path):
    imp, fb = tmp_path / "imp.csv", tmp_path / "fb.csv"
    ms = int(T0.timestamp()) * 1000
    imp.write_text(f"user,item,rank,served_at\n1,1,1,{ms}\n")
    fb.write_text(f"user,item,value,at\n1,1,1,{ms + 60_000}\n")
    args = ["monitor", "-i", str(imp), "--feedback", str(fb), "-m", "P@1", "--resamples", "0",
            "-f", "json"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines() == [
        "error: impressions: column 'served_at' holds numbers (row 0: 1704067200000) and a "
        "number does not say its unit; pass time_unit='s', 'ms', 'us' or 'ns' "
        "(--time-unit s|ms|us|ns)"]
    ok = CliRunner().invoke(main, [*args, "--time-unit", "ms"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["counts"]["max_time"] == "2024-01-01T00:01:00+00:00"


def test_feedback_dated_before_serving_never_judges_and_is_counted():
    imp = _imp([(1, 1, 1, T0 + DAY), (2, 1, 1, T0 + DAY), (9, 1, 1, T0 + 20 * DAY)])
    fb = _fb([(1, 1, 1.0, T0 + pd.Timedelta(hours=20)),   # 4 h before serving
              (2, 1, 1.0, T0 + DAY)])
    m = receval.monitor(imp, fb, "P@1", **KW, min_feedback=1)
    first = m.windows.iloc[0]
    assert (first["users_evaluated"], first["users_unjudged"], first["P@1"]) == (1, 1, 1.0)
    assert m.counts["impressions_with_feedback_before_serving"] == 1
    # by default every closed list counts: the early click does not judge list 1 (P@1 0)
    m = receval.monitor(imp, fb, "P@1", **KW)
    first = m.windows.iloc[0]
    assert (first["users_evaluated"], first["users_unjudged"], first["P@1"]) == (2, 0, 0.5)
    assert m.counts["impressions_with_feedback_before_serving"] == 1


# --- ids, metrics, lists, variants --------------------------------------------------------------


def test_ids_from_text_files_keep_leading_zeros(tmp_path):
    imp, fb = tmp_path / "imp.csv", tmp_path / "fb.csv"
    imp.write_text("user,item,rank,served_at\n"
                   "u1,007,1,2024-01-01T00:00:00Z\nu1,7,2,2024-01-01T00:00:00Z\n")
    fb.write_text("user,item,value,at\nu1,7,1,2024-01-01T01:00:00Z\n")
    m = receval.monitor(imp, fb, ["P@1", "MRR"], **KW)
    assert m.windows[["P@1", "MRR"]].values.tolist() == [[0.0, 0.5]]  # "7" is second


def test_ids_neutralised_by_receval_s_csv_writer_read_back_as_written(tmp_path):
    """receval's CSV writers put a ' before ids that start like a formula (-a, @b, =c);
    the monitor reads them back as the ids they were, as receval evaluate does (before:
    "'-a" never met the feedback on "-a")."""
    imp, fb = tmp_path / "imp.csv", tmp_path / "fb.csv"
    imp.write_text("user,item,rank,served_at\n"
                   "'-a,x,1,2024-01-01T00:00:00Z\n'@b,y,1,2024-01-01T00:00:00Z\n"
                   "c,'=z,1,2024-01-01T00:00:00Z\n")
    fb.write_text("user,item,value,at\n-a,x,1,2024-01-01T01:00:00Z\n"
                  "@b,y,1,2024-01-01T01:00:00Z\nc,=z,1,2024-01-01T01:00:00Z\n")
    m = receval.monitor(imp, fb, ["P@1"], **KW, min_feedback=1)
    assert m.windows["P@1"].tolist() == [1.0]


def test_rating_metrics_an_item_served_twice_and_an_unknown_baseline_are_refused():
    with pytest.raises(ReceValError, match=r"monitor cannot compute RMSE, MAE: .* not "
                                           r"predicted ratings"):
        receval.monitor(_imp([(1, 1, 1, T0)]), _fb([]), ["RMSE", "MAE", "P@1"], **KW)
    twice = _imp([(1, 5, 1, T0), (1, 6, 2, T0), (1, 5, 3, T0)])  # no feedback at all
    with pytest.raises(ReceValError, match=r"item 5 served twice in one list .* at row 2 "
                                           r"\(1 repeated rows in all\)"):
        receval.monitor(twice, _fb([]), "P@1", **KW)
    imp = _imp([(1, 1, 1, T0), (2, 1, 1, T0)]).assign(variant=["A", "B"])
    with pytest.raises(ReceValError, match=r"baseline 'C' is not a variant of column "
                                           r"'variant'; variants seen: 'A', 'B'"):
        receval.monitor(imp, _fb([(1, 1, 1.0, T0)]), "P@1", variant_col="variant",
                        baseline="C", **KW)
    numbered = imp.assign(variant=[1, 2])
    m = receval.monitor(numbered, _fb([(1, 1, 1.0, T0)]), "P@1", variant_col="variant",
                        baseline="2", **KW)  # as typed on a command line
    assert m.comparisons["baseline"].tolist() == [2]


def test_text_ids_from_files_across_runs(tmp_path):
    state, imp, fb = tmp_path / "s.sqlite", tmp_path / "imp.csv", tmp_path / "fb.csv"
    for day, user in ((0, "-a"), (1, "b")):
        s = (T0 + day * DAY).isoformat()
        imp.write_text(f"user,item,rank,served_at\n{user},007,1,{s}\n{user},7,2,{s}\n")
        fb.write_text(f"user,item,value,at\n{user},7,1,{s}\n")
        m = receval.monitor(imp, fb, "MRR", state=state, **KW)
    assert m.windows[["MRR", "users_evaluated"]].values.tolist() == [[0.5, 2]]


def test_integer_ids_then_text_ids_between_runs(tmp_path):
    state = tmp_path / "s.sqlite"
    receval.monitor(_imp([(1, 1, 1, T0), (2, 1, 1, T0)]), _fb([(1, 1, 1.0, T0)]), "P@1",
                    state=state, **KW)
    m = receval.monitor(_imp([("u3", "x", 1, T0 + DAY)]),
                        _fb([("u3", "x", 1.0, T0 + DAY), ("2", "1", 1.0, T0 + DAY)]), "P@1",
                        state=state, **KW)
    assert m.windows[["P@1", "users_evaluated"]].values.tolist() == [[1.0, 3]]
    assert read_state(state).id_types == {"user": "string", "item": "string"}
