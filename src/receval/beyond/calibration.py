"""Calibration (Steck, RecSys 2018): how far the group (genre) distribution of a user's list is
from that of their history, as C_KL = KL(p || q~) and a Jensen-Shannon variant.

``p(g|u) = sum_{h in H} w_h a(h, g) / sum_h w_h a(h)``: the history's groups (``a`` the
items' alignment, :mod:`receval.beyond.groups`; history = the user's training items),
``q(g|u)`` the same over the list with rank weights ``w_r``; ``q~ = (1 - alpha) q + alpha p``
(Steck smooths the list's side only; ``smooth="both"`` mixes both sides, as RADio does). The
switches, RADio's and the widely copied snippet's settings are in docs/fairness.md.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from receval.exceptions import ReceValError
from receval.parallel import block_bounds, run_blocks

_SMOOTH = {"list": 0, "both": 1, "none": 2}
_EULER = 0.57721566490153286060651209008240243104215933593992


def radio_harmonic(n: int) -> float:
    """RADio's approximation of the n-th harmonic number (``dart/external/discount.py``):
    ``gamma + ln n + 1/(2n) - 1/(12 n^2) + 1/(120 n^4)``.

    Example:
        >>> round(radio_harmonic(1), 6), round(radio_harmonic(10), 9)
        (1.002216, 2.928968258)
    """
    return _EULER + math.log(n) + 0.5 / n - 1.0 / (12 * n ** 2) + 1.0 / (120 * n ** 4)


def list_weights(kind: str, k: int) -> np.ndarray:
    """``(k + 1, k)``: row ``n`` holds the weights of ranks ``1 .. n`` for a list of ``n``
    items: ``"none"`` 1, ``"reciprocal"`` 1/r, ``"radio"`` 1/r / H~_n with RADio's
    approximate harmonic number (:func:`radio_harmonic`; the weights then do not sum to 1,
    which changes the smoothing as RADio computes it).

    Example:
        >>> list_weights("reciprocal", 2).tolist()
        [[0.0, 0.0], [1.0, 0.0], [1.0, 0.5]]
    """
    out = np.zeros((k + 1, k))
    for n in range(1, k + 1):
        r = np.arange(1, n + 1, dtype=np.float64)
        if kind == "none":
            out[n, :n] = 1.0
        elif kind == "reciprocal":
            out[n, :n] = 1.0 / r
        elif kind == "radio":
            h = radio_harmonic(n)
            out[n, :n] = [1.0 / (i + 1) / h for i in range(n)]
        else:
            raise ReceValError(f"calibration_discount={kind!r} is not 'none', 'reciprocal' or "
                               f"'radio'")
    return out


@numba.njit(cache=True, nogil=True)
def _distances(p: np.ndarray, q: np.ndarray, alpha: float, smooth: int, log_base: float,
               normalise: bool, out_kl: np.ndarray, out_js: np.ndarray, r: int) -> None:
    g = p.shape[0]
    ps = np.empty(g)
    qs = np.empty(g)
    for c in range(g):
        if smooth == 0:
            ps[c] = p[c]
            qs[c] = (1.0 - alpha) * q[c] + alpha * p[c]
        elif smooth == 1:
            ps[c] = (1.0 - alpha) * p[c] + alpha * q[c]
            qs[c] = (1.0 - alpha) * q[c] + alpha * p[c]
        else:
            ps[c] = p[c]
            qs[c] = q[c]
    if normalise:
        sp = ps.sum()
        sq = qs.sum()
        for c in range(g):
            ps[c] = ps[c] / sp
            qs[c] = qs[c] / sq
    kl = 0.0
    js = 0.0
    for c in range(g):
        a = ps[c]
        b = qs[c]
        m = 0.5 * (a + b)
        if a > 0.0:
            kl += a * math.log(a / b) if b > 0.0 else np.inf
            js += a * math.log(a / m)
        if b > 0.0:
            js += b * math.log(b / m)
    # both divergences are >= 0; a sum of terms that cancel can round to -1e-17 (p == q)
    out_kl[r] = max(kl, 0.0) / log_base
    out_js[r] = 0.5 * max(js, 0.0) / log_base


@numba.njit(cache=True, nogil=True)
def _calibration_rows(block: int, lo: int, hi: int, top: np.ndarray, h_ptr: np.ndarray,
                      h_items: np.ndarray,
                      h_weights: np.ndarray, align: np.ndarray, weights: np.ndarray,
                      alpha: float, smooth: int, log_base: float, raw: bool,
                      out_kl: np.ndarray, out_js: np.ndarray) -> None:
    g = align.shape[1]
    p = np.zeros(g)
    q = np.zeros(g)
    for r in range(lo, hi):
        p[:] = 0.0
        q[:] = 0.0
        for t in range(h_ptr[r], h_ptr[r + 1]):
            code = h_items[t]
            for c in range(g):
                p[c] += h_weights[t] * align[code, c]
        n = 0
        for j in range(top.shape[1]):
            if top[r, j] >= 0:
                n += 1
        j2 = 0
        for j in range(top.shape[1]):
            code = top[r, j]
            if code < 0:
                continue
            for c in range(g):
                q[c] += weights[n, j2] * align[code, c]
            j2 += 1
        sp = p.sum()
        sq = q.sum()
        if not (sp > 0.0 and sq > 0.0):
            out_kl[r] = np.nan
            out_js[r] = np.nan
            continue
        if not raw:
            for c in range(g):
                p[c] /= sp
                q[c] /= sq
        _distances(p, q, alpha, smooth, log_base, True, out_kl, out_js, r)


def calibration(top: np.ndarray, history: tuple[np.ndarray, np.ndarray], align: np.ndarray,
                *, alpha: float = 0.01, smooth: str = "list", discount: str = "none",
                base: float = math.e, history_weights: np.ndarray | None = None,
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``(C_KL, C_JS)``: ``KL(p~ || q~)`` and the Jensen-Shannon divergence of the
    smoothed distributions, logarithms to ``base``. ``history`` is a per-row CSR
    ``(indptr, items)``; ``history_weights`` one weight per history entry (default 1: each
    training item once). Both distributions are normalised, smoothed, then normalised again
    (a no-op for exact distributions); under ``discount="radio"`` they are smoothed as
    RADio computes them, before any normalisation (its weights 1/r / H~_n do not sum to 1;
    give the history's weights the same way). NaN: no history or no listed item with a
    group.

    Example:
        >>> align = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> kl, js = calibration(np.array([[0, 0]]), (np.array([0, 2]), np.array([0, 1])),
        ...                      align, alpha=0.01)
        >>> round(float(kl[0]), 12), round(float(js[0]), 12)
        (1.958517773626, 0.202751922242)
    """
    if smooth not in _SMOOTH:
        raise ReceValError(f"calibration_smooth={smooth!r} is not 'list', 'both' or 'none'")
    if not 0.0 <= alpha <= 1.0:
        raise ReceValError(f"calibration_alpha={alpha!r} must be in [0, 1]")
    if not base > 1.0:
        raise ReceValError(f"calibration_base={base!r} must be > 1")
    ptr = np.ascontiguousarray(history[0], dtype=np.int64)
    items = np.ascontiguousarray(history[1], dtype=np.int64)
    hw = (np.ones(len(items)) if history_weights is None
          else np.ascontiguousarray(history_weights, dtype=np.float64))
    out_kl = np.empty(top.shape[0])
    out_js = np.empty(top.shape[0])
    run_blocks(_calibration_rows, block_bounds(top.shape[0], 8_192),
               np.ascontiguousarray(top, dtype=np.int64), ptr, items, hw,
               np.ascontiguousarray(align), list_weights(discount, top.shape[1]),
               float(alpha), _SMOOTH[smooth], math.log(base), discount == "radio",
               out_kl, out_js)
    return out_kl, out_js


@numba.njit(cache=True)
def _raw_shares(top: np.ndarray, h_ptr: np.ndarray, h_items: np.ndarray, h_counts: np.ndarray,
                align: np.ndarray, p: np.ndarray, q: np.ndarray, has_p: np.ndarray,
                has_q: np.ndarray) -> None:
    # the snippet's compute_genre_distr: per group, the items' shares summed in order, then
    # divided by the number of items (items without a group still count)
    g = align.shape[1]
    for r in range(top.shape[0]):
        nh = 0
        for t in range(h_ptr[r], h_ptr[r + 1]):
            for _ in range(h_counts[t]):  # each interaction, as the snippet's item list
                nh += 1
                for c in range(g):
                    if align[h_items[t], c] > 0.0:
                        p[r, c] += align[h_items[t], c]
                        has_p[r, c] = True
        n = 0
        for j in range(top.shape[1]):
            code = top[r, j]
            if code < 0:
                continue
            n += 1
            for c in range(g):
                if align[code, c] > 0.0:
                    q[r, c] += align[code, c]
                    has_q[r, c] = True
        for c in range(g):
            p[r, c] = p[r, c] / nh if nh > 0 else 0.0
            q[r, c] = q[r, c] / n if n > 0 else 0.0


def _round3(values: np.ndarray) -> np.ndarray:
    # Python's round(x, 3) (correctly rounded, half to even on the exact binary value), on
    # the distinct values only
    uniq, inverse = np.unique(values, return_inverse=True)
    return np.array([round(float(v), 3) for v in uniq])[inverse].reshape(values.shape)


@numba.njit(cache=True)
def _snippet_kl(p: np.ndarray, q: np.ndarray, has_p: np.ndarray, alpha: float,
                out: np.ndarray) -> None:
    for r in range(p.shape[0]):
        kl = 0.0
        any_p = False
        for c in range(p.shape[1]):
            if not has_p[r, c]:
                continue
            any_p = True
            s = p[r, c]
            reco = (1.0 - alpha) * q[r, c] + alpha * s
            if s == 0.0:  # 0 * log2(0 / x) is nan in numpy; 0 / 0 raises in Python
                kl = np.nan
                break
            kl += s * np.log2(s / reco)
        out[r] = kl if any_p else np.nan


def calibration_snippet(top: np.ndarray, history: tuple[np.ndarray, np.ndarray],
                        align: np.ndarray, *, alpha: float = 0.01,
                        history_counts: np.ndarray | None = None) -> np.ndarray:
    """The widely copied ``compute_kl_divergence`` (ethen8181's calibrated-recommendation
    notebook, copied into POPROX and others): both distributions divided by the number of
    items and rounded to 3 decimals (``history_counts``: how many times each history entry
    is in the snippet's item list, default once), ``sum over the history's groups of
    p log2(p / ((1 - alpha) q + alpha p))``; a history group whose share rounds to 0 gives NaN
    (the snippet's numpy ``0 * log2(0)``; where the list's share is 0 too the snippet raises
    ZeroDivisionError).

    Example:
        >>> align = np.array([[1.0, 0.0], [0.5, 0.5]])
        >>> calibration_snippet(np.array([[0]]), (np.array([0, 2]), np.array([0, 1])),
        ...                     align).round(12).tolist()
        [1.352394363149]
    """
    n = top.shape[0]
    g = align.shape[1]
    p = np.zeros((n, g))
    q = np.zeros((n, g))
    has_p = np.zeros((n, g), dtype=np.bool_)
    has_q = np.zeros((n, g), dtype=np.bool_)
    h_items = np.ascontiguousarray(history[1], dtype=np.int64)
    counts = (np.ones(len(h_items), dtype=np.int64) if history_counts is None
              else np.ascontiguousarray(history_counts, dtype=np.int64))
    _raw_shares(np.ascontiguousarray(top, dtype=np.int64),
                np.ascontiguousarray(history[0], dtype=np.int64), h_items, counts,
                np.ascontiguousarray(align), p, q, has_p, has_q)
    out = np.empty(n)
    _snippet_kl(_round3(p), _round3(q), has_p, float(alpha), out)
    return out
