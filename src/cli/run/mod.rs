//! `tare run` (and `tare recover`): parse (`args`) → resolve once into a checked plan
//! (`options::prepare`) → execute and present (`session::execute`). Where the runs happen is
//! chosen first: here, or by tare on another machine (`--host`, `remote::host`), which then
//! gets the arguments as given.

mod args;
pub(crate) mod options;
mod session;
pub(crate) mod store;

pub use args::{RecoverArgs, RunArgs};
pub(crate) use options::{aslr_usable, check_program};

use crate::error::{exit, UserError};
use crate::report::{terminal, Style};
use crate::results::journal::{self};

/// `tare run`.
pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    if a.remote.host.is_some() {
        return on_host(&a);
    }
    session::execute(options::prepare(a)?)
}

/// Shell commands measured interleaved in one `tare run` session, built in code (for `tare
/// history confirm` and `tare bisect`): the plan, checks, progress and results file of `tare run
/// --style basic --shell --runs RUNS --warmup WARMUP --export-json FILE -n NAME 'COMMAND' …`.
pub(crate) struct Interleaved {
    /// (name, shell command), in order.
    pub(crate) commands: Vec<(String, String)>,
    pub(crate) runs: usize,
    pub(crate) warmup: usize,
    pub(crate) export_json: std::path::PathBuf,
}

/// Runs an [`Interleaved`] session here, as `tare run` does (`options::prepare`, then the
/// method layer through `session::execute`); returns its exit code.
pub(crate) fn interleaved(i: Interleaved) -> anyhow::Result<i32> {
    use clap::{Args, FromArgMatches};
    // tare run's defaults, as the command line gives them with no option.
    let matches = RunArgs::augment_args(clap::Command::new("run"))
        .try_get_matches_from(["run"])
        .map_err(|e| crate::error::internal(format!("tare run's defaults do not parse: {e}")))?;
    let mut a = RunArgs::from_arg_matches(&matches)
        .map_err(|e| crate::error::internal(format!("tare run's defaults do not parse: {e}")))?;
    (a.names, a.commands) = i.commands.into_iter().unzip();
    a.shell = Some("/bin/sh".into());
    a.runs = Some(i.runs);
    a.warmup = i.warmup;
    a.exports.export_json = Some(i.export_json);
    a.style = crate::cli::opts::StyleArgs::basic();
    session::execute(options::prepare(a)?)
}

/// Measured by tare on the other machine; the arguments go there as given, and what comes
/// back is journalled, summarized and exported here.
fn on_host(a: &RunArgs) -> anyhow::Result<i32> {
    let args = crate::remote::host::own_args(2)?;
    let style = a.style.style();
    let local = crate::remote::host::Local {
        exports: a.exports.exports(),
        html: a.exports.export_html.clone(),
        summary: style != Style::None,
        color: style.color(),
        verbose: a.verbose,
        overwrite_journal: a.overwrite_journal,
    };
    crate::remote::host::run_command(&a.remote.options(&["run"]), &args, &local)
}

/// `tare recover`: rebuild results from a journal. Once a JSON export holds its runs, the
/// journal is removed (a new session may then use the path); otherwise it is kept.
pub fn recover(a: RecoverArgs) -> anyhow::Result<i32> {
    let _claims = a.exports.check()?;
    let recovering = journal::open_for_recovery(&a.journal)?;
    let mut session = recovering.recovered.session.clone();
    let skipped = &recovering.recovered.skipped;
    if skipped.total() > 0 {
        eprintln!(
            "tare: warning: {}: {}; every valid run was kept",
            a.journal.display(),
            skipped.describe()
        );
    }
    for b in &mut session.benchmarks {
        b.summary = crate::conclude::summary::summarize(b);
        if b.stop_reason.is_empty() {
            b.stop_reason = "recovered from a journal: the session did not finish".into();
        }
    }
    let style = a.style.style();
    if style != Style::None {
        print!("{}", terminal::summary(&session, style.color()));
    }
    let failures =
        crate::results::logger::log_all(&a.exports.loggers(), &session, Some(&a.journal));
    if !failures.is_empty() {
        return Err(UserError::run_failed(failures.join("; ")).into());
    }
    if a.exports.export_json.is_some() {
        recovering.remove()?;
    }
    Ok(exit::OK)
}
