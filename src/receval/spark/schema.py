"""The Spark engine's inputs as Spark frames: read (Parquet paths with the schema their
footers state, local frames sent), their columns checked as the local engine checks them
(from the schema, no Spark job), both sides' id types made one, and both sides (and the
training rows) unioned into the one frame the job shuffles by user."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.data.columns import read_columns
from receval.data.encode import check_same_kind
from receval.exceptions import ReceValError
from receval.io.wanted import Wanted
from receval.spark.footers import Footers, spark_schema
from receval.spark.task import _Task
from receval.spark.training import ROW


def _is_frame(obj: Any) -> bool:
    return type(obj).__module__.startswith("pyspark.") and hasattr(obj, "mapInArrow")


def _as_frame(source: Any, spark: Any, side: str, footers: Footers | None = None) -> Any:
    """A Spark DataFrame: as given, a Parquet path read by Spark (with the schema its
    ``footers`` state, when they state one Spark would infer the same: :func:`spark_schema`),
    or a local frame sent."""
    if _is_frame(source):
        return source
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if not os.path.exists(path) and "://" not in path:
            raise ReceValError(f"{side} file not found: {path}")
        low = path.lower().rstrip("/")
        if os.path.isfile(path) and not low.endswith((".parquet", ".pq")):
            raise ReceValError(
                f"engine='spark' reads {side} from Parquet (a .parquet file or "
                f"a folder of them); got {path!r}: convert it, or pass a Spark "
                "DataFrame"
            )
        schema = spark_schema(footers)
        return (spark.read if schema is None else spark.read.schema(schema)).parquet(path)
    if isinstance(source, pa.Table):
        source = source.to_pandas()
    if isinstance(source, dict):
        source = pd.DataFrame(source)
    if isinstance(source, pd.DataFrame):
        return spark.createDataFrame(source)
    raise ReceValError(
        f"engine='spark' takes {side} as a Spark DataFrame, a Parquet path or a "
        f"pandas DataFrame; got {type(source).__name__}"
    )


def _check_columns(frame: Any, wanted: Wanted, rating_required: bool) -> None:
    """The local engine's missing-column error, from the frame's schema (no Spark job)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for f in frame.schema.fields:
        try:
            fields.append(pa.field(f.name, to_arrow_type(f.dataType)))
        except Exception:  # a type Arrow cannot hold: not a column receval reads
            fields.append(pa.field(f.name, pa.null()))
    empty = pa.schema(fields).empty_table()
    try:
        read_columns(
            empty,
            side=wanted.side,
            user_col=wanted.user,
            item_col=wanted.item,
            value_col=wanted.value,
            value_required=wanted.value_required or rating_required,
            fallback_rank_col=wanted.rank,
            value_names={wanted.value_as: wanted.value, "rank": wanted.rank or "rank"},
        )
    except ReceValError as exc:
        if str(exc) != f"{wanted.side} is empty (no rows)":
            raise


def _common_type(a: Any, b: Any, what: str) -> Any:
    """The one Spark type both sides' ``what`` ids are cast to (the same hash on both)."""
    from pyspark.sql import types as T

    if a == b:
        return a
    text = (T.StringType, T.VarcharType, T.CharType)
    if isinstance(a, text) and isinstance(b, text):
        return T.StringType()
    if isinstance(a, T.IntegralType) and isinstance(b, T.IntegralType):
        return T.LongType()
    if isinstance(a, T.NumericType) and isinstance(b, T.NumericType):
        return T.DoubleType()

    def sample(t: Any) -> Any:
        return pa.array(["x"]) if isinstance(t, text) else np.zeros(1)

    check_same_kind(sample(a), sample(b), what)
    raise ReceValError(
        f"{what} ids of types {a.simpleString()} (truth) and {b.simpleString()} "
        "(predictions) cannot be compared; give both sides one type"
    )


def _union(
    truth: Any,
    preds: Any,
    wt: Wanted,
    wp: Wanted,
    order_by: str | None,
    ordered: bool,
    history: Any = None,
) -> tuple[Any, _Task]:
    """Both sides' columns in one frame: ``s`` (0 truth, 1 predictions), ``u``, ``i``, ``tv``
    (rating), ``pv`` (score or rank) and ``o`` (the row order, when it matters); with
    ``history`` (training rows ``u``, ``i``), those rows too (``s`` 2: each user's training
    items reach the user's partition)."""
    from pyspark.sql import functions as F

    t_value = wt.value if wt.value in truth.columns else None
    p_value = (
        wp.value
        if wp.value in preds.columns
        else (wp.rank if wp.rank is not None and wp.rank in preds.columns else None)
    )
    u_type = _common_type(truth.schema[wt.user].dataType, preds.schema[wp.user].dataType, "user")
    i_type = _common_type(truth.schema[wt.item].dataType, preds.schema[wp.item].dataType, "item")
    tv_type = truth.schema[t_value].dataType if t_value else "double"
    pv_type = preds.schema[p_value].dataType if p_value else "double"
    o_type = "long"
    if order_by is not None:
        for name, frame in (("truth", truth), ("predictions", preds)):
            if order_by not in frame.columns:
                raise ReceValError(
                    f"spark_options order_by={order_by!r}: {name} has no such "
                    f"column (columns: {', '.join(frame.columns)})"
                )
        o_type = _common_type(
            truth.schema[order_by].dataType, preds.schema[order_by].dataType, "order_by"
        )

    def one_side(frame: Any, flag: int, w: Wanted, tv: Any, pv: Any) -> Any:
        cols = [
            F.lit(flag).cast("byte").alias("s"),
            F.col(w.user).cast(u_type).alias("u"),
            F.col(w.item).cast(i_type).alias("i"),
        ]
        cols += [c.alias(name) for c, name in ((tv, "tv"), (pv, "pv")) if c is not None]
        if ordered:
            order = (
                F.col(order_by).cast(o_type)
                if order_by is not None
                else F.col(ROW)
                if ROW in frame.columns  # numbered before a join
                else F.monotonically_increasing_id()
            )
            cols.append(order.alias("o"))
        return frame.select(*cols)

    # a value column neither side has is not shuffled at all
    none_t = F.lit(None).cast(tv_type) if t_value else None
    none_p = F.lit(None).cast(pv_type) if p_value else None
    t_side = one_side(truth, 0, wt, F.col(t_value) if t_value else None, none_p)
    p_side = one_side(preds, 1, wp, none_t, F.col(p_value) if p_value else None)
    task = _Task(
        names=(wt.user, wt.item, t_value, wp.user, wp.item, p_value),
        ordered=ordered,
        history=history is not None,
        packed=((wt.item,), tuple(c for c in (wp.item, p_value) if c is not None)),
    )
    union = t_side.unionByName(p_side)
    if history is not None:
        cols = [
            F.lit(2).cast("byte").alias("s"),
            F.col("u").cast(u_type).alias("u"),
            F.col("i").cast(i_type).alias("i"),
        ]
        cols += [c.alias(name) for c, name in ((none_t, "tv"), (none_p, "pv")) if c is not None]
        if ordered:
            cols.append(F.monotonically_increasing_id().cast(o_type).alias("o"))
        seen = t_side.select("u").unionByName(p_side.select("u")).distinct()
        # only users with a truth or prediction row: no partition holds training rows alone
        union = union.unionByName(history.select(*cols).join(seen, "u", "left_semi"))
    return union, task


def _out_schema(user_type: Any, n_metrics: int) -> Any:
    from pyspark.sql import types as T

    return T.StructType(
        [
            T.StructField("k", T.ByteType(), False),
            T.StructField("u", user_type, True),
            *[T.StructField(f"m{j}", T.DoubleType(), True) for j in range(n_metrics)],
            T.StructField("meta", T.StringType(), True),
        ]
    )


def _arrow_schema(schema: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)
