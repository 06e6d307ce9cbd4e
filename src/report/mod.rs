//! What people look at: the terminal summary and the progress display.
//!
//! Reads results; never measures. Colors follow `--style` and `NO_COLOR`.

pub mod comparison;
pub mod history;
pub mod html;
pub mod meters;
pub mod progress;
pub mod terminal;
pub mod text_plots;

/// How much to print and whether to use color.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Colors (unless NO_COLOR or not a terminal) and a progress bar on a terminal.
    Full,
    /// Plain text, no progress bar.
    Basic,
    /// Nothing but errors.
    None,
    /// Colors without the progress bar (hyperfine's `color`).
    Color,
    /// The progress bar without colors (hyperfine's `nocolor`).
    NoColor,
}

impl Style {
    /// Whether to color output on stdout: `Full` or `Color`, stdout a terminal, and NO_COLOR
    /// unset/empty.
    pub fn color(self) -> bool {
        use std::io::IsTerminal;
        matches!(self, Style::Full | Style::Color)
            && std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    }

    /// Whether to show progress while measuring (on a terminal): `Full` or `NoColor`.
    pub fn progress(self) -> bool {
        matches!(self, Style::Full | Style::NoColor)
    }
}

/// The HTML report as a logger (`results::logger::Logger`), for `tare kernels` and others.
pub struct HtmlLogger {
    pub path: std::path::PathBuf,
}

impl crate::results::logger::Logger for HtmlLogger {
    fn describe(&self) -> String {
        format!("HTML report {}", self.path.display())
    }
    fn log(&self, session: &crate::results::Session) -> anyhow::Result<()> {
        let label = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tare".into());
        let page = html::render_html(&[(label, session.clone())]);
        crate::results::fsio::write(&self.path, page.as_bytes())
    }
}
