//! Loggers (Rancid's loggers): where a finished session's results go. A narrow trait; the
//! exporters (JSON, CSV, Markdown, ...) are loggers, and so is the HTML report
//! (`report::html::HtmlLogger`). docs/extending.md shows how to add one.

use super::export::{self, Export};
use super::Session;

/// Writes a finished session somewhere. Failing is one line that names the destination.
pub trait Logger {
    fn describe(&self) -> String;
    fn log(&self, session: &Session) -> anyhow::Result<()>;
}

impl Logger for Export {
    fn describe(&self) -> String {
        format!("{:?} export to {}", self.format, self.path.display())
    }
    fn log(&self, session: &Session) -> anyhow::Result<()> {
        export::write(self, session)
    }
}

/// Logs to each logger independently; returns one line per failure (the others still run).
pub fn log_all(loggers: &[Box<dyn Logger>], session: &Session) -> Vec<String> {
    loggers
        .iter()
        .filter_map(|l| l.log(session).err().map(|e| format!("{e:#}")))
        .collect()
}
