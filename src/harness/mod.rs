//! The formats of outside harnesses, read in one place (issue 41): what both `tare import`
//! (`results::import`) and `tare native-worker` (`native`) read of a harness's output —
//! field lists, line grammars, file layouts — one submodule per harness. Each caller keeps
//! what it makes of it (the importer a `Session`, the native worker protocol samples) and its
//! own errors.
//!
//! Layer: below `results` (which `results::import` is part of), so nothing here uses another
//! module of the crate; `serde_json` values in, plain data out.

pub mod criterion;
pub mod gbench;
pub mod gotest;
pub mod pyperf;
