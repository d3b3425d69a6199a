"""Starting Spark for the Spark engine: Java checked first (one-line error), then the active
session or a new one on ``master``."""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
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
    from pyspark import SparkContext

    with warnings.catch_warnings():  # pyspark's notice about pandas 3, before receval's line
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas",
                                FutureWarning)
        if SparkContext._gateway is None:  # receval starts the JVM: its start-up lines held
            with _QuietStart(dict(builder._options or {})):
                return builder.getOrCreate()
        return builder.getOrCreate()


#: what a JVM says on stderr while it starts, before receval's one line could: held back
#: (the incubator warning is the JVM's own; the log-level lines Spark's when it starts)
START_UP_LINES = ("WARNING: Using incubator modules", "Setting default log level to",
                  "To adjust logging level use sc.setLogLevel")


class _QuietStart:
    r"""Launch Spark's JVM with its stderr read by a thread: while the session starts, the lines
    of :data:`START_UP_LINES` are dropped and the rest held (said in the error when the start
    fails); once it has started, every line is passed on to stderr (Spark's log, at the level
    the session sets).

    Example:
        >>> q = _QuietStart({})
        >>> q.take("Setting default log level to \"WARN\".\n"), q.held
        (None, [])
        >>> q.take("Error: boom\n"), q.held
        (None, ['Error: boom\n'])
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.held: list[str] = []
        self.started = False

    def take(self, line: str) -> str | None:
        """``line`` to pass on now, or None (dropped, or held until the start ends)."""
        if self.started:
            return line
        if not line.startswith(START_UP_LINES):
            self.held.append(line)
        return None

    def _forward(self, stream: Any) -> None:
        import sys

        for raw in iter(stream.readline, b""):
            line = self.take(raw.decode("utf-8", "replace"))
            if line is not None:
                sys.stderr.write(line)
                sys.stderr.flush()

    def __enter__(self) -> _QuietStart:
        import subprocess
        import threading

        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway

        conf = SparkConf(loadDefaults=False)
        for key, value in self.options.items():
            conf.set(key, value)
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
        except Exception as err:  # the JVM did not start: say what it said
            said = " ".join(line.strip() for line in self.held[-3:])
            raise ReceValError(f"Spark's JVM did not start: {said or err}") from err
        proc = getattr(gateway, "proc", None)
        if proc is not None and proc.stderr is not None:
            threading.Thread(target=self._forward, args=(proc.stderr,), daemon=True,
                             name="receval-spark-stderr").start()
        SparkContext._ensure_initialized(gateway=gateway)
        return self

    def __exit__(self, *exc: object) -> None:
        import sys
        import time

        time.sleep(0.05)  # the lines written during the start reach the thread
        self.started = True
        if exc[0] is not None:
            for line in self.held:  # a failed start: what the JVM said, then the error
                sys.stderr.write(line)
        self.held = []


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
