"""Engine selection: which engine builds the pictures, the arguments it takes, and the
metric values computed from its pictures (:func:`run`); the duplicate checks that need an
engine pass over users who are not evaluated."""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import numpy as np

from receval.audit import raise_on_duplicates, resolve_duplicates
from receval.engines import numba_engine as ne
from receval.exceptions import ReceValError
from receval.measures.registry import compute, cutoffs_needed, needs, top_k_needed
from receval.measures.spec import MetricSpec
from receval.options import Options
from receval.shaping import Prepared

ENGINES = ("numba", "torch", "spark")


def check_engine(engine: str) -> None:
    """A known engine whose library is installed, else a one-line error naming the fix.

    Example:
        >>> check_engine("numba")
        >>> check_engine("gpu")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: engine 'gpu' is not one of 'numba', 'torch', 'spark'
    """
    if engine not in ENGINES:
        raise ReceValError(f"engine {engine!r} is not one of {', '.join(map(repr, ENGINES))}")
    if engine == "torch" and importlib.util.find_spec("torch") is None:
        raise ReceValError("engine='torch' needs torch: pip install 'receval[torch]'")
    if engine == "spark" and importlib.util.find_spec("pyspark") is None:
        raise ReceValError("engine='spark' needs pyspark: pip install 'receval[spark]'")


def kernel_arguments(
    specs: list[MetricSpec], options: Options
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, set[str]]:
    """The plain arrays the numba engine takes: integer and float options, the picture's
    cutoffs (:func:`~receval.measures.registry.cutoffs_needed`, ``0``: the whole list), the
    cutoffs where ties are flagged, and the picture fields to write.

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> _, _, cutoffs, cut_ks, fields = kernel_arguments(parse_metrics(["P@5", "MRR"]),
        ...                                                  Options())
        >>> cutoffs.tolist(), cut_ks.tolist(), sorted(fields)
        ([0, 5], [5], ['hits', 'n_list', 'rr_sum'])
    """
    cutoffs = np.array(cutoffs_needed(specs, options), dtype=np.int64)
    cut_ks = cutoffs[cutoffs > 0]
    fields = needs(specs, options)
    iopts, fopts = ne.kernel_options(options, cutoffs, fields,
                                     top_k=top_k_needed(specs, options))
    return iopts, fopts, cutoffs, cut_ks, fields


def run(prepared: Prepared, selected: np.ndarray, specs: list[MetricSpec], options: Options,
         cutoffs: np.ndarray, cut_ks: np.ndarray, fields: set[str], iopts: np.ndarray,
         fopts: np.ndarray, engine: str = "numba", device: Any = None) -> ne.KernelOutput:
    """The engine's picture of the ``selected`` users, the metrics computed from it;
    ``device``: where the torch engine runs."""
    t, p = prepared.truth, prepared.predictions
    run_kernel: Any = ne.run_kernel
    if engine == "torch":
        from receval.engines.torch_engine import run_kernel as torch_kernel

        run_kernel = functools.partial(torch_kernel, device=device)
    picture, audit = run_kernel(selected, t.indptr, t.items, t.values, p.indptr, p.items,
                                   p.values, cutoffs, cut_ks, fields, iopts, fopts)
    return ne.kernel_output(compute(picture, specs, options), picture, audit)


def ranked_lists(prepared: Prepared, selected: np.ndarray, options: Options, depth: int,
                 engine: str = "numba", device: Any = None
                 ) -> tuple[Prepared, ne.KernelOutput]:
    """The ``selected`` users' top ``depth`` items and list lengths only (``top_items``,
    ``n_list``), duplicates resolved as the metrics' pass resolves them: the second pass that
    the beyond-accuracy and the debiased metrics read. Returns the inputs the lists come from
    (duplicates dropped when there were any) and the engine's output."""
    cutoffs = np.array([depth], dtype=np.int64)
    fields = {"top_items", "n_list"}
    iopts, fopts = ne.kernel_options(options, cutoffs, fields, top_k=depth)
    out = run(prepared, selected, [], options, cutoffs, cutoffs, fields, iopts, fopts, engine,
              device)
    if has_duplicates(out) or duplicates_outside(prepared, selected, iopts, fopts):
        prepared = resolve_duplicates(prepared, options)
        out = run(prepared, selected, [], options, cutoffs, cutoffs, fields, iopts, fopts,
                  engine, device)
    return prepared, out


def _outside(prepared: Prepared, selected: np.ndarray, iopts: np.ndarray,
             fopts: np.ndarray) -> tuple[np.ndarray, ne.KernelOutput] | None:
    """The users with rows who are not ``selected``, judged with no metric (their duplicate
    flags), or ``None`` when there are none."""
    evaluated = np.zeros(len(prepared.in_truth), dtype=bool)
    evaluated[selected] = True
    others = np.flatnonzero((prepared.in_truth | prepared.in_predictions) & ~evaluated)
    if len(others) == 0:
        return None
    none = np.zeros(0, dtype=np.int64)
    return others, run(prepared, others, [], Options(), none, none, set(), iopts, fopts)


def has_duplicates(out: ne.KernelOutput) -> bool:
    return bool((out.dup_truth >= 0).any() or (out.dup_predictions >= 0).any())


def duplicates_outside(prepared: Prepared, selected: np.ndarray, iopts: np.ndarray,
                        fopts: np.ndarray) -> bool:
    """Whether a user who is not evaluated has a repeated (user, item) row."""
    judged = _outside(prepared, selected, iopts, fopts)
    return judged is not None and has_duplicates(judged[1])


def check_duplicates_outside(prepared: Prepared, selected: np.ndarray, iopts: np.ndarray,
                              fopts: np.ndarray) -> None:
    """Duplicate rows are an error wherever they are, also in the rows of users who are not
    evaluated (a predictions-only user under ``users="truth"``, say): judged with no metric."""
    judged = _outside(prepared, selected, iopts, fopts)
    if judged is not None:
        raise_on_duplicates(prepared, *judged)
