"""Statistics on paired per-user values: tests, corrections for multiplicity, intervals.

numpy/scipy/numba only, one job per module: :mod:`receval.stats.tests` (paired tests),
:mod:`receval.stats.corrections` (Holm, Benjamini-Hochberg, Bonferroni),
:mod:`receval.stats.intervals` (the paired bootstrap and its percentile interval),
:mod:`receval.stats.resample` (the compressed, exact-in-distribution bootstrap and sign flips
behind them) and :mod:`receval.stats.paired` (one row: both means, the difference, its interval,
the test, the effect sizes) and :mod:`receval.stats.pairing` (the one paired analysis of two
models: aligned users, the pair's keyed stream, the exact mirror, wins in the declared
direction). Nothing here imports receval above :mod:`receval.randomness`;
:mod:`receval.compare` and the report put them together.
"""

#: the most resamples a bootstrap or randomization test takes: each resample keeps a number per
#: row (8 bytes), so 10 million is 80 MB per row, far past where the p-value's Monte Carlo
#: error (about 1/sqrt(resamples)) matters; more would run out of memory, not be more exact
MAX_RESAMPLES = 10_000_000

#: the unpaired tests by name, the default first (:mod:`receval.stats.unpaired`; named here,
#: where a flag can offer them without loading numba)
UNPAIRED_TESTS = ("welch", "permutation")
