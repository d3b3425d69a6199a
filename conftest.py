"""Collection of the doctests under src/receval (``--doctest-modules``): a module that needs
an optional extra that is not installed is skipped, not a collection error."""

from __future__ import annotations

import importlib.util

#: each module that imports an optional extra at its top, and that extra's package
NEEDS = {"src/receval/engines/torch_engine.py": "torch"}

collect_ignore = [path for path, package in NEEDS.items()
                  if importlib.util.find_spec(package) is None]
