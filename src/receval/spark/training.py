"""``train=`` and ``exclude_train=`` on Spark: the local plan's training audit
(:class:`receval.training.Leakage`) as Spark joins on the driver's plan.

The exclusion is a left anti-join of the predictions with the training (user, item) pairs
before the shuffle (each prediction row keeps its position in the rows' order, taken before the
join, so ``ties="stable"`` is the local order); the counts of ``Result.counts["train"]`` are
counts of joins: every one counts rows, or distinct users or items over *all* partitions
(an item count is not a sum over partitions), so they are the local plan's numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from receval import training
from receval.exceptions import ReceValError
from receval.io.wanted import Wanted
from receval.result import Result

#: the predictions' row position, taken before the anti-join (the ``stable`` order)
ROW = "__receval_row"


@dataclass
class SparkTrain:
    """The training rows as a Spark frame with columns ``u``, ``i`` (and ``t``, the timestamp,
    when the training data has one)."""

    frame: Any
    exclude: bool
    #: the truth's timestamp column (``train_after_test`` when both sides have one)
    timestamp_col: str = "timestamp"

    @staticmethod
    def read(source: Any, as_frame: Any, *, user_col: str, item_col: str, timestamp_col: str,
             columns: Mapping[str, str] | None, exclude: bool,
             truth_timestamp: str | None = None) -> SparkTrain:
        """The training frame (``as_frame``: the engine's reader: a Spark DataFrame, a
        Parquet path or a pandas frame), its columns named as :func:`receval.training.read_train`
        names them.

        Example:
            >>> SparkTrain.read(None, None, user_col="user", item_col="item",
            ...                 timestamp_col="timestamp", columns=None, exclude=True)
            Traceback (most recent call last):
            ...
            receval.exceptions.ReceValError: exclude_train=True needs the training data: pass train=
        """
        from pyspark.sql import functions as F

        if source is None:
            raise ReceValError("exclude_train=True needs the training data: pass train=")
        frame = as_frame(source, "train")
        names = {"user": user_col, "item": item_col, "timestamp": timestamp_col,
                 **dict(columns or {})}
        for key in ("user", "item"):
            if names[key] not in frame.columns:
                raise ReceValError(
                    f"train has no column {names[key]!r}; its columns are: "
                    f"{', '.join(repr(c) for c in frame.columns)} (pass --train-columns "
                    f"{key}=NAME / train_columns={{'{key}': NAME}})")
        cols = [F.col(names["user"]).alias("u"), F.col(names["item"]).alias("i")]
        if names["timestamp"] in frame.columns:
            cols.append(F.col(names["timestamp"]).alias("t"))
        return SparkTrain(frame.select(*cols), exclude, truth_timestamp or timestamp_col)

    def pairs(self, frame: Any, user: str, item: str) -> Any:
        """The distinct training pairs named and typed as ``frame``'s ``user`` and ``item``."""
        from pyspark.sql import functions as F

        return self.frame.select(
            F.col("u").cast(frame.schema[user].dataType).alias(user),
            F.col("i").cast(frame.schema[item].dataType).alias(item)).distinct()

    def kept(self, preds: Any, wp: Wanted) -> Any:
        """The prediction rows that are not training pairs, with :data:`ROW` (their
        position before the join)."""
        from pyspark.sql import functions as F

        numbered = preds.withColumn(ROW, F.monotonically_increasing_id())
        return numbered.join(self.pairs(preds, wp.user, wp.item), [wp.user, wp.item],
                             "left_anti")

    def audit(self, truth: Any, preds: Any, wt: Wanted, wp: Wanted,
              evaluated: Any) -> tuple[dict[str, int], int, int]:
        """``counts["train"]`` (as :meth:`receval.training.Leakage.counts`), the prediction
        rows and the rated truth rows it is out of; ``preds`` are the predictions before the
        exclusion, ``evaluated`` a frame of the evaluated users (column ``user``)."""
        from pyspark.sql import functions as F

        rated = truth
        if wt.value in truth.columns:
            value = F.col(wt.value)
            rated = truth.filter(value.isNotNull() & ~F.isnan(value.cast("double")))
        items = self.frame.select("i").distinct()
        users = self.frame.select("u").distinct()
        truth_items = rated.select(F.col(wt.item).alias("i")).distinct()
        out = {
            "rows": self.frame.count(),
            "users": users.count(),
            "items": items.count(),
            "predictions_in_train": preds.join(self.pairs(preds, wp.user, wp.item),
                                               [wp.user, wp.item], "left_semi").count(),
            "truth_in_train": rated.join(self.pairs(rated, wt.user, wt.item),
                                         [wt.user, wt.item], "left_semi").count(),
            "users_without_train": evaluated.join(
                users.select(F.col("u").cast(evaluated.schema["user"].dataType).alias("user")),
                "user", "left_anti").count(),
            "items_without_train": truth_items.join(
                items.select(F.col("i").cast(truth_items.schema["i"].dataType).alias("i")),
                "i", "left_anti").count(),
        }
        after = self._after_test(rated, wt)
        if after is not None:
            out["train_after_test"] = after
        return out, preds.count(), rated.count()

    def emptied(self, preds: Any, wp: Wanted, evaluated: Any) -> int:
        """The ``evaluated`` users (a frame, column ``user``) every one of whose prediction
        rows (``preds``, before the exclusion) is a training pair: ``exclude_train`` empties
        their list (:func:`receval.training.leakage.count_emptied`)."""
        from pyspark.sql import functions as F

        listed = preds.select(F.col(wp.user).alias("user")).distinct()
        kept = preds.join(self.pairs(preds, wp.user, wp.item), [wp.user, wp.item],
                          "left_anti").select(F.col(wp.user).alias("user")).distinct()
        gone = listed.join(kept, "user", "left_anti")
        gone = gone.select(F.col("user").cast(evaluated.schema["user"].dataType).alias("user"))
        return int(evaluated.join(gone, "user", "left_semi").count())

    def _after_test(self, rated: Any, wt: Wanted) -> int | None:
        """Training rows dated after their user's first (earliest) test row, when both sides
        have timestamps (the local :func:`receval.training` rule)."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        if "t" not in self.frame.columns or self.timestamp_col not in rated.columns:
            return None
        kinds = [isinstance(f.dataType, T.NumericType)
                 for f in (self.frame.schema["t"], rated.schema[self.timestamp_col])]
        if kinds[0] != kinds[1]:
            raise ReceValError("train and truth timestamps are of different kinds (one numbers, "
                               "the other datetimes): give both the same")
        first = (rated.filter(F.col(self.timestamp_col).isNotNull())
                 .groupBy(F.col(wt.user).alias("fu"))
                 .agg(F.min(self.timestamp_col).alias("ft")))
        train = self.frame.filter(F.col("t").isNotNull())
        train = train.withColumn("u", F.col("u").cast(first.schema["fu"].dataType))
        return train.join(first, train["u"] == first["fu"]).filter(
            F.col("t") > F.col("ft")).count()


def record(result: Result, counts: dict[str, int], *, predictions: int, truth: int,
           exclude_train: bool) -> None:
    """Write the audit into ``result`` as :meth:`receval.training.Leakage.record` does (the
    excluded rows counted among the rows read) and warn where a count is large
    (:func:`receval.training.check`)."""
    result.counts["train"] = counts
    if exclude_train:
        excluded = counts["predictions_in_train"]
        rows = result.counts["rows"]
        rows["predictions"] += excluded
        rows["predictions_excluded_train"] = excluded
    training.check(counts, predictions=predictions, truth=truth, exclude_train=exclude_train)
