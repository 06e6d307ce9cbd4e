//! Benchmark suites (seed 003 §4, §6, §7.4): many tools × configurations × inputs ×
//! repetitions from a TOML definition, run in parallel on disjoint cores, each run isolated,
//! classified against its expected result and scored, results streamed to a JSON-lines file.
//!
//! ```text
//! def       the definition file: parse and check
//! plan      expand into jobs (argv, expected result, stable key)
//! classify  result from exit code and output; category and score
//! alloc     cores and memory per parallel slot from the topology
//! runner    threads, one executor each; results.jsonl; progress
//! record    the per-run record and its JSON-lines file
//! ```
//!
//! Not for: presenting results (see `crate::table`) or single-command benchmarking with
//! statistics (see `crate::method`).

pub mod alloc;
pub mod classify;
pub mod def;
pub mod plan;
pub mod record;
pub mod runner;
