"""pytest collection settings and shared fixtures (one Spark session) for the test tree."""

import pytest

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
        try:
            import torch
        except ImportError:
            raise pytest.UsageError(f"--torch-device {device}: torch is not installed") from None
        if not torch.cuda.is_available():  # never a silent run on the CPU
            raise pytest.UsageError(f"--torch-device {device}: torch sees no CUDA device")


@pytest.fixture(scope="session")
def spark_session(tmp_path_factory):
    """The one local Spark session of the run (tests/spark_session.py), stopped at its end;
    a skip naming what is missing where pyspark or Java is."""
    from spark_session import start_session

    session = start_session(tmp_path_factory.mktemp("spark-warehouse"))
    yield session
    session.stop()


@pytest.fixture(scope="module")
def spark(spark_session):
    """The shared Spark session for one module; after the module, the runtime settings it left
    changed are put back and what it cached is dropped (the next module finds the session as
    this one did)."""
    from spark_session import restore_settings, runtime_settings

    before = runtime_settings(spark_session)
    yield spark_session
    spark_session.catalog.clearCache()
    restore_settings(spark_session, before)
