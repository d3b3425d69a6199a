"""Metric definitions: names (``spec``), the per-user picture, and one file per family."""
