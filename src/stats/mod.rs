//! Pure statistics over numbers: summaries, quantiles, intervals, tests, diagnostics.
//!
//! No I/O, no processes, no clocks: every function takes numbers (and a seed where it
//! resamples) and returns numbers. Each is unit-tested against reference values computed with
//! an established package (see `tests/data/stats/` and `scripts/stats_reference.py`).
