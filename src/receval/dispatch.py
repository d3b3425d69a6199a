"""Engine selection: the plan's typed request (:func:`engine_request`: the users' lists, the
picture to fill, the options named), which engine builds the pictures, and the metric values
computed from them (:func:`run`); the duplicate checks that need an engine pass over users who
are not evaluated."""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import numpy as np

from receval.audit import raise_on_duplicates, resolve_duplicates
from receval.engines import numba_engine as ne
from receval.engines.request import EngineRequest, Lists
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


def lists_of(prepared: Prepared, selected: np.ndarray) -> Lists:
    """The ``selected`` users' truth and predictions, as the engines read them.

    Example:
        >>> from receval.data.columns import read_sides
        >>> from receval.shaping import prepare
        >>> t, p = read_sides({"user": ["a"], "item": ["x"]},
        ...                   {"user": ["a", "a"], "item": ["x", "y"], "score": [0.2, 0.9]},
        ...                   user_col="user", item_col="item", rating_col="rating",
        ...                   score_col="score", truth_columns=None, prediction_columns=None,
        ...                   rating_required=False)
        >>> lists_of(prepare(t, p, Options()), np.array([0])).p_scores.tolist()
        [0.2, 0.9]
    """
    t, p = prepared.truth, prepared.predictions
    return Lists(np.asarray(selected, dtype=np.int64), t.indptr, t.items, t.values, p.indptr,
                 p.items, p.values)


def engine_request(prepared: Prepared, selected: np.ndarray, specs: list[MetricSpec],
                   options: Options) -> EngineRequest:
    """The engine request for ``specs`` under ``options`` over the ``selected`` users: the
    picture's cutoffs (:func:`~receval.measures.registry.cutoffs_needed`, ``0``: the whole
    list), the cutoffs where ties are flagged, the fields to write, and the options named.

    Example:
        >>> from receval.data.columns import read_sides
        >>> from receval.measures.spec import parse_metrics
        >>> from receval.shaping import prepare
        >>> t, p = read_sides({"user": ["a"], "item": ["x"]},
        ...                   {"user": ["a"], "item": ["x"], "score": [0.2]},
        ...                   user_col="user", item_col="item", rating_col="rating",
        ...                   score_col="score", truth_columns=None, prediction_columns=None,
        ...                   rating_required=False)
        >>> req = engine_request(prepare(t, p, Options()), np.array([0]),
        ...                      parse_metrics(["P@5", "MRR"]), Options(ties="average"))
        >>> req.cutoffs.tolist(), req.cut_ks.tolist(), sorted(req.fields), req.ties
        ([0, 5], [5], ['hits', 'n_list', 'rr_sum'], 'average')
    """
    return plan_request(lists_of(prepared, selected), specs, options)


def plan_request(lists: Lists, specs: list[MetricSpec], options: Options) -> EngineRequest:
    """The engine request for ``specs`` under ``options`` over ``lists`` (long tables'
    lists, or a score matrix's judged truth: :func:`receval.evaluate_scores`).

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> none = np.zeros(1, np.int64)
        >>> lists = Lists(np.zeros(0, np.int64), none, none[:0], none[:0] * 1.0, none,
        ...               none[:0], none[:0] * 1.0)
        >>> plan_request(lists, parse_metrics(["nDCG@3"]), Options()).cutoffs.tolist()
        [3]
    """
    cutoffs = np.array(cutoffs_needed(specs, options), dtype=np.int64)
    return EngineRequest.plan(lists, options, cutoffs, needs(specs, options),
                              top_k=top_k_needed(specs, options))


def run(request: EngineRequest, specs: list[MetricSpec], options: Options,
        engine: str = "numba", device: Any = None) -> ne.KernelOutput:
    """The engine's picture of the request's users, the metrics computed from it;
    ``device``: where the torch engine runs."""
    run_kernel: Any = ne.run_kernel
    if engine == "torch":
        from receval.engines.torch_engine import run_kernel as torch_kernel

        run_kernel = functools.partial(torch_kernel, device=device)
    picture, audit = run_kernel(request)
    return ne.kernel_output(compute(picture, specs, options), picture, audit)


def ranked_lists(prepared: Prepared, selected: np.ndarray, options: Options, depth: int,
                 engine: str = "numba", device: Any = None
                 ) -> tuple[Prepared, ne.KernelOutput]:
    """The ``selected`` users' top ``depth`` items and list lengths only (``top_items``,
    ``n_list``), duplicates resolved as the metrics' pass resolves them: the second pass that
    the beyond-accuracy and the debiased metrics read. Returns the inputs the lists come from
    (duplicates dropped when there were any) and the engine's output."""
    request = EngineRequest.plan(lists_of(prepared, selected), options,
                                 np.array([depth], dtype=np.int64), {"top_items", "n_list"},
                                 top_k=depth)
    out = run(request, [], options, engine, device)
    if has_duplicates(out) or duplicates_outside(prepared, request):
        prepared = resolve_duplicates(prepared, options)
        out = run(request.on(lists_of(prepared, selected)), [], options, engine, device)
    return prepared, out


def _outside(prepared: Prepared, request: EngineRequest
             ) -> tuple[np.ndarray, ne.KernelOutput] | None:
    """The users with rows who are not in the request, judged with no metric (their
    duplicate flags), or ``None`` when there are none."""
    evaluated = np.zeros(len(prepared.in_truth), dtype=bool)
    evaluated[request.lists.users] = True
    others = np.flatnonzero((prepared.in_truth | prepared.in_predictions) & ~evaluated)
    if len(others) == 0:
        return None
    judged = request.on(lists_of(prepared, others)).judging_only()
    return others, run(judged, [], Options())


def has_duplicates(out: ne.KernelOutput) -> bool:
    return bool((out.dup_truth >= 0).any() or (out.dup_predictions >= 0).any())


def duplicates_outside(prepared: Prepared, request: EngineRequest) -> bool:
    """Whether a user who is not in the request has a repeated (user, item) row."""
    judged = _outside(prepared, request)
    return judged is not None and has_duplicates(judged[1])


def check_duplicates_outside(prepared: Prepared, request: EngineRequest) -> None:
    """Duplicate rows are an error wherever they are, also in the rows of users who are not
    evaluated (a predictions-only user under ``users="truth"``, say): judged with no metric."""
    judged = _outside(prepared, request)
    if judged is not None:
        raise_on_duplicates(prepared, *judged)
