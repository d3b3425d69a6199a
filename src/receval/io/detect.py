"""Which format a file is in (by extension, else by content) and which delimiter it uses."""

from __future__ import annotations

import csv
from pathlib import Path

from receval.exceptions import ReceValError
from receval.io.source import PARQUET_MAGIC, head_lines, is_gzip, magic, seekable

# a header or id of 200,000 characters is legal CSV: the csv module's default field limit
# (131,072) would make sniffing crash; raising a limit changes nothing else
csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))

FORMATS = ("auto", "csv", "tsv", "parquet", "jsonl", "trec")
DELIMITERS = (",", "\t", ";", "|")

_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".qrels": "trec",
    ".run": "trec",
    ".trec": "trec",
    ".res": "trec",
}


def detect_format(path: Path, side: str, forced: str = "auto") -> str:
    """The format of ``path``: ``forced`` unless ``"auto"``, else by extension, else by content.

    A ``.gz`` suffix is looked through; files without a known extension are sniffed: Parquet by
    its magic bytes, JSON Lines by a leading ``{``, TREC by its whitespace-separated shape
    (``query 0 doc rel`` or ``query Q0 doc rank score tag``), anything else is delimited text.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.txt"; _ = p.write_text("q1 0 d1 1\\n")
        >>> detect_format(p, "truth")
        'trec'
    """
    if forced not in FORMATS:
        raise ReceValError(f"{side} format {forced!r} is not one of {', '.join(FORMATS)}")
    if forced != "auto":
        return forced
    path = seekable(path)  # a pipe is read once, whatever reads it next
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".gzip"):
        suffixes.pop()
    if suffixes and suffixes[-1] in _EXTENSIONS:
        return _EXTENSIONS[suffixes[-1]]
    if not is_gzip(path) and magic(path) == PARQUET_MAGIC:
        return "parquet"
    lines = head_lines(path, side)
    first = lines[0].lstrip()
    if first.startswith("{"):
        return "jsonl"
    if trec_kind(first_data_line(lines)) is not None:
        return "trec"
    return "tsv" if "\t" in first else "csv"


def first_data_line(lines: list[str]) -> str:
    """The first line that is not a ``#`` comment (TREC files may start with comments).

    Example:
        >>> first_data_line(["# made by bm25", "q1 Q0 d1 1 2.0 bm25"])
        'q1 Q0 d1 1 2.0 bm25'
    """
    return next((line for line in lines if not line.lstrip().startswith("#")), "")


def trec_kind(line: str) -> str | None:
    """``"qrels"`` or ``"run"`` if the line has that TREC shape, else ``None``; a run line may
    hold more fields after its tag (trec_eval ignores them).

    Example:
        >>> trec_kind("q1\\tQ0\\td,1\\t1\\t2.5\\tbm25"), trec_kind("q1 0 d1 2"), trec_kind("a,b,c")
        ('run', 'qrels', None)
        >>> trec_kind("301 Q0 FBIS3-27619 99 2.138276 STANDARD more junk at")
        'run'
    """
    fields = line.split()
    if len(fields) == 4 and _is_number(fields[3]):
        return "qrels"
    if len(fields) >= 6 and _is_number(fields[3]) and _is_number(fields[4]):
        return "run"
    return None


def sniff_delimiter(lines: list[str]) -> str:
    """The delimiter that splits the first lines into the same number (> 1) of fields.

    Quotes are respected, so a quoted id with commas does not fool it. Ties go to the order
    comma, tab, semicolon, pipe; with no consistent candidate, the most frequent one in the header.

    Example:
        >>> sniff_delimiter(["user;item;score", "u1;i,1;0.5"])
        ';'
        >>> sniff_delimiter(['user,item', '"a,b",c'])
        ','
    """
    best, best_fields = "", 1
    for d in DELIMITERS:
        counts = {len(row) for row in csv.reader(lines, delimiter=d)}
        if len(counts) == 1 and (n := counts.pop()) > best_fields:
            best, best_fields = d, n
    if best:
        return best
    header = lines[0] if lines else ""
    return max(DELIMITERS, key=lambda d: (header.count(d), -DELIMITERS.index(d)))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
