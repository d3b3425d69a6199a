"""receval.text.resolve at scale (issue 36): ``--generated`` rows against a ``--titles``
catalogue, a quarter of the rows reaching the fuzzy stage.

Synthetic, seeded: titles of 1-5 words drawn from a 20,000-word vocabulary with a year in
brackets (MovieLens style), one in ten with ``"Title, The"``. Generated rows: half exact
titles, a quarter normalised variants (case, punctuation, the article moved, the year
dropped), a quarter that reach the fuzzy stage (half with one typo, half titles that do not
exist). Prints one JSON object with the wall time and the counts.

    python benchmarks/bench_text.py --generated 1000000 --titles 100000
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import pandas as pd

import receval


def words(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` distinct pronounceable words of 4-9 letters."""
    consonants, vowels = list("bcdfghjklmnprstvz"), list("aeiou")
    out: set[str] = set()
    while len(out) < n:
        size = int(rng.integers(2, 5))
        out.add(
            "".join(str(rng.choice(consonants)) + str(rng.choice(vowels)) for _ in range(size))
            + str(rng.choice(consonants))
        )
    return np.array(sorted(out))


def catalogue(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` distinct titles with years."""
    vocab = words(20_000, rng)
    titles: set[str] = set()
    rows = []
    while len(rows) < n:
        body = " ".join(str(w).capitalize() for w in rng.choice(vocab, int(rng.integers(1, 6))))
        if body in titles:
            continue
        titles.add(body)
        year = int(rng.integers(1920, 2024))
        form = f"{body}, The" if rng.random() < 0.1 else body
        rows.append((len(rows), f"{form} ({year})"))
    return pd.DataFrame(rows, columns=["item", "title"])


def typo(text: str, rng: np.random.Generator) -> str:
    """One letter of a longer word swapped with the next."""
    i = int(rng.integers(0, max(1, len(text) - 2)))
    return text[:i] + text[i + 1] + text[i] + text[i + 2 :] if len(text) > 3 else text + "x"


def generated(cat: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` rows, 20 per user: half exact, a quarter normalised, a quarter fuzzy-bound."""
    picks = cat["title"].to_numpy()[rng.integers(0, len(cat), size=n)]
    kind = rng.random(n)
    texts = []
    for title, k in zip(picks, kind, strict=True):
        body = title.rsplit(" (", 1)[0]
        if k < 0.5:
            texts.append(title)
        elif k < 0.75:
            texts.append(body.upper() + "!" if k < 0.625 else body.lower())
        elif k < 0.875:
            texts.append(typo(body, rng))
        else:
            texts.append("Zq" + body[::-1].lower())
    users = np.arange(n) // 20
    return pd.DataFrame({"user": users, "rank": np.arange(n) % 20 + 1, "text": texts})


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark and print its JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=int, default=100_000)
    parser.add_argument("--titles", type=int, default=100_000)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)  # synthetic data only, not an evaluation stream
    cat = catalogue(args.titles, rng)
    gen = generated(cat, args.generated, rng)
    start = time.perf_counter()
    g = receval.text.resolve(gen, cat, threshold=args.threshold)
    seconds = time.perf_counter() - start
    out = {
        "generated": args.generated,
        "titles": args.titles,
        "seconds": round(seconds, 2),
        "counts": g.counts,
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
