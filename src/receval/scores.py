"""``evaluate_scores()``: a score matrix (or a model's forward pass) in, a Result out.

The matrix is never a long table: users go through the torch engine
(:mod:`receval.engines.torch_engine`) in blocks of rows, each block's scores masked (training
items, ``exclude=``), ranked once (``topk``), judged against the truth and reduced to a
picture on the device; only the per-user metric values come back to the host. A block holds
``batch_size`` rows; by default as many as fit ``memory_budget`` bytes at
:data:`BYTES_PER_ENTRY` bytes per (user, item) entry, so the memory used is bounded by the
budget whatever the number of users.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from receval import checks, report, tracking
from receval import debias as db
from receval._version import __version__
from receval.beyond.names import split_metrics
from receval.engines.judge import relevant_rows, row_gains
from receval.exceptions import ReceValError
from receval.finalize import merge_parts, record_profile, recorded_inputs
from receval.measures.spec import RATING, MetricSpec, parse_metrics
from receval.options import OPTION_NAMES, Options
from receval.result import Counts, RecordedOptions, Result, null_reasons
from receval.scalars import plain

#: loaded for what they lend every Result: its plot and notebook views, its log (result.VIEWS)
_VIEWS = (report, tracking)

if TYPE_CHECKING:
    import torch

#: what one (user, item) entry of a block costs on the device at its peak: measured 26 bytes
#: on an H100 (float32 scores and their masked copy, the list mask, float64 relevance; 100k
#: users x 50k items, benchmarks/README.md); graded gains add a float64 row (8) and float64
#: scores 8 more, so a block sized for a quarter of the free memory stays under half of it
BYTES_PER_ENTRY = 32
#: the memory budget on the CPU when none is given (on CUDA: a quarter of the free memory)
CPU_BUDGET = 1 << 30

ENGINES = ("torch",)


@checks.keeps_warnings  # the run's warnings kept on its Result (every output)
def evaluate_scores(
    truth: Any,
    scores: Any,
    metrics: str | Iterable[str],
    *,
    exclude: Any = None,
    user_ids: Any = None,
    item_ids: Any = None,
    engine: str = "torch",
    device: Any = None,
    batch_size: int | None = None,
    memory_budget: int | None = None,
    profile: str | None = None,
    user_col: str = "user",
    item_col: str = "item",
    rating_col: str = "rating",
    silence: str | Iterable[str] | None = None,
    train: Any = None,
    exclude_train: bool = False,
    train_columns: Mapping[str, str] | None = None,
    timestamp_col: str = "timestamp",
    **options: Any,
) -> Result:
    """Evaluate a users x items score matrix against ``truth`` on ``metrics``.

    ``scores`` is a 2-D numpy array or torch tensor (row ``r``: user ``user_ids[r]``, column
    ``c``: item ``item_ids[c]``; both default to ``0..n-1``), or a callable that takes a 1-D
    int64 tensor of row indices (on ``device``) and returns their score rows, such as a
    model's forward pass (``user_ids`` and ``item_ids`` are then required). Every item of a
    row is in the user's ranked list except the ``exclude`` pairs (the training interactions):
    a long table with ``user_col`` / ``item_col`` or a ``scipy.sparse`` matrix shaped like
    ``scores`` (stored non-zeros excluded). ``truth`` is what :func:`receval.evaluate` takes.

    ``options`` are :func:`receval.evaluate`'s (:class:`~receval.options.Options`) and mean the
    same: the numbers are those of ``evaluate(truth, long_table)`` with the long table holding
    every (row, column) score outside ``exclude``. Not available here, each with an error that
    says so: ``ties="ranx"``, ``duplicates="keep"``, RMSE and MAE. The families that read
    the judged items (bpref, ERR, RBP, Judged@k, iprec, ...) and ``max_list`` are computed by
    the functions ``evaluate(engine="torch")`` uses (:func:`receval.engines.torch_engine.
    judged_in_order`, :func:`~receval.engines.torch_engine.cut_rows`).

    ``train``, ``exclude_train``, ``train_columns``, ``timestamp_col``: as in
    :func:`receval.evaluate`; ``exclude_train=True`` masks each user's training items in the
    matrix (``exclude=`` set to the training pairs). ``counts["train"]["predictions_in_train"]``
    counts the cells of the matrix that are training pairs. ``debias``, ``propensity``,
    ``propensity_clip``: the debiased metrics of :func:`receval.evaluate` (:mod:`receval.debias`).

    ``device``: a torch device (default: CUDA when available, else the CPU). ``batch_size``:
    rows per block (default: ``memory_budget // (BYTES_PER_ENTRY * n_items)``, with
    ``memory_budget`` a quarter of the free GPU memory, or 1 GiB on the CPU).

    Example:
        >>> import numpy as np, receval
        >>> truth = {"user": [0, 0, 1], "item": [2, 1, 0]}
        >>> scores = np.array([[0.1, 0.5, 0.9, 0.3], [0.8, 0.9, 0.2, 0.1]], dtype=np.float32)
        >>> receval.evaluate_scores(truth, scores, ["P@1", "R@2"], device="cpu").summary
        {'P@1': 0.5, 'R@2': 1.0}
        >>> training = {"user": [1], "item": [1]}  # user 1 saw item 1: not ranked
        >>> receval.evaluate_scores(truth, scores, ["P@1"], exclude=training,
        ...                         device="cpu").summary
        {'P@1': 1.0}
    """
    torch = _require_torch(engine)
    from receval.engines.torch_engine import torch_device
    from receval.profiles import resolve

    beyond = split_metrics(metrics)[1]
    if beyond:
        raise ReceValError(f"{beyond[0].name!r} is a beyond-accuracy metric, which "
                           "evaluate_scores does not compute yet: evaluate the long table "
                           "with receval.evaluate (train=, item_features=)")
    debias: dict[str, Any] = {k: options.pop(k) for k in ("debias", "propensity", "propensity_clip")
              if k in options}  # receval.debias: weighed after the ranking
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ReceValError(f"unknown option {unknown[0]!r} for evaluate_scores (options: "
                           f"{', '.join(OPTION_NAMES)})")
    resolved = resolve(profile, options)
    opts = resolved.options
    specs = parse_metrics(metrics)
    per_spec = [resolved.options_for(s.family) for s in specs]
    groups: dict[Options, list[int]] = {}
    for i, spec_opts in enumerate(per_spec):
        _check_supported([specs[i]], spec_opts)
        groups.setdefault(spec_opts, []).append(i)
    request = db.request(debias, specs, per_spec, opts, train) if debias else None
    for name, value in (("batch_size", batch_size), ("memory_budget", memory_budget)):
        if value is not None and (isinstance(value, bool) or
                                  not isinstance(value, int | np.integer) or value < 1):
            raise ReceValError(f"{name} must be a positive integer (or None for the default); "
                               f"got {value!r}")
    where = torch_device(device)
    source = _ScoreSource.of(scores, user_ids, item_ids, where, torch)
    if source.n_rows == 0:
        raise ReceValError(f"scores has no rows (0 users x {source.n_items} items): there is "
                           "no user to rank items for")
    leak = None
    if train is not None or exclude_train:
        if exclude_train and exclude is not None:
            raise ReceValError("pass exclude= or exclude_train=True, not both (exclude_train "
                               "excludes the training pairs of train=)")
        leak = _train_audit(truth, train, source, exclude_train, user_col, item_col,
                            rating_col, train_columns, timestamp_col)
        if exclude_train:
            exclude = leak.train_pairs(user_col, item_col, user_ids=source.user_ids,
                                       item_ids=source.item_ids)
    parts: list[tuple[list[int], Result]] = []
    with checks.silence(silence):
        table = _read_truth(truth, opts, specs, user_col, item_col, rating_col)
        excluded = _read_exclude(exclude, source, user_col, item_col)
        # debias= (propensities other than uniform) reads the ranked lists
        ranked: list[tuple[np.ndarray, np.ndarray]] | None = (
            [] if request is not None and request.model != "uniform" else None)
        for group_opts, members in groups.items():  # a profile's per-metric options
            judged = _judge_truth(table, source, excluded, group_opts, rating_col)
            parts.append((members, _run(judged, source, excluded, [specs[i] for i in members],
                                        group_opts, where, batch_size, memory_budget, torch,
                                        ranked,
                                        db.matrix_depth(request, specs, source.n_items,
                                                        group_opts))))
        checks.check_relevance_threshold(
            table.ratings, column=rating_col, gain=opts.gain,
            threshold_given="relevance_threshold" in options
            or opts.relevance_threshold is not None)
    result = parts[0][1] if len(parts) == 1 else merge_parts(specs, parts, opts)
    if request is not None:  # one group (debias.check_options): its lists, before the record
        with checks.silence(silence):
            request = db.apply_matrix(result, request, specs, opts, ranked or [], judged,
                                      source.n_items, source.item_ids, truth,
                                      None if leak is None else leak.train.items,
                                      user_col=user_col, item_col=item_col)
    record_profile(result, specs, per_spec, opts, resolved.name, inputs={**recorded_inputs(
        train=train if leak is None or isinstance(train, str | os.PathLike) else leak.train,
        exclude_train=exclude_train), **(request.record() if request is not None else {})})
    if leak is not None:
        with checks.silence(silence):
            leak.record(result)
    return result


def _train_audit(truth: Any, train: Any, source: _ScoreSource, exclude_train: bool,
                 user_col: str, item_col: str, rating_col: str,
                 train_columns: Mapping[str, str] | None, timestamp_col: str) -> Any:
    """The training audit (:class:`receval.training.Leakage`) of a score matrix."""
    from receval.data.columns import read_columns
    from receval.training import Leakage

    cols = read_columns(truth, side="truth", user_col=user_col, item_col=item_col,
                        value_col=rating_col, value_required=False)
    leak = Leakage.of(train, truth, cols, None, exclude_train=exclude_train,
                      user_col=user_col, item_col=item_col, train_columns=train_columns,
                      timestamp_col=timestamp_col)
    leak.matrix(source.user_ids, source.item_ids)
    return leak


def _require_torch(engine: str) -> Any:
    if engine not in ENGINES:
        raise ReceValError(
            f"engine {engine!r} is not one of {', '.join(map(repr, ENGINES))} for "
            "evaluate_scores (the numba engine takes long tables: receval.evaluate)")
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is installed in the test environment
        raise ReceValError("engine='torch' needs torch: pip install 'receval[torch]'") from None
    return torch


def _check_supported(specs: list[MetricSpec], options: Options) -> None:
    """The options and metrics the score-matrix path does not take: a clear error each."""
    for spec in specs:
        if spec.family in RATING:
            raise ReceValError(
                f"metric {spec.name!r} compares predicted ratings with the truth's: "
                "evaluate_scores ranks items; pass a long table to receval.evaluate")
    if options.ties == "ranx":
        raise ReceValError("option ties='ranx' (ranx's own sort of the input rows) is not "
                           "available in evaluate_scores; use ties='stable' or "
                           "receval.evaluate")
    if options.duplicates == "keep":
        raise ReceValError("option duplicates='keep' is not available in evaluate_scores "
                           "(a score matrix holds each item once); use 'error', 'first' or "
                           "'max'")


# --- the scores: a matrix, a tensor or a model ---------------------------------------------


@dataclass
class _ScoreSource:
    """Rows of scores on the device, whatever holds them."""

    n_rows: int
    n_items: int
    user_ids: np.ndarray
    item_ids: np.ndarray
    fetch: Callable[[np.ndarray], Any]

    @staticmethod
    def of(scores: Any, user_ids: Any, item_ids: Any, device: Any, torch: Any) -> _ScoreSource:
        if callable(scores) and not isinstance(scores, torch.Tensor | np.ndarray):
            if user_ids is None or item_ids is None:
                raise ReceValError("scores is a callable: pass user_ids= and item_ids= (the "
                                   "users of its rows and the items of its columns)")
            users, items = _ids(user_ids, "user_ids"), _ids(item_ids, "item_ids")

            def call(rows: np.ndarray) -> Any:
                out = scores(torch.as_tensor(rows, device=device))
                out = torch.as_tensor(out)
                if out.shape != (len(rows), len(items)):
                    raise ReceValError(
                        f"scores callable returned shape {tuple(out.shape)} for {len(rows)} "
                        f"rows; expected ({len(rows)}, {len(items)}): one score per item")
                return out.to(device)

            return _ScoreSource(len(users), len(items), users, items, call)
        if isinstance(scores, torch.Tensor):
            matrix = scores.detach()

            def take(rows: np.ndarray) -> Any:
                index = torch.as_tensor(rows, device=matrix.device)
                return matrix.index_select(0, index).to(device)
        else:
            host = np.asarray(scores)
            if host.dtype.kind not in "fiu":
                raise ReceValError(f"scores must be numbers; got dtype {host.dtype}")

            def take(rows: np.ndarray) -> Any:
                return torch.from_numpy(np.ascontiguousarray(host[rows])).to(device)

            matrix = host
        if matrix.ndim != 2:
            raise ReceValError(f"scores must be 2-D (users x items); got {matrix.ndim}-D")
        n_rows, n_items = int(matrix.shape[0]), int(matrix.shape[1])
        users = np.arange(n_rows) if user_ids is None else _ids(user_ids, "user_ids")
        items = np.arange(n_items) if item_ids is None else _ids(item_ids, "item_ids")
        for name, ids, n in (("user_ids", users, n_rows), ("item_ids", items, n_items)):
            if len(ids) != n:
                raise ReceValError(f"{name} has {len(ids)} ids for {n} "
                                   f"{'rows' if name == 'user_ids' else 'columns'} of scores")
        return _ScoreSource(n_rows, n_items, users, items, take)


def _ids(values: Any, name: str) -> np.ndarray:
    """Ids as a 1-D numpy array, each once."""
    if isinstance(values, pa.ChunkedArray | pa.Array):
        values = values.to_numpy(zero_copy_only=False)
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ReceValError(f"{name} must be 1-D; got shape {arr.shape}")
    index = pd.Index(arr)
    if not index.is_unique:
        dup = index[index.duplicated()]
        row = int(np.flatnonzero(index.duplicated())[0])
        raise ReceValError(f"{name} holds {dup[0]!r} more than once (first repeat at position "
                           f"{row}, {len(dup)} repeats in all)")
    return arr


def _positions(ids: Any, known: np.ndarray) -> np.ndarray:
    """The position of each id in ``known`` (-1: absent)."""
    if isinstance(ids, pa.ChunkedArray | pa.Array):
        ids = ids.to_numpy(zero_copy_only=False)
    ids = np.asarray(ids)
    if _is_range(known) and ids.dtype.kind in "iu":  # ids 0..n-1 (np.arange): no hashing
        inside = (ids >= 0) & (ids < len(known))
        return np.where(inside, ids, -1).astype(np.int64)
    return np.asarray(pd.Index(known).get_indexer(ids), dtype=np.int64)


def _is_range(known: np.ndarray) -> bool:
    """``known`` is ``0, 1, ..., n - 1`` (integer ids that are their own positions)."""
    if known.dtype.kind not in "iu" or len(known) == 0:
        return False
    return bool(known[0] == 0 and known[-1] == len(known) - 1
                and (len(known) == 1 or (np.diff(known) == 1).all()))


def _repeated(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Rows whose (first, second) pair of codes (``0 <= code``) appeared on an earlier row."""
    key = first.astype(np.int64) * (int(second.max(initial=0)) + 1) + second
    return np.asarray(pd.Series(key).duplicated(keep="first"))


# --- the truth ---------------------------------------------------------------------------------


@dataclass
class _Truth:
    """The truth as read: users, items (their row and column of the scores), ratings."""

    users: np.ndarray
    rows: np.ndarray
    items: Any
    ratings: np.ndarray
    n_rows: int
    missing: int


def _read_truth(truth: Any, options: Options, specs: list[MetricSpec], user_col: str,
                item_col: str, rating_col: str) -> _Truth:
    from receval.data.columns import read_columns

    needed = options.relevance_threshold is not None or options.gain != "binary"
    cols = read_columns(truth, side="truth", user_col=user_col, item_col=item_col,
                        value_col=rating_col, value_required=needed)
    users = cols.users
    if isinstance(users, pa.ChunkedArray | pa.Array):
        users = users.to_numpy(zero_copy_only=False)
    ratings = cols.values if cols.values is not None else np.ones(len(cols))
    keep = ~np.isnan(ratings)
    items = cols.items
    if isinstance(items, pa.ChunkedArray | pa.Array):
        items = items.to_numpy(zero_copy_only=False)
    return _Truth(users=np.asarray(users)[keep], rows=np.empty(0, np.int64),
                  items=np.asarray(items)[keep], ratings=ratings[keep], n_rows=len(cols),
                  missing=int((~keep).sum()))


@dataclass
class _Excluded:
    """The excluded (row, column) pairs, grouped by row (CSR)."""

    indptr: np.ndarray
    cols: np.ndarray
    pairs: int
    unknown: int

    def items_left(self, n_items: int) -> np.ndarray:
        """Per row, the items left to rank (the pairs are distinct: :func:`_read_exclude`)."""
        return n_items - np.diff(self.indptr)

    def keys(self, n_items: int) -> np.ndarray:
        rows = np.repeat(np.arange(len(self.indptr) - 1), np.diff(self.indptr))
        return rows * n_items + self.cols


def _read_exclude(exclude: Any, source: _ScoreSource, user_col: str,
                  item_col: str) -> _Excluded:
    if exclude is None:
        return _Excluded(np.zeros(source.n_rows + 1, np.int64), np.zeros(0, np.int64), 0, 0)
    unknown = 0
    if hasattr(exclude, "tocsr") and hasattr(exclude, "shape"):  # scipy.sparse
        if tuple(exclude.shape) != (source.n_rows, source.n_items):
            raise ReceValError(f"exclude has shape {tuple(exclude.shape)}; scores has "
                               f"({source.n_rows}, {source.n_items})")
        coo = exclude.tocoo()
        nonzero = coo.data != 0
        rows, cols = coo.row[nonzero].astype(np.int64), coo.col[nonzero].astype(np.int64)
    else:
        from receval.data.columns import read_columns

        table = read_columns(exclude, side="exclude", user_col=user_col, item_col=item_col,
                             value_col=None, value_required=False)
        rows = _positions(table.users, source.user_ids)
        cols = _positions(table.items, source.item_ids)
        known = (rows >= 0) & (cols >= 0)
        unknown = int((~known).sum())
        rows, cols = rows[known], cols[known]
    # one sorted int64 key per pair (row-major): grouped by row, repeats adjacent
    key = rows.astype(np.int64) * source.n_items + cols
    if len(key) > 1 and not (key[1:] >= key[:-1]).all():
        key = np.sort(key)
    given = len(key)
    if given > 1:
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]  # a pair given twice: once
    rows, cols = np.divmod(key, max(source.n_items, 1))
    indptr = np.zeros(source.n_rows + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=source.n_rows), out=indptr[1:])
    return _Excluded(indptr, cols, given, unknown)


@dataclass
class _Judged:
    """Per evaluated user: their row of the scores (-1: none) and their truth, judged."""

    users: np.ndarray  # the user ids, in the order of the result
    rows: np.ndarray
    t_indptr: np.ndarray  # the user's truth rows that have a column
    t_cols: np.ndarray
    t_rel: np.ndarray
    t_gain: np.ndarray
    t_rating: np.ndarray
    n_relevant: np.ndarray
    n_truth: np.ndarray  # the user's truth rows, in the scores' items or not (judged items)
    max_rel: np.ndarray  # the highest rating of the user's relevant items (-inf: none)
    g_indptr: np.ndarray  # gains of every relevant truth row (the ideal DCG), graded only
    g_values: np.ndarray
    g_cols: np.ndarray  # the relevant truth rows' columns (-1: none) and items, as g_indptr
    g_items: np.ndarray
    counts: dict[str, int]
    in_truth: int


def _judge_truth(table: _Truth, source: _ScoreSource, excluded: _Excluded, options: Options,
                 rating_col: str) -> _Judged:
    """Relevance and gains of the truth rows, grouped by evaluated user (host arrays)."""
    users, items, ratings = table.users, table.items, table.ratings
    counts = {"truth": table.n_rows, "truth_dropped_missing_rating": table.missing}
    user_codes, uniques = pd.factorize(users, sort=False)
    item_codes, item_uniques = pd.factorize(items, sort=False)
    repeated = _repeated(user_codes, item_codes)
    if repeated.any():
        if options.duplicates == "error":
            row = int(np.flatnonzero(repeated)[0])
            raise ReceValError(
                f"duplicate (user, item) rows in truth: user {plain(users[row])!r}, item "
                f"{plain(items[row])!r} appears more than once ({int(repeated.sum())} repeated "
                "rows in all); pass duplicates='first' or 'max' to keep one")
        if options.duplicates == "max":  # the highest rating, the first of equals
            order = np.lexsort((np.arange(len(ratings)), -ratings, item_codes, user_codes))
            again = _repeated(user_codes[order], item_codes[order])
            repeated = np.zeros(len(ratings), bool)
            repeated[order[again]] = True
        keep = ~repeated
        users, items, ratings = users[keep], items[keep], ratings[keep]
        user_codes, item_codes = user_codes[keep], item_codes[keep]
    counts["truth_dropped_duplicates"] = int(repeated.sum())
    rows_of_user = _positions(uniques, source.user_ids)
    row = rows_of_user[user_codes]
    col = _positions(items, source.item_ids)
    if options.truth_scope == "predicted":  # only truth rows of scored, not excluded items
        predicted = (row >= 0) & (col >= 0)
        keys = np.where(predicted, row * source.n_items + col, -1)
        predicted &= ~np.isin(keys, excluded.keys(source.n_items))
        counts["truth_dropped_unpredicted"] = int((~predicted).sum())
        users, ratings, row, col = users[predicted], ratings[predicted], row[predicted], \
            col[predicted]
        user_codes, item_codes = user_codes[predicted], item_codes[predicted]
    relevant = _relevant(user_codes, item_codes, items, ratings, options, len(uniques))
    gains = _gains(ratings, relevant, options, rating_col)
    # the evaluated users, in the order of the truth (then rows of the scores)
    n_users = len(uniques)
    in_truth = np.bincount(user_codes, minlength=n_users) > 0
    n_rel = np.bincount(user_codes, weights=relevant.astype(np.float64),
                        minlength=n_users).astype(np.int64)
    truth_rows = rows_of_user
    # a row is a user "in the predictions" when something of it is left to rank (as in the
    # long table of its scores outside ``exclude``)
    listed_row = excluded.items_left(source.n_items) > 0
    in_pred = (truth_rows >= 0) & listed_row[np.maximum(truth_rows, 0)]
    with_truth = truth_rows[in_truth & (truth_rows >= 0)]
    extra = np.setdiff1d(np.flatnonzero(listed_row), with_truth)
    sel = options.users
    if sel in ("truth", "relevant"):
        picked = np.flatnonzero(in_truth & ((n_rel > 0) if sel == "relevant" else True))
        ids, rows = uniques[picked], truth_rows[picked]
    elif sel == "both":
        picked = np.flatnonzero(in_truth & in_pred)
        ids, rows = uniques[picked], truth_rows[picked]
    else:
        picked = np.flatnonzero(in_truth & (in_pred if sel == "predictions" else True))
        ids = np.concatenate([np.asarray(uniques[picked], dtype=object),
                              np.asarray(source.user_ids[extra], dtype=object)])
        rows = np.concatenate([truth_rows[picked], extra])
        picked = np.concatenate([picked, np.full(len(extra), -1)])
    if not (truth_rows >= 0).any():
        raise ReceValError(
            f"no truth user is a row of scores (truth users such as {plain(uniques[0])!r}, rows "
            f"of user_ids such as {plain(source.user_ids[0]) if source.n_rows else None!r}); "
            "pass user_ids= (the user of each row)")
    if len(picked) == 0:
        raise ReceValError(
            f"no user to evaluate with users={sel!r}: "
            + ("no user of the truth has a relevant item (check relevance_threshold)"
               if sel == "relevant" else "truth and scores share no user id (check user_ids)"))
    # truth rows grouped by evaluated user
    slot = np.full(n_users, -1, np.int64)
    slot[picked[picked >= 0]] = np.flatnonzero(picked >= 0)
    owner = slot[user_codes]
    mine = owner >= 0
    n_relevant = np.zeros(len(picked), np.int64)
    np.add.at(n_relevant, owner[mine], relevant[mine].astype(np.int64))
    listed = mine & (col >= 0)
    order = np.argsort(owner[listed], kind="stable")
    t_owner = owner[listed][order]
    t_indptr = _indptr(t_owner, len(picked))
    rel_rows = mine & relevant
    g_order = np.argsort(owner[rel_rows], kind="stable")
    n_truth = np.bincount(owner[mine], minlength=len(picked)).astype(np.int64)
    max_rel = np.full(len(picked), -np.inf)
    np.maximum.at(max_rel, owner[rel_rows], ratings[rel_rows])
    counts["truth_kept"] = int(mine.sum())
    counts["truth_not_in_items"] = int((mine & (col < 0)).sum())
    return _Judged(
        users=np.asarray(ids), rows=rows.astype(np.int64), t_indptr=t_indptr,
        t_cols=col[listed][order], t_rel=relevant[listed][order].astype(np.float64),
        t_gain=gains[listed][order], t_rating=ratings[listed][order], n_relevant=n_relevant,
        n_truth=n_truth, max_rel=max_rel,
        g_indptr=_indptr(owner[rel_rows][g_order], len(picked)),
        g_values=gains[rel_rows][g_order], g_cols=col[rel_rows][g_order],
        g_items=np.asarray(item_uniques)[item_codes[rel_rows][g_order]], counts=counts,
        in_truth=int(in_truth.sum()))


def _indptr(owner: np.ndarray, n: int) -> np.ndarray:
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=indptr[1:])
    return indptr


def _relevant(user_codes: np.ndarray, item_codes: np.ndarray, items: np.ndarray,
              ratings: np.ndarray, options: Options, n_users: int) -> np.ndarray:
    """Relevance per truth row (``relevance_threshold``)."""
    return relevant_rows(user_codes, ratings, options.relevance_threshold, n_users)


def _sort_key(ids: np.ndarray) -> np.ndarray:
    """Ids as sortable int64 keys in their native order (numbers as numbers, text by code
    point)."""
    if ids.dtype.kind in "iu":
        return ids.astype(np.int64)
    return pd.factorize(ids, sort=True)[0].astype(np.int64)


def _gains(ratings: np.ndarray, relevant: np.ndarray, options: Options,
           rating_col: str) -> np.ndarray:
    """nDCG gain per truth row (0 unless relevant)."""
    if options.gain == "binary":
        return row_gains(ratings, relevant, "binary")
    bad = relevant & (ratings < 0)
    if bad.any():
        row = int(np.argmax(bad))
        raise ReceValError(
            f"gain={options.gain!r} needs non-negative ratings on relevant rows; truth column "
            f"{rating_col!r} holds {ratings[row]:g} at row {row}, {int(bad.sum())} relevant "
            "row(s) in all; pass a relevance_threshold >= 0 or shift the ratings")
    gains = row_gains(ratings, relevant, options.gain)
    if np.isinf(gains).any() or (gains > 2.0**960).any():
        raise ReceValError(f"gain={options.gain!r}: ratings in truth column {rating_col!r} "
                           "this large need receval.evaluate (it rescales the gains)")
    return gains


# --- the engine's loop ---------------------------------------------------------------------------


def batch_rows(n_items: int, device: Any, memory_budget: int | None, torch: Any) -> int:
    """Rows per block: ``memory_budget // (BYTES_PER_ENTRY * n_items)``, at least 1.

    Example:
        >>> import torch
        >>> batch_rows(1000, torch.device("cpu"), 32_000_000, torch)
        1000
    """
    if memory_budget is None:
        if device.type == "cuda":
            free, _total = torch.cuda.mem_get_info(device)
            memory_budget = free // 4
        else:
            memory_budget = CPU_BUDGET
    return max(1, int(memory_budget) // (BYTES_PER_ENTRY * max(1, n_items)))


def _run(judged: _Judged, source: _ScoreSource, excluded: _Excluded, specs: list[MetricSpec],
         options: Options, device: Any, batch_size: int | None, memory_budget: int | None,
         torch: Any, ranked: list[tuple[np.ndarray, np.ndarray]] | None = None,
         ranked_depth: int = 0) -> Result:
    """The users' metrics, block by block; ``ranked`` (debias=) receives each block's top
    ``ranked_depth`` columns in rank order and its list lengths."""
    from receval.aggregate import aggregate
    from receval.engines.numba_engine import JUDGED_FIELDS, KernelOutput
    from receval.engines.torch_engine import cut_rows, judged_in_order, picture_of_rows
    from receval.measures.registry import compute, cutoffs_needed, needs

    cutoffs = cutoffs_needed(specs, options)
    fields = needs(specs, options)
    n_users = len(judged.rows)
    step = batch_size if batch_size is not None else batch_rows(
        source.n_items, device, memory_budget, torch)
    if step < 1:
        raise ReceValError(f"batch_size must be positive; got {batch_size}")
    item_key = torch.from_numpy(_item_keys(source.item_ids, options)).to(device)
    # the judged items in rank order, and max_list, as evaluate(engine="torch") has them
    want_judged = any(name in fields for name in JUDGED_FIELDS) or options.max_list is not None
    values, nums, dens, den2s, n_lists, ties = [], [], [], [], [], []
    for lo in range(0, n_users, step):
        hi = min(lo + step, n_users)
        rows = _block_rows(judged, source, excluded, options, lo, hi, device, item_key, torch)
        if options.max_list is not None:
            rows = cut_rows(rows, options.max_list, options.ties)
        block = picture_of_rows(rows, cutoffs, options.ties,
                                need_rprec="hits_at_r" in fields,
                                top_items="top_items" in fields or want_judged,
                                ap_over_hits="ap_over_hits" in fields,
                                top_k=source.n_items if want_judged else
                                ranked_depth if ranked is not None else None,
                                discount=options.discount,
                                persistence=options.persistence)
        if want_judged:
            pic = block.picture
            rating = _block_ratings(judged, lo, hi, source.n_items, device, torch)
            pic.judged_ranks, pic.judged_rel, pic.judged_rating = judged_in_order(
                pic.top_items, rows, rating)
            pic.n_judged = torch.from_numpy(judged.n_truth[lo:hi]).to(device)
            pic.max_rel_rating = torch.from_numpy(judged.max_rel[lo:hi]).to(device)
        out = compute(block.picture, specs, options)
        if ranked is not None:
            ranked.append((block.picture.top_items[:, :ranked_depth].cpu().numpy(),
                           block.picture.n_list.cpu().numpy()))
        values.append(out.value.cpu().numpy())
        nums.append(out.num.cpu().numpy())
        dens.append(out.den.cpu().numpy())
        den2s.append(out.den2.cpu().numpy())
        n_lists.append(block.picture.n_list.cpu().numpy())
        ties.append(block.tie_at_cut.cpu().numpy())
    m = len(specs)
    cut_cols = [c for c, k in enumerate(cutoffs) if k > 0]
    n_list = np.concatenate(n_lists)
    zeros = np.zeros(n_users, np.int64)
    kout = KernelOutput(
        value=np.concatenate(values).reshape(n_users, m),
        num=np.concatenate(nums).reshape(-1, m), den=np.concatenate(dens).reshape(-1, m),
        den2=np.concatenate(den2s).reshape(-1, m), n_relevant=judged.n_relevant,
        n_list=n_list, n_predicted=n_list, n_without_truth=zeros,
        n_below_score_threshold=zeros, dup_truth=zeros - 1, dup_predictions=zeros - 1,
        tie_at_cut=np.concatenate(ties)[:, cut_cols], gain_shift=np.zeros(n_users))
    return _result(judged, kout, specs, options, [cutoffs[c] for c in cut_cols], aggregate,
                   str(device))


def _block_ratings(judged: _Judged, lo: int, hi: int, width: int, device: Any,
                   torch: Any) -> Any:
    """Users ``lo:hi``'s truth rating of each column of the scores (NaN: no truth row)."""
    t_user, t_pos = _expand(judged.t_indptr[lo:hi], judged.t_indptr[lo + 1 : hi + 1], None)
    rating = torch.full((hi - lo, width), torch.nan, dtype=torch.float64, device=device)
    rating[torch.from_numpy(t_user).to(device), torch.from_numpy(judged.t_cols[t_pos]).to(
        device)] = torch.from_numpy(judged.t_rating[t_pos]).to(device)
    return rating


def _item_keys(item_ids: np.ndarray, options: Options) -> np.ndarray:
    """Per column, its item's place in the item order (``ties="item"``/``"item_ascending"``)."""
    ids = item_ids
    if options.item_order == "text" and ids.dtype.kind in "iu":
        ids = ids.astype(str)
    return _sort_key(np.asarray(ids))


def _block_rows(judged: _Judged, source: _ScoreSource, excluded: _Excluded, options: Options,
                lo: int, hi: int, device: Any, item_key: torch.Tensor, torch: Any) -> Any:
    """The dense rows of users ``lo:hi`` on the device (:class:`~receval.engines.torch_engine.
    Rows`): scores, the list (not excluded, above the score threshold), relevance, gains."""
    from receval.engines.torch_engine import Rows

    n, width = hi - lo, source.n_items
    rows = judged.rows[lo:hi]
    has_row = rows >= 0
    fetched = source.fetch(rows[has_row]) if has_row.any() else None
    dtype = fetched.dtype if fetched is not None else torch.float64
    if not dtype.is_floating_point:
        dtype = torch.float64
    if options.score_dtype == "float32":
        dtype = torch.float32
    has_row_t = torch.from_numpy(has_row).to(device)
    if fetched is not None and has_row.all():
        scores = fetched.to(dtype)
    else:
        scores = torch.zeros((n, width), dtype=dtype, device=device)
        if fetched is not None:
            scores[has_row_t] = fetched.to(dtype)
    valid = has_row_t.unsqueeze(1).expand(n, width).clone()
    # excluded pairs of the block's rows
    starts, ends = excluded.indptr[np.where(has_row, rows, 0)], excluded.indptr[
        np.where(has_row, rows, 0) + 1]
    ends = np.where(has_row, ends, starts)
    ex_user, ex_col = _expand(starts, ends, excluded.cols)
    eu, ec = torch.from_numpy(ex_user).to(device), torch.from_numpy(ex_col).to(device)
    valid[eu, ec] = False
    # the sum is finite when every score is (NaN and infinities carry through a sum; one
    # that overflows only sends it to the full check): one read, no mask, no copy
    if fetched is not None and not bool(torch.isfinite(scores.sum())):
        bad = ~torch.isfinite(scores) & valid  # an excluded item's score is never read
        if bool(bad.any()):
            u, c = (int(x) for x in bad.nonzero()[0])
            raise ReceValError(
                f"scores hold {scores[u, c].item()} at row {int(rows[u])}, column {c} "
                f"({int(bad.sum())} non-finite in rows {int(rows[has_row].min())}.."
                f"{int(rows[has_row].max())}); scores must be finite (mask items with "
                "exclude=)")
        scores = torch.where(valid, scores, 0.0)
    # truth rows with a column
    t_user, t_pos = _expand(judged.t_indptr[lo:hi], judged.t_indptr[lo + 1 : hi + 1], None)
    tu = torch.from_numpy(t_user).to(device)
    tc = torch.from_numpy(judged.t_cols[t_pos]).to(device)
    rel = torch.zeros((n, width), dtype=torch.float64, device=device)
    rel[tu, tc] = torch.from_numpy(judged.t_rel[t_pos]).to(device)
    rel[eu, ec] = 0.0
    if options.gain == "binary":
        gain = rel  # the same values: one dense array, not two
    else:
        gain = torch.zeros((n, width), dtype=torch.float64, device=device)
        gain[tu, tc] = torch.from_numpy(judged.t_gain[t_pos]).to(device)
        gain[eu, ec] = 0.0
    dense_mask = (options.score_threshold is not None or options.protocol == "known"
                  or not has_row.all())
    if options.score_threshold is not None:
        valid &= scores.to(torch.float64) >= options.score_threshold
    if options.nonpositive_scores == "irrelevant":  # kept in the list, never a hit
        positive = scores > 0
        rel = torch.where(positive, rel, 0.0)
        gain = torch.where(positive, gain, 0.0)
    if options.protocol == "known":  # only items with a truth row are ranked
        known = torch.zeros((n, width), dtype=torch.bool, device=device)
        known[tu, tc] = True
        if options.nonpositive_scores == "irrelevant":
            known &= scores > 0
        valid &= known
    if dense_mask:  # outside the list nothing is relevant (excluded pairs are zero already)
        rel = rel * valid
        gain = gain * valid
    ideal = None
    if options.gain != "binary":
        g_user, g_pos = _expand(judged.g_indptr[lo:hi], judged.g_indptr[lo + 1 : hi + 1], None)
        width_g = int(np.diff(judged.g_indptr[lo : hi + 1]).max(initial=0))
        ideal = torch.zeros((n, max(width_g, 1)), dtype=torch.float64, device=device)
        slot = g_pos - judged.g_indptr[lo:hi][g_user]
        ideal[torch.from_numpy(g_user).to(device), torch.from_numpy(slot).to(device)] = (
            torch.from_numpy(judged.g_values[g_pos]).to(device))
    n_list = None
    if not dense_mask:  # every column but the excluded ones (distinct pairs): no pass
        n_list = torch.from_numpy(width - (ends - starts)).to(device)
    return Rows(scores=scores, valid=valid, rel=rel, gain=gain,
                n_relevant=torch.from_numpy(judged.n_relevant[lo:hi]).to(device),
                ideal_gains=ideal, item_key=item_key, n_list=n_list)


def _expand(starts: np.ndarray, ends: np.ndarray,
            values: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """For CSR slices ``starts[i]:ends[i]``: the slice number of every element, and its
    position (or its value in ``values``)."""
    lengths = ends - starts
    owner = np.repeat(np.arange(len(starts)), lengths)
    pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths) \
        + np.repeat(starts, lengths)
    return owner, (pos if values is None else values[pos])


def _result(judged: _Judged, out: Any, specs: list[MetricSpec], options: Options,
            cut_ks: list[int], aggregate: Any, device: str) -> Result:
    """Empty policy, averages and counts, as :func:`receval.evaluate` reports them."""
    if options.empty_scope == "no_relevant":
        out.value[out.n_relevant == 0, :] = np.nan
    users = judged.users
    agg = aggregate(specs, out, options, lambda row: plain(users[row]))
    per_user = pd.DataFrame(agg.per_user, columns=[s.name for s in specs], copy=False)
    per_user.insert(0, "user", users)
    rows = dict(judged.counts)
    rows["predictions_kept"] = int(out.n_list.sum())
    counts: Counts = {
        "users": {
            "evaluated": len(users),
            "in_truth": judged.in_truth,
            "without_relevant": int((out.n_relevant == 0).sum()),
            "without_predictions": int((out.n_list == 0).sum()),
        },
        "rows": rows,
        "undefined": {"policy": options.empty, "users": agg.undefined},
        "averaged": agg.used,
        "ties_at_cutoff": {int(k): int(out.tie_at_cut[:, c].sum())
                           for c, k in enumerate(cut_ks)},
    }
    counts["summary_null"] = null_reasons(agg.summary, agg.undefined, agg.used, options.empty,
                                          set())
    checks.check_ties(counts["ties_at_cutoff"], options.ties)
    record = options.to_dict()
    record.update(version=__version__, engine="torch", device=device,
                  metrics={s.name: s.canonical for s in specs})
    return Result(summary=agg.summary, per_user=per_user, counts=counts,
                  options=cast(RecordedOptions, record),
                  metrics=[s.name for s in specs])


__all__ = ["batch_rows", "evaluate_scores"]
