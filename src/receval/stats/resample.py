"""Fast, exact-in-distribution resampling of a mean: the paired bootstrap and sign flips.

Per-user values and their paired differences take few distinct values (P@10 differences are
multiples of 0.1, HR's are -1, 0 or 1), so both resamplings compress without changing their
distribution:

- **bootstrap** (n users drawn with replacement): how many times each distinct value is drawn
  is multinomial, ``Multinomial(n, counts / n)``, drawn as conditional binomials (exact:
  inversion for small means, Hormann's BTRD above): one binomial per distinct value instead of
  n draws. Values shared by fewer than :data:`HEAVY_MIN` users (continuous metrics have many)
  form one last category; the draws that land in it are drawn uniformly from its users one
  by one (cheaper than a binomial per rare value).
- **sign flips** (each d_u's sign flipped with probability 1/2): the ``c`` users sharing one
  ``|d|`` add ``|d| (2 K - c)`` with ``K ~ Binomial(c, 1/2)``, counted exactly as the set bits
  of ``c`` random bits (64 users per random word); users with d = 0 add nothing.

Reproducible bit for bit on any number of threads: resample b draws from a counter-based
generator (SplitMix64) seeded by (key, b) alone, the key taken from the caller's numpy
``Generator``; each resample's sum is added in a
fixed order, whichever thread computes it. Numba kernels, GIL released, on numba's thread
count (``numba.set_num_threads``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

#: a distinct value shared by at least this many users is drawn as one binomial per resample
#: (cheaper than that many single draws); rarer values are drawn user by user
HEAVY_MIN = 40


def distinct(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of ``x`` and how many times each occurs (no NaN expected).

    Example:
        >>> from receval.stats.resample import distinct
        >>> v, c = distinct(np.array([0.1, 0.0, 0.1, -0.0]))
        >>> v.tolist(), c.tolist()
        ([0.0, 0.1], [2, 2])
    """
    x = np.asarray(x, dtype=np.float64) + 0.0  # -0.0 -> 0.0: one category
    values, counts = np.unique(x, return_counts=True)
    return values, counts.astype(np.int64)


def _split(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which distinct values are drawn as binomials (heavy) and which user by user (tail)."""
    heavy = counts >= HEAVY_MIN
    return heavy, ~heavy


@numba.njit(cache=True, nogil=True)
def _splitmix(state: np.uint64) -> tuple[np.uint64, np.uint64]:
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def _uniform(state: np.uint64) -> tuple[np.uint64, float]:
    state, r = _splitmix(state)
    return state, float(r >> np.uint64(11)) * (1.0 / 9007199254740992.0)  # [0, 1)


_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287])


@numba.njit(cache=True, nogil=True)
def _stirling_tail(k: float) -> float:
    """log(k!) minus its Stirling approximation (a table below 10, the series above)."""
    if k < 10:
        return _TAIL[int(k)]
    kp1sq = (k + 1.0) * (k + 1.0)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1.0)


@numba.njit(cache=True, nogil=True)
def _binomial(state: np.uint64, n: int, p: float) -> tuple[np.uint64, int]:
    """An exact Binomial(n, p) draw from the counter-based stream: inversion by geometric
    waiting times when n p < 10, else Hormann's BTRD (transformed rejection; as TensorFlow and
    JAX implement it), with p > 1/2 drawn as n - Binomial(n, 1 - p)."""
    if n <= 0 or p <= 0.0:
        return state, 0
    if p >= 1.0:
        return state, n
    flip = p > 0.5
    q = 1.0 - p if flip else p
    if n * q < 10.0:
        log_q = np.log1p(-q)
        total, k = 0.0, 0
        while True:
            state, u = _uniform(state)
            total += np.ceil(np.log(1.0 - u) / log_q)  # 1 - u in (0, 1]: log finite
            if total > n:
                break
            k += 1
        return state, n - k if flip else k
    sd = np.sqrt(n * q * (1.0 - q))
    b = 1.15 + 2.53 * sd
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    v_r = 0.92 - 4.2 / b
    r = q / (1.0 - q)
    alpha = (2.83 + 5.1 / b) * sd
    m = np.floor((n + 1) * q)
    while True:
        state, u = _uniform(state)
        u -= 0.5
        state, v = _uniform(state)
        us = 0.5 - abs(u)
        k = np.floor((2.0 * a / us + b) * u + c)
        if us >= 0.07 and v <= v_r:
            break
        if k < 0 or k > n or v == 0.0:
            continue
        v = np.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * np.log((m + 1) / (r * (n - m + 1)))
                 + (n + 1) * np.log((n - m + 1) / (n - k + 1))
                 + (k + 0.5) * np.log(r * (n - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(n - m)
                 - _stirling_tail(k) - _stirling_tail(n - k))
        if v <= bound:
            break
    return state, n - int(k) if flip else int(k)


@numba.njit(cache=True, nogil=True)
def _bootstrap_block(lo: int, hi: int, n: int, heavy_counts: np.ndarray,
                     heavy_values: np.ndarray, tail_values: np.ndarray, key: np.uint64,
                     out: np.ndarray) -> None:
    """Sums of resamples lo..hi-1. Resample b, from the counter-based stream of (key, b):
    the multinomial counts of the heavy values as conditional binomials, then the draws left
    over go to the tail, each a uniform index."""
    t = tail_values.size
    total = n
    for b in range(lo, hi):
        state = key ^ (np.uint64(b) * np.uint64(0xD1B54A32D192ED03))
        s = 0.0
        left = n  # draws not yet given a value
        rest = total  # users of the values not yet given draws
        for j in range(heavy_values.size):
            c = heavy_counts[j]
            if c >= rest:
                k = left
            else:
                state, k = _binomial(state, left, c / rest)
            s += k * heavy_values[j]
            left -= k
            rest -= c
        for _ in range(left):  # the tail's users, drawn one by one
            state, u = _uniform(state)
            i = int(u * t)
            s += tail_values[min(i, t - 1)]
        out[b] = s


@numba.njit(cache=True, nogil=True)
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, nogil=True)
def _flip_block(lo: int, hi: int, values: np.ndarray, counts: np.ndarray, key: np.uint64,
                out: np.ndarray) -> None:
    """Signed sums of resamples lo..hi-1: the c users sharing the value v add v (2 K - c),
    K ~ Binomial(c, 1/2) counted exactly as the set bits of c random bits from the
    counter-based stream of resample b."""
    for b in range(lo, hi):
        state = key ^ (np.uint64(b) * np.uint64(0xD1B54A32D192ED03))
        s = 0.0
        for j in range(values.size):
            c = counts[j]
            k = 0
            while c >= 64:
                state, r = _splitmix(state)
                k += _popcount(r)
                c -= 64
            if c > 0:
                state, r = _splitmix(state)
                k += _popcount(r & ((np.uint64(1) << np.uint64(c)) - np.uint64(1)))
            s += (2 * k - counts[j]) * values[j]
        out[b] = s


def _threads() -> int:
    return max(1, int(numba.get_num_threads()))


def _run(fn: Callable[..., None], lo: int, hi: int, work: int, *args: object) -> None:
    """``fn(a, b, *args)`` over [lo, hi) in blocks on numba's thread count (one block when
    the work is small): each resample's result is the same whichever block computes it."""
    threads = _threads() if work > 1 << 18 else 1
    if threads == 1:
        fn(lo, hi, *args)
        return
    bounds = np.linspace(lo, hi, 4 * threads + 1).astype(int)  # blocks handed out as free
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: fn(bounds[i], bounds[i + 1], *args), range(4 * threads)))


def _key(rng: np.random.Generator) -> np.uint64:
    return np.uint64(rng.integers(0, 2**63, dtype=np.int64))


def bootstrap_sums(x: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The sums of ``n_resamples`` bootstrap resamples of ``x`` (n values drawn with
    replacement), exact in distribution, from compressed counts (see the module).

    Example:
        >>> from receval.stats.resample import bootstrap_sums
        >>> s = bootstrap_sums(np.array([0.0, 1.0] * 50), 2000, np.random.default_rng(0))
        >>> bool(40 < s.mean() < 60), bool(np.all(s == np.round(s)))
        (True, True)
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    out = np.empty(n_resamples)
    if n == 0:
        out[:] = np.nan
        return out
    values, counts = distinct(x)
    heavy, tail = _split(values, counts)
    tail_values = np.repeat(values[tail], counts[tail])
    _run(_bootstrap_block, 0, n_resamples,
         n_resamples * (heavy.sum() * 20 + tail_values.size), n,
         np.ascontiguousarray(counts[heavy]), np.ascontiguousarray(values[heavy]),
         tail_values, _key(rng), out)
    return out


def sign_flip_sums(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The sums of ``n_resamples`` sign-flipped copies of ``d`` (each sign flipped with
    probability 1/2), exact in distribution, from compressed counts (see the module).

    Example:
        >>> from receval.stats.resample import sign_flip_sums
        >>> s = sign_flip_sums(np.array([0.5] * 40 + [0.0] * 10), 1000,
        ...                    np.random.default_rng(0))
        >>> bool(np.all(np.abs(s) <= 20)), bool(np.all((s * 2) % 2 == 0))
        (True, True)
    """
    a = np.abs(np.asarray(d, dtype=np.float64))
    a = a[a != 0]  # a zero difference adds nothing, whatever its sign
    out = np.zeros(n_resamples)
    if a.size == 0:
        return out
    values, counts = distinct(a)
    _run(_flip_block, 0, n_resamples, n_resamples * (a.size // 64 + values.size), values,
         counts, _key(rng), out)
    return out
