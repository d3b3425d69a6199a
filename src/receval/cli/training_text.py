"""The training data on the command line: ``--train-columns`` parsed, the audit in one line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from receval.exceptions import ReceValError


def audit_line(counts: Mapping[str, Any], rows: Mapping[str, Any] | None = None) -> str:
    """The training audit (``Result.counts["train"]``) in one line, for the terminal; ``rows``
    (``counts["rows"]``) adds the prediction rows excluded by ``exclude_train``.

    Example:
        >>> audit_line({"rows": 10, "users": 2, "items": 5, "predictions_in_train": 3,
        ...             "truth_in_train": 0, "users_without_train": 1,
        ...             "items_without_train": 2}, {"predictions": 12})
        'train audit: 10 rows, 2 users, 5 items; predictions in train 3 (25% of 12), truth in \
train 0, users without train 1, items without train 2'
    """
    total = (rows or {}).get("predictions")
    share = f" ({counts['predictions_in_train'] / total:.0%} of {total:,})" if total else ""
    parts = [f"predictions in train {counts['predictions_in_train']:,}{share}",
             f"truth in train {counts['truth_in_train']:,}",
             f"users without train {counts['users_without_train']:,}",
             f"items without train {counts['items_without_train']:,}"]
    if "train_after_test" in counts:
        parts.append(f"train after test {counts['train_after_test']:,}")
    excluded = (rows or {}).get("predictions_excluded_train")
    if excluded is not None:
        parts.append(f"excluded from the lists {excluded:,} (exclude_train)")
    return (f"train audit: {counts['rows']:,} rows, {counts['users']:,} users, "
            f"{counts['items']:,} items; " + ", ".join(parts))


def parse_train_columns(text: str | None) -> dict[str, str] | None:
    """``"user=userId,timestamp=ts"`` (a ``--train-columns`` value) as a dict.

    Example:
        >>> parse_train_columns("user=userId, timestamp = ts")
        {'user': 'userId', 'timestamp': 'ts'}
        >>> parse_train_columns("userId")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: --train-columns takes ROLE=NAME pairs separated by \
commas (e.g. user=userId,item=movieId,timestamp=ts); got 'userId'
    """
    if text is None:
        return None
    out: dict[str, str] = {}
    for pair in text.split(","):
        role, sep, name = pair.partition("=")
        if not sep or not role.strip() or not name.strip():
            raise ReceValError("--train-columns takes ROLE=NAME pairs separated by commas "
                               f"(e.g. user=userId,item=movieId,timestamp=ts); got {text!r}")
        out[role.strip()] = name.strip()
    return out
