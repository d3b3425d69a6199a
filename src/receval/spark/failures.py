"""Spark's failures as one line, and Spark kept quiet while receval runs a job.

A failed Spark job surfaces in Python as a Py4J error whose text is the Java stack trace (often
hundreds of lines), printed after Spark's own WARN and ERROR log lines and its stage progress
bars. :func:`spark_call` turns that into one :class:`~receval.exceptions.ReceValError` that
names the step of receval's call that failed (reading the inputs, the evaluation job,
collecting the per-user values) and the usual remedy; the original exception stays chained
(``raise ... from``), so ``--debug`` shows the whole trace. While the call runs, Spark's log
level is ``ERROR`` (or the level asked), and the level before is restored afterwards.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from receval.exceptions import ReceValError
from receval.io.terminal import one_line

#: (pattern in the failure's text, what to do), the first that matches is said
REMEDIES: tuple[tuple[str, str], ...] = (
    (r"receval\.exceptions\.ReceValError: ", ""),
    (r"Python worker exited unexpectedly|Python worker .*crashed|worker.*killed|"
     r"PYTHON_WORKER|EOFException",
     "a Python worker died (killed, or out of memory): give the executors more memory "
     "(spark.executor.memory, spark.executor.pyspark.memory) or spread the users over more "
     "partitions (spark_options={'partitions': N})"),
    (r"OutOfMemoryError|Java heap space|GC overhead limit",
     "Spark ran out of memory: raise spark.driver.memory / spark.executor.memory, or use "
     "more partitions (spark_options={'partitions': N})"),
    (r"FAILED_READ_FILE|CANNOT_READ_FILE_FOOTER|not a Parquet file|PATH_NOT_FOUND|"
     r"Path does not exist|UNABLE_TO_INFER_SCHEMA",
     "check that the path is a readable Parquet file or a folder of them"),
    (r"stopped SparkContext|SparkContext (was|has been) shut ?down|Connection refused|"
     r"SPARK_CONTEXT_STOPPED|Py4JNetworkError|Answer from Java side is empty",
     "the Spark session or cluster went away: start a new session (or check the cluster) "
     "and rerun"),
)
DEFAULT_REMEDY = ("see Spark's log (its level: spark.sparkContext.setLogLevel), or rerun with "
                  "--debug for the trace")

#: a Java or Python exception's name and message on one line of a trace
_CAUSE = re.compile(r"((?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?:Exception|Error)"
                    r"|\[[A-Z_.]+\][^\n]*?)(?::\s*([^\n]*))?$", re.M)


class Stage:
    """The step of a Spark call that runs now (named by the error when it fails).

    Example:
        >>> s = Stage("starting Spark"); s.name = "the evaluation job"; s.name
        'the evaluation job'
    """

    def __init__(self, name: str) -> None:
        self.name = name


def is_spark_failure(err: BaseException) -> bool:
    """Whether ``err`` comes from Spark or Py4J (not receval's own errors).

    Example:
        >>> is_spark_failure(ValueError("x")), is_spark_failure(ReceValError("x"))
        (False, False)
    """
    if isinstance(err, ReceValError):
        return False
    module = type(err).__module__ or ""
    return module.startswith(("py4j", "pyspark"))


def cause(text: str) -> str:
    """The most telling line of a Spark failure's text: the last ``Caused by:``, else the
    first exception name with its message, else the first line; at most 300 characters.

    Example:
        >>> cause("An error occurred while calling o9.collect.\\n: org.apache.spark.SparkException:"
        ...       " Job aborted\\n\\tat x\\nCaused by: java.io.EOFException: end\\n\\tat y")
        'java.io.EOFException: end'
    """
    caused = re.findall(r"^Caused by: (.*)$", text, re.M)
    if caused:
        line = caused[-1]
    else:
        found = _CAUSE.search(text)
        line = found.group(0) if found else (text.strip().splitlines() or [""])[0]
    return one_line(line)[:300]


def explain(err: BaseException, stage: str) -> ReceValError:
    """The one-line error for a Spark failure during ``stage``.

    Example:
        >>> str(explain(RuntimeError("java.lang.OutOfMemoryError: Java heap space"),
        ...             "the evaluation job"))[:66]
        'Spark failed during the evaluation job: java.lang.OutOfMemoryError'
    """
    text = str(err)
    own = re.search(r"receval\.exceptions\.ReceValError: ([^\n]*)", text)
    if own:  # receval's own error, raised in a worker: said as it is
        return ReceValError(one_line(own.group(1)))
    remedy = next((fix for pattern, fix in REMEDIES if fix and re.search(pattern, text)),
                  DEFAULT_REMEDY)
    return ReceValError(f"Spark failed during {stage}: {cause(text)}; {remedy}")


def _level_now(spark: Any) -> str | None:
    """Spark's effective log level: the shell threshold (WARN by default), else the root
    logger's level; ``None`` when the JVM cannot say."""
    jvm = spark.sparkContext._jvm
    with contextlib.suppress(Exception):
        logging = getattr(getattr(jvm.org.apache.spark.internal, "Logging$"), "MODULE$")
        shell = logging.sparkShellThresholdLevel()
        if shell is not None:
            return str(shell.toString())
    with contextlib.suppress(Exception):
        return str(jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel()
                   .toString())
    return None


@contextlib.contextmanager
def log_level(spark: Any, level: str = "ERROR") -> Iterator[None]:
    """Spark's log level set to ``level`` while the block runs, the one before restored.

    Example:
        >>> callable(log_level)
        True
    """
    before = _level_now(spark)
    spark.sparkContext.setLogLevel(level)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # the JVM may be gone: nothing to restore
            spark.sparkContext.setLogLevel(before or "WARN")


@contextlib.contextmanager
def spark_call(stage: Stage) -> Iterator[Stage]:
    """Run a Spark call: a Spark or Py4J failure becomes :func:`explain`'s one line, naming
    ``stage.name`` at the time it failed, with the original chained.

    Example:
        >>> s = Stage("reading the inputs")
        >>> try:
        ...     with spark_call(s):
        ...         raise type("Py4JJavaError", (Exception,), {"__module__": "py4j.protocol"})(
        ...             "An error occurred\\n: org.apache.spark.SparkException: [PATH_NOT_FOUND] "
        ...             "Path does not exist: file:/x.parquet.")
        ... except ReceValError as err:
        ...     print(err)  # doctest: +ELLIPSIS
        Spark failed during reading the inputs: org.apache.spark.SparkException: ... a readable Parquet file or a folder of them
    """  # noqa: E501
    try:
        yield stage
    except Exception as err:
        if not is_spark_failure(err):
            raise
        raise explain(err, stage.name) from err
