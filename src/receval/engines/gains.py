"""nDCG and DCG gains, for engines building a picture.

Graded gains (``linear``: the rating, ``exponential``: 2^rating - 1) are computed scaled by
``2^-shift`` per user (:func:`gain_shift`): the ratio DCG/IDCG is the same, and no gain, DCG
or IDCG overflows for any finite rating (2^5000 - 1 does not fit in a float; 2^40 does). The
shift is 0 unless the user's largest gain would come near the float range, so ordinary
ratings give the unscaled numbers, bit for bit.
"""

from __future__ import annotations

import math

import numba

GAIN_BINARY = 0
GAIN_LINEAR = 1
GAIN_EXPONENTIAL = 2
GAIN_CODES = {"binary": GAIN_BINARY, "linear": GAIN_LINEAR, "exponential": GAIN_EXPONENTIAL}

#: the largest power of two a scaled gain may reach: the DCG of a list of 2^62 such gains
#: (every discount is <= 1) still fits below 2^1024, the float range
GAIN_EXPONENT_MAX = 960


@numba.njit(cache=True, nogil=True)
def gain_shift(max_rating: float, scheme: int) -> float:
    """The power of two ``shift`` that scales a user's gains by ``2^-shift`` so the largest
    (from ``max_rating``, the user's highest relevant rating) stays below 2^960; 0 when it
    already does (binary gains, ordinary ratings).

    Example:
        >>> gain_shift(5.0, GAIN_EXPONENTIAL), gain_shift(5000.0, GAIN_EXPONENTIAL)
        (0.0, 4040.0)
        >>> gain_shift(1e300, GAIN_LINEAR)
        37.0
    """
    if scheme == GAIN_EXPONENTIAL and max_rating > GAIN_EXPONENT_MAX:
        return math.ceil(max_rating) - GAIN_EXPONENT_MAX
    if scheme == GAIN_LINEAR and max_rating > 2.0**GAIN_EXPONENT_MAX:
        return math.frexp(max_rating)[1] - GAIN_EXPONENT_MAX
    return 0.0


@numba.njit(cache=True, nogil=True)
def gain_of(rating: float, relevant: bool, scheme: int, shift: float) -> float:
    """The nDCG gain of an item, times ``2^-shift``: 0 unless relevant; then 1, the rating, or
    2^rating - 1 (computed as 2^(rating - shift) - 2^-shift, which cannot overflow).

    Example:
        >>> gain_of(3.0, True, GAIN_EXPONENTIAL, 0.0), gain_of(3.0, False, GAIN_LINEAR, 0.0)
        (7.0, 0.0)
        >>> gain_of(2000.0, True, GAIN_EXPONENTIAL, 1040.0) == 2.0**960
        True
    """
    if not relevant:
        return 0.0
    if scheme == GAIN_BINARY:
        return 1.0
    if scheme == GAIN_LINEAR:
        return rating if shift == 0.0 else math.ldexp(rating, -int(shift))
    if shift == 0.0:
        return 2.0**rating - 1.0
    return 2.0 ** (rating - shift) - 2.0**-shift
