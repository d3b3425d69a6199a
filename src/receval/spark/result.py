"""What the Spark engine returns: :class:`SparkResult`, a
:class:`~receval.result.Result` whose per-user values stay a persisted Spark DataFrame."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from receval.exceptions import ReceValError
from receval.result import Result
from receval.spark.failures import Stage, log_level, spark_call


@dataclass(repr=False)
class SparkResult(Result):
    """A :class:`~receval.result.Result` from the Spark engine.

    ``per_user`` is a *Spark* DataFrame (``user`` and one column per metric), computed in the
    same pass as the summary and persisted (memory and disk), never collected by receval:
    :meth:`per_user_pandas` collects it in the local engine's order (sorted by user) and
    :meth:`unpersist` frees it. It is ``None`` under ``spark_options={"per_user": False}``.
    Everything else (summary, counts, options, sums) is on the driver, as for the local
    engine; ``sums`` is the exact merge of the partitions' sums (``first_undefined`` is a
    user id).
    """

    _cached: Any = field(default=None, repr=False, compare=False)
    #: per partition: its id, the worker's pid, its rows, the seconds the local plan took,
    #: whether it was the worker's first (where the kernels load or compile), the seconds
    #: before it (unpacking), the Arrow batches it received, the threads it ran on and whether
    #: the shuffle counted its users' nulls (``null_check``: not where the footers say none)
    tasks: list[dict[str, Any]] = field(default_factory=list, repr=False, compare=False)
    #: Spark's log level while receval collects the per-user values (``log_level``)
    _log_level: str = field(default="ERROR", repr=False, compare=False)
    #: the shuffles (``Exchange`` nodes) in the evaluation job's physical plan: 1 for rows
    #: grouped by user by receval, 0 for inputs Spark knows are partitioned by user (both
    #: sides bucketed by it alike: docs/spark.md), more where the inputs' own plans shuffle
    shuffles: int = field(default=0, repr=False, compare=False)

    def __repr__(self) -> str:
        return Result.__repr__(self)

    def per_user_pandas(self) -> pd.DataFrame:
        """The per-user values collected to the driver, sorted by user (as the local engine).

        Example:
            >>> r = SparkResult({}, None, {}, {}, [])  # type: ignore[arg-type]
            >>> r.per_user_pandas()
            Traceback (most recent call last):
            ...
            receval.exceptions.ReceValError: no per-user values: evaluated with spark_options={'per_user': False}
        """  # noqa: E501
        if self.per_user is None:
            raise ReceValError(
                "no per-user values: evaluated with spark_options={'per_user': False}"
            )
        with _quiet_pyspark(), spark_call(Stage("collecting the per-user values")):
            spark = self.per_user.sparkSession
            with log_level(spark, self._log_level):
                frame = self.per_user.toPandas()
        return frame.sort_values("user", kind="stable").reset_index(drop=True)

    def unpersist(self) -> None:
        """Free the cached per-user values (the Spark DataFrame cannot be used after).

        Example:
            >>> SparkResult({}, None, {}, {}, []).unpersist()  # type: ignore[arg-type]
        """
        if self._cached is not None:
            self._cached.unpersist()
            self._cached = None


@contextlib.contextmanager
def _quiet_pyspark() -> Iterator[None]:
    """pyspark's own warnings about the pandas version (it works: the engine moves Arrow
    batches) are not the user's concern; receval's warnings still show."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"pyspark\.")
        yield
