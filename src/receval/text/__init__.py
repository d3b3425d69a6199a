"""Generated text resolved to catalogue ids, for recommenders that answer with titles
(docs/generated.md).

:func:`resolve` matches each generated title to a catalogue item (exact, normalised, fuzzy
with rapidfuzz, or RecAI RecLM-eval's TF-IDF), says how, flags duplicates, history items and
items outside the candidates, and gives the predictions :func:`receval.evaluate` reads;
:func:`evaluate` evaluates them with every generated row at its rank and the resolution's
counts beside the metrics.

Example:
    >>> import receval
    >>> g = receval.text.resolve({"user": [1], "rank": [1], "text": ["heat"]},
    ...                          {"item": [7], "title": ["Heat (1995)"]})
    >>> g.predictions.values.tolist(), g.counts["normalised"]
    ([[1, 7, 1]], 1)
"""

from receval.text.evaluation import evaluate
from receval.text.normalise import normalise
from receval.text.resolve import FLAGS, HOW, METHODS, Resolved, resolve

__all__ = ["FLAGS", "HOW", "METHODS", "Resolved", "evaluate", "normalise", "resolve"]
