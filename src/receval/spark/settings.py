"""The ``spark_options`` of ``evaluate(..., engine="spark")``: their keys, checked values and
the shuffle partitions ``partitions="auto"`` picks from the number of rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from receval.exceptions import ReceValError

#: the keys of ``evaluate(..., spark_options=...)``
SPARK_OPTIONS = ("partitions", "order_by", "per_user", "master", "log_level")
#: Spark's log levels (``log_level``: Spark's level while receval's call runs)
LOG_LEVELS = ("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")


#: rows (truth + predictions) per shuffle partition above which ``partitions="auto"`` adds a
#: partition: the local plan holds a partition's rows in pandas/numpy at once (about 90 bytes
#: a row at its peak: 360 MB per Python worker), and each partition costs a Python task (at
#: 24M rows on local[2], 24 partitions took 14-15 CPU seconds, 6 partitions 11.6-12: issue 24)
ROWS_PER_PARTITION = 4_000_000
#: rows below which ``partitions="auto"`` does not split further to use another core: a task
#: costs a Python worker round trip (0.2 to 0.4 s measured on 61,000 rows, local[2]: 32
#: partitions took 15 s, 1 to 8 partitions 4 to 6 s), far more than evaluating these rows
MIN_ROWS_PER_CORE = 25_000


def auto_partitions(rows: int, cores: int) -> int:
    """The shuffle partitions ``partitions="auto"`` (the default) picks for ``rows`` rows
    (truth + predictions) on ``cores`` cores (Spark's default parallelism): one per core while
    each gets at least :data:`MIN_ROWS_PER_CORE` rows, and more when a partition would hold
    over :data:`ROWS_PER_PARTITION` rows. Spark's own default (200 shuffle partitions, not
    coalesced once the per-user frame is persisted) ran 61,000 rows far slower (docs/spark.md).

    Example:
        >>> auto_partitions(61_000, 2), auto_partitions(61_000, 16), auto_partitions(2_000, 8)
        (2, 2, 1)
        >>> auto_partitions(300_000, 16), auto_partitions(24_000_000, 2)
        (12, 6)
        >>> auto_partitions(50_000_000, 16), auto_partitions(120_000_000, 16)
        (16, 30)
    """
    by_cores = min(max(cores, 1), max(rows // MIN_ROWS_PER_CORE, 1))
    return max(by_cores, -(-rows // ROWS_PER_PARTITION))


def _spark_options(given: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "partitions": "auto",
        "order_by": None,
        "per_user": True,
        "master": None,
        "log_level": "ERROR",
    }
    for key, value in (given or {}).items():
        if key not in SPARK_OPTIONS:
            raise ReceValError(
                f"unknown spark_options key {key!r}; known: {', '.join(SPARK_OPTIONS)}"
            )
        out[key] = value
    parts = out["partitions"]
    if parts is None:
        out["partitions"] = parts = "auto"
    if parts not in ("auto", "spark") and (
        isinstance(parts, bool) or not isinstance(parts, int) or parts < 1
    ):
        raise ReceValError(
            f"spark_options partitions={parts!r} must be a positive integer, "
            "'auto' (from the number of rows) or 'spark' (the session's)"
        )
    if str(out["log_level"]).upper() not in LOG_LEVELS:
        raise ReceValError(
            f"spark_options log_level={out['log_level']!r} must be one of {', '.join(LOG_LEVELS)}"
        )
    out["log_level"] = str(out["log_level"]).upper()
    return out
