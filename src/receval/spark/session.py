"""Starting Spark for the Spark engine: Java checked first (one-line error), then the active
session or a new one on ``master``."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from receval.exceptions import ReceValError

JAVA_HINT = ("install a Java runtime (17 or 21, e.g. apt-get install openjdk-17-jre-headless) "
             "and put it on PATH or set JAVA_HOME")


def check_java() -> str:
    """The ``java`` that pyspark will start, or a one-line :class:`ReceValError` saying what to
    install (pyspark itself fails with a long ``JAVA_GATEWAY_EXITED`` trace).

    pyspark runs ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set, else ``java`` on ``PATH``.

    Example:
        >>> import os
        >>> check_java().endswith("java") if os.environ.get("JAVA_HOME") or shutil.which("java") else True
        True
    """  # noqa: E501
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            return str(java)
        raise ReceValError(f"engine='spark' needs Java: JAVA_HOME={home!r} has no bin/java; "
                           + JAVA_HINT)
    found = shutil.which("java")
    if found is None:
        raise ReceValError("engine='spark' needs Java, and none is on PATH: " + JAVA_HINT)
    return found


def get_session(master: str | None = None) -> Any:
    """The active SparkSession, else a new one (on ``master`` when given; Java checked first).

    Example:
        >>> callable(get_session)
        True
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    check_java()
    # no stage progress bars on stderr around receval's output (or its one-line error), and
    # Spark's log at ERROR from the start (a JVM receval launches; its WARN lines at start-up
    # come before any setLogLevel could)
    builder = SparkSession.builder.appName("receval").config("spark.ui.showConsoleProgress",
                                                              "false")
    quiet = Path(__file__).with_name("log4j2-quiet.properties")
    if quiet.is_file() and not os.environ.get("PYSPARK_SUBMIT_ARGS") and \
            "spark.driver.extraJavaOptions" not in (builder._options or {}):
        builder = builder.config("spark.driver.extraJavaOptions",
                                 f"-Dlog4j2.configurationFile={quiet.as_uri()}")
    if master is not None:
        builder = builder.master(master)
    return builder.getOrCreate()


@contextlib.contextmanager
def session_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` (runtime SQL settings) in ``spark``'s configuration within the block; the
    session's own values, or their absence, restored after (an error in the block included).

    Example:
        >>> class Conf(dict):  # what a SparkSession's ``conf`` offers, for the example
        ...     set, unset = dict.__setitem__, dict.pop
        >>> class Session:
        ...     conf = Conf({"spark.sql.shuffle.partitions": "200"})
        >>> with session_conf(Session, {"spark.sql.shuffle.partitions": "6", "x": "1"}):
        ...     dict(Session.conf)
        {'spark.sql.shuffle.partitions': '6', 'x': '1'}
        >>> dict(Session.conf)
        {'spark.sql.shuffle.partitions': '200'}
    """
    before = {k: spark.conf.get(k, None) for k in settings}
    try:
        for key, value in settings.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
