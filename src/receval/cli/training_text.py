"""The training data on the command line: ``--train-columns`` parsed, the audit in one line."""

from __future__ import annotations

from receval.exceptions import ReceValError
from receval.report.tables import train_audit_line as audit_line  # noqa: F401 (the CLI's name)


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
