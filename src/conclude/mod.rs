//! From runs to conclusions: summaries per metric (`summary`), comparisons with the reference and
//! diagnostics that explain noise (`analysis`), and the analysis of randomized setups and bias
//! sweeps (`setups`), the scaling of parameter scans (`scaling`), the suite line of head-to-head kernels (`suite`), and the one model of a measurement behind verdicts between versions —
//! samples grouped by process, the process the unit of replication (`levels`).
//!
//! Reads results and calls the pure `stats` functions; never measures, never prints. Depends on
//! `results` and `stats` only. `method` calls it at the end of a session, and while measuring for
//! `analysis::ratio_precision`, which the `ci(ratio)` stop rule reads.

pub mod analysis;
pub mod counts;
pub mod kernels;
pub mod levels;
pub mod processor;
pub mod scaling;
pub mod setups;
pub mod sides;
pub mod suite;
pub mod summary;
