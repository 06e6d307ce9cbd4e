//! tare — a benchmarking system for Linux whose numbers can be trusted.
//!
//! Data flows one way, top to bottom; each layer uses only the layers below it. The layers are
//! `LAYERS` in `tests/layers.rs`, which fails on an import they do not permit; the picture and
//! what each module holds are in `docs/architecture.md`.
//!
//! See `docs/architecture.md` for the map.

// First: its println!/eprintln! (that never panic on a closed pipe) replace std's everywhere.
#[macro_use]
pub mod output;

pub mod cli;
pub mod conclude;
pub mod error;
pub mod exec;
pub mod harness;
pub mod lock;
pub mod machine;
pub mod method;
pub mod native;
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
