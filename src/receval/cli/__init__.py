"""The ``receval`` command line: thin, parse -> read -> evaluate -> render, exit codes 0 / 2.

Bad input exits 2 with a one-line message and no traceback (``--debug`` shows it). Every
option of :func:`receval.evaluate` is a flag, made from :class:`receval.options.Options`, so a
new option of the core is a new flag here without an edit. One module per command, loaded
when the command runs (:mod:`receval.cli.group`); what they share is in
:mod:`receval.cli.common`.
"""

from __future__ import annotations

from typing import Any

from receval.cli.group import main

__all__ = ["_Runs", "_errors_exit_2", "main"]


def __getattr__(name: str) -> Any:
    """``_Runs``, ``_errors_exit_2`` (:mod:`receval.cli.common`) and the command modules,
    loaded on first use."""
    import importlib

    if name in ("_Runs", "_errors_exit_2"):
        return getattr(importlib.import_module("receval.cli.common"), name)
    if name.endswith("_command"):
        return importlib.import_module(f"receval.cli.{name}")
    raise AttributeError(f"module 'receval.cli' has no attribute {name!r}")
