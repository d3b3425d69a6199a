"""pytest collection settings for the test tree."""

#: run by tests/test_offpolicy_obp.py inside the OBP virtual environment (.ci/obp.sh), where
#: ``obp`` imports; the main environment has no OBP, so --doctest-modules must not import it
collect_ignore = ["reference/obp_crosscheck.py"]


def pytest_addoption(parser):
    parser.addoption("--torch-device", default=None,
                     help="the torch device of the tests marked torch_device (e.g. cuda); "
                          "default: RECEVAL_TORCH_DEVICE, else cpu")


def pytest_configure(config):
    import os

    device = config.getoption("--torch-device")
    if device:  # read by tests/torch_device.py, imported by the test modules after this
        os.environ["RECEVAL_TORCH_DEVICE"] = device
    device = os.environ.get("RECEVAL_TORCH_DEVICE", "cpu")
    if device.startswith("cuda"):
        import pytest

        try:
            import torch
        except ImportError:
            raise pytest.UsageError(f"--torch-device {device}: torch is not installed") from None
        if not torch.cuda.is_available():  # never a silent run on the CPU
            raise pytest.UsageError(f"--torch-device {device}: torch sees no CUDA device")
