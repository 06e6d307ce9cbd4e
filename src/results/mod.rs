//! Results: the data model (serde), the crash-safe journal, and the exporters (JSON, CSV,
//! Markdown). Not for: computing statistics (see `stats`) or printing to the terminal (`report`).

pub mod export;
pub mod journal;
pub mod logger;
pub mod model;
pub mod read;

pub use model::*;
