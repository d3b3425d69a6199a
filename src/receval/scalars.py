"""One scalar as the plain Python value it holds, for messages and ids handed back to the user.

Example:
    >>> import numpy as np, pyarrow as pa
    >>> plain(np.int64(7)), plain(pa.scalar("u1")), plain("x")
    (7, 'u1', 'x')
"""

from __future__ import annotations

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
