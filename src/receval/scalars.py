"""One scalar as the plain Python value it holds, for messages and ids handed back to the user.

Example:
    >>> import numpy as np, pyarrow as pa
    >>> plain(np.int64(7)), plain(pa.scalar("u1")), plain("x")
    (7, 'u1', 'x')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa


def plain(value: Any) -> Any:
    """``np.int64(7)`` -> ``7``, a pyarrow scalar -> its Python value, anything else as is.

    Example:
        >>> plain(np.float64(0.5))
        0.5
    """
    if isinstance(value, pa.Scalar):
        return value.as_py()
    return value.item() if isinstance(value, np.generic) else value


def json_ready(value: Any) -> Any:
    """JSON-ready, recursively: numpy scalars as Python numbers, non-finite floats as
    ``None``, mapping keys as text, sequences and sets as lists.

    Example:
        >>> json_ready({1: [np.float64(0.5), float("nan")], "n": np.int64(3)})
        {'1': [0.5, None], 'n': 3}
    """
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
