//! Result tables of suites (seed 003 §6.3, §7): results.jsonl files → one row per input and a
//! column group per result file × tool configuration, as a self-contained HTML page with
//! summary rows and inline SVG plots, as CSV, or as `--dump` lines with regression counts.
//!
//! ```text
//! model  stream result files into rows × columns × repetitions; per-cell summary
//! view   filters, diff rows, column summaries, plot data
//! html   the page          svg  scatter and quantile plots
//! csv    the CSV           dump STATS and REGRESSIONS lines for CI
//! ```
//!
//! Not for: running suites (see `crate::suite`) or statistics across sessions.

pub mod csv;
pub mod dump;
pub mod html;
pub mod model;
pub mod svg;
pub mod view;

pub use model::Table;
pub use view::{Filters, Metric, View};
