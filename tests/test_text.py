"""receval.text.resolve against the definitions of issue 36: hand-worked stages and counts, the
blocked fuzzy stage against a brute-force search over the whole catalogue, and the TF-IDF
method against RecAI RecLM-eval's own matching and metrics (its published functions,
transcribed below as the oracle)."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

import receval
from receval.exceptions import ReceValError
from receval.text.normalise import normalise

CATALOGUE = pd.DataFrame(
    {
        "item": [1, 2, 3, 4, 5, 6, 6, 7],
        "title": [
            "Matrix, The (1999)",
            "Heat (1995)",
            "Hamlet (1990)",
            "Hamlet (1996)",
            "Up (2009)",
            "Se7en (1995)",
            "Seven",
            "Heat (1995)",
        ],
    }
)


# --- normalised forms ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Matrix, The (1999)", ("matrix", 1999)),
        ("the matrix", ("matrix", None)),
        ("THE MATRIX (1999)", ("matrix", 1999)),
        ("Matrix, A", ("matrix", None)),
        ("An American Tail", ("american tail", None)),
        ("Amélie [2001]", ("amélie", 2001)),
        ("Ｓｅ７ｅｎ", ("se7en", None)),  # NFKC: full-width letters and digits
        ("Blade Runner 2049", ("blade runner 2049", None)),  # a year outside brackets is title
        ("The", ("the", None)),  # an article alone stays
        ("Ocean's Eleven", ("ocean s eleven", None)),
    ],
)
def test_normalised_forms(text: str, want: tuple[str, int | None]) -> None:
    assert normalise(text) == want


# --- hand-worked -----------------------------------------------------------------------------


def test_every_stage_and_count() -> None:
    """One list of ten, each row worked by hand against CATALOGUE (Heat is two items 2 and 7
    under one title; Seven is an alias of item 6)."""
    gen = pd.DataFrame(
        {
            "user": ["u"] * 10,
            "rank": range(1, 11),
            "text": [
                "Up (2009)",  # exact: 5
                "Heat (1995)",  # exact, two items: ambiguous
                "the matrix",  # normalised: 1
                "Hamlet",  # normalised, two years, no year given: ambiguous
                "Hamlet (1996)",  # exact: 4
                "Seven",  # exact alias: 6
                "SE7EN!",  # normalised: 6 again -> duplicate
                "The Matrx (1999)",  # fuzzy with a year that agrees: 1 -> duplicate
                "Hamlet (1948)",  # no year agrees: unresolved
                "Zardoz",  # unresolved
            ],
        }
    )
    history = pd.DataFrame({"user": ["u"], "item": [5]})
    candidates = pd.DataFrame({"user": ["u"] * 3, "item": [1, 4, 5]})
    g = receval.text.resolve(gen, CATALOGUE, threshold=0.9, history=history, candidates=candidates)
    assert g.table["how"].tolist() == [
        "exact",
        "ambiguous",
        "normalised",
        "ambiguous",
        "exact",
        "exact",
        "normalised",
        "fuzzy",
        "unresolved",
        "unresolved",
    ]
    assert g.table["item"].tolist() == [5, None, 1, None, 4, 6, 6, 1, None, None]
    assert g.table["tied"].tolist()[1] == (2, 7) and g.table["tied"].tolist()[3] == (3, 4)
    assert g.table["duplicate"].tolist() == [False] * 6 + [True, True, False, False]
    assert g.counts == {
        "generated": 10,
        "exact": 3,
        "normalised": 2,
        "fuzzy": 1,
        "unresolved": 2,
        "ambiguous": 2,
        "duplicate": 2,
        "in_history": 1,
        "out_of_candidates": 2,
    }  # 6 twice (ranks 6, 7); 5 is in history
    assert g.predictions.values.tolist() == [["u", 5, 1], ["u", 1, 3], ["u", 4, 5], ["u", 6, 6]]
    sim = g.table["similarity"].tolist()
    assert sim[:7] == [1.0] * 7
    # "matrx" against "matrix": Indel distance 1 over 11 characters
    assert abs(sim[7] - (1 - 1 / 11)) <= 1e-12
    assert math.isnan(sim[8])  # Hamlet (1948): no candidate with an agreeing year
    assert g.rates()["unresolved"] == 0.2
    assert sum(g.counts[h] for h in receval.text.HOW) == g.counts["generated"]


def test_methods_stop_early() -> None:
    gen = {"user": [1, 1, 1], "rank": [1, 2, 3], "text": ["Up (2009)", "up", "Upp"]}
    hows = {
        m: receval.text.resolve(gen, CATALOGUE, threshold=0.8, method=m).table["how"].tolist()
        for m in ("exact", "normalised", "fuzzy")
    }
    assert hows == {
        "exact": ["exact", "unresolved", "unresolved"],
        "normalised": ["exact", "normalised", "unresolved"],
        "fuzzy": ["exact", "normalised", "fuzzy"],
    }


def test_fuzzy_tie_is_ambiguous() -> None:
    """ "cat" is one edit from "bat" and from "car": equal best scores, two items."""
    cat = pd.DataFrame({"item": ["b", "c"], "title": ["Bat", "Car"]})
    g = receval.text.resolve({"user": [1], "rank": [1], "text": ["Cat"]}, cat, threshold=0.6)
    assert g.table["how"].tolist() == ["ambiguous"]
    assert g.predictions.empty and g.counts["ambiguous"] == 1


def test_year_column_and_query_key() -> None:
    cat = pd.DataFrame({"item": [1, 2], "title": ["Heat", "Heat"], "year": [1986, 1995]})
    g = receval.text.resolve(
        {"query": [0, 0], "rank": [1, 2], "text": ["Heat (1995)", "Heat"]}, cat
    )
    assert g.table["how"].tolist() == ["normalised", "ambiguous"]
    assert g.predictions.columns.tolist() == ["query", "item", "rank"]


def test_evaluate_resolved_lists() -> None:
    """An unresolved title keeps its slot (slots="keep"): the matrix at rank 3 gives RR 1/3;
    closed up (the predictions alone), it is second: 1/2. The counts ride along."""
    gen = {"user": ["u"] * 4, "rank": [1, 2, 3, 4], "text": ["Zardoz", "Up", "the matrix", "Up"]}
    g = receval.text.resolve(gen, CATALOGUE)
    truth = {"user": ["u"], "item": [1]}
    kept = receval.text.evaluate(truth, g, ["MRR", "P@4"])
    closed = receval.text.evaluate(truth, g, ["MRR", "P@4"], slots="close")
    assert kept.summary == {"MRR": 1 / 3, "P@4": 0.25}
    assert closed.summary == {"MRR": 1 / 2, "P@4": 0.25}
    assert receval.evaluate(truth, g.predictions, ["MRR"]).summary["MRR"] == 1 / 2
    assert kept.counts["generated"]["duplicate"] == 1
    assert kept.counts["generated_rates"]["unresolved"] == 0.25
    assert kept.options["resolve"] == {
        "threshold": 0.9,
        "method": "fuzzy",
        "scorer": "ratio",
        "slots": "keep",
    }
    assert kept.to_dict()["counts"]["generated"]["generated"] == 4


def test_bad_input_one_line_errors() -> None:
    gen = {"user": [1], "rank": [1], "text": ["Up"]}
    with pytest.raises(ReceValError, match="method='llm' is not one of"):
        receval.text.resolve(gen, CATALOGUE, method="llm")
    with pytest.raises(ReceValError, match="scorer='jaro' is not one of"):
        receval.text.resolve(gen, CATALOGUE, scorer="jaro")
    with pytest.raises(ReceValError, match="threshold=90: a similarity on 0-1"):
        receval.text.resolve(gen, CATALOGUE, threshold=90)
    with pytest.raises(ReceValError, match="generated: missing column 'rank'"):
        receval.text.resolve({"user": [1], "text": ["Up"]}, CATALOGUE)
    with pytest.raises(ReceValError, match="catalogue: missing column 'title'"):
        receval.text.resolve(gen, {"item": [1], "name": ["Up"]})
    with pytest.raises(ReceValError, match="history: missing column 'item'"):
        receval.text.resolve(gen, CATALOGUE, history={"user": [1], "movie": [5]})


def test_inputs_not_overwritten() -> None:
    gen = pd.DataFrame({"user": [1, 1], "rank": [2, 1], "text": ["Up ", None]})
    before, cat_before = gen.copy(), CATALOGUE.copy()
    g = receval.text.resolve(gen, CATALOGUE)
    pd.testing.assert_frame_equal(gen, before)
    pd.testing.assert_frame_equal(CATALOGUE, cat_before)
    assert g.table["how"].tolist() == ["normalised", "unresolved"]


# --- the blocked fuzzy stage against a search of the whole catalogue ------------------------

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
]


def brute_force(
    norm: str, norms: list[str], items: list[list[Any]], threshold: float
) -> tuple[str, Any]:
    """The oracle: ratio against every normalised title; ties of distinct items ambiguous."""
    scores = [fuzz.ratio(norm, n) / 100 for n in norms]
    best = max(scores)
    if best < threshold:
        return "unresolved", None
    found = sorted({i for s, its in zip(scores, items, strict=True) if s == best for i in its})
    return ("fuzzy", found[0]) if len(found) == 1 else ("ambiguous", None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    titles=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=2, max_size=4),
        min_size=3,
        max_size=25,
        unique_by=tuple,
    ),
    picks=st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=10),
    threshold=st.sampled_from([0.8, 0.9, 0.95]),
)
def test_blocked_fuzzy_equals_brute_force(
    titles: list[list[str]], picks: list[tuple[int, int]], threshold: float
) -> None:
    """Texts one edit (a letter dropped) away from a catalogue title of several words find
    what a search of the whole catalogue finds (a typo leaves the other words to block on)."""
    cat = pd.DataFrame({"item": range(len(titles)), "title": [" ".join(t) for t in titles]})
    texts = []
    for t, pos in picks:
        title = " ".join(titles[t % len(titles)])
        at = pos % len(title)
        if title[at] == " ":
            at = max(0, at - 1)
        texts.append(title[:at] + title[at + 1 :])
    g = receval.text.resolve(
        {"user": [0] * len(texts), "rank": range(1, len(texts) + 1), "text": texts},
        cat,
        threshold=threshold,
        method="fuzzy",
    )
    norms = [normalise(t)[0] for t in cat["title"]]
    by_norm: dict[str, list[Any]] = {}
    for n, i in zip(norms, cat["item"], strict=True):
        by_norm.setdefault(n, []).append(i)
    keys = list(by_norm)
    for row in g.table.itertuples(index=False):
        if row.how in ("exact", "normalised"):
            continue
        how, item = brute_force(normalise(row.text)[0], keys, [by_norm[k] for k in keys], threshold)
        assert (row.how, row.item) == (how, item), row.text


# --- RecLM-eval's TF-IDF matching and metrics ------------------------------------------------


def _clean_string(string: str) -> str:
    """RecLM-eval ``TFIDF_model._clean_string``."""
    string = re.sub(r"[^A-Za-z0-9 ]+", "", string.lower())
    return re.sub(r"\s+", " ", string).strip()


def _create_ngrams(string: str) -> list[str]:
    """RecLM-eval ``TFIDF_model._create_ngrams``: character 3-grams without a space."""
    string = _clean_string(string)
    grams = zip(*[string[i:] for i in range(3)], strict=False)
    return ["".join(g) for g in grams if " " not in g]


def reclm_eval(
    catalogue: list[str],
    rankings: list[list[str]],
    targets: list[str],
    topk: int,
    sim_threshold: float = 0.6,
) -> dict[str, float]:
    """RecLM-eval ``metrics4rec.evaluate_all`` with its ``TFIDF_model``, transcribed."""
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    pairwise = pytest.importorskip("sklearn.metrics.pairwise")
    vectorizer = sklearn_text.TfidfVectorizer(min_df=1, analyzer=_create_ngrams).fit(catalogue)

    def match(a: list[str], b: list[str]) -> Any:
        return pairwise.cosine_similarity(vectorizer.transform(a), vectorizer.transform(b))

    ndcg = recall = hit = prec = 0.0
    rs = []
    for preds, target in zip(rankings, targets, strict=True):
        top = preds[:topk]
        sims = [max(0.0, *row) for row in match(top, [target])]
        rel, hits = [], 0
        for s in sims:
            if s >= sim_threshold and hits < 1:
                rel.append(1)
                hits += 1
            else:
                rel.append(0)
        dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rel))
        ideal = sum(r / math.log2(i + 2) for i, r in enumerate(sorted(rel, reverse=True)))
        ndcg += dcg / ideal if ideal else 0.0
        recall += sum(rel) / 1
        hit += 1.0 if sum(rel) else 0.0
        prec += sum(rel) / len(top)
        rs.append(rel)
    n = len(rankings)
    mrr = float(np.mean([1 / (r.index(1) + 1) if 1 in r else 0.0 for r in rs]))
    return {
        "ndcg": ndcg / n,
        "recall": recall / n,
        "hit": hit / n,
        "precision": prec / n,
        "mrr": mrr,
    }


STEAM = [
    "Counter-Strike",
    "Counter-Strike: Source",
    "Half-Life 2",
    "Half-Life",
    "Portal",
    "Portal 2",
    "Team Fortress 2",
    "Left 4 Dead 2",
    "Dota 2",
    "The Elder Scrolls V: Skyrim",
    "Fallout: New Vegas",
    "Terraria",
    "Garry's Mod",
    "Sid Meier's Civilization V",
    "Borderlands 2",
    "The Witcher 3: Wild Hunt",
    "Rocket League",
    "Stardew Valley",
    "Euro Truck Simulator 2",
    "Cities: Skylines",
]


def test_tfidf_reproduces_reclm_eval() -> None:
    """Generated lists (typos, other spellings, titles that are not in the catalogue) scored
    by RecLM-eval's own matching against the target, and by resolve(method="tfidf",
    threshold=0.6) then receval.evaluate: every number equal at k = 1, 5, 10, 20."""
    rankings = [
        ["Portal Two", "Half Life 2", "Terraria", "The Witcher III Wild Hunt", "Doom"],
        [
            "Skyrim: The Elder Scrolls V",
            "Fallout New Vegas",
            "Portal",
            "Rocket League",
            "Minecraft",
            "Dota 2",
            "Borderlands 2",
        ],
        ["Civilization V", "Stardew Valey", "Cities Skylines", "Team Fortress 2"],
        [
            "Garrys Mod",
            "Left 4 Dead 2",
            "Euro Truck Simulator 2",
            "Counter Strike Source",
            "Half-Life",
            "Portal 2",
        ],
        ["Minecraft", "Doom", "Quake"],
    ]
    targets = ["Terraria", "Borderlands 2", "Team Fortress 2", "Portal 2", "Dota 2"]
    cat = pd.DataFrame({"item": range(len(STEAM)), "title": STEAM})
    gen = pd.DataFrame(
        [(u, r + 1, t) for u, ranking in enumerate(rankings) for r, t in enumerate(ranking)],
        columns=["user", "rank", "text"],
    )
    truth = pd.DataFrame({"user": range(len(targets)), "item": [STEAM.index(t) for t in targets]})
    g = receval.text.resolve(gen, cat, threshold=0.6, method="tfidf")
    assert g.counts["fuzzy"] > 0 and g.counts["unresolved"] > 0
    for k in (1, 5, 10, 20):
        want = reclm_eval(STEAM, rankings, targets, k)
        r = receval.text.evaluate(
            truth,
            g,
            [f"nDCG@{k}", f"R@{k}", f"hit@{k}", f"MRR@{k}"],
            silence=["no-match", "id-mismatch"],
        )
        assert abs(r.summary[f"nDCG@{k}"] - want["ndcg"]) <= 1e-12
        assert abs(r.summary[f"R@{k}"] - want["recall"]) <= 1e-12
        assert abs(r.summary[f"hit@{k}"] - want["hit"]) <= 1e-12
        assert abs(r.summary[f"MRR@{k}"] - want["mrr"]) <= 1e-12
        # RecLM-eval's precision divides by the list's length (under k), receval's by k
        lists = [min(k, len(x)) for x in rankings]
        p = receval.text.evaluate(
            truth,
            g,
            [f"P@{k}"],
            precision_denominator="returned",
            silence=["no-match", "id-mismatch"],
        )
        assert lists and abs(p.summary[f"P@{k}"] - want["precision"]) <= 1e-12


def test_tfidf_where_reclm_eval_differs() -> None:
    """RecLM-eval scores a text against the target alone; resolve looks at every catalogue
    title. "Half-Life 3" has the 3-grams of "Half-Life" and "Half-Life 2" alike (a lone
    digit makes no 3-gram): RecLM-eval counts a hit for the target "Half-Life", resolve
    finds a tie and leaves the row out as ambiguous."""
    want = reclm_eval(STEAM, [["Half-Life 3"]], ["Half-Life"], 1)
    cat = pd.DataFrame({"item": range(len(STEAM)), "title": STEAM})
    g = receval.text.resolve(
        {"user": [0], "rank": [1], "text": ["Half-Life 3"]}, cat, threshold=0.6, method="tfidf"
    )
    assert want["hit"] == 1.0
    assert g.table["how"].tolist() == ["ambiguous"]
    assert g.table["tied"].tolist() == [(STEAM.index("Half-Life 2"), STEAM.index("Half-Life"))]
