"""Error and warning classes raised by receval.

Every error message is one line that names the problem and, where there is one, the first
offending row or user, so the CLI can print it as is.
"""

from __future__ import annotations


class ReceValError(ValueError):
    """Bad input or a bad option: a ``ValueError`` with a one-line message.

    Example:
        >>> try:
        ...     raise ReceValError("k must be a positive integer; got 0")
        ... except ValueError as err:
        ...     print(err)
        k must be a positive integer; got 0
    """


class UndefinedMetricError(ReceValError):
    """Raised by the ``empty="error"`` policy when a metric is undefined for a user."""


class UndefinedMetricWarning(UserWarning):
    """Warned when a metric was undefined for some users and a policy filled it in."""
