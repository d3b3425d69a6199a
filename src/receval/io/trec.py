"""TREC qrels (``query iter doc rel``) and runs (``query Q0 doc rank score tag``).

Fields are separated by any run of spaces or tabs, so blocks are normalised (runs of blanks to
one space, blanks at line ends dropped) and parsed by Arrow with quoting off: ids may hold
commas or quotes. Ids stay strings (``"007"`` is not ``7``). The second field (``0``, ``Q0``)
and a run's rank and tag are never parsed: trec_eval orders a run by score alone.

As trec_eval 10: lines starting with ``#`` are comments (a ``#`` inside an id is not), blank
lines are skipped, and any field after a run's tag is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from receval.exceptions import ReceValError
from receval.io.detect import first_data_line, trec_kind
from receval.io.source import Progress, head_lines, one_line, open_stream

#: field names of each kind, and the fields read (output name -> field)
SHAPES = {
    "qrels": (("query", "iteration", "doc", "rel"), {"user": "query", "item": "doc",
                                                      "rating": "rel"}),
    "run": (("query", "q0", "doc", "rank", "score", "tag"), {"user": "query", "item": "doc",
                                                             "score": "score"}),
}
EXPECTED = {"truth": "qrels", "predictions": "run"}
BLOCK_SIZE = 16 << 20
_TABS_TO_SPACES = bytes.maketrans(b"\t\f\v", b"   ")
_BLANKS = re.compile(rb" {2,}")
_LINE_EDGES = re.compile(rb" ?\n ?")
_COMMENTS = re.compile(rb"^#[^\n]*\n", re.M)


def read_trec(path: Path, side: str, *, progress: Progress | None = None) -> pa.Table:
    """Read a qrels file (truth: ``user, item, rating``) or a run (predictions: ``user, item,
    score``); the kind comes from the first line's shape and must suit ``side``.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.run"
        >>> _ = p.write_text("q1\\tQ0  doc,1 1 2.5 bm25\\n q1 0 007 2 1.5 bm25 \\n")
        >>> read_trec(p, "predictions").to_pylist()
        [{'user': 'q1', 'item': 'doc,1', 'score': 2.5}, {'user': 'q1', 'item': '007', 'score': 1.5}]
    """
    kind = trec_kind(first_data_line(head_lines(path, side)))
    expected = EXPECTED[side]
    if kind != expected:
        shape = " ".join(SHAPES[expected][0])
        found = f"a TREC {kind} file" if kind else "not TREC"
        raise ReceValError(f"{side} file {path} is {found}; a TREC {expected} line is '{shape}'")
    names, columns = SHAPES[kind]
    read_options = pacsv.ReadOptions(column_names=list(names))
    parse_options = pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False)
    convert_options = pacsv.ConvertOptions(
        include_columns=list(columns.values()),
        column_types={src: pa.string() if out in ("user", "item") else pa.float64()
                      for out, src in columns.items()},
        null_values=[], strings_can_be_null=False,
    )
    tables, line = [], 1
    stream, done = open_stream(path, side)
    try:
        with stream:
            for block in _blocks(stream):
                text = _normalise(block, len(names) if kind == "run" else None)
                try:
                    tables.append(pacsv.read_csv(pa.py_buffer(text), read_options,
                                                 parse_options, convert_options))
                except pa.ArrowInvalid as err:
                    raise ReceValError(
                        f"cannot read {side} file {path} as TREC {kind} (lines from {line}): "
                        f"{one_line(err)}"
                    ) from None
                line += block.count(b"\n")
                if progress is not None:
                    progress(done())
    except (OSError, EOFError) as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None
    table = pa.concat_tables(tables) if tables else None
    if table is None or table.num_rows == 0:
        raise ReceValError(f"{side} file is empty: {path}")
    return table.rename_columns(list(columns))


def _blocks(stream: pa.NativeFile) -> Iterator[bytes]:
    """Blocks of whole lines (the last one may lack its line end)."""
    rest = b""
    while True:
        data = stream.read(BLOCK_SIZE)
        if not data:
            break
        data = rest + data
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            yield data[:cut]
    if rest.strip():
        yield rest + b"\n"


def _normalise(block: bytes, n_fields: int | None) -> bytes:
    """Runs of blanks -> one space, none at the start or end of a line; ``#`` comment lines
    dropped; fields after the ``n_fields``-th dropped (runs only: in trec_eval a qrels line
    with more fields is malformed).

    Tabs become spaces and ``\r`` goes in one C-level pass; the regular expressions only run
    on blocks that still hold a double space or a blank at a line's edge (they are slow when
    every line has matches).

    Example:
        >>> _normalise(b"# run\\nq1\\tQ0 d1 1 2.0 t  extra junk\\nq1 Q0 d#2 2 1.0 t\\n", 6)
        b'q1 Q0 d1 1 2.0 t\\nq1 Q0 d#2 2 1.0 t\\n'
    """
    text = block.translate(_TABS_TO_SPACES, b"\r")
    # numpy, not `b"  " in text`: a substring search crawls when its first byte is everywhere
    codes = np.frombuffer(text, dtype=np.uint8)
    space, newline = codes == 32, codes == 10
    if (space[1:] & space[:-1]).any():
        text = _BLANKS.sub(b" ", text)
    if (space[1:] & newline[:-1]).any() or (space[:-1] & newline[1:]).any():
        text = _LINE_EDGES.sub(b"\n", text)
    text = text[1:] if text.startswith(b" ") else text
    if text.startswith(b"#") or b"\n#" in text:
        text = _COMMENTS.sub(b"", text)
    return text if n_fields is None else _cut_fields(text, n_fields)


def _cut_fields(text: bytes, n_fields: int) -> bytes:
    """Each line cut after its ``n_fields``-th field (blanks already normalised to one space).

    Example:
        >>> _cut_fields(b"a b c d\\ne f\\n", 2)
        b'a b\\ne f\\n'
    """
    codes = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(codes == 10)
    spaces = np.cumsum(codes == 32)
    per_line = np.diff(np.concatenate([[0], spaces[ends]])) if len(ends) else spaces[-1:]
    if not len(per_line) or per_line.max() < n_fields:
        return text
    lines = text.split(b"\n")
    return b"\n".join(b" ".join(line.split(b" ", n_fields)[:n_fields]) for line in lines)
