"""pytest collection settings for the test tree."""

#: run by tests/test_offpolicy_obp.py inside the OBP virtual environment (.ci/obp.sh), where
#: ``obp`` imports; the main environment has no OBP, so --doctest-modules must not import it
collect_ignore = ["reference/obp_crosscheck.py"]
