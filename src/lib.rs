//! tare — a benchmarking system for Linux whose numbers can be trusted.
//!
//! Data flows one way, top to bottom; each layer calls only the ones below it:
//!
//! ```text
//! cli      parse arguments into a plan; print; exit codes
//! plan     what to run: benchmarks, commands, parameters, limits, stop rules
//! method   how to run it: warm-up, order, actions around runs, when to stop
//! exec     one measured run: spawn, cgroup (v1 | v2 | rusage fallback), limits, kill
//! conclude from runs to conclusions: summaries, comparisons, diagnostics
//! machine  what the machine is and does: topology, probes, tuning
//! setup    setups of a run that should not matter but do: env size, ASLR, cwd, argv[0]
//! stats    pure functions over numbers: summaries, intervals, tests
//! results  the data model (serde), journal, exporters (json, csv, markdown)
//! report   what people look at: terminal summary
//! store    history: SQLite / PostgreSQL, change points, alerts
//! serve    the team server over the store: JSON API with tokens, dashboard pages
//! ```
//!
//! See `docs/architecture.md` for the map.

// First: its println!/eprintln! (that never panic on a closed pipe) replace std's everywhere.
#[macro_use]
pub mod output;

pub mod cli;
pub mod conclude;
pub mod error;
pub mod exec;
pub mod lock;
pub mod machine;
pub mod method;
pub mod plan;
pub mod remote;
pub mod report;
pub mod results;
pub mod serve;
pub mod setup;
pub mod stats;
pub mod store;
pub mod suite;
pub mod sys;
pub mod table;
pub mod units;
