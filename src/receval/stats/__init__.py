"""Statistics on paired per-user values: tests, corrections for multiplicity, intervals.

Pure numpy/scipy, one job per module: :mod:`receval.stats.tests` (paired tests),
:mod:`receval.stats.corrections` (Holm, Benjamini-Hochberg, Bonferroni) and
:mod:`receval.stats.intervals` (the paired bootstrap and its percentile interval). Nothing here
imports receval above :mod:`receval.exceptions`; :mod:`receval.compare` puts them together.
"""
