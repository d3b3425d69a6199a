"""What a first run compiles (issue 24, part 5): one signature per numba function, and only
the kernel paths the request can take (numba_engine.KernelVariant)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from receval.engines.numba_engine import PLAIN_VARIANT, KernelVariant, kernel_variant
from receval.engines.request import EngineRequest, Lists
from receval.options import Options

# in an empty numba cache: a plain evaluate, then which functions numba compiled and how many
# times, and what kernels_cached says of the plain and the average-ties variants
_FIRST_RUN = r"""
import collections, json
import pandas as pd
from numba.core import event
import receval
from receval.engines import numba_engine as ne
truth = pd.DataFrame({"user": [1, 1], "item": [1, 2]})
preds = pd.DataFrame({"user": [1, 1, 2], "item": [2, 5, 4], "score": [0.9, 0.8, 0.7]})
with event.install_recorder("numba:compile") as rec:
    receval.evaluate(truth, preds, ["P@10", "R@10", "nDCG@10", "MAP@10"])
compiled = collections.Counter(
    f"{ev.data['dispatcher'].py_func.__module__}.{ev.data['dispatcher'].py_func.__name__}"
    for _, ev in rec.buffer if ev.is_start)
average = ne.KernelVariant(ne.TIES_AVERAGE, lists=False, graded=False, user_mean=False)
print(json.dumps({"compiled": compiled, "plain_cached": ne.kernels_cached(),
                  "average_cached": ne.kernels_cached(average)}))
"""


def test_a_plain_first_run_compiles_one_signature_each_and_no_other_path(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _FIRST_RUN], env=env, capture_output=True,
                          text=True, check=True, timeout=900)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    compiled = out["compiled"]
    receval_fns = {name: n for name, n in compiled.items() if name.startswith("receval.")}
    # one specialisation per engine function (a literal flag compiled _first_duplicate twice;
    # measures.discounts.stable_argsort is generic: float gains and int64 item keys)
    assert {name: n for name, n in receval_fns.items()
            if n > 1 and name.startswith("receval.engines.")} == {}
    kernels = [name for name in receval_fns if name.endswith("._evaluate_block")]
    assert len(kernels) == 1, kernels
    # stable ties, binary gains, a fixed threshold, no ranked lists: none of these
    engines = "receval.engines."
    for path_only in ("fill_picture.build_picture_average", "fill_picture.expected_ap_over_hits",
                      "numba_engine._sort_ranks", "numba_engine._before",
                      "exact_sum.exact_sum", "gains.gain_shift",
                      "numba_engine._first_duplicate", "numba_engine._locate_duplicates"):
        assert engines + path_only not in receval_fns, path_only
    assert out["plain_cached"] is True
    assert out["average_cached"] is False  # another variant: compiled when first asked for


def _request(options: Options, fields: set[str]) -> EngineRequest:
    users = np.array([0])
    return EngineRequest.plan(Lists(*[users] * 7), options, np.array([5]), fields)


def test_the_variant_follows_every_option_that_prunes_a_path() -> None:
    assert kernel_variant(_request(Options(), {"hits", "dcg"})) == PLAIN_VARIANT
    # item_ascending and ranx reorder rows before a stable ranking
    assert kernel_variant(_request(Options(ties="item_ascending"), {"hits"})) == PLAIN_VARIANT
    assert kernel_variant(_request(Options(ties="average"), {"hits"})).ties == 4
    for ties in ("item", "pessimistic", "optimistic"):
        assert kernel_variant(_request(Options(ties=ties), {"hits"})).ties == 1
    assert kernel_variant(_request(Options(), {"judged_ranks"})).lists
    assert kernel_variant(_request(Options(), {"top_items"})).lists
    assert kernel_variant(_request(Options(gain="linear"), {"dcg"})).graded
    assert kernel_variant(_request(Options(relevance_threshold="user_mean"), {"hits"})).user_mean
    assert not kernel_variant(_request(Options(relevance_threshold=3), {"hits"})).user_mean
    assert isinstance(PLAIN_VARIANT, KernelVariant)


# after the demo (the documented step after installing), in the same cache: a plain evaluate
# with integer ids and one with text ids, and how many functions numba compiled for them
_AFTER_DEMO = r"""
import json, warnings
import pandas as pd
from numba.core import event
import receval
from receval.demo import run_demo
run_demo(n_users=200, n_items=100)
counts = {}
kinds = (("int", [7, 7, 9], [11, 12, 13]), ("text", ["u", "u", "v"], ["p", "q", "r"]))
for kind, user, item in kinds:
    truth = pd.DataFrame({"user": user[:2], "item": item[:2]})
    preds = pd.DataFrame({"user": user, "item": item, "score": [0.9, 0.8, 0.7]})
    with event.install_recorder("numba:compile") as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        receval.evaluate(truth, preds, ["P@10", "R@10", "nDCG@10", "MAP@10"])
    counts[kind] = sorted(ev.data["dispatcher"].py_func.__name__ for _, ev in rec.buffer
                          if ev.is_start)
print(json.dumps(counts))
"""


def test_after_the_demo_nothing_is_left_to_compile(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _AFTER_DEMO], env=env, capture_output=True,
                          text=True, check=True, timeout=900)
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts == {"int": [], "text": []}
