"""TREC qrels (``query iter doc rel``) and runs (``query Q0 doc rank score tag``).

Fields are separated by any run of spaces or tabs, so blocks are normalised (runs of blanks to
one space, blanks at line ends dropped) and parsed by Arrow with quoting off: ids may hold
commas or quotes. Ids stay strings (``"007"`` is not ``7``). The second field (``0``, ``Q0``)
and a run's rank and tag are never parsed: trec_eval orders a run by score alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from receval.exceptions import ReceValError
from receval.io.detect import trec_kind
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
    kind = trec_kind(head_lines(path, side, n=1)[0])
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
                text = _normalise(block)
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


def _normalise(block: bytes) -> bytes:
    """Runs of blanks -> one space, none at the start or end of a line.

    Tabs become spaces and ``\r`` goes in one C-level pass; the regular expressions only run
    on blocks that still hold a double space or a blank at a line's edge (they are slow when
    every line has matches).
    """
    text = block.translate(_TABS_TO_SPACES, b"\r")
    # numpy, not `b"  " in text`: a substring search crawls when its first byte is everywhere
    codes = np.frombuffer(text, dtype=np.uint8)
    space, newline = codes == 32, codes == 10
    if (space[1:] & space[:-1]).any():
        text = _BLANKS.sub(b" ", text)
    if (space[1:] & newline[:-1]).any() or (space[:-1] & newline[1:]).any():
        text = _LINE_EDGES.sub(b"\n", text)
    return text[1:] if text.startswith(b" ") else text
