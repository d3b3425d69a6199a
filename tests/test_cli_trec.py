"""A TREC qrels/run pair through the CLI, against trec_eval's numbers computed by hand.

trec_eval's definitions (relevant: rel >= 1; the run ordered by score, descending):
P_k = hits@k / k; recall_k = hits@k / R; map = sum over relevant retrieved of P@rank / R;
map_cut_k = the same sum over ranks <= k, still / R; recip_rank = 1 / first relevant rank;
ndcg_cut_k = sum_{j<=k} rel_j / log2(j + 1) over the same sum for the ideal order;
Rprec = hits@R / R. The mean is over the queries of both files.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from receval.cli import main

# ids with a comma and a leading zero; tabs, runs of spaces, "0" and "Q0"; "7" is not "007"
QRELS = (
    "q1 0 d1 1\n"
    "q1\t0\td2\t0\n"
    "q1 0 d3   2\n"
    "q1 Q0 d,4 1\n"
    "q2 0 007 1\n"
    "q2 0 d5 0\n"
)
RUN = (
    "q1 Q0 d2 1 3.0 bm25\n"
    "q1\tQ0\td1\t2\t2.5\tbm25\n"
    "q1 Q0 d9 3 2.0 bm25\n"
    "q1 Q0 d3 4 1.5 bm25 \n"
    "q1 Q0 d,4 5 1.0 bm25\n"
    "q2 0 d5 1 0.9 bm25\n"
    "q2 0 007 2 0.8 bm25\n"
    "q2 0 7 3 0.7 bm25\n"
)
# q1: R = 3 (d1, d3 with rel 2, d,4); ranking d2 d1 d9 d3 d,4 -> relevant at ranks 2, 4, 5
# q2: R = 1 (007); ranking d5 007 7 -> relevant at rank 2
DCG_Q1 = 1 / math.log2(3) + 2 / math.log2(5) + 1 / math.log2(6)
IDCG_Q1 = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
TREC_EVAL = {
    "P@1": (0 + 0) / 2,
    "P@5": (3 / 5 + 1 / 5) / 2,
    "R@5": (3 / 3 + 1 / 1) / 2,
    "MAP": ((1 / 2 + 2 / 4 + 3 / 5) / 3 + (1 / 2) / 1) / 2,
    "MAP@3": ((1 / 2) / 3 + (1 / 2) / 1) / 2,
    "MRR": (1 / 2 + 1 / 2) / 2,
    "nDCG@5": (DCG_Q1 / IDCG_Q1 + (1 / math.log2(3)) / 1) / 2,
    "Rprec": (1 / 3 + 0 / 1) / 2,
}
EXPLICIT = ["--relevance-threshold", "1", "--ap-normalizer", "relevant", "--gain", "linear",
            "--ties", "item", "--users", "both"]


@pytest.fixture
def trec(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "test.qrels.gz"
    qrels.write_bytes(gzip.compress(QRELS.encode()))
    run = tmp_path / "bm25.run"
    run.write_text(RUN)
    return qrels, run


def _summary(*args: str | Path) -> dict:
    metrics = [a for m in TREC_EVAL for a in ("-m", m)]
    result = CliRunner().invoke(main, ["evaluate", *map(str, args), *metrics, "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_trec_pair_matches_trec_eval_by_hand(trec: tuple[Path, Path]) -> None:
    qrels, run = trec
    out = _summary("-t", qrels, "-p", run, *EXPLICIT)
    assert out["summary"] == pytest.approx(TREC_EVAL, abs=1e-12)
    assert out["model"] == "bm25"


def test_trec_eval_profile_gives_the_same_numbers(trec: tuple[Path, Path]) -> None:
    profiles = pytest.importorskip("receval.profiles")
    if "trec_eval" not in profiles.PROFILES:
        pytest.skip("no trec_eval profile")
    qrels, run = trec
    out = _summary("-t", qrels, "-p", run, "--profile", "trec_eval")
    assert out["summary"] == pytest.approx(TREC_EVAL, abs=1e-6)  # trec_eval scores are floats


def test_qrels_rel_0_is_not_relevant_by_default(trec: tuple[Path, Path]) -> None:
    qrels, run = trec
    out = _summary("-t", qrels, "-p", run)
    assert out["options"]["relevance_threshold"] == 1
    assert out["summary"]["P@5"] == pytest.approx(TREC_EVAL["P@5"])


def test_trec_detected_by_shape_or_forced(trec: tuple[Path, Path], tmp_path: Path) -> None:
    _, run = trec
    plain_q, plain_r = tmp_path / "qrels.txt", tmp_path / "run.tsv"
    plain_q.write_text(QRELS)
    plain_r.write_text(RUN)
    detected = _summary("-t", plain_q, "-p", run, *EXPLICIT)
    forced = _summary("-t", plain_q, "-p", plain_r, "--truth-format", "trec",
                      "--predictions-format", "trec", *EXPLICIT)
    assert detected["summary"] == forced["summary"] == pytest.approx(TREC_EVAL)


def test_several_runs_side_by_side(trec: tuple[Path, Path], tmp_path: Path) -> None:
    qrels, run = trec
    reverse = tmp_path / "reverse.run"
    lines = [line.split() for line in RUN.splitlines()]
    reverse.write_text("".join(f"{q} Q0 {d} {r} {-float(s)} rev\n" for q, _, d, r, s, *_ in lines))
    out = _summary("-t", qrels, "-p", run, "-p", reverse, *EXPLICIT)
    assert out["models"] == ["bm25", "reverse"]
    assert out["summary"]["bm25"] == pytest.approx(TREC_EVAL)
    # reversed: q1 d,4 d3 d9 d1 d2 (hits 1, 2, 4); q2 7 007 d5 (hit 2)
    assert out["summary"]["reverse"]["MRR"] == pytest.approx((1 + 1 / 2) / 2)
    assert out["summary"]["reverse"]["P@1"] == pytest.approx(0.5)


# trec_eval 10's test/qrels.test.with-comments and test/results.trunc (excerpts): comment lines
# start with "#" ("CR#93E-1860" is a document, not a comment); a run's fields after the tag are
# ignored ("any field following run_id is ignored", get_trec_results.c)
QRELS_WITH_COMMENTS = (
    "# comment here\n"
    "301 0 CR93E-10279 0\n"
    "301 0 CR93E-10505 0\n"
    "# and comment here\n"
    "301 0 CR93E-1282 1\n"
    "301 0 CR93E-1850 0\n"
    "# comment in docno\n"
    "301 0 CR#93E-1860 1\n"
)
RESULTS_TRUNC = (
    "301\tQ0\tCR93E-10279\t99\t  2.143418\tSTANDARD more junk at\n"
    "301\tQ0\tCR#93E-1860\t98\t  2.139655\tSTANDARD end of lines.\n"
    "# a comment in the run\n"
    "301\tQ0\tCR93E-10505\t97\t  2.138276\tSTANDARD reserved for \n"
    "301\tQ0\tCR93E-1282\t96\t  1.875063\tSTANDARD future\n"
    "301\tQ0\tCR93E-1850\t95\t  1.857372\tSTANDARD expansion\n"
)
# ranking 10279 (0), #1860 (1), 10505 (0), 1282 (1), 1850 (0); R = 2
TRUNC_EXPECTED = {"P@1": 0.0, "P@5": 2 / 5, "MRR": 1 / 2, "MAP": (1 / 2 + 2 / 4) / 2}


@pytest.mark.parametrize("names", [("qrels.test.with-comments", "results.trunc"),
                                   ("c.qrels", "t.run")])
def test_trec_eval_comment_lines_and_fields_after_the_tag(tmp_path: Path,
                                                          names: tuple[str, str]) -> None:
    import receval

    qrels, run = tmp_path / names[0], tmp_path / names[1]
    qrels.write_text(QRELS_WITH_COMMENTS)
    run.write_text(RESULTS_TRUNC)
    metrics = [a for m in TRUNC_EXPECTED for a in ("-m", m)]
    result = CliRunner().invoke(main, ["evaluate", "-t", str(qrels), "-p", str(run), *metrics,
                                       "-f", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["summary"] == pytest.approx(TRUNC_EXPECTED)
    assert out["counts"]["rows"]["truth"] == 5 and out["counts"]["rows"]["predictions"] == 5
    python = receval.evaluate(qrels, run, list(TRUNC_EXPECTED), relevance_threshold=1)
    assert python.summary == pytest.approx(TRUNC_EXPECTED)
