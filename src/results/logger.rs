//! Loggers (Rancid's loggers): where a finished session's results go. A narrow trait; the
//! exporters (JSON, CSV, Markdown, ...) are loggers, and so is the HTML report
//! (`report::html::HtmlLogger`). docs/extending.md shows how to add one.

use super::export::{self, Export};
use super::Session;

/// Writes a finished session somewhere. Failing is one line that names the destination.
pub trait Logger {
    fn describe(&self) -> String;
    fn log(&self, session: &Session) -> anyhow::Result<()>;
    /// Where the results go instead when this logger fails, if anywhere (a JSON export: the
    /// temporary directory, so a full disk at the export's place does not lose the runs).
    fn rescue(&self) -> Option<Box<dyn Logger>> {
        None
    }
    /// Where the rescued results went, for the failure's line.
    fn place(&self) -> Option<std::path::PathBuf> {
        None
    }
}

impl Logger for Export {
    fn describe(&self) -> String {
        format!("{:?} export to {}", self.format, self.path.display())
    }
    fn log(&self, session: &Session) -> anyhow::Result<()> {
        export::write(self, session)
    }
    fn rescue(&self) -> Option<Box<dyn Logger>> {
        (self.format == export::Format::Json).then(|| {
            Box::new(Export {
                format: export::Format::Json,
                path: std::env::temp_dir().join(format!("tare-{}.json", std::process::id())),
            }) as Box<dyn Logger>
        })
    }
    fn place(&self) -> Option<std::path::PathBuf> {
        Some(self.path.clone())
    }
}

/// Logs to each logger independently: one that fails (a full disk) does not stop the others,
/// and a failed JSON export is written to the temporary directory instead when it can be.
/// Returns one line per failure, naming the journal that still holds the runs (`kept`).
/// Every command that writes results uses this one writer.
pub fn log_all(
    loggers: &[Box<dyn Logger>],
    session: &Session,
    kept: Option<&std::path::Path>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for l in loggers {
        let Err(err) = l.log(session) else {
            continue;
        };
        let mut line = format!("{err:#}");
        if let Some(r) = l.rescue() {
            if r.log(session).is_ok() {
                if let Some(p) = r.place() {
                    line.push_str(&format!(
                        "; the JSON results were written to {} instead",
                        p.display()
                    ));
                }
            }
        }
        if let Some(j) = kept {
            line.push_str(&format!("; journal {} kept", j.display()));
        }
        failures.push(line);
    }
    failures
}
