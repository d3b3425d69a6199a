"""The ``receval`` command line: thin, parse -> read -> evaluate -> render, exit codes 0 / 2.

Bad input exits 2 with a one-line message and no traceback (``--debug`` shows it). Every
option of :func:`receval.evaluate` is a flag, made from :class:`receval.options.Options`, so a
new option of the core is a new flag here without an edit. One module per command; what they
share is in :mod:`receval.cli.common`.
"""

from receval.cli import (  # noqa: F401  (importing a command module registers it on main)
    check_command,
    compare_command,
    demo_command,
    evaluate_command,
    explain_command,
    monitor_command,
    offpolicy_command,
    plot_command,
    resolve_command,
    sample_command,
    split_command,
)
from receval.cli.common import _errors_exit_2, _Runs, main

__all__ = ["_Runs", "_errors_exit_2", "main"]
