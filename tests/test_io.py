"""receval.io: every reader returns user, item, rating|score with exact ids and only the columns
it needs; every malformed file is a one-line ReceValError."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import receval
from receval import io
from receval.exceptions import ReceValError
from receval.io import ids
from receval.io.detect import detect_format, sniff_delimiter, trec_kind
from receval.io.wanted import Wanted


def _write(path: Path, text: str, *, gz: bool = False) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


# --- delimited -------------------------------------------------------------------------------


def test_csv_reads_only_the_wanted_columns_with_exact_ids(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv",
               'user,title,item,rating\n1,"A, b",007,0.5\n2,x,"i,1",NA\n2,y,NA,1e-3\n')
    table = io.read_truth(p)
    assert table.column_names == ["user", "item", "rating"]
    assert table.column("user").type == pa.int64()
    # "007" is not 7, "NA" is an item, a quoted comma stays in the id
    assert table.column("item").to_pylist() == ["007", "i,1", "NA"]
    assert table.column("rating").to_pylist() == [0.5, None, 0.001]  # NA: a missing rating


def test_csv_include_columns_is_passed_to_arrow(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    p = _write(tmp_path / "t.csv", "user,item,rating,ts,comment\n1,2,3,4,hello\n")
    seen: list[list[str]] = []
    original = pacsv.open_csv

    def spy(stream, read_options, parse_options, convert_options):  # type: ignore[no-untyped-def]
        seen.append(list(convert_options.include_columns))
        return original(stream, read_options, parse_options, convert_options)

    monkeypatch.setattr(pacsv, "open_csv", spy)
    io.read_truth(p)
    assert seen == [["user", "item", "rating"]]


@pytest.mark.parametrize("delimiter", [",", "\t", ";", "|"])
def test_delimiter_is_sniffed(tmp_path: Path, delimiter: str) -> None:
    text = delimiter.join(["user", "item", "score"]) + "\n" + delimiter.join(["u", "i", "1"])
    table = io.read_predictions(_write(tmp_path / "p.txt", text + "\n"))
    assert table.to_pylist() == [{"user": "u", "item": "i", "score": 1.0}]


def test_sniff_respects_quotes() -> None:
    assert sniff_delimiter(['user;item;score', '"a;b";c;1']) == ";"
    assert sniff_delimiter(['user,item', '"x;y;z",c']) == ","


def test_no_header_takes_positional_columns(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.tsv", "u1\ti1\t4\textra\nu1\ti2\t2\textra\n")
    table = io.read_truth(p, header=False)
    assert table.column_names == ["user", "item", "rating"]
    assert table.column("rating").to_pylist() == [4.0, 2.0]


def test_gzip_by_content_not_name(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", "user,item,score\n1,2,0.5\n", gz=True)
    assert io.read_predictions(p).num_rows == 1
    q = _write(tmp_path / "p.csv.gz", "user,item,score\n1,2,0.5\n", gz=True)
    assert io.read_predictions(q).num_rows == 1


def test_rank_column_when_there_is_no_score(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", "user,item,rank\n1,a,1\n1,b,2\n")
    t = _write(tmp_path / "t.csv", "user,item\n1,b\n")
    table = io.read_predictions(p)
    assert table.column_names == ["user", "item", "rank"]
    assert receval.evaluate(io.read_truth(t), table, ["MRR"]).summary == {"MRR": 0.5}


def test_ids_narrow_per_batch_and_widen_back_exactly(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from receval.io import delimited

    monkeypatch.setattr(delimited, "BLOCK_SIZE", 64)  # many small batches
    lines = [f"{u},{u % 7}" for u in range(200)] + ["u-last,3"]
    table = io.read_truth(_write(tmp_path / "t.csv", "user,item\n" + "\n".join(lines) + "\n"))
    users = table.column("user")
    assert users.type == pa.string()
    assert users.to_pylist()[:3] == ["0", "1", "2"] and users.to_pylist()[-1] == "u-last"
    assert table.column("item").type == pa.int64()


def test_narrow_only_canonical_integers() -> None:
    assert ids.narrow(pa.array(["0", "-3", "12"])).type == pa.int64()
    for bad in (["01"], ["-0"], ["1.0"], ["1e3"], ["12345678901234567890"], [" 1"]):
        assert ids.narrow(pa.array(bad)).type == pa.string()


def test_align_id_types_matches_int_and_string_sides() -> None:
    truth = pa.table({"user": [1, 2], "item": ["a", "b"]})
    preds = pa.table({"user": ["1", "x"], "item": ["a", "b"], "score": [1.0, 1.0]})
    t, p = ids.align_id_types([truth, preds])
    assert t.column("user").to_pylist() == ["1", "2"]
    assert receval.evaluate(t, p, ["P@1"]).summary["P@1"] == 0.5


# --- parquet and JSON Lines ------------------------------------------------------------------


def test_parquet_reads_only_the_wanted_columns(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "p.parquet"
    pq.write_table(pa.table({"uid": [1, 1], "iid": ["a", "b"], "pred": [0.1, 0.2],
                             "blob": ["x" * 100, "y" * 100]}), p)
    seen: list[list[str]] = []
    original = pq.ParquetFile.read_row_groups

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs["columns"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    table = io.read_predictions(p, user_col="uid", item_col="iid", score_col="pred")
    assert table.column_names == ["user", "item", "score"]
    assert seen == [["uid", "iid", "pred"]]


def test_parquet_decodes_as_many_row_groups_at_once_as_arrow_has_threads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one row group per read left most cores idle on a 16-core machine (issue 24)
    p = tmp_path / "p.parquet"
    pq.write_table(pa.table({"user": list(range(10)), "item": list(range(10)),
                             "score": [0.5] * 10}), p, row_group_size=2)
    reads: list[list[int]] = []
    original = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, *args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(list(row_groups))
        return original(self, row_groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    threads = pa.cpu_count()
    pa.set_cpu_count(3)
    try:
        table = io.read_predictions(p)
    finally:
        pa.set_cpu_count(threads)
    assert reads == [[0, 1, 2], [3, 4]]
    assert table.column("user").to_pylist() == list(range(10))


def test_jsonl_ignores_other_fields(tmp_path: Path) -> None:
    rows = [{"user": 1, "item": "a", "score": 2, "meta": {"x": [1, 2]}},
            {"user": 2, "item": "b", "score": 0.5}]
    p = _write(tmp_path / "p.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n", gz=True)
    table = io.read_predictions(p)
    assert table.to_pylist() == [{"user": 1, "item": "a", "score": 2.0},
                                 {"user": 2, "item": "b", "score": 0.5}]


# --- TREC ------------------------------------------------------------------------------------


def test_trec_qrels_and_run_with_tabs_spaces_q0_commas_gzip(tmp_path: Path) -> None:
    qrels = _write(tmp_path / "t.qrels", "q1 0 d,1 1\n\nq1\t0\t007  2\n q2 Q0 d3 0 \n", gz=True)
    run = _write(tmp_path / "r.txt", "q1\tQ0\t007\t1\t2.5\trun-a\nq1 0 d,1 2 1.5 run-a\r\n")
    truth = io.read_truth(qrels)
    assert truth.to_pylist() == [
        {"user": "q1", "item": "d,1", "rating": 1.0},
        {"user": "q1", "item": "007", "rating": 2.0},
        {"user": "q2", "item": "d3", "rating": 0.0},
    ]
    preds = io.read_predictions(run)
    assert preds.column("item").to_pylist() == ["007", "d,1"]
    assert preds.column("score").to_pylist() == [2.5, 1.5]
    assert preds.schema.field("user").type == pa.string()


def test_trec_ids_stay_strings_even_when_numeric(tmp_path: Path) -> None:
    run = _write(tmp_path / "a.run", "1 Q0 7 1 2.0 t\n1 Q0 007 2 1.0 t\n")
    preds = io.read_predictions(run)
    assert preds.column("item").to_pylist() == ["7", "007"]


def test_trec_kind_by_shape() -> None:
    assert trec_kind("q 0 d 1") == "qrels"
    assert trec_kind("q Q0 d 1 0.5 tag") == "run"
    assert trec_kind("user,item,score") is None
    assert trec_kind("q Q0 d one 0.5 tag") is None


def test_trec_forced_format_and_wrong_side(tmp_path: Path) -> None:
    qrels = _write(tmp_path / "q.csv", "q1 0 d1 1\n")
    assert io.read_truth(qrels, format="trec").num_rows == 1
    with pytest.raises(ReceValError, match="is a TREC qrels file; a TREC run line"):
        io.read_predictions(qrels, format="trec")


def test_trec_bad_line_names_the_file(tmp_path: Path) -> None:
    run = _write(tmp_path / "r.run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 t\n")
    with pytest.raises(ReceValError, match=r"r\.run as TREC run.*Expected 6 columns"):
        io.read_predictions(run)


# --- detection, names, progress, errors ------------------------------------------------------


def test_detect_format(tmp_path: Path) -> None:
    cases = {
        "a.csv": "user,item\n1,2\n",
        "a.tsv.gz": "user\titem\n1\t2\n",
        "a.txt": "user\titem\n1\t2\n",
        "b.txt": "q 0 d 1\n",
        "c.dat": '{"user": 1}\n',
    }
    expected = {"a.csv": "csv", "a.tsv.gz": "tsv", "a.txt": "tsv", "b.txt": "trec",
                "c.dat": "jsonl"}
    for name, text in cases.items():
        assert detect_format(_write(tmp_path / name, text), "truth") == expected[name], name
    pq.write_table(pa.table({"a": [1]}), tmp_path / "noext")
    assert detect_format(tmp_path / "noext", "truth") == "parquet"


def test_model_names() -> None:
    assert io.model_names(["runs/bm25.run.gz", "x/dense.csv"]) == ["bm25", "dense"]
    assert io.model_names(["a/run.csv", "b/run.csv"]) == ["a/run", "b/run"]
    assert io.model_names(["run.csv", "run.csv"]) == ["run#1", "run#2"]


def test_progress_callback_reaches_the_file_size(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from receval.io import delimited

    monkeypatch.setattr(delimited, "BLOCK_SIZE", 256)
    lines = "".join(f"u{i},i{i},{i}\n" for i in range(500))
    p = _write(tmp_path / "p.csv", "user,item,score\n" + lines)
    seen: list[int] = []
    io.read_predictions(p, progress=seen.append)
    assert len(seen) > 1 and seen == sorted(seen) and seen[-1] == p.stat().st_size


def test_rich_progress_bar_draws_when_forced(tmp_path: Path) -> None:
    import io as stdio

    from rich.console import Console

    from receval.io.progress import file_progress

    p = _write(tmp_path / "p.csv", "user,item,score\n1,2,3\n")
    out = stdio.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with file_progress(p, "model", console, force=True) as callback:
        assert callback is not None
        io.read_predictions(p, progress=callback)
    assert "reading model" in out.getvalue()


BAD_FILES = [
    ("empty.csv", b"", "is empty"),
    ("header.csv", b"user,item,score\n", "has a header but no rows"),
    ("semi.csv", b"user;item;score\nu;i;1\n", None),
    ("bad.csv", b"user,item,score\nu,i,NA\nu,j,abc\n",
     r"'score' holds 'abc' at line 3 of .*bad.csv \(1 bad row in all\); 'score' must be numeric"),
    ("noid.csv", b"user,item,score\nu,i,1\n,j,2\n",
     r"'user' holds an empty id at line 3 of .*noid.csv \(1 bad row in all\)"),
    ("bad.parquet", b"PAR1 not really parquet", "cannot read predictions file"),
    ("bin.csv", b"\x00\x01\x02user,item\n", "binary"),
    ("trunc.csv", gzip.compress(b"user,item,score\n" * 1000, mtime=0)[:40], "cannot read"),
    ("ragged.csv", b"user,item,score\nu,i,1\nu,j\n",
     "has 2 fields at line 3 where the header has 3"),
    ("bad.jsonl", b'{"user": 1, "item": 2, "score": 1}\n{"user": 1,\n', "cannot read"),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_FILES,
                         ids=[case[0] for case in BAD_FILES])
def test_bad_files_are_one_line_errors(tmp_path: Path, name: str, content: bytes,
                                       message: str | None) -> None:
    p = tmp_path / name
    p.write_bytes(content)
    kwargs = {"delimiter": ","} if name == "semi.csv" else {}
    with pytest.raises(ReceValError) as info:
        io.read_predictions(p, **kwargs)
    text = str(info.value)
    assert "\n" not in text
    if message is not None:
        assert re.search(message, text), text
    else:
        assert "is the delimiter right?" in text


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ReceValError, match="truth file not found"):
        io.read_truth(tmp_path / "nope.csv")
    with pytest.raises(ReceValError, match="is a directory"):
        io.read_truth(tmp_path)


def test_missing_column_lists_the_columns_and_hints(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", "1,2,0.5\n1,3,0.2\n")
    with pytest.raises(ReceValError, match=r"no column 'user', 'item', 'score'.*--no-header"):
        io.read_predictions(p)
    assert Wanted.truth().resolve(["user", "item", "x"], "t") == {"user": "user",
                                                                   "item": "item"}


# --- trec_eval 10 conventions, line numbers, per-side names --------------------------------


def test_trec_comments_and_extra_run_fields(tmp_path: Path) -> None:
    run = _write(tmp_path / "r.txt", "# by bm25\n q1 Q0 d#1 1 2.0 t junk  more\n\n"
                                     "#q1 Q0 d2 2 1.0 t\nq1 Q0 d3 3 0.5 t\n", gz=True)
    table = io.read_predictions(run)
    assert table.to_pylist() == [{"user": "q1", "item": "d#1", "score": 2.0},
                                 {"user": "q1", "item": "d3", "score": 0.5}]
    # as in trec_eval, a qrels line with a field after the relevance is malformed
    qrels = _write(tmp_path / "q.qrels", "q1 0 d1 1\nq1 0 d2 1 extra\n")
    with pytest.raises(ReceValError, match="as TREC qrels"):
        io.read_truth(qrels)


def test_bad_value_line_counts_header_blank_and_gzip(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv.gz", "user,item,score\n\nu1,i1,1\n\n\nu2,i2,x\nu3,i3,y\n",
               gz=True)
    with pytest.raises(ReceValError, match=r"holds 'x' at line 6 of .*\(2 bad rows in all\)"):
        io.read_predictions(p)
    nan = _write(tmp_path / "p.tsv", "u1\ti1\t1\nu2\ti2\tnan\n")
    with pytest.raises(ReceValError, match=r"'score' holds nan at line 2 of .*1 bad row"):
        io.read_predictions(nan, header=False)


def test_per_side_columns_and_their_errors(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.csv", "userId,movieId,prediction\n1,2,0.5\n")
    got = io.read_predictions(p, user_col="x", columns={"user": "userId", "item": "movieId",
                                                        "score": "prediction"})
    assert got.to_pylist() == [{"user": 1, "item": 2, "score": 0.5}]
    with pytest.raises(ReceValError, match=r"prediction_columns has an unknown key 'rating'"):
        io.read_predictions(p, columns={"rating": "r"})
    with pytest.raises(ReceValError, match=r"the user and score columns are both 'userId'"):
        io.read_predictions(p, columns={"user": "userId", "score": "userId"})


def test_source_of_a_file_is_kept_for_later_messages(tmp_path: Path) -> None:
    t = _write(tmp_path / "t.csv", "a,b\n1,2\n")
    table = io.read_truth(t, user_col="a", item_col="b", rating_col="stars")
    source = json.loads(table.schema.metadata[io.SOURCE_KEY])
    assert source["found"] == ["a", "b"] and source["asked"]["rating"] == "stars"
    with pytest.raises(ReceValError, match=r"truth file \S+t.csv has no column 'stars'; its "
                                           r"columns are: 'a', 'b'"):
        receval.evaluate(table, {"user": [1], "item": [2], "score": [1.0]}, ["RMSE"])
