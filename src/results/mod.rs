//! Results: the data model (serde), the crash-safe journal, the exporters (JSON, CSV,
//! Markdown), the importers of other harnesses' outputs (`import`) and the readers of kernel
//! records out of the model (`kernels`). Not for: computing
//! statistics (see `stats`) or printing to the terminal (`report`).

pub mod export;
pub mod facts;
pub mod fsio;
pub mod import;
pub mod input;
pub mod journal;
pub mod kernels;
pub mod logger;
pub mod model;
pub mod names;
pub mod read;

pub use model::*;
