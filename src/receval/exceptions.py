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
    """Warned when a metric was undefined for some users and a policy filled it in
    (silenced by ``silence=["undefined"]``)."""

    code = "undefined"


class ReceValWarning(UserWarning):
    """Base of receval's warnings about the input: each names the option that handles it and
    can be silenced by its :attr:`code` (``evaluate(..., silence=[code])``, ``--silence CODE``).

    Example:
        >>> issubclass(NoMatchWarning, ReceValWarning), NoMatchWarning.code
        (True, 'no-match')
    """

    code = "input"


class RelevanceThresholdWarning(ReceValWarning):
    """The truth holds graded ratings but no relevance threshold was given: every rated item,
    the lowest rating too, counts as relevant."""

    code = "no-threshold"


class NoMatchWarning(ReceValWarning):
    """No predicted (user, item) has a truth row: every metric is 0 (the training file passed as
    the truth, say)."""

    code = "no-match"


class IdMismatchWarning(ReceValWarning):
    """Most users have no hit at all and the two sides barely share item (or user) ids: the ids
    probably do not match (types, padding such as ``007`` and ``7``, the wrong column)."""

    code = "id-mismatch"


class TiesWarning(ReceValWarning):
    """Tied scores straddle a cutoff under a tie policy that depends on the input's row order."""

    code = "ties"
