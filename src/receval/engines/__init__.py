"""Engines build the per-user picture and read the metrics off it; all share the definitions."""
