"""Every random draw of receval comes from a generator made here, keyed by what it is for.

Two kinds of key, one rule: a stream depends on the seed and on names that say what is drawn,
never on a position (of a model, a group, a window, a thread) or on what else is drawn.

- :func:`stream`: a resampling keyed by text names (compare's rows, report intervals, monitor
  windows, gates, off-policy requests).
- :func:`keyed`: a draw per id keyed by 64-bit integers (a user's sampled negatives, a user's
  random baseline list, the demo's synthetic data).

:data:`STREAMS` lists every stream with its key; tests/test_random_streams.py checks that no
module of receval makes a generator any other way.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

#: each random stream of receval: where it is drawn -> what keys it (the names it is given)
STREAMS: dict[str, str] = {
    "compare": "stream(seed, *sorted((model, baseline)), metric[, group]) "
            "(receval.stats.pairing.pair_stream): the paired interval and test of compare, "
            "the gates against a baseline, the report's letters, difference and fairness "
            "tables; the same whichever model is named first",
    "report interval": "stream(seed, 'interval', model, metric): the report's bootstrap CI",
    "monitor interval": "stream(seed, window, variant, metric)",
    "disparity": "pair_stream(seed, group, reference, metric, 'disparity', model): the "
                 "permutation test and bootstrap interval of a gap between groups of users, "
                 "keyed by the unordered pair of groups",
    "monitor difference": "stream(seed, 'window:variant', baseline, metric)",
    "gate": "stream(seed, 'gate', metric[, group])",
    "offpolicy": "stream(seed, 'offpolicy', 'requests'): one resample of the requests for "
                 "every (target, estimator), so their intervals are paired",
    "sampled negatives": "keyed(seed, hash(user)): each user's negatives",
    "random baseline": "keyed(seed, kind, user): each user's random list",
    "split": "a 64-bit hash of (seed, user, item, timestamp, occurrence) per row "
             "(receval.data, no generator)",
    "demo data": "keyed(seed): the synthetic ratings of receval demo",
}


def stream(seed: int, *names: str) -> np.random.Generator:
    """The generator of one resampling: ``SeedSequence(seed, spawn_key=...)`` with the key a
    stable hash (BLAKE2b) of ``names`` (model, baseline, metric, group...), so it depends on
    nothing else: not the order of the models, nor the other rows, nor the thread.

    Example:
        >>> a = stream(0, "b", "a", "P@10").random()
        >>> a == stream(0, "b", "a", "P@10").random(), a == stream(0, "a", "b", "P@10").random()
        (True, False)
    """
    digest = hashlib.blake2b(json.dumps(list(names)).encode(), digest_size=16).digest()
    key = tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def keyed(seed: int, *keys: int) -> np.random.Generator:
    """The generator of one id's draw: ``SeedSequence([seed, *keys])`` with ``keys`` 64-bit
    integers (a user id, or a hash of it), so a user's draw is the same whichever other users
    are drawn for.

    Example:
        >>> a = keyed(0, 7).integers(1000); b = keyed(0, 7).integers(1000)
        >>> bool(a == b), bool(keyed(0, 7).random() == keyed(0, 8).random())
        (True, False)
    """
    return np.random.default_rng(np.random.SeedSequence([int(seed), *(int(k) for k in keys)]))


def user_seed(seed: int, user: Any) -> np.random.Generator:
    """A random generator for one user: its stream depends on ``seed`` and the user id only,
    so a user's draw is the same whichever other users are drawn for (:mod:`receval.baselines`).

    Example:
        >>> a = user_seed(0, "u1").integers(1000); b = user_seed(0, "u1").integers(1000)
        >>> bool(a == b)
        True
    """
    if isinstance(user, int | np.integer):
        key = [0, int(user) & 0xFFFFFFFFFFFFFFFF]
    else:
        digest = hashlib.blake2b(str(user).encode("utf-8"), digest_size=8).digest()
        key = [1, int.from_bytes(digest, "little")]
    return keyed(int(seed) & 0xFFFFFFFFFFFFFFFF, *key)
