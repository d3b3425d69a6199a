"""The pre-period covariate of :func:`receval.monitor`'s CUPED adjustment (``covariate=``).

One value per user measured before the experiment (Deng, Xu, Kohavi and Walker, WSDM 2013):
a table with the user column and either one column per metric compared (named as the metric:
each metric is adjusted with its own pre-period value) or one column ``covariate`` used for
every metric. A DataFrame, a dict of columns or a CSV, TSV or Parquet path; or a pre-period's
logs ``(impressions, feedback)``, from which :func:`receval.monitor` computes each user's mean
over its closed lists with the same options (:func:`per_user_means`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError


def read_covariate(source: Any, names: list[str], *, user_col: str = "user") -> pd.DataFrame:
    """The covariate indexed by user (one row each), with the columns of ``names`` it holds or
    ``covariate``; one-line errors for a missing column, a repeated user or a value that is
    not a finite number.

    Example:
        >>> read_covariate({"user": [2, 1], "P@1": [0.5, 0.25]}, ["P@1"]).to_dict()
        {'P@1': {1: 0.25, 2: 0.5}}
        >>> read_covariate({"user": [1], "x": [0.5]}, ["P@1"])
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: covariate: no column named like a metric (P@1) and no column 'covariate'; columns: user, x
    """  # noqa: E501
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise ReceValError(f"covariate file {str(path)!r} does not exist")
        from receval.io.frames import read_frame

        # receval's one reader (one-line errors; user ids typed as in the monitor's logs)
        frame = read_frame(path, "covariate", ids=(user_col,),
                           formats=("csv", "tsv", "parquet")).to_pandas()
    elif isinstance(source, pd.DataFrame):
        frame = source
    elif isinstance(source, dict):
        frame = pd.DataFrame(source)
    else:
        raise ReceValError(
            "covariate must be a DataFrame, a dict of columns or a CSV, TSV or "
            f"Parquet path; got {type(source).__name__}"
        )
    if user_col not in frame.columns:
        raise ReceValError(
            f"covariate: no user column {user_col!r}; columns: {', '.join(map(str, frame.columns))}"
        )
    cols = [n for n in names if n in frame.columns] or (
        ["covariate"] if "covariate" in frame.columns else []
    )
    if not cols:
        raise ReceValError(
            f"covariate: no column named like a metric ({', '.join(names)}) "
            "and no column 'covariate'; columns: "
            f"{', '.join(map(str, frame.columns))}"
        )
    users = frame[user_col]
    if users.isna().any():
        raise ReceValError(f"covariate: a row without a user (row {int(users.isna().idxmax())})")
    if users.duplicated().any():
        raise ReceValError(
            f"covariate: user {users[users.duplicated()].iloc[0]!r} has several "
            "rows; give one pre-period value per user"
        )
    out = {}
    for col in cols:
        values = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            raise ReceValError(
                f"covariate: column {col!r} holds {int(bad.sum())} value(s) that "
                f"are not finite numbers (first at row {int(np.argmax(bad))})"
            )
        out[col] = values
    index = pd.Index(users.to_numpy(), name="user")
    if not pd.api.types.is_integer_dtype(index):
        index = index.astype(str).astype(object)
    return pd.DataFrame(out, index=index).sort_index()


def per_user_means(values: list[pd.DataFrame], names: list[str]) -> pd.DataFrame:
    """Each user's mean of each metric over its lists (``user``, ``served`` and the metrics,
    several frames), a ``user`` column first: the covariate of a pre-period's logs. A user
    without a value for a metric gets the metric's mean over the others (no adjustment).

    Example:
        >>> v = pd.DataFrame({"user": [1, 1, 2], "served": [0, 1, 0], "P@1": [1.0, 0.0, 1.0]})
        >>> per_user_means([v], ["P@1"]).values.tolist()
        [[1.0, 0.5], [2.0, 1.0]]
    """
    from receval.monitor.ab import ordered, user_sums

    frames = [v for v in values if len(v)]
    if not frames:
        return pd.DataFrame({"user": [], **{n: [] for n in names}})
    sums = user_sums(ordered(pd.concat(frames, ignore_index=True)), names)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {n: sums[f"s:{n}"].to_numpy() / sums[f"n:{n}"].to_numpy() for n in names}
    for x in out.values():
        if np.isnan(x).any():
            x[np.isnan(x)] = float(np.nanmean(x)) if (~np.isnan(x)).any() else 0.0
    return pd.DataFrame({"user": sums.index.to_numpy(), **out})
