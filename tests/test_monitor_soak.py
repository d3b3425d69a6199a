"""Leave it running (issue 20): a year of daily monitor runs on one state file, with replayed
days, feedback delivered too late, two writers at once and a writer killed (SIGKILL) in the
middle of its write, ends with the windows of one batch run over the same logs, bit for bit,
and counts that add up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pandas as pd
import pytest

import receval
from receval.monitor.state import read_state

DAY = pd.Timedelta("1D")
T0 = pd.Timestamp("2024-01-01", tz="UTC")
DAYS = 365
METRICS = ["P@2", "MRR"]
KW = {"window": "W", "attribution": "2D", "lateness": "2D", "n_resamples": 0,
      "relevance_threshold": 1}
KILLED_DAY = 200
# feedback arrives with the next day's logs (up to 2 days after it happened): lateness 2D

_WRITER = textwrap.dedent("""
    import json, sys, time
    import pandas as pd
    import receval
    from receval.monitor import state

    write = state.Store.write

    def write_then_hang(self, *args, **kwargs):
        write(self, *args, **kwargs)  # the new state is written, not yet committed
        open(sys.argv[4], "w").close()
        time.sleep(600)

    state.Store.write = write_then_hang
    receval.monitor(pd.read_parquet(sys.argv[1]), pd.read_parquet(sys.argv[2]),
                    json.loads(sys.argv[5]), state=sys.argv[3], **json.loads(sys.argv[6]))
""")


def _year(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Impressions (3 users a day, lists of 2), feedback on time (at most 36 h after serving)
    and feedback delivered 10 days late."""
    rng = np.random.default_rng(seed)
    imp, fb, late = [], [], []
    for day in range(DAYS):
        for u in range(3):
            s = T0 + day * DAY + pd.Timedelta(minutes=int(rng.integers(0, 24 * 60)))
            items = rng.choice(6, 2, replace=False)
            for r, i in enumerate(items):
                imp.append((u, int(i), r + 1, s))
            if rng.random() < 0.6:
                at = s + pd.Timedelta(minutes=int(rng.integers(0, 36 * 60)))
                row = (u, int(items[int(rng.integers(0, 2))]), float(rng.integers(0, 3)), at)
                (late if rng.random() < 0.05 and day < DAYS - 20 else fb).append(row)
    cols = ["user", "item", "value", "at"]
    return (pd.DataFrame(imp, columns=["user", "item", "rank", "served_at"]),
            pd.DataFrame(fb, columns=cols), pd.DataFrame(late, columns=cols))


def _kill_during_write(tmp_path, imp, fb, state) -> None:
    """A writer SIGKILLed after writing the new state and before its commit."""
    paths = [tmp_path / n for n in ("killed_imp.parquet", "killed_fb.parquet", "written")]
    imp.to_parquet(paths[0])
    fb.to_parquet(paths[1])
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(paths[0]), str(paths[1]),
                              str(state), str(paths[2]), json.dumps(METRICS), json.dumps(KW)],
                             env=os.environ.copy())
    try:
        for _ in range(1200):
            if paths[2].exists() or child.poll() is not None:
                break
            time.sleep(0.1)
        assert paths[2].exists(), "the writer did not reach its write"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


@pytest.mark.slow
def test_a_year_of_daily_runs_equals_one_batch_run(tmp_path):
    imp, fb, late = _year(seed=20)
    state = tmp_path / "monitor.sqlite"
    served, on_time, too_late = imp["served_at"], fb["at"] + DAY, late["at"] + 10 * DAY
    replayed = 0
    out = None
    for day in range(DAYS + 2):  # the last feedback (36 h after serving) arrives a day later
        lo, hi = T0 + day * DAY, T0 + (day + 1) * DAY
        a = imp[(served >= lo) & (served < hi)]
        b = pd.concat([fb[(on_time >= lo) & (on_time < hi)],
                       late[(too_late >= lo) & (too_late < hi)]], ignore_index=True)
        if day == KILLED_DAY:
            before = read_state(state)
            _kill_during_write(tmp_path, a, b, state)
            after = read_state(state)  # SQLite rolled the killed write back
            assert after.max_time == before.max_time and after.tally == before.tally
        if day % 7 == 3:  # two writers at once, one per half of the users
            errors: list[BaseException] = []
            barrier = threading.Barrier(2)

            def half(part: int, a=a, b=b, errors=errors, barrier=barrier) -> None:
                try:
                    barrier.wait(timeout=60)
                    receval.monitor(a[a["user"] % 2 == part], b[b["user"] % 2 == part],
                                    METRICS, state=state, **KW)
                except BaseException as err:  # reported below
                    errors.append(err)

            threads = [threading.Thread(target=half, args=(p,)) for p in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, errors
        else:
            out = receval.monitor(a, b, METRICS, state=state, **KW)
            if day % 30 == 5:  # the same day fed again
                out = receval.monitor(a, b, METRICS, state=state, **KW)
                replayed += bool(len(a)) + bool(len(b))
    out = receval.monitor(imp.iloc[:0], fb.iloc[:0], METRICS, state=state, **KW)
    batch = receval.monitor(imp, fb, METRICS, **KW)
    pd.testing.assert_frame_equal(out.windows, batch.windows, check_exact=True)
    assert len(out.windows) == 53 and out.windows["closed"].iloc[:-2].all()
    assert out.counts["batches_replayed"] == replayed > 0
    assert out.counts["late_feedback_ignored"] == len(late) > 0
    assert out.counts["feedback_read"] == len(fb) + len(late)
    same = ("max_time", "watermark", "late_impressions_ignored", "impressions_read",
            "impressions_with_feedback_before_serving")
    assert {k: out.counts[k] for k in same} == {k: batch.counts[k] for k in same}
    lists = imp.groupby(["user", "served_at"]).ngroups
    counts = out.windows[["users_evaluated", "users_waiting", "users_unjudged"]]
    assert int(counts.to_numpy().sum()) == lists
