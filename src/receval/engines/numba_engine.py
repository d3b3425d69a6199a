"""The CPU engine: one parallel pass over users, arrays in, arrays out.

It takes one :class:`~receval.engines.request.EngineRequest` (the users' lists, the picture
asked for, the options under their names) and packs it into the few named tuples its jitted
loop reads (:class:`~receval.engines.request.Lists`, :class:`KernelOptions`, the shared tables,
the output arrays). For each user the kernel judges the user's predictions against the truth,
ranks them once, builds the user's prefix sums (:mod:`receval.engines.fill_picture`) and
writes them, sampled at the requested cutoffs, into a :class:`~receval.picture.Picture`, with
the audit of what it read (:class:`KernelAudit`). The metrics are then array functions over
the picture (:func:`receval.measures.registry.compute`). It has no global state, so it runs
unchanged on one partition of users (Spark ``mapInArrow``).

Speed (the loop body runs once per user, millions of times): users go in blocks with one
set of scratch arrays per block, so the per-user work allocates nothing and calls little
(the small helpers are inlined: a call costs more than what they do); one small hash table
per user answers both "is this predicted item in the truth?" and "was it predicted before?";
and the list is not sorted at all unless the ``average`` tie policy needs its tie groups: the
picture only needs the ranks of the relevant items (counted, with vectorized compares) and
ties at cutoffs only need the repeated scores. Every number is the same, bit for bit, as
ranking with the oracle's ``rank`` (tests/reference/oracle.py) and judging with a sorted truth.

Compile time (a first run, before numba's on-disk cache holds the kernel): the kernel is
compiled per :class:`KernelVariant` (the tie class, ranked lists or not, graded gains, a
user-mean threshold), each variant leaving out the paths it cannot take, so a plain request
compiles none of the code of ``average`` ties, the order-free sorts or the graded gains; it is
one function (numba optimises and generates code for a function with all it calls, once per
level of calls), its inputs are read-only views of fixed dtypes (one signature), and the
helpers only it calls have no CPython wrapper (:func:`~receval.engines.fill_picture.inner_jit`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, NamedTuple

import numba
import numpy as np

from receval.engines.exact_sum import exact_sum
from receval.engines.fill_picture import (
    TIE_CODES,
    TIES_AVERAGE,
    TIES_ITEM,
    TIES_OPTIMISTIC,
    TIES_PESSIMISTIC,
    TIES_STABLE,
    build_picture,
    build_picture_average,
    expected_ap_over_hits,
    inner_jit,
)
from receval.engines.gains import GAIN_BINARY, GAIN_CODES, gain_of, gain_shift
from receval.engines.request import EngineRequest, Lists
from receval.measures.discounts import DISCOUNT_CODES, ideal_dcg, log2_ranks, stable_argsort
from receval.parallel import block_bounds, run_blocks
from receval.picture import NO_CUTOFF, Picture

if TYPE_CHECKING:
    from receval.measures.registry import MetricArrays

THR_NONE, THR_GLOBAL, THR_USER_MEAN = 0, 1, 2

# a block of users takes a thread only with at least this many (about 2 ms of work): below,
# starting threads costs more than it saves
MIN_BLOCK_USERS = 512

#: the picture's per-cutoff fields the kernel can write, in its argument order
PER_CUTOFF_FIELDS = ("hits", "ap_sum", "dcg", "idcg", "first", "rr_sum", "ap_over_hits")
#: the judged items of each list, in rank order (written together when one is asked for)
JUDGED_FIELDS = ("judged_ranks", "judged_rel", "judged_rating")


@dataclass
class KernelAudit:
    """Per evaluated user: what the kernel read and flagged (beside the picture).

    ``n_predicted``: predictions before filtering; ``n_without_truth``: those with no truth
    row; ``n_below_score_threshold``: those under ``score_threshold``; ``dup_truth`` /
    ``dup_predictions``: CSR position of the first repeated item, or -1;
    ``tie_at_cut[u, c]``: ranks ``cut_ks[c]`` and ``cut_ks[c] + 1`` hold tied scores.
    """

    n_predicted: np.ndarray
    n_without_truth: np.ndarray
    n_below_score_threshold: np.ndarray
    dup_truth: np.ndarray
    dup_predictions: np.ndarray
    tie_at_cut: np.ndarray


@dataclass
class KernelOutput:
    """Per evaluated user (rows) and metric (columns): value (NaN = undefined), num, den.

    ``den2`` is recall's denominator for F-beta columns (micro F needs micro P and R).
    ``num``, ``den`` and ``den2`` have a row per user only when asked for (micro averaging,
    RMSE/MAE: :func:`receval.measures.registry.wants_parts`); otherwise they have no rows
    (1.4 GB fewer at 1M users and 43 metrics). :func:`kernel_output` joins them to the
    picture's counts and the :class:`KernelAudit`.
    ``dup_truth`` / ``dup_predictions``: CSR position of the first repeated item, or -1.
    ``tie_at_cut[u, c]``: ranks ``cut_ks[c]`` and ``cut_ks[c] + 1`` hold tied scores.
    ``gain_shift``: the user's graded nDCG gains, DCG and IDCG (``num``/``den`` of nDCG
    columns) are scaled by ``2^-gain_shift`` (:func:`~receval.measures.ndcg.gain_shift`; 0
    unless a gain would overflow).
    ``top_items``: ``(U, K)`` item codes of each user's ranked top K (``-1`` past the list;
    :attr:`receval.picture.Picture.top_items`), or ``None`` when no metric asked for them.
    """

    value: np.ndarray
    num: np.ndarray
    den: np.ndarray
    den2: np.ndarray
    n_relevant: np.ndarray
    n_list: np.ndarray
    n_predicted: np.ndarray
    n_without_truth: np.ndarray
    n_below_score_threshold: np.ndarray
    dup_truth: np.ndarray
    dup_predictions: np.ndarray
    tie_at_cut: np.ndarray
    gain_shift: np.ndarray
    top_items: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> KernelOutput:
        """The outputs of the users ``rows`` selects (a mask or indices); parts kept or not.

        Example:
            >>> out = KernelOutput(*([np.arange(3.0)] * 13))
            >>> out.take(np.array([True, False, True])).value.tolist()
            [0.0, 2.0]
        """
        n = len(self.value)
        return KernelOutput(*(
            a[rows] if a is not None and len(a) == n else a
            for a in (getattr(self, f.name) for f in fields(self))
        ))


class KernelOptions(NamedTuple):
    """The request's judging and ranking options as the jitted loop reads them (numbers:
    a named tuple of scalars is one argument of fixed types, compiled once)."""

    ties: int  # TIE_CODES
    known_only: bool
    has_score_thr: bool
    score_thr: float
    thr_mode: int  # THR_NONE, THR_GLOBAL, THR_USER_MEAN
    rel_thr: float
    gain: int  # GAIN_CODES
    need_all: bool
    kmax: int
    need_rprec: bool
    max_list: int  # 0: whole lists


class KernelVariant(NamedTuple):
    """What decides which paths of the kernel a request can take: one compiled kernel per
    variant, compiled the first time a request needs it (:func:`kernel_variant`)."""

    ties: int  # TIES_STABLE, TIES_AVERAGE, or TIES_ITEM for every other (order-free) policy
    lists: bool  # the ranked lists are written (top items, judged items)
    graded: bool  # gains other than binary
    user_mean: bool  # the relevance threshold is each user's mean rating


#: a plain request's variant (stable ties, binary gains, a fixed threshold, no lists): the
#: one :func:`kernels_cached` asks about
PLAIN_VARIANT = KernelVariant(TIES_STABLE, lists=False, graded=False, user_mean=False)


def kernel_variant(request: EngineRequest) -> KernelVariant:
    """The kernel variant ``request`` needs.

    Example:
        >>> from receval.engines.request import Lists
        >>> from receval.options import Options
        >>> users = np.array([0])
        >>> plan = lambda o, f: EngineRequest.plan(Lists(*[users] * 7), o, np.array([5]), f)
        >>> kernel_variant(plan(Options(), {"hits"})) == PLAIN_VARIANT
        True
        >>> kernel_variant(plan(Options(ties="pessimistic", gain="exponential"), {"top_items"}))
        KernelVariant(ties=1, lists=True, graded=True, user_mean=False)
    """
    ties = TIE_CODES[request.ties]
    return KernelVariant(
        ties=ties if ties in (TIES_STABLE, TIES_AVERAGE) else TIES_ITEM,
        lists="top_items" in request.fields or any(f in request.fields for f in JUDGED_FIELDS),
        graded=GAIN_CODES[request.gain] != GAIN_BINARY,
        user_mean=request.relevance_threshold == "user_mean",
    )


class _Tables(NamedTuple):
    """What every block reads: the picture's cutoffs, the tie cutoffs, the discount table,
    the binary ideal DCG, and the sizes of the scratch."""

    cutoffs: np.ndarray
    cut_ks: np.ndarray
    idcg_binary: np.ndarray
    log2_rank: np.ndarray
    max_m: int
    max_n: int


class _PictureOut(NamedTuple):
    """The picture's arrays the loop writes (a per-cutoff field not asked for has no rows)."""

    hits: np.ndarray
    ap_sum: np.ndarray
    dcg: np.ndarray
    idcg: np.ndarray
    first: np.ndarray
    rr_sum: np.ndarray
    ap_over_hits: np.ndarray
    top_items: np.ndarray
    judged_ranks: np.ndarray
    judged_rel: np.ndarray
    judged_rating: np.ndarray
    n_judged: np.ndarray
    max_rel_rating: np.ndarray
    hits_at_r: np.ndarray
    sq_err: np.ndarray
    sq_scale: np.ndarray
    abs_err: np.ndarray
    abs_scale: np.ndarray
    gain_shift: np.ndarray
    n_relevant: np.ndarray
    n_list: np.ndarray
    n_pairs: np.ndarray


class _AuditOut(NamedTuple):
    """:class:`KernelAudit`'s arrays, as the loop writes them."""

    n_predicted: np.ndarray
    n_without_truth: np.ndarray
    n_below_score_threshold: np.ndarray
    dup_truth: np.ndarray
    dup_predictions: np.ndarray
    tie_at_cut: np.ndarray


def kernel_options(request: EngineRequest) -> KernelOptions:
    """The request's options as the jitted loop reads them.

    Example:
        >>> from receval.engines.request import Lists
        >>> from receval.options import Options
        >>> users = np.array([0])
        >>> r = EngineRequest.plan(Lists(*[users] * 7), Options(ties="average"),
        ...                        np.array([0, 5]), {"hits"})
        >>> o = kernel_options(r)
        >>> o.need_all, o.kmax, o.ties == TIES_AVERAGE
        (True, 5, True)
    """
    rt = request.relevance_threshold
    st = request.score_threshold
    return KernelOptions(
        ties=TIE_CODES[request.ties], known_only=request.known_only,
        has_score_thr=st is not None, score_thr=0.0 if st is None else float(st),
        thr_mode=(THR_NONE if rt is None else THR_USER_MEAN if rt == "user_mean"
                  else THR_GLOBAL),
        rel_thr=float(rt) if isinstance(rt, int | float) else 0.0,
        gain=GAIN_CODES[request.gain], need_all=request.need_all, kmax=request.kmax,
        need_rprec=request.need_rprec, max_list=request.max_list or 0,
    )


def kernel_output(metrics: MetricArrays, picture: Picture, audit: KernelAudit) -> KernelOutput:
    """The metric arrays of :func:`~receval.measures.registry.compute` with the picture's
    counts and the kernel's audit, as aggregation reads them.

    Example:
        >>> from receval.measures.registry import MetricArrays
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([1]))
        >>> audit = KernelAudit(*([np.zeros(2, dtype=np.int64)] * 5), np.zeros((2, 1), bool))
        >>> out = kernel_output(MetricArrays(*([np.zeros((2, 1))] * 4)), pic, audit)
        >>> out.n_relevant.tolist(), out.value.shape
        ([0, 0], (2, 1))
    """
    return KernelOutput(
        value=metrics.value, num=metrics.num, den=metrics.den, den2=metrics.den2,
        n_relevant=picture.n_relevant, n_list=picture.n_list, n_predicted=audit.n_predicted,
        n_without_truth=audit.n_without_truth,
        n_below_score_threshold=audit.n_below_score_threshold, dup_truth=audit.dup_truth,
        dup_predictions=audit.dup_predictions, tie_at_cut=audit.tie_at_cut,
        gain_shift=picture.gain_shift, top_items=picture.top_items,
    )


def run_kernel(request: EngineRequest) -> tuple[Picture, KernelAudit]:
    """The picture of the request's users at its cutoffs (``0``: the whole list) and their
    audit, ties flagged at ``request.cut_ks``; see :class:`~receval.engines.request.EngineRequest`.

    Of the per-cutoff fields only those in ``request.fields`` are written (the others are
    ``None``); the per-user ones always are (``hits_at_r`` is 0 unless asked for).
    ``top_items`` (``(U, request.top_k)`` item codes in rank order, ``-1`` past the list) is
    written when ``"top_items"`` is in the fields.

    Example:
        >>> from receval.engines.request import Lists
        >>> from receval.options import Options
        >>> lists = Lists(np.array([0]), np.array([0, 1]), np.array([7]), np.array([1.0]),
        ...               np.array([0, 2]), np.array([5, 7]), np.array([0.9, 0.8]))
        >>> pic, audit = run_kernel(EngineRequest.plan(lists, Options(), np.array([1, 2]),
        ...                                            {"hits"}))
        >>> pic.hits.tolist(), audit.n_predicted.tolist()
        ([[0.0, 1.0]], [2])
    """
    fields = request.fields
    # inputs go in as read-only views: numba compiles one kernel per writeable/read-only
    # combination (tens of seconds each), and Arrow hands out read-only buffers
    lists = Lists(*(_read_only(np.asarray(a)) for a in request.lists))
    users, t_indptr = lists.users, lists.t_indptr
    p_indptr = lists.p_indptr
    cutoffs, cut_ks = request.cutoffs, request.cut_ks
    n_users, n_cut = len(users), len(cutoffs)
    want_judged = any(name in fields for name in JUDGED_FIELDS)
    want_top = "top_items" in fields
    top = np.empty((n_users if want_top else 0, request.top_k if want_top else 0),
                   dtype=np.int64)
    # numpy allocates the outputs with np.empty (malloc): it asks for huge pages, so touching
    # a gigabyte of them costs a fraction of what 4 KiB page faults cost (np.zeros is calloc,
    # and numba's own allocations are 4 KiB pages). The kernel writes every entry of the
    # picture; the flags are only written where they apply, so they are filled first.
    per_cut = [np.empty((n_users if name in fields else 0, n_cut)) for name in PER_CUTOFF_FIELDS]
    audit = _AuditOut(
        n_predicted=np.empty(n_users, dtype=np.int64),
        n_without_truth=np.empty(n_users, dtype=np.int64),
        n_below_score_threshold=np.empty(n_users, dtype=np.int64),
        dup_truth=np.full(n_users, -1, dtype=np.int64),
        dup_predictions=np.full(n_users, -1, dtype=np.int64),
        tie_at_cut=np.full((n_users, len(cut_ks)), False),
    )
    # scratch is sized for the longest lists among the evaluated users
    max_m = max(1, int((t_indptr[users + 1] - t_indptr[users]).max(initial=0)))
    max_n = max(1, int((p_indptr[users + 1] - p_indptr[users]).max(initial=0)))
    # a list holds at most min(list, truth, max_list) judged items
    width = min(max_n, max_m, request.max_list or max_n) if want_judged else 0
    n_judged_rows = n_users if want_judged else 0
    out = _PictureOut(
        **dict(zip(PER_CUTOFF_FIELDS, per_cut, strict=True)), top_items=top,
        judged_ranks=np.zeros((n_judged_rows, width), dtype=np.int64),
        judged_rel=np.zeros((n_judged_rows, width)),
        judged_rating=np.zeros((n_judged_rows, width)),
        n_judged=np.empty(n_users, dtype=np.int64),
        max_rel_rating=np.full(n_judged_rows, -np.inf),
        hits_at_r=np.empty(n_users), sq_err=np.empty(n_users), sq_scale=np.empty(n_users),
        abs_err=np.empty(n_users), abs_scale=np.empty(n_users), gain_shift=np.empty(n_users),
        n_relevant=np.empty(n_users, dtype=np.int64), n_list=np.empty(n_users, dtype=np.int64),
        n_pairs=np.empty(n_users, dtype=np.int64),
    )
    log2_rank = log2_ranks(max(max_m, max_n), DISCOUNT_CODES[request.discount],
                           request.persistence)
    # binary gains make every user's ideal DCG a prefix of one table (the same sums, in order)
    idcg_binary = np.empty(max_m + 1)
    ideal_dcg(np.ones(max_m), log2_rank, idcg_binary)
    tables = _Tables(np.asarray(cutoffs, dtype=np.int64), np.asarray(cut_ks, dtype=np.int64),
                     idcg_binary, log2_rank, max_m, max_n)
    # blocks of users on Python threads (the block function releases the GIL)
    run_blocks(_kernel(kernel_variant(request)), block_bounds(n_users, min_size=MIN_BLOCK_USERS),
               lists, kernel_options(request), tables, out, audit)
    locate_duplicates(audit.dup_truth, users, t_indptr, lists.t_items)
    locate_duplicates(audit.dup_predictions, users, p_indptr, lists.p_items)
    named = {name: (getattr(out, name) if name in fields else None)
             for name in PER_CUTOFF_FIELDS}
    picture = Picture(
        cutoffs=tables.cutoffs, n_relevant=out.n_relevant, n_list=out.n_list,
        hits_at_r=out.hits_at_r, sq_err=out.sq_err, sq_scale=out.sq_scale,
        abs_err=out.abs_err, abs_scale=out.abs_scale, n_pairs=out.n_pairs,
        gain_shift=out.gain_shift, top_items=top if want_top else None,
        n_judged=out.n_judged, **named,
    )
    if want_judged:  # trimmed to the longest judged part of a list
        used = int((out.judged_ranks > 0).sum(axis=1).max(initial=0))
        picture.judged_ranks = out.judged_ranks[:, :used]
        picture.judged_rel = out.judged_rel[:, :used]
        picture.judged_rating = out.judged_rating[:, :used]
        picture.max_rel_rating = out.max_rel_rating
    return picture, KernelAudit(*audit)


def kernels_cached(variant: KernelVariant = PLAIN_VARIANT) -> bool:
    """Whether the kernel ``variant`` (by default a plain request's) is already compiled in
    numba's on-disk cache for this source and this CPU: ``False`` means the next evaluation
    that needs it compiles it first (seconds, once).

    Cheap (it reads one small index file, compiles nothing), so a caller can say "compiling
    receval's kernels, first run only" only when that is true.

    Example:
        >>> isinstance(kernels_cached(), bool)
        True
    """
    kernel = _kernel(variant)
    cache = getattr(kernel, "_cache", None)
    index_file = getattr(cache, "_cache_file", None)
    if cache is None or index_file is None:  # caching off (NUMBA_DISABLE_JIT, read-only tree)
        return False
    try:
        index = index_file._load_index()  # {} when the source changed since it was written
        codegen = kernel.targetctx.codegen()
        # (signature, CPU, (code, closure constants)): the last two name this variant
        _, magic, this = cache._index_key(None, codegen)
    except Exception:  # an unreadable cache is a cache miss
        return False
    return any(key[1] == magic and key[2] == this for key in index)


#: what the kernel writes for a user with a repeated item: :func:`locate_duplicates` then
#: finds the row (a rare path, so it is compiled only when a duplicate is found)
DUPLICATE_FOUND = -2


def locate_duplicates(dup: np.ndarray, users: np.ndarray, indptr: np.ndarray,
                      items: np.ndarray) -> None:
    """Replace each :data:`DUPLICATE_FOUND` in ``dup`` (one entry per evaluated user) by the
    CSR position of the second row of the user's smallest repeated item.

    Example:
        >>> dup = np.array([-1, DUPLICATE_FOUND])
        >>> locate_duplicates(dup, np.array([0, 1]), np.array([0, 2, 5]),
        ...                   np.array([4, 5, 9, 8, 9]))
        >>> dup.tolist()
        [-1, 4]
    """
    rows = np.flatnonzero(dup == DUPLICATE_FOUND)
    if len(rows):
        _locate_duplicates(rows, dup, users, indptr, items)


@numba.njit(cache=True, nogil=True)
def _locate_duplicates(rows: np.ndarray, dup: np.ndarray, users: np.ndarray,
                       indptr: np.ndarray, items: np.ndarray) -> None:
    for row in rows:
        u = users[row]
        start = indptr[u]
        dup[row] = start + _first_duplicate(items[start : indptr[u + 1]])


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


class _Scratch(NamedTuple):
    """Working memory of one block of users, sized for the longest truth and list."""

    keys: np.ndarray  # item table: the user's truth items, then the predicted ones
    stamps: np.ndarray  # a slot is in use when it holds the current user's stamp
    rows: np.ndarray  # row in the user's truth slice, or -1 (predicted only)
    seen: np.ndarray  # stamp when the item was predicted (a second time is a repeat)
    v_keys: np.ndarray  # score table (ties at cutoffs): score bits of candidate repeats
    v_stamps: np.ndarray
    v_bits: np.ndarray  # bit set of the scores seen (hashed): a filter before the table
    v_word: np.ndarray  # per entry: its word of ``v_bits`` (cleared user by user)
    rep_entry: np.ndarray  # list entries whose score may repeat an earlier one, one per value
    t_rel: np.ndarray  # per truth row: relevant?
    rel_gains: np.ndarray  # gains of the relevant truth rows (graded ideal DCG)
    idcg: np.ndarray
    rel: np.ndarray  # per prediction: relevance and gain
    gain: np.ndarray
    order: np.ndarray  # kept predictions (positions, ascending), or in rank order
    hit_entries: np.ndarray  # entries of ``order`` that are relevant
    tmp: np.ndarray
    keys64: np.ndarray
    s_scores: np.ndarray  # scores in entry order, or in rank order
    s_rel: np.ndarray  # relevance and gains in rank order
    s_gain: np.ndarray
    rating: np.ndarray  # per prediction: its truth rating, NaN when it has none
    hits: np.ndarray  # the picture (see receval.engines.fill_picture)
    ap_sum: np.ndarray
    dcg: np.ndarray
    first: np.ndarray
    rr_sum: np.ndarray
    g_start: np.ndarray
    g_size: np.ndarray
    g_rel: np.ndarray
    g_before: np.ndarray


@inner_jit
def _table_size(n: int) -> int:
    """A power of two at least twice ``n`` (load factor <= 1/2), and at least 2."""
    size = 2
    while size < 2 * n:
        size *= 2
    return size


@inner_jit
def _make_scratch(max_m: int, max_n: int) -> _Scratch:
    ci = _table_size(max_m + max_n)
    cv = _table_size(max_n)
    i64 = np.int64
    n1 = max_n + 1
    return _Scratch(
        np.empty(ci, i64), np.zeros(ci, i64), np.empty(ci, i64), np.zeros(ci, i64),
        np.empty(cv, i64), np.zeros(cv, i64), np.zeros(cv, np.uint64),
        np.empty(max_n, i64), np.empty(max_n, i64),
        np.empty(max_m, np.bool_), np.empty(max_m), np.empty(max_m + 1),
        np.empty(max_n), np.empty(max_n),
        np.empty(max_n, i64), np.empty(max_n, i64), np.empty(max_n, i64), np.empty(max_n, i64),
        np.empty(max_n), np.empty(max_n), np.empty(max_n), np.empty(max_n),
        np.empty(n1), np.empty(n1), np.empty(n1), np.empty(n1), np.empty(n1),
        np.empty(max_n, i64), np.empty(max_n, i64), np.empty(max_n, i64), np.empty(max_n, i64),
    )


@numba.njit(cache=True, nogil=True, inline="always")
def _copy(src: np.ndarray, dst: np.ndarray, n: int) -> None:
    """``dst[:n] = src[:n]`` without the shape check a slice assignment compiles (seconds of
    compilation for an error message that cannot happen here)."""
    for i in range(n):
        dst[i] = src[i]


# --- hash tables: open addressing, one per user, reset by stamping -------------------------

_FIB = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing spreads consecutive ids over slots


@numba.njit(cache=True, nogil=True, inline="always")
def _shift(size: int) -> int:
    """64 - log2(size) for a power-of-two table size: the hash keeps the top bits."""
    bits = 0
    while (1 << bits) < size:
        bits += 1
    return 64 - bits


@numba.njit(cache=True, nogil=True, inline="always")
def _slot(key: int, shift: int) -> int:
    return int(np.int64((np.uint64(key) * _FIB) >> np.uint64(shift)))


@numba.njit(cache=True, nogil=True, inline="always")
def _add_truth(keys: np.ndarray, stamps: np.ndarray, rows: np.ndarray, shift: int,
               stamp: int, key: int, row: int) -> bool:
    """Store truth item ``key`` at truth row ``row``; ``False`` if it is already there."""
    mask = len(keys) - 1
    slot = _slot(key, shift)
    while stamps[slot] == stamp:
        if keys[slot] == key:
            return False
        slot = (slot + 1) & mask
    stamps[slot] = stamp
    keys[slot] = key
    rows[slot] = row
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _add_predicted(keys: np.ndarray, stamps: np.ndarray, rows: np.ndarray, seen: np.ndarray,
                   shift: int, stamp: int, key: int) -> tuple[int, bool]:
    """Look predicted item ``key`` up in the truth and mark it predicted, in one probe.

    Returns the truth row (-1 if none) and whether the item was predicted before.
    """
    mask = len(keys) - 1
    slot = _slot(key, shift)
    while stamps[slot] == stamp:
        if keys[slot] == key:
            repeat = seen[slot] == stamp
            seen[slot] = stamp
            return rows[slot], repeat
        slot = (slot + 1) & mask
    stamps[slot] = stamp
    keys[slot] = key
    rows[slot] = -1
    seen[slot] = stamp
    return -1, False


@inner_jit
def _scaled_errors(items: np.ndarray, scores: np.ndarray, t_values: np.ndarray, t0: int,
                   keys: np.ndarray, stamps: np.ndarray, rows: np.ndarray, shift: int,
                   stamp: int) -> tuple[float, float, float, float]:
    """The user's errors again, without overflow, for a user whose plain sums overflowed
    (errors near 1e154 and up): ``(sq_scale, ssq, abs_scale, asum)`` with the sum of squared
    errors ``sq_scale^2 * ssq`` and of absolute errors ``abs_scale * asum``.

    Each error is taken halved (``s/2 - t/2`` cannot overflow) and summed as BLAS ``nrm2``
    does: relative to the largest seen so far, rescaling when a larger one comes. The scales
    are the largest half error (the factor 2 goes into the sums, which stay small), so that
    only an RMSE or MAE beyond the float range itself is ``inf``.
    """
    mask = len(keys) - 1
    sq_scale = ssq = abs_scale = asum = 0.0
    for i in range(len(items)):
        key = items[i]
        slot = _slot(key, shift)
        pos = -1
        while stamps[slot] == stamp:
            if keys[slot] == key:
                pos = rows[slot]
                break
            slot = (slot + 1) & mask
        if pos < 0:
            continue
        half = abs(0.5 * scores[i] - 0.5 * t_values[t0 + pos])
        if half == 0.0:
            continue
        if half > sq_scale:
            ssq = 1.0 + ssq * (sq_scale / half) ** 2
            sq_scale = half
        else:
            ssq += (half / sq_scale) ** 2
        if half > abs_scale:
            asum = 1.0 + asum * (abs_scale / half)
            abs_scale = half
        else:
            asum += half / abs_scale
    return sq_scale, 4.0 * ssq, abs_scale, 2.0 * asum


@inner_jit
def _first_duplicate(keys: np.ndarray) -> int:
    """Position of the second row of the smallest repeated key (the error message names its
    item), or -1.

    Runs only for a user with a repeat. The sort is stable, so ``order[i]`` is the later of
    the two rows. (It took a ``later`` flag that both callers passed as a literal: numba
    compiled it twice, for ``True`` and ``False``, to give the same row.)
    """
    order = stable_argsort(keys)
    for i in range(1, len(keys)):
        if keys[order[i]] == keys[order[i - 1]]:
            return order[i]
    return -1


# --- rank order --------------------------------------------------------------------------------


@inner_jit
def _before(a: int, b: int, scores: np.ndarray, items: np.ndarray, rel: np.ndarray,
            gain: np.ndarray, ties: int) -> bool:
    """Whether prediction ``a`` ranks before ``b``: the oracle's ranking order as a test.

    Score descending, then by ``ties``: relevance then gain ascending (``pessimistic``) or
    descending (``optimistic``), then (every policy but ``stable``) item key descending, as
    ``item`` orders, so that no policy but ``stable`` reads the input order; the position
    (``a < b``) last, for repeated items (``duplicates="keep"``). Negations are kept where
    the oracle's ``rank`` negates.
    """
    if scores[a] != scores[b]:
        return -scores[a] < -scores[b]
    if ties == TIES_PESSIMISTIC:
        if rel[a] != rel[b]:
            return rel[a] < rel[b]
        if gain[a] != gain[b]:
            return gain[a] < gain[b]
    if ties == TIES_OPTIMISTIC:
        if rel[a] != rel[b]:
            return -rel[a] < -rel[b]
        if gain[a] != gain[b]:
            return -gain[a] < -gain[b]
    if ties != TIES_STABLE and items[a] != items[b]:
        return -items[a] < -items[b]
    return a < b


@numba.njit(cache=True, nogil=True, inline="always")
def _rank_stable(e: int, n: int, s_scores: np.ndarray) -> int:
    """The rank (from 0) of entry ``e`` of a kept list of ``n`` under ``stable`` ties.

    ``s_scores[j]`` is the score of entry ``j``. Entries are in position order, so an
    earlier entry with the same score ranks first.
    """
    v = s_scores[e]
    r = 0
    for j in range(n):  # branch-free counts: the compiler vectorizes them
        r += s_scores[j] > v
    for j in range(e):
        r += s_scores[j] == v
    return r


@numba.njit(cache=True, nogil=True, inline="always")
def _rank_of(e: int, order: np.ndarray, n: int, s_scores: np.ndarray, scores: np.ndarray,
             items: np.ndarray, rel: np.ndarray, gain: np.ndarray, ties: int) -> int:
    """The rank (from 0) of entry ``e`` of the kept list ``order[:n]``, by counting, under
    any tie policy but ``stable`` (:func:`_rank_stable`) and ``average`` (which sorts).

    ``s_scores[j]`` is the score of entry ``j``; tied entries are ordered by :func:`_before`.
    """
    v = s_scores[e]
    r = 0
    x = order[e]
    for j in range(n):
        if s_scores[j] == v:
            if j != e and _before(order[j], x, scores, items, rel, gain, ties):
                r += 1
        else:
            r += s_scores[j] > v
    return r


_RUN = 16  # runs sorted by insertion before merging
_COUNT_MAX = 128  # lists up to this long are sorted by counting (n^2 compares, vectorized)
_SIGN = np.uint64(0x8000000000000000)


@inner_jit
def _packed_keys(s_scores: np.ndarray, n: int, keys: np.ndarray) -> int:
    """One distinct int64 per entry ``j``, ascending in (score descending, ``j``).

    The score's order-preserving bits give up their lowest ``log2 n`` bits to make room for
    ``j``, so scores closer than that may come out in the wrong order: :func:`_fix_order`
    repairs them. Returns the mask of the entry bits.
    """
    bits = 0
    while (1 << bits) < n:
        bits += 1
    mask = np.uint64((1 << bits) - 1)
    for j in range(n):
        b = np.float64(s_scores[j] + 0.0).view(np.uint64)  # + 0.0 makes -0.0 into 0.0
        ascending = ~b if b & _SIGN else b | _SIGN
        keys[j] = np.int64(((~ascending & ~mask) | np.uint64(j)) ^ _SIGN)
    return int(np.int64(mask))


@inner_jit
def _sort_keys(keys: np.ndarray, n: int, tmp: np.ndarray) -> None:
    """Merge sort of distinct int64 keys, ascending; the merge has no data-dependent branch."""
    for lo in range(0, n, _RUN):
        hi = min(lo + _RUN, n)
        for i in range(lo + 1, hi):
            k = keys[i]
            j = i
            while j > lo and k < keys[j - 1]:
                keys[j] = keys[j - 1]
                j -= 1
            keys[j] = k
    src = keys
    dst = tmp
    in_tmp = False
    width = _RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            o = lo
            while i < mid and j < hi:
                a = src[i]
                b = src[j]
                right = b < a
                dst[o] = b if right else a
                j += right
                i += 1 - right
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        _copy(tmp, keys, n)


@inner_jit
def _fix_order(entry_at: np.ndarray, n: int, s_scores: np.ndarray) -> None:
    """Insertion sort of entries by (score descending, entry): linear when nearly sorted."""
    for i in range(1, n):
        x = entry_at[i]
        j = i
        while j > 0:
            y = entry_at[j - 1]
            if not (s_scores[x] > s_scores[y] or (s_scores[x] == s_scores[y] and x < y)):
                break
            entry_at[j] = y
            j -= 1
        entry_at[j] = x


@inner_jit
def _sort_by_score(n: int, s_scores: np.ndarray, keys: np.ndarray, tmp: np.ndarray,
                   entry_at: np.ndarray) -> None:
    """``entry_at[r]``: the entry at rank ``r`` by score descending, ties by entry."""
    mask = _packed_keys(s_scores, n, keys)
    if n <= _COUNT_MAX:
        for i in range(n):
            ki = keys[i]
            r = 0
            for j in range(n):  # branch-free: vector compares
                r += keys[j] < ki
            entry_at[r] = i
    else:
        _sort_keys(keys, n, tmp)
        for r in range(n):
            entry_at[r] = (keys[r] ^ np.int64(_SIGN)) & mask
    _fix_order(entry_at, n, s_scores)


@inner_jit
def _sort_ranks(idx: np.ndarray, n: int, tmp: np.ndarray, scores: np.ndarray,
                items: np.ndarray, rel: np.ndarray, gain: np.ndarray, ties: int) -> None:
    """Merge sort of positions ``idx[:n]`` by :func:`_before` (any tie policy)."""
    width = 1
    src = idx
    dst = tmp
    in_tmp = False
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            o = lo
            while i < mid and j < hi:
                if _before(src[j], src[i], scores, items, rel, gain, ties):
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        _copy(tmp, idx, n)


@numba.njit(cache=True, nogil=True, inline="always")
def _score_key(score: float) -> int:
    """A score's bits as a hash key, -0.0 and 0.0 made one (they tie)."""
    return int(np.float64(score + 0.0).view(np.int64))


@numba.njit(cache=True, nogil=True, inline="always")
def _score_seen(v_keys: np.ndarray, v_stamps: np.ndarray, shift: int, stamp: int,
                key: int) -> bool:
    """Put score ``key`` (:func:`_score_key`) in the score table; whether it was there."""
    mask = len(v_keys) - 1
    slot = _slot(key, shift)
    while v_stamps[slot] == stamp:
        if v_keys[slot] == key:
            return True
        slot = (slot + 1) & mask
    v_stamps[slot] = stamp
    v_keys[slot] = key
    return False


@inner_jit
def _ties_at_cuts(s_scores: np.ndarray, n: int, rep_entry: np.ndarray, n_rep: int,
                  cut_ks: np.ndarray, tie_at_cut: np.ndarray, row: int) -> None:
    """Flag cutoff ``k`` when ranks ``k`` and ``k + 1`` hold equal scores, without sorting.

    Only a repeated score can straddle a cutoff; ``rep_entry`` holds one entry per score that
    may repeat (found while judging, each value once; a few are false alarms of the filter).
    Its tie group holds the ranks ``[above, above + equal)``, ``above`` scores being higher.
    """
    if n_rep == 0 or n <= cut_ks[0]:
        return
    for r in range(n_rep):
        v = s_scores[rep_entry[r]]
        above = 0
        equal = 0
        for i in range(n):
            above += s_scores[i] > v
            equal += s_scores[i] == v
        for c in range(len(cut_ks)):
            if above < cut_ks[c] < above + equal:
                tie_at_cut[row, c] = True


# --- one user --------------------------------------------------------------------------------


def _compile_kernel(variant: KernelVariant) -> Any:
    """The block kernel of ``variant``: the user loop with the paths the variant cannot take
    left out, so that numba neither types nor compiles them (nor the helpers they call).

    Each variant is its own entry in numba's cache (a closure's constants are part of its
    cache key), compiled the first time a request needs it: a plain call (stable ties, binary
    gains) compiles neither the tie-group sums of ``average`` nor the comparison sort of the
    order-free policies, nor the graded gains, the user-mean threshold or the ranked lists.
    """
    # constants of the closure: numba prunes the branches that test them before typing
    average = variant.ties == TIES_AVERAGE
    sort_by_score = variant.ties in (TIES_STABLE, TIES_AVERAGE)
    count_stable = variant.ties == TIES_STABLE
    ties_at_cuts = not average
    lists_wanted = variant.lists
    graded = variant.graded
    user_mean = variant.user_mean

    @numba.njit(cache=True, nogil=True)
    def _evaluate_block(block, lo, hi, lists, o, tables, out, audit):
        """Fill the picture and audit (see :func:`run_kernel`) of ``users[lo:hi]``, with scratch
        of its own. It holds no GIL, so blocks run in parallel on Python threads.

        One call per block, the loop over users inside: a call per user would pass the scratch
        (dozens of arrays) each time, and reading a field of ``s`` (or of the other named
        tuples) costs a reference count update: both cost more than a user's work, so the fields
        are read once here. It is one compiled function (not a block function calling a user
        loop): numba optimises and generates the machine code of a function with everything it
        calls, so each level of calls would compile the whole loop again (seconds, first run).
        """
        s = _make_scratch(tables.max_m, tables.max_n)
        users, t_indptr, t_items, t_values = lists.users, lists.t_indptr, lists.t_items, \
            lists.t_values
        p_indptr, p_items, p_scores = lists.p_indptr, lists.p_items, lists.p_scores
        pic_ks, cut_ks = tables.cutoffs, tables.cut_ks
        idcg_binary, log2_rank = tables.idcg_binary, tables.log2_rank
        p_hits, p_ap, p_dcg, p_idcg = out.hits, out.ap_sum, out.dcg, out.idcg
        p_first, p_rr, p_aoh, p_top = out.first, out.rr_sum, out.ap_over_hits, out.top_items
        j_ranks, j_rel, j_rating = out.judged_ranks, out.judged_rel, out.judged_rating
        n_judged, top_rating, hits_at_r = out.n_judged, out.max_rel_rating, out.hits_at_r
        sq_err_out, sq_scale_out, abs_err_out = out.sq_err, out.sq_scale, out.abs_err
        abs_scale_out, gain_shifts, n_relevant = out.abs_scale, out.gain_shift, out.n_relevant
        n_list_out, n_pairs_out = out.n_list, out.n_pairs
        n_predicted, n_without_truth = audit.n_predicted, audit.n_without_truth
        n_below, dup_truth = audit.n_below_score_threshold, audit.dup_truth
        dup_pred, tie_at_cut = audit.dup_predictions, audit.tie_at_cut
        # counters start from a typed zero: a literal 0 makes numba compile every helper they
        # reach twice (once for the literal while it infers types, once for int64)
        zero = np.int64(0)
        ties = o.ties
        average_ties = average
        known = o.known_only
        has_score_thr = o.has_score_thr
        thr_mode = o.thr_mode
        gain_scheme = o.gain
        need_all = o.need_all
        kmax = o.kmax
        need_rprec = o.need_rprec
        w_hits, w_ap, w_dcg = p_hits.shape[0] > 0, p_ap.shape[0] > 0, p_dcg.shape[0] > 0
        w_idcg, w_first, w_rr = p_idcg.shape[0] > 0, p_first.shape[0] > 0, p_rr.shape[0] > 0
        w_aoh = p_aoh.shape[0] > 0 and average_ties
        # the top K items need the list in rank order: such users take the sorting path
        w_top = p_top.shape[0] > 0
        k_top = p_top.shape[1]
        w_judged = j_ranks.shape[0] > 0
        max_list = o.max_list
        score_thr = o.score_thr
        rel_thr = o.rel_thr
        track_ties = not average_ties and len(cut_ks) > 0
        keys, stamps, rows, seen = s.keys, s.stamps, s.rows, s.seen
        shift = _shift(len(keys))
        v_keys, v_stamps, v_bits, v_word = s.v_keys, s.v_stamps, s.v_bits, s.v_word
        v_shift = _shift(len(v_keys))
        bits_shift = _shift(64 * len(v_bits))
        rep_entry = s.rep_entry
        t_rel, rel_gains, idcg_user, rel, gain = s.t_rel, s.rel_gains, s.idcg, s.rel, s.gain
        rating = s.rating
        order, hit_entries, tmp, keys64 = s.order, s.hit_entries, s.tmp, s.keys64
        s_scores, s_rel, s_gain = s.s_scores, s.s_rel, s.s_gain
        hits, ap_sum, dcg, first, rr_sum = s.hits, s.ap_sum, s.dcg, s.first, s.rr_sum
        g_start, g_size, g_rel, g_before = s.g_start, s.g_size, s.g_rel, s.g_before
        for row in range(lo, hi):
            u = users[row]
            stamp = row + 1
            # --- the user's truth: relevance, gains, and the item table ---------------------------
            t0 = t_indptr[u]
            m = t_indptr[u + 1] - t0
            thr = -np.inf
            if thr_mode == THR_GLOBAL:
                thr = rel_thr
            elif user_mean and m > 0:
                # the exact sum (math.fsum's), as the host judge's: no order, no item names
                thr = exact_sum(t_values[t0 : t0 + m], rel_gains) / m
            n_rel = zero
            duplicate = False
            g_shift = 0.0
            if graded:  # scale graded gains below the float range
                top = -np.inf
                for i in range(m):
                    if t_values[t0 + i] >= thr:
                        top = max(top, t_values[t0 + i])
                g_shift = gain_shift(top, gain_scheme)
            gain_shifts[row] = g_shift
            for i in range(m):
                if not _add_truth(keys, stamps, rows, shift, stamp, t_items[t0 + i], i):
                    duplicate = True
                is_rel = t_values[t0 + i] >= thr
                t_rel[i] = is_rel
                if is_rel:
                    if lists_wanted and w_judged:
                        top_rating[row] = max(top_rating[row], t_values[t0 + i])
                    rel_gains[n_rel] = gain_of(t_values[t0 + i], True, gain_scheme, g_shift)
                    n_rel += 1
            if duplicate:
                dup_truth[row] = DUPLICATE_FOUND  # located by locate_duplicates
            idcg = idcg_binary
            if graded:
                idcg = idcg_user
                ideal_dcg(rel_gains[:n_rel], log2_rank, idcg)
            n_relevant[row] = n_rel
            n_judged[row] = m

            # --- the user's predictions: judge, filter --------------------------------------------
            p0 = p_indptr[u]
            n = p_indptr[u + 1] - p0
            n_predicted[row] = n
            items = p_items[p0 : p0 + n]
            scores = p_scores[p0 : p0 + n]
            n_keep = zero
            n_hits = zero
            n_rep = zero
            sq_err = 0.0
            abs_err = 0.0
            n_pairs = zero
            n_without = zero
            n_low = zero
            duplicate = False
            for i in range(n):
                pos, repeat = _add_predicted(keys, stamps, rows, seen, shift, stamp, items[i])
                duplicate |= repeat
                rel[i] = 0.0
                gain[i] = 0.0
                if lists_wanted and w_judged:  # NaN: not judged (no truth row)
                    rating[i] = t_values[t0 + pos] if pos >= 0 else np.nan
                if pos >= 0:
                    err = scores[i] - t_values[t0 + pos]
                    sq_err += err * err
                    abs_err += abs(err)
                    n_pairs += 1
                    if t_rel[pos]:
                        rel[i] = 1.0
                        gain[i] = gain_of(t_values[t0 + pos], True, gain_scheme, g_shift)
                else:
                    n_without += 1
                    if known:
                        continue
                if has_score_thr and scores[i] < score_thr:
                    n_low += 1
                    continue
                if rel[i] != 0.0:
                    hit_entries[n_hits] = n_keep
                    n_hits += 1
                if ties_at_cuts and track_ties:
                    # a bit set filters the scores first: only a score whose bit is taken (a
                    # repeat, or a collision) goes to the table, which keeps each value once
                    key = _score_key(scores[i])
                    h = _slot(key, bits_shift)
                    word = h >> 6
                    bit = np.uint64(1) << np.uint64(h & 63)
                    v_word[n_keep] = word
                    if v_bits[word] & bit:
                        if not _score_seen(v_keys, v_stamps, v_shift, stamp, key):
                            rep_entry[n_rep] = n_keep
                            n_rep += 1
                    else:
                        v_bits[word] |= bit
                order[n_keep] = i
                s_scores[n_keep] = scores[i]
                n_keep += 1
            if ties_at_cuts and track_ties:
                for r in range(n_keep):
                    v_bits[v_word[r]] = 0
            n_without_truth[row] = n_without
            n_below[row] = n_low
            if duplicate:
                dup_pred[row] = DUPLICATE_FOUND
            sq_scale = abs_scale = 1.0
            if not (sq_err < np.inf and abs_err < np.inf):  # an error overflowed: scale them
                sq_scale, sq_err, abs_scale, abs_err = _scaled_errors(
                    items, scores, t_values, t0, keys, stamps, rows, shift, stamp)

            # --- rank: the picture needs the ranks of the relevant entries, and under ``average``
            # ties the whole order (tie groups); a full sort only when that is cheaper -------------
            # ``max_list`` (trec_eval -M) keeps the top of the ranked list: ranks are taken in the
            # whole list (``n_keep``), everything else reads its first ``n_list``
            n_list = n_keep if max_list == 0 else min(n_keep, max_list)
            n_list_out[row] = n_list
            need = n_list if need_all else max(kmax, n_rel if need_rprec else 0)
            n_ranks = min(n_list, need)
            if average or n_hits > 64 or (lists_wanted and (w_top or w_judged)):
                if sort_by_score:
                    _sort_by_score(n_keep, s_scores, keys64, tmp, hit_entries)
                    for r in range(n_keep):  # entries -> positions, scores in rank order
                        tmp[r] = order[hit_entries[r]]
                    _copy(tmp, order, n_keep)
                else:
                    _sort_ranks(order, n_keep, tmp, scores, items, rel, gain, ties)
                for r in range(n_list):
                    o = order[r]
                    s_scores[r] = scores[o]
                    s_rel[r] = rel[o]
                    s_gain[r] = gain[o]
                for c in range(len(cut_ks)):
                    kc = cut_ks[c]
                    if kc < n_list and s_scores[kc - 1] == s_scores[kc]:
                        tie_at_cut[row, c] = True
                top = order
                if average and lists_wanted and (w_top or w_judged):
                    # the sums above read each tie group in entry order (bit for bit as before);
                    # the list itself holds its tied items by item key, as under every
                    # order-free policy, so that it never reads the input order
                    _copy(order, keys64, n_keep)
                    _sort_ranks(keys64, n_keep, tmp, scores, items, rel, gain, ties)
                    top = keys64
                if lists_wanted and w_top:
                    for r in range(k_top):
                        p_top[row, r] = items[top[r]] if r < n_list else -1
                if lists_wanted and w_judged:
                    nj = 0
                    for r in range(n_list):
                        o = top[r]
                        if not np.isnan(rating[o]):
                            j_ranks[row, nj] = r + 1
                            j_rel[row, nj] = rel[o]
                            j_rating[row, nj] = rating[o]
                            nj += 1
            else:
                s_rel[:n_ranks] = 0.0
                s_gain[:n_ranks] = 0.0
                for h in range(n_hits):
                    e = hit_entries[h]
                    if count_stable:
                        r = _rank_stable(e, n_keep, s_scores)
                    else:
                        r = _rank_of(e, order, n_keep, s_scores, scores, items, rel, gain,
                                     ties)
                    if r < n_ranks:
                        s_rel[r] = rel[order[e]]
                        s_gain[r] = gain[order[e]]
                if ties_at_cuts and track_ties:
                    _ties_at_cuts(s_scores, n_keep, rep_entry, n_rep, cut_ks, tie_at_cut, row)
                    if n_list < n_keep:  # the list ends at max_list: no tie past it
                        for c in range(len(cut_ks)):
                            if cut_ks[c] >= n_list:
                                tie_at_cut[row, c] = False
            if average:
                build_picture_average(s_scores[:n_list], s_rel[:n_list], s_gain[:n_list],
                                      n_ranks, log2_rank, hits, ap_sum, dcg, first, rr_sum,
                                      g_start, g_size, g_rel, g_before)
            else:
                build_picture(s_scores[:n_list], s_rel[:n_list], s_gain[:n_list], n_ranks,
                              log2_rank, hits, ap_sum, dcg, first, rr_sum)
            # --- the picture: the prefix sums at each cutoff, and the per-user scalars ----------
            for c in range(len(pic_ks)):
                k = pic_ks[c]
                j = n_ranks if k == NO_CUTOFF else min(k, n_ranks)
                if w_hits:
                    p_hits[row, c] = hits[j]
                if w_ap:
                    p_ap[row, c] = ap_sum[j]
                if w_dcg:
                    p_dcg[row, c] = dcg[j]
                if w_idcg:
                    p_idcg[row, c] = idcg[n_rel if k == NO_CUTOFF else min(k, n_rel)]
                if w_first:
                    p_first[row, c] = first[j]
                if w_rr:
                    p_rr[row, c] = rr_sum[j]
                if average and w_aoh:
                    inside = np.nan  # the plain ratio is exact unless the cut splits a tie group
                    if j > 0 and g_start[j - 1] + g_size[j - 1] > j:
                        inside = expected_ap_over_hits(ap_sum, j, g_start[j - 1], g_size[j - 1],
                                                       g_rel[j - 1], g_before[j - 1])
                    p_aoh[row, c] = inside
            hits_at_r[row] = hits[min(n_rel, n_ranks)] if need_rprec else 0.0
            sq_err_out[row] = sq_err
            sq_scale_out[row] = sq_scale
            abs_err_out[row] = abs_err
            abs_scale_out[row] = abs_scale
            n_pairs_out[row] = n_pairs


    return _evaluate_block


#: the kernels of this process by variant (each compiled or loaded on its first call)
_KERNELS: dict[KernelVariant, Any] = {}


def _kernel(variant: KernelVariant) -> Any:
    """The block kernel of ``variant``, made once per process (its dispatcher, not yet
    compiled: numba compiles or loads it from its cache on the first call)."""
    if variant not in _KERNELS:
        _KERNELS[variant] = _compile_kernel(variant)
    return _KERNELS[variant]
