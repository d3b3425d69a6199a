"""The score-matrix path's own job (:func:`receval.evaluate_scores`): the scores (a matrix, a
tensor or a model's forward pass), the excluded pairs, the truth keyed to the matrix's rows
and columns and judged (:mod:`receval.engines.judge`), and the block loop: dense rows on the
device, masked, ranked once (:func:`receval.engines.torch_engine.picture_of_rows`) and
reduced to the engine's output within a memory budget. What a result is made of (counts,
finish, beyond-accuracy metrics) is :mod:`receval.scores`'s, the plan's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.audit import selected_by
from receval.data.columns import Columns
from receval.data.csr import CSR
from receval.engines.judge import relevant_rows, row_gains
from receval.engines.request import EngineRequest, Lists
from receval.exceptions import ReceValError
from receval.measures.spec import RATING, MetricSpec
from receval.options import Options
from receval.scalars import plain

if TYPE_CHECKING:
    import torch

#: what one (user, item) entry of a block costs on the device at its peak: measured 26 bytes
#: on an H100 (float32 scores and their masked copy, the list mask, float64 relevance; 100k
#: users x 50k items, benchmarks/README.md); graded gains add a float64 row (8) and float64
#: scores 8 more, so a block sized for a quarter of the free memory stays under half of it
BYTES_PER_ENTRY = 32
#: the memory budget on the CPU when none is given (on CUDA: a quarter of the free memory)
CPU_BUDGET = 1 << 30


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


@dataclass
class _RanksSeen:
    """Whether every list of the rows read so far holds 1..n (its ``n`` scores the numbers 1
    to ``n``): ranks passed as scores, the test :func:`receval.checks.check_ranks_as_scores`
    makes of a long table's score column, made block by block (real scores leave at the
    first block: its smallest score is not 1)."""

    ranked: bool = True
    longest: int = 0

    def block(self, scores: Any, valid: Any, torch: Any) -> None:
        """Read one block's lists (``valid``: the cells of each row's list): a few rows
        first (real scores fail there, at no cost to a large block), then every row."""
        if not self.ranked:
            return
        n = valid.sum(dim=1)
        listed = torch.nonzero(n > 0).flatten()
        if len(listed) == 0:
            return
        sample = listed[:8]
        if not (_ranked_rows(scores[sample], valid[sample], n[sample], torch)
                and _ranked_rows(scores[listed], valid[listed], n[listed], torch)):
            self.ranked = False
            return
        self.longest = max(self.longest, int(n.max()))

    def warn(self) -> None:
        """The ranks-as-scores warning of every door, when every list holds 1..n (one list
        at least :data:`receval.checks.MIN_RANKED_LIST` long)."""
        from receval import checks

        if self.ranked and self.longest >= checks.MIN_RANKED_LIST:
            checks.warn_ranks_as_scores(
                "the score matrix holds",
                "pass the ranks reversed as scores (n + 1 - rank, or -rank), or the ranks to "
                "receval.evaluate as a long table with a column named 'rank' (read with 1 = "
                "best)")


def _ranked_rows(scores: Any, valid: Any, n: Any, torch: Any) -> bool:
    """Whether each row's ``n`` listed scores (``valid``, ``n`` > 0) are 1..n, each once:
    integers, the smallest 1, the largest ``n``, with the sum and the sum of squares of 1..n.

    Example:
        >>> import torch
        >>> s = torch.tensor([[2.0, 1.0, 9.0, 3.0], [0.5, 1.0, 2.0, 3.0]])
        >>> valid = torch.tensor([[True, True, False, True], [True, True, True, True]])
        >>> _ranked_rows(s[:1], valid[:1], valid[:1].sum(dim=1), torch)
        True
        >>> _ranked_rows(s, valid, valid.sum(dim=1), torch)
        False
    """
    low = torch.where(valid, scores, torch.inf).amin(dim=1)
    if not bool((low == 1).all()):
        return False
    s = scores.to(torch.float64)
    high = torch.where(valid, s, -torch.inf).amax(dim=1)
    whole = torch.where(valid, s == torch.floor(s), True).all(dim=1)
    if not bool(((high == n.to(torch.float64)) & whole).all()):
        return False
    v = torch.where(valid, s, 0.0).to(torch.int64)
    size = n.to(torch.int64)
    return bool(((v.sum(dim=1) == size * (size + 1) // 2)
                 & ((v * v).sum(dim=1) == size * (size + 1) * (2 * size + 1) // 6)).all())


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
    cols: Columns  # as read (shaping.prepare groups them)


def _read_truth(truth: Any, options: Options, specs: list[MetricSpec], user_col: str,
                item_col: str, rating_col: str) -> _Truth:
    from receval.data.columns import read_columns

    needed = (options.relevance_threshold is not None or options.gain != "binary"
              or any(spec.family in RATING for spec in specs))
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
                  missing=int((~keep).sum()), cols=cols)


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
        """The pairs as sorted, distinct ``row * n_items + column`` keys."""
        rows = np.repeat(np.arange(len(self.indptr) - 1), np.diff(self.indptr))
        return rows * n_items + self.cols

    def union(self, other: _Excluded, n_items: int) -> _Excluded:
        """The pairs of both (``exclude=`` and the training pairs of ``exclude_train``)."""
        key = np.union1d(self.keys(n_items), other.keys(n_items))
        rows, cols = np.divmod(key, max(n_items, 1))
        indptr = np.zeros(len(self.indptr), np.int64)
        np.cumsum(np.bincount(rows, minlength=len(self.indptr) - 1), out=indptr[1:])
        return _Excluded(indptr, cols, self.pairs + other.pairs, self.unknown + other.unknown)


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
    counts: dict[str, int]  # the rows read and dropped (audit.counts_of's ``read``)
    # the users seen (a truth row or a row of scores with something to rank): whether each
    # has truth rows / a list, how many rows; ``selected``: the evaluated ones among them
    seen_t: np.ndarray
    seen_p: np.ndarray
    seen_tlen: np.ndarray
    seen_plen: np.ndarray
    selected: np.ndarray
    t_listed: np.ndarray  # per evaluated user, the truth rows whose item is in the list


@dataclass
class _Grouped:
    """The truth grouped by user and its duplicates resolved by the shared code
    (:func:`receval.shaping.prepare`, :func:`receval.data.csr.drop_duplicates`): per row, in
    user-code order (the users' ids sorted, as evaluate's dictionary holds them), its user's
    code, item key, rating, row and column of the scores (-1: none)."""

    counts: dict[str, int]
    uniques: np.ndarray  # the user id of each code
    had_truth: np.ndarray  # per code: a truth row with a rating (before truth_scope)
    rows_of_user: np.ndarray  # each code's row of the scores (-1: none)
    user_codes: np.ndarray
    keys: np.ndarray
    ratings: np.ndarray
    row: np.ndarray
    col: np.ndarray
    item_ids: Callable[[np.ndarray], np.ndarray]  # item keys -> their ids


def _group_truth(table: _Truth, source: _ScoreSource, excluded: _Excluded, options: Options,
                 rating_col: str) -> _Grouped:
    """The truth through :func:`receval.shaping.prepare` (read, missing ratings dropped and
    counted, graded gains checked, users encoded and grouped), ``truth_scope="predicted"``
    applied to the matrix's cells, then the duplicates: dropped and counted by
    :func:`receval.data.csr.drop_duplicates`, or refused with evaluate's message naming the
    pair evaluate names (:func:`receval.audit.duplicate_error`). The long table's rows are the
    matrix's cells, so prepare gets the truth's first row as its predictions side and keeps
    its options off the predictions (the scope is applied here, item order by the blocks)."""
    import dataclasses

    from receval.audit import duplicate_error
    from receval.data.csr import drop_duplicates
    from receval.engines.numba_engine import DUPLICATE_FOUND, locate_duplicates
    from receval.shaping import prepare

    cols = table.cols
    if len(cols) == 0:
        raise ReceValError("truth has no rows: there is no user to evaluate")
    first = Columns("predictions", cols.users[:1], cols.items[:1], np.zeros(1))
    shaped = dataclasses.replace(
        options, truth_scope="all", item_order="native", nonpositive_scores="rank",
        ties="stable" if options.ties in ("item_ascending", "ranx") else options.ties)
    prepared = prepare(cols, first, shaped, rating_col=rating_col)
    counts = {"truth": prepared.rows["truth"],
              "truth_dropped_missing_rating": prepared.rows["truth_dropped_missing_rating"]}
    csr, users, items = prepared.truth, prepared.users, prepared.items
    uniques = np.asarray(users.decode(np.arange(csr.n_users)))
    had_truth = csr.lengths() > 0
    rows_of_user = _positions(uniques, source.user_ids)
    column_of = (None if items.source is None
                 else _positions(np.asarray(items.ids), source.item_ids))

    def located(csr: CSR) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        codes = np.repeat(np.arange(csr.n_users), csr.lengths())
        col = (_positions(csr.items, source.item_ids) if column_of is None
               else column_of[csr.items])
        return codes, rows_of_user[codes], col

    codes, row, col = located(csr)
    if options.truth_scope == "predicted":  # only truth rows of scored, not excluded items
        predicted = (row >= 0) & (col >= 0)
        keys = np.where(predicted, row * source.n_items + col, -1)
        predicted &= ~_in_sorted(keys, excluded.keys(source.n_items))
        counts["truth_dropped_unpredicted"] = int((~predicted).sum())
        csr = _kept(csr, predicted)
        codes, row, col = located(csr)
    policy = options.duplicates
    dropped, n_dropped = drop_duplicates(csr, "first" if policy == "error" else policy)
    if n_dropped and policy == "error":
        # evaluate's order: the users users= selects first, each's smallest repeated item
        left = excluded.items_left(source.n_items)
        listed = (rows_of_user >= 0) & (left[np.maximum(rows_of_user, 0)] > 0)
        repeats = dropped.lengths() != csr.lengths()
        chosen = selected_by(csr.lengths() > 0, listed, options.users)
        user = int(np.concatenate([np.flatnonzero(repeats & chosen),
                                   np.flatnonzero(repeats & ~chosen)])[0])
        where = np.array([DUPLICATE_FOUND])
        locate_duplicates(where, np.array([user]), csr.indptr, csr.items)
        raise duplicate_error("truth", plain(uniques[user]),
                              plain(items.decode(csr.items[where[0] : where[0] + 1])[0]))
    counts["truth_dropped_duplicates"] = n_dropped
    if n_dropped:
        csr = dropped
        codes, row, col = located(csr)
    return _Grouped(counts=counts, uniques=uniques, had_truth=had_truth,
                    rows_of_user=rows_of_user,
                    user_codes=codes, keys=csr.items, ratings=csr.values, row=row, col=col,
                    item_ids=lambda keys: np.asarray(items.decode(keys)))


def _in_sorted(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Whether each value is in ``ordered`` (sorted, as :meth:`_Excluded.keys` gives them):
    ``np.isin`` by binary search, no hashing.

    Example:
        >>> _in_sorted(np.array([3, -1, 7, 9]), np.array([1, 3, 7])).tolist()
        [True, False, True, False]
    """
    if len(ordered) == 0:
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return np.asarray(ordered[at] == values)


def _kept(csr: CSR, keep: np.ndarray) -> CSR:
    """The rows of ``csr`` that ``keep`` marks, still grouped by user."""
    before = np.zeros(len(keep) + 1, np.int64)
    np.cumsum(keep, out=before[1:])
    return CSR(before[csr.indptr], csr.items[keep], csr.values[keep])


def _judge_truth(table: _Truth, source: _ScoreSource, excluded: _Excluded, options: Options,
                 rating_col: str) -> _Judged:
    """Relevance and gains of the truth rows, grouped by evaluated user (host arrays)."""
    grouped = _group_truth(table, source, excluded, options, rating_col)
    counts, uniques, user_codes = grouped.counts, grouped.uniques, grouped.user_codes
    ratings, rows_of_user, row, col = (grouped.ratings, grouped.rows_of_user, grouped.row,
                                       grouped.col)
    relevant = _relevant(user_codes, ratings, options, len(uniques))
    gains = _gains(ratings, relevant, options, rating_col)
    # the evaluated users, in the order of the truth (then rows of the scores)
    n_users = len(uniques)
    in_truth = np.bincount(user_codes, minlength=n_users) > 0
    n_rel = np.bincount(user_codes, weights=relevant.astype(np.float64),
                        minlength=n_users).astype(np.int64)
    truth_rows = rows_of_user
    # a row is a user "in the predictions" when something of it is left to rank (as in the
    # long table of its scores outside ``exclude``); the users seen: the truth's with a row
    # on either side, then the other rows with something to rank, as audit.counts_of counts
    items_left = excluded.items_left(source.n_items)
    listed_row = items_left > 0
    in_pred = (truth_rows >= 0) & listed_row[np.maximum(truth_rows, 0)]
    own = np.zeros(source.n_rows, bool)
    own[truth_rows[truth_rows >= 0]] = True
    extra = np.flatnonzero(listed_row & ~own)
    # a user whose truth rows truth_scope dropped is still seen (evaluate's dictionary)
    seen_u = grouped.had_truth | in_pred
    none = np.zeros(len(extra), bool)
    # in the order of their ids, as evaluate's user dictionary holds them
    seen_ids = _concat_ids(np.asarray(uniques)[seen_u], np.asarray(source.user_ids)[extra])
    by_id = _id_order(seen_ids)
    seen_t = np.concatenate([in_truth[seen_u], none])[by_id]
    seen_p = np.concatenate([in_pred[seen_u], ~none])[by_id]
    seen_rows = np.concatenate([truth_rows[seen_u], extra])[by_id]
    seen_tlen = np.concatenate([np.bincount(user_codes, minlength=n_users)[seen_u],
                                np.zeros(len(extra), np.int64)])[by_id]
    seen_plen = np.where(seen_rows >= 0, items_left[np.maximum(seen_rows, 0)], 0)
    sel = options.users
    mask = selected_by(seen_t, seen_p, sel)
    if sel == "relevant":
        mask = mask & np.concatenate([n_rel[seen_u] > 0, none])[by_id]  # never in place
    selected = np.flatnonzero(mask)
    picked = np.concatenate([np.flatnonzero(seen_u), np.full(len(extra), -1)])[by_id][selected]
    rows = seen_rows[selected]
    ids = seen_ids[by_id][selected]
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
    # the truth rows whose item is in the user's list (a row of scores, the pair not excluded)
    in_list = listed & (row >= 0)
    if excluded.pairs and in_list.any():
        key = row[in_list].astype(np.int64) * source.n_items + col[in_list]
        in_list[in_list] = ~_in_sorted(key, excluded.keys(source.n_items))
    t_listed = np.bincount(owner[in_list], minlength=len(picked)).astype(np.int64)
    rel_rows = mine & relevant
    g_order = np.argsort(owner[rel_rows], kind="stable")
    n_truth = np.bincount(owner[mine], minlength=len(picked)).astype(np.int64)
    max_rel = np.full(len(picked), -np.inf)
    np.maximum.at(max_rel, owner[rel_rows], ratings[rel_rows])
    counts["predictions"] = int(items_left.sum())
    return _Judged(
        users=np.asarray(ids), rows=rows.astype(np.int64), t_indptr=t_indptr,
        t_cols=col[listed][order], t_rel=relevant[listed][order].astype(np.float64),
        t_gain=gains[listed][order], t_rating=ratings[listed][order], n_relevant=n_relevant,
        n_truth=n_truth, max_rel=max_rel,
        g_indptr=_indptr(owner[rel_rows][g_order], len(picked)),
        g_values=gains[rel_rows][g_order], g_cols=col[rel_rows][g_order],
        g_items=grouped.item_ids(grouped.keys[rel_rows][g_order]), counts=counts,
        seen_t=seen_t, seen_p=seen_p, seen_tlen=seen_tlen, seen_plen=seen_plen,
        selected=selected, t_listed=t_listed)


def _id_order(ids: np.ndarray) -> np.ndarray:
    """The positions of ``ids`` in their sorted order (numbers by value, text by code
    point), the order of evaluate's user dictionary; ids of mixed kinds as they are.

    Example:
        >>> _id_order(np.array([30, 10, 20])).tolist()
        [1, 2, 0]
    """
    try:
        return np.argsort(_sort_key(ids), kind="stable")
    except TypeError:  # numbers and text mixed: no order to follow
        return np.arange(len(ids))


def _concat_ids(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Two arrays of ids as one, in their dtype when they share its kind (else objects).

    Example:
        >>> _concat_ids(np.array([1, 2]), np.array([7])).tolist()
        [1, 2, 7]
    """
    if first.dtype.kind == second.dtype.kind and first.dtype.kind in "iuU":
        return np.concatenate([first, second])
    return np.concatenate([first.astype(object), second.astype(object)])


def _indptr(owner: np.ndarray, n: int) -> np.ndarray:
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=indptr[1:])
    return indptr


def _relevant(user_codes: np.ndarray, ratings: np.ndarray, options: Options,
              n_users: int) -> np.ndarray:
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
    # negative ratings on relevant rows: refused by shaping.prepare, as evaluate refuses them
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


def _run_blocks(judged: _Judged, source: _ScoreSource, excluded: _Excluded,
                specs: list[MetricSpec], options: Options, device: Any, batch_size: int | None,
                memory_budget: int | None, torch: Any,
                ranked: list[tuple[np.ndarray, np.ndarray]] | None = None,
                ranked_depth: int = 0, ranks: _RanksSeen | None = None,
                ) -> tuple[dict[str, int], Any, list[int]]:
    """The users' metrics, block by block: the rows read and dropped (``read``), the engine's
    output (:class:`~receval.engines.numba_engine.KernelOutput`, one row per evaluated user)
    and the cutoffs where ties are flagged; ``ranked`` (debias=, beyond-accuracy metrics)
    receives each block's top ``ranked_depth`` columns in rank order and its list lengths;
    ``ranks`` reads each block's lists (ranks passed as scores)."""
    from receval.dispatch import plan_request
    from receval.engines.numba_engine import JUDGED_FIELDS, KernelOutput
    from receval.engines.torch_engine import cut_rows, judged_in_order, picture_of_rows
    from receval.measures.registry import compute

    # the plan's request (dispatch.plan_request): the judged truth as its lists, the
    # predictions the rows of the score matrix
    request = plan_request(_lists(judged), specs, options)
    cutoffs = request.cutoffs.tolist()
    fields = request.fields
    n_users = len(judged.rows)
    step = batch_size if batch_size is not None else batch_rows(
        source.n_items, device, memory_budget, torch)
    if step < 1:
        raise ReceValError(f"batch_size must be positive; got {batch_size}")
    item_key = torch.from_numpy(_item_keys(source.item_ids, options)).to(device)
    # the judged items in rank order, and max_list, as evaluate(engine="torch") has them
    want_judged = any(name in fields for name in JUDGED_FIELDS) or request.max_list is not None
    errors = any(spec.family in RATING for spec in specs)
    values, nums, dens, den2s, n_lists, ties = [], [], [], [], [], []
    audits: dict[str, list[np.ndarray]] = {}
    for lo in range(0, n_users, step):
        hi = min(lo + step, n_users)
        rows, block_audit = _block_rows(judged, source, excluded, options, request, lo, hi,
                                        device, item_key, torch, errors, ranks)
        block_errors = block_audit.pop("errors", None)
        for key, value in block_audit.items():
            audits.setdefault(key, []).append(value.cpu().numpy())
        if request.max_list is not None:
            rows = cut_rows(rows, request.max_list, options.ties)
        block = picture_of_rows(rows, cutoffs, options.ties,
                                need_rprec="hits_at_r" in fields,
                                top_items="top_items" in fields or want_judged,
                                ap_over_hits="ap_over_hits" in fields,
                                top_k=source.n_items if want_judged else
                                ranked_depth if ranked is not None else None,
                                discount=request.discount,
                                persistence=request.persistence)
        if want_judged:
            pic = block.picture
            rating = _block_ratings(judged, lo, hi, source.n_items, device, torch)
            pic.judged_ranks, pic.judged_rel, pic.judged_rating = judged_in_order(
                pic.top_items, rows, rating)
            pic.n_judged = torch.from_numpy(judged.n_truth[lo:hi]).to(device)
            pic.max_rel_rating = torch.from_numpy(judged.max_rel[lo:hi]).to(device)
        if block_errors is not None:
            pic = block.picture
            sq, ab, pairs = (torch.from_numpy(x).to(device) for x in block_errors)
            pic.sq_err, pic.abs_err, pic.n_pairs = sq, ab, pairs
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
    cut_cols = [c for c, k in enumerate(cutoffs) if k in request.cut_ks]
    n_list = np.concatenate(n_lists)
    zeros = np.zeros(n_users, np.int64)
    audited = {key: np.concatenate(parts).astype(np.int64) for key, parts in audits.items()}
    n_predicted = judged.seen_plen[judged.selected].astype(np.int64)
    n_matched = audited.get("matched", judged.t_listed)
    read = dict(judged.counts)
    if "nonpositive" in audited:  # of every row's list, evaluated or not, as evaluate counts
        read["predictions_nonpositive"] = int(audited["nonpositive"].sum()) + _nonpositive_rest(
            judged, source, excluded, options, step, device, torch)
    kout = KernelOutput(
        value=np.concatenate(values).reshape(n_users, m),
        num=np.concatenate(nums).reshape(-1 if m else 0, m),
        den=np.concatenate(dens).reshape(-1 if m else 0, m),
        den2=np.concatenate(den2s).reshape(-1 if m else 0, m), n_relevant=judged.n_relevant,
        n_list=n_list, n_predicted=n_predicted, n_without_truth=n_predicted - n_matched,
        n_below_score_threshold=audited.get("below", zeros), dup_truth=zeros - 1,
        dup_predictions=zeros - 1,
        tie_at_cut=np.concatenate(ties)[:, cut_cols], gain_shift=np.zeros(n_users))
    return read, kout, [cutoffs[c] for c in cut_cols]


def _nonpositive_rest(judged: _Judged, source: _ScoreSource, excluded: _Excluded,
                      options: Options, step: int, device: Any, torch: Any) -> int:
    """The scores at or below 0 (``nonpositive_scores="irrelevant"``) in the lists of the
    rows no evaluated user reads (the long table's rows of users left out by ``users=``),
    read block by block as the evaluated rows are: evaluate counts every prediction row."""
    evaluated = np.zeros(source.n_rows, bool)
    evaluated[judged.rows[judged.rows >= 0]] = True
    rest = np.flatnonzero(~evaluated)
    total = 0
    for lo in range(0, len(rest), step):
        rows = rest[lo : lo + step]
        scores = source.fetch(rows)
        if options.score_dtype == "float32":
            scores = scores.to(torch.float32)
        nonpositive = scores <= 0
        ex_user, ex_col = _expand(excluded.indptr[rows], excluded.indptr[rows + 1],
                                  excluded.cols)
        nonpositive[torch.from_numpy(ex_user).to(device),
                    torch.from_numpy(ex_col).to(device)] = False
        total += int(nonpositive.sum())
    return total


def _lists(judged: _Judged) -> Lists:
    """The engine request's lists of a score matrix: the evaluated users' truth rows that
    have a column (item codes: the columns), judged; the predictions are the matrix's rows,
    so the prediction side is empty."""
    n = len(judged.rows)
    empty = np.zeros(0, np.int64)
    return Lists(np.arange(n, dtype=np.int64), judged.t_indptr, judged.t_cols.astype(np.int64),
                 judged.t_rating, np.zeros(n + 1, np.int64), empty, empty.astype(np.float64))


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
                request: EngineRequest, lo: int, hi: int, device: Any, item_key: torch.Tensor,
                torch: Any, errors: bool = False, ranks: _RanksSeen | None = None) -> Any:
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
    if ranks is not None:  # the lists as given, before score_threshold or protocol filter
        ranks.block(scores, valid, torch)
    # truth rows with a column
    t_user, t_pos = _expand(judged.t_indptr[lo:hi], judged.t_indptr[lo + 1 : hi + 1], None)
    tu = torch.from_numpy(t_user).to(device)
    tc = torch.from_numpy(judged.t_cols[t_pos]).to(device)
    rel = torch.zeros((n, width), dtype=torch.float64, device=device)
    rel[tu, tc] = torch.from_numpy(judged.t_rel[t_pos]).to(device)
    rel[eu, ec] = 0.0
    if request.gain == "binary":
        gain = rel  # the same values: one dense array, not two
    else:
        gain = torch.zeros((n, width), dtype=torch.float64, device=device)
        gain[tu, tc] = torch.from_numpy(judged.t_gain[t_pos]).to(device)
        gain[eu, ec] = 0.0
    audit = _block_audit(scores, valid, tu, tc, options, n, torch)
    if errors:  # RMSE, MAE: the errors of the listed cells that have a truth row
        audit["errors"] = _block_errors(scores, valid, t_user, judged.t_cols[t_pos],
                                        judged.t_rating[t_pos], tu, tc, options, n)
    dense_mask = (request.score_threshold is not None or request.known_only
                  or not has_row.all())
    if request.score_threshold is not None:
        valid &= scores.to(torch.float64) >= request.score_threshold
    if options.nonpositive_scores == "irrelevant":  # kept in the list, never a hit
        positive = scores > 0
        rel = torch.where(positive, rel, 0.0)
        gain = torch.where(positive, gain, 0.0)
    if request.known_only:  # only items with a truth row are ranked
        known = torch.zeros((n, width), dtype=torch.bool, device=device)
        known[tu, tc] = True
        if options.nonpositive_scores == "irrelevant":
            known &= scores > 0
        valid &= known
    if dense_mask:  # outside the list nothing is relevant (excluded pairs are zero already)
        rel = rel * valid
        gain = gain * valid
    ideal = None
    if request.gain != "binary":
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
                ideal_gains=ideal, item_key=item_key, n_list=n_list), audit


def _block_errors(scores: Any, valid: Any, t_user: np.ndarray, t_cols: np.ndarray,
                  t_rating: np.ndarray, tu: Any, tc: Any, options: Options,
                  n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per user of the block: the sum of squared and of absolute errors (score - rating) over
    the cells of the list with a truth row, and their number (RMSE, MAE), added in column
    order one by one (``np.add.at``), as the numba engine adds a long table's rows."""
    ok = valid[tu, tc]
    t_scores = scores[tu, tc]
    if options.nonpositive_scores == "irrelevant":  # they match no truth row
        ok = ok & (t_scores > 0)
    keep = ok.cpu().numpy()
    user, col = t_user[keep], t_cols[keep]
    err = t_scores.cpu().numpy().astype(np.float64)[keep] - t_rating[keep]
    order = np.lexsort((col, user))
    user, err = user[order], err[order]
    sq, ab = np.zeros(n), np.zeros(n)
    with np.errstate(over="ignore"):
        np.add.at(sq, user, err * err)
        np.add.at(ab, user, np.abs(err))
    if not (np.isfinite(sq).all() and np.isfinite(ab).all()):
        raise ReceValError("RMSE/MAE: errors between scores and ratings this large (their "
                           "squares overflow) need receval.evaluate (it rescales them)")
    return sq, ab, np.bincount(user, minlength=n).astype(np.int64)


def _block_audit(scores: Any, valid: Any, tu: Any, tc: Any, options: Options, n: int,
                 torch: Any) -> dict[str, Any]:
    """What the numba engine counts of each list that the judged truth alone cannot tell
    (before the list is filtered): ``matched``, the predictions that meet a truth row when
    ``nonpositive_scores="irrelevant"`` takes some away; ``below``, those under
    ``score_threshold`` (with ``protocol="known"``, of those that meet one); ``nonpositive``,
    the scores at or below 0 (``nonpositive_scores="irrelevant"``)."""
    out: dict[str, Any] = {}
    irrelevant = options.nonpositive_scores == "irrelevant"
    if not irrelevant and options.score_threshold is None:
        return out
    ok = valid[tu, tc]
    t_scores = scores[tu, tc]
    if irrelevant:
        ok = ok & (t_scores > 0)
        out["matched"] = torch.bincount(tu[ok], minlength=n)
        out["nonpositive"] = (valid & (scores <= 0)).sum(dim=1)
    if options.score_threshold is not None:
        threshold = float(options.score_threshold)
        if options.protocol == "known":
            low = ok & (t_scores.to(torch.float64) < threshold)
            out["below"] = torch.bincount(tu[low], minlength=n)
        else:
            out["below"] = (valid & (scores.to(torch.float64) < threshold)).sum(dim=1)
    return out


def _expand(starts: np.ndarray, ends: np.ndarray,
            values: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """For CSR slices ``starts[i]:ends[i]``: the slice number of every element, and its
    position (or its value in ``values``)."""
    lengths = ends - starts
    owner = np.repeat(np.arange(len(starts)), lengths)
    pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths) \
        + np.repeat(starts, lengths)
    return owner, (pos if values is None else values[pos])


__all__ = ["BYTES_PER_ENTRY", "CPU_BUDGET", "batch_rows"]
