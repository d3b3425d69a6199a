"""The one paired analysis of two models on one metric: align, pair, draw, test, interval.

Every place that pairs two models' per-user values (:func:`receval.compare`, the gates, the
report's significance letters, its fairness and difference tables) calls :func:`pair_values`
(after :func:`align` where the users must be matched), so one pair of models on one metric
gives the same numbers wherever it is shown:

- the random stream is keyed by the **unordered** pair of model names and the metric
  (:func:`pair_stream`): naming the models in the other order draws the same resamples;
- the analysis runs once in the canonical orientation (the names sorted: the later name's
  values minus the earlier's) and is mirrored exactly for the other order (the difference and
  effect size negated, the interval's ends negated and swapped, wins and losses swapped), so a
  report's interval of B - A is the exact mirror of A - B's;
- wins, losses and P(better) count improvements in the metric's declared direction
  (``better``: ``"higher"``, or ``"lower"`` for RMSE, MAE and the other error, gap and
  concentration measures), never the sign of the difference alone;
- a confidence level given as such (a gate's ``confidence = 0.95``) becomes ``alpha`` in
  decimal (:func:`alpha_of`: 0.05 exactly, not ``1 - 0.95 = 0.050000000000000044``), so a
  gate's interval is compare's bit for bit.

Numbers only (numpy, pandas): the callers read the direction from the metric's registry entry
(:func:`receval.beyond.names.direction`).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.randomness import stream
from receval.stats.paired import paired

Better = Literal["higher", "lower"]


def pair_stream(
    seed: int, first: str, second: str, metric: str, *extra: str
) -> np.random.Generator:
    """The random stream of the pair ``{first, second}`` on ``metric`` (``extra``: a group):
    the same whichever model is named first.

    Example:
        >>> a = pair_stream(0, "svd", "knn", "P@10").random()
        >>> a == pair_stream(0, "knn", "svd", "P@10").random()
        True
    """
    low, high = sorted((str(first), str(second)))
    return stream(seed, low, high, metric, *extra)


def alpha_of(confidence: float) -> float:
    """``1 - confidence`` computed in decimal from the level as written, so that a 95% level
    is ``alpha = 0.05`` exactly (binary floating point gives ``0.050000000000000044``).

    Example:
        >>> alpha_of(0.95), 1 - 0.95, alpha_of(0.9)
        (0.05, 0.050000000000000044, 0.1)
    """
    if not 0 < confidence < 1:
        raise ReceValError(f"a confidence level must be between 0 and 1, got {confidence!r}")
    return float(Decimal(1) - Decimal(repr(float(confidence))))


def pair_values(
    baseline_values: np.ndarray,
    model_values: np.ndarray,
    *,
    baseline: str,
    model: str,
    metric: str,
    test: str,
    alpha: float,
    n_resamples: int,
    seed: int,
    better: Better = "higher",
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``model`` against ``baseline`` on ``metric``, paired by position (a pair with a NaN on
    either side is left out): the row of :func:`receval.stats.paired.paired` (both means, the
    difference model - baseline, its bootstrap percentile interval, the p-value, Cohen's d_z,
    wins/ties/losses and P(better) in the direction ``better``), computed once for the
    unordered pair (the stream of :func:`pair_stream`) and mirrored exactly for the order
    asked.

    Example:
        >>> import numpy as np
        >>> a, b = np.array([0.2, 0.4, 0.1, 0.3]), np.array([0.1, 0.1, 0.2, 0.1])
        >>> ab = pair_values(a, b, baseline="a", model="b", metric="MAE", test="t", alpha=0.05,
        ...                  n_resamples=200, seed=0, better="lower")
        >>> ba = pair_values(b, a, baseline="b", model="a", metric="MAE", test="t", alpha=0.05,
        ...                  n_resamples=200, seed=0, better="lower")
        >>> ab["wins"], ba["wins"], ab["share_better"]  # b's error is lower for 3 users of 4
        (3, 1, 0.75)
        >>> (ab["ci_low"], ab["ci_high"]) == (-ba["ci_high"], -ba["ci_low"])
        True
    """
    if better not in ("higher", "lower"):
        raise ReceValError(f"better must be 'higher' or 'lower', got {better!r}")
    flipped = str(model) < str(baseline)  # canonical: the later name minus the earlier
    first, second = (model_values, baseline_values) if flipped else (baseline_values, model_values)
    rng = pair_stream(seed, baseline, model, metric, *extra)
    row = paired(
        np.asarray(first, dtype=np.float64),
        np.asarray(second, dtype=np.float64),
        test=test,
        alpha=alpha,
        n_resamples=n_resamples,
        rng=rng,
        better=better,
    )
    return mirrored(row) if flipped else row


def mirrored(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row of B against A from the row of A against B: means swapped, the difference and
    effect size negated, the interval's ends negated and swapped, wins and losses swapped
    (exact: negation rounds nothing).

    Example:
        >>> r = {"mean": 0.5, "baseline_mean": 0.25, "delta": 0.25, "ci_low": 0.1,
        ...      "ci_high": 0.4, "effect_size": 1.0, "wins": 3, "ties": 1, "losses": 0,
        ...      "n": 4, "p_value": 0.01, "p_adjusted": float("nan"), "share_better": 0.875}
        >>> m = mirrored(r)
        >>> m["delta"], (m["ci_low"], m["ci_high"]), m["wins"], m["share_better"]
        (-0.25, (-0.4, -0.1), 0, 0.125)
    """
    out = dict(row)
    out["mean"], out["baseline_mean"] = row["baseline_mean"], row["mean"]
    out["delta"], out["effect_size"] = -row["delta"], -row["effect_size"]
    out["ci_low"], out["ci_high"] = -row["ci_high"], -row["ci_low"]
    out["wins"], out["losses"] = row["losses"], row["wins"]
    n = row["n"]
    out["share_better"] = (out["wins"] + row["ties"] / 2) / n if n else float("nan")
    return out


def align(frames: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each model's per-user frame (a ``user`` column) in the users' order of the model whose
    name sorts first; a one-line error when the models were evaluated on different users.

    Example:
        >>> import pandas as pd
        >>> x = pd.DataFrame({"user": [1, 2], "P@1": [1.0, 0.0]})
        >>> y = pd.DataFrame({"user": [2, 1], "P@1": [0.5, 0.25]})
        >>> align({"y": y, "x": x})["y"]["P@1"].tolist()
        [0.25, 0.5]
    """
    first = min(frames)
    reference = pd.Index(frames[first]["user"])
    if reference.has_duplicates:
        raise ReceValError(f"model {first!r}: its per-user values repeat a user")
    out: dict[str, pd.DataFrame] = {}
    for name in sorted(frames):
        frame = frames[name]
        users = pd.Index(frame["user"])
        if name != first and (len(users) != len(reference) or not users.equals(reference)):
            only = users.difference(reference, sort=False)
            missing = reference.difference(users, sort=False)
            if len(only) or len(missing) or users.has_duplicates:
                where = (
                    f"user {_plain(only[0])!r} is in {name!r} only"
                    if len(only)
                    else f"user {_plain(missing[0])!r} is in {first!r} only"
                    if len(missing)
                    else f"model {name!r} repeats a user"
                )
                raise ReceValError(
                    f"models {first!r} and {name!r} were evaluated on different users: {where} "
                    f"({len(only) + len(missing)} users differ in all); pairing needs one user "
                    "set for every model (users='truth' or 'relevant', not 'both')"
                )
            frame = frame.set_index("user").reindex(reference).reset_index()
        out[name] = frame
    return out


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
