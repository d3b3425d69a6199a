"""The memory budget: parsed from ``"2GiB"``, chosen from the machine when unset, and the
sizes of the chunks and partitions that keep the streaming path under it.

The model is measured, not guessed: the in-memory path holds about 85 bytes per input row at
its peak (benchmarks/README.md, 1M users x 100 predictions from Parquet), so a partition of
``budget / ROW_BYTES`` rows is evaluated within the budget; reading and spilling hold a
chunk and the partitions' write buffers, each a fraction of it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from receval.exceptions import ReceValError

#: bytes per input row the local plan holds at its peak (measured: about 85; the margin
#: covers the Arrow tables of a partition and the per-user values kept)
ROW_BYTES = 160
#: what a run holds whatever the data (the numba kernels loaded, Arrow's and the
#: allocator's pools, the Parquet reader's buffers: measured 80-100 MB on the 2-core dev
#: machine, 2026-12-07): taken off the budget before sizing
FIXED_BYTES = 96 << 20
#: the share of the machine's memory an unset budget takes
AUTO_SHARE = 0.5
#: the smallest budget accepted
MIN_BUDGET = 16 << 20

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}


def parse_budget(value: str | int | float) -> int:
    """Bytes from ``"2GiB"``, ``"500MB"``, ``"1.5G"`` or a number of bytes; a one-line
    error for anything else or for less than 16 MiB.

    Example:
        >>> parse_budget("2GiB"), parse_budget("500 MB"), parse_budget(1 << 30)
        (2147483648, 500000000, 1073741824)
        >>> parse_budget("lots")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: memory_budget must be a size such as 2GiB, 500MB or a number of bytes; got 'lots'
    """  # noqa: E501
    if isinstance(value, bool):
        raise ReceValError(f"memory_budget must be a size such as 2GiB; got {value!r}")
    if isinstance(value, int | float):
        n = int(value)
    else:
        found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(value))
        unit = found.group(2).lower() if found else None
        if found is None or unit not in _UNITS:
            raise ReceValError(
                "memory_budget must be a size such as 2GiB, 500MB or a number "
                f"of bytes; got {value!r}"
            )
        n = int(float(found.group(1)) * _UNITS[unit])
    if n < MIN_BUDGET:
        raise ReceValError(f"memory_budget must be at least 16MiB; got {value!r}")
    return n


def machine_memory() -> int:
    """The memory this process may use: the cgroup's limit when set, else the machine's.

    Example:
        >>> machine_memory() > 0
        True
    """
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def auto_budget() -> int:
    """The budget when none is given: :data:`AUTO_SHARE` of :func:`machine_memory`.

    Example:
        >>> auto_budget() >= MIN_BUDGET
        True
    """
    return max(int(machine_memory() * AUTO_SHARE), MIN_BUDGET)


def partition_rows(budget: int) -> int:
    """The most input rows (both sides) one partition may hold under ``budget`` bytes.

    Example:
        >>> partition_rows(1 << 30)
        3040870
    """
    working = max(budget - FIXED_BYTES, budget // 4)
    return max(int(working // ROW_BYTES * 0.5), 1024)


def chunk_rows(budget: int) -> int:
    """Rows per chunk read: a tenth of a partition, at most 1M rows (Arrow reads in chunks
    of this size are as fast as whole row groups from 64k rows up).

    Example:
        >>> chunk_rows(1 << 30)
        304087
    """
    return max(min(partition_rows(budget) // 10, 1 << 20), 1024)


def in_memory_bytes(rows: int) -> int:
    """What the in-memory path holds at its peak for ``rows`` input rows (both sides).

    Example:
        >>> in_memory_bytes(1_000_000)
        85000000
    """
    return rows * 85


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes (``ru_maxrss``).

    Example:
        >>> peak_rss() > 0
        True
    """
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def text_rows(path: Path) -> int:
    """About how many lines a text file holds (gzip: four times its size on disk)."""
    from receval.io.source import head_text, is_gzip

    size = path.stat().st_size * (4 if is_gzip(path) else 1)
    head = head_text(path, "truth")
    lines = max(head.count("\n"), 1)
    return max(int(size / max(len(head.encode()) / lines, 1)), 1)


def would_not_fit(truth: Any, predictions: Any, budget: int | None = None) -> bool:
    """Whether two input files (CSV, TSV or Parquet) would take more than ``budget`` bytes
    (default :func:`auto_budget`) in memory; ``False`` for anything else (frames, other
    formats, files that cannot be read: the in-memory path names the problem).

    Example:
        >>> would_not_fit("/no/such.csv", "/no/such.parquet")
        False
    """
    from receval.io.detect import detect_format

    if not all(isinstance(x, str | Path) for x in (truth, predictions)):
        return False
    rows = 0
    try:
        for side, source in (("truth", truth), ("predictions", predictions)):
            path = Path(source)
            if not path.is_file() or detect_format(path, side) not in ("csv", "tsv", "parquet"):
                return False
            if detect_format(path, side) == "parquet":
                import pyarrow.parquet as pq

                rows += int(pq.ParquetFile(path).metadata.num_rows)
            else:
                rows += text_rows(path)
    except (ReceValError, OSError, ValueError):  # pyarrow.ArrowInvalid is a ValueError
        return False
    return in_memory_bytes(rows) > (auto_budget() if budget is None else budget)
