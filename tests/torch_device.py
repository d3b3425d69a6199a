"""The torch device that the engine-conformance tests run the torch doors on.

The CPU unless ``--torch-device`` (or ``RECEVAL_TORCH_DEVICE``) names another; the modules
that read it carry the ``torch_device`` marker, so on a machine with a GPU the whole CUDA
conformance run is one command::

    python -m pytest -m torch_device --torch-device cuda $(grep -l torch_device tests/test_*.py)

(``benchmarks/gpu_check.sh`` runs it with the GPU benchmarks.)
"""

from __future__ import annotations

import os

#: what ``device=`` the torch doors get in the tests marked ``torch_device``
TORCH_DEVICE = os.environ.get("RECEVAL_TORCH_DEVICE", "cpu")
