"""The one local SparkSession of a test run (the ``spark`` fixture of tests/conftest.py).

Starting a JVM costs seconds; the Spark test modules used to start one each. Here one
``local[2]`` session serves them all: no UI, the driver on 127.0.0.1, the warehouse in a
pytest temporary folder (not ./spark-warehouse), Arrow for ``createDataFrame`` / ``toPandas``,
Spark's log at ERROR, and 4 shuffle partitions: the tests' frames have a few hundred rows, and
Spark's default 200 made the cases that leave the partitioning to Spark
(``spark_options={"partitions": "spark"}``, ``--spark-partitions spark``) and the joins outside
the engine's shuffle several times slower; the numbers do not depend on it (receval's engine
picks its own partitions unless told to take Spark's, and its numbers are the same on any).

A module that changes a runtime SQL setting does so with
:func:`receval.spark.session.session_conf`; the ``spark``
fixture also puts back, after each module, any runtime setting the module left changed and
drops what the module cached, so each module finds the session as the first one did.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest


def start_session(warehouse: Path) -> Any:
    """The shared local Spark session, or a pytest skip naming what is missing (pyspark, or a
    Java runtime for it to start)."""
    pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")
    from receval.exceptions import ReceValError
    from receval.spark.session import check_java

    try:
        check_java()
    except ReceValError as missing:  # pyspark would fail with a JAVA_GATEWAY_EXITED trace
        pytest.skip(f"no Java for pyspark: {missing}")
    from pyspark.sql import SparkSession

    left = SparkSession.getActiveSession()
    if left is not None:  # started by receval for an earlier test (paths, the CLI) and left
        left.stop()  # running: getOrCreate would return it without this session's settings
    # the partitions' Python workers run this interpreter (its packages, receval on its path)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("receval-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.warehouse.dir", str(warehouse))
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


def runtime_settings(spark: Any) -> dict[str, str]:
    """The session's settings that can change while it runs (runtime SQL settings)."""
    return {k: v for k, v in spark.conf.getAll.items() if spark.conf.isModifiable(k)}


def restore_settings(spark: Any, before: dict[str, str]) -> list[str]:
    """Put back ``before`` (from :func:`runtime_settings`): the keys that had changed."""
    now = runtime_settings(spark)
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for key in changed:
        if key in before:
            spark.conf.set(key, before[key])
        else:
            spark.conf.unset(key)
    return changed
