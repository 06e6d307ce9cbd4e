//! A prepared `tare run` session executed: the journal, the stop signals, the method layer's
//! runs with progress, then the summary, the exports, the store and the exit code.

use super::options::Prepared;
use crate::error::{exit, UserError};
use crate::exec::Executor;
use crate::method::{self, Observer, Outcome};
use crate::report::progress::Progress;
use crate::report::{terminal, Style};
use crate::results::export::{self, Format};
use crate::results::journal::{self, Journal};
use crate::results::{Benchmark, Session};

/// Runs the prepared session and presents it; returns the exit code.
pub(super) fn execute(p: Prepared) -> anyhow::Result<i32> {
    let Prepared {
        plan,
        mut session,
        backend,
        targets,
        exports: export_args,
        mut history,
        style,
        verbose,
        overwrite_journal,
        keep_action_daemons,
        stream_journal,
        _claims,
        _pinned,
        _idle,
        _quiesced,
    } = p;
    let color = style.color();
    let exports = export_args.exports();
    let journal = match export::journal_beside(&exports) {
        Some(e) => Some(Journal::create(
            journal::path_for(&e.path),
            &session,
            overwrite_journal,
        )?),
        None => None,
    };
    let cancel = crate::output::install_stop_signals()?;
    if !keep_action_daemons {
        // What leaves a run's groups and is orphaned comes to tare, to be killed at the run's end.
        crate::exec::reaper::become_subreaper();
    }
    let executor = Executor::new(backend);
    if stream_journal {
        crate::remote::host::stream_session(&session)?;
    }
    let mut watch = Watch {
        journal,
        stream: stream_journal,
        progress: Progress::new(style.progress(), targets),
        current: None,
    };
    let outcome = method::execute(&plan, &executor, &mut session, &mut watch, &cancel);
    watch.progress.clear();
    drop(executor);
    session.complete = matches!(outcome, Outcome::Complete);
    if stream_journal {
        crate::remote::host::stream_results(&session)?;
    } else if style != Style::None {
        print!("{}", terminal::summary_with(&session, color, verbose));
    }
    let journal = watch.journal.take();
    let mut failures = crate::results::logger::log_all(
        &export_args.loggers(),
        &session,
        journal.as_ref().map(|j| j.path()),
    );
    if let Some(st) = history.as_mut() {
        if session.complete {
            let json = exports
                .iter()
                .find(|e| e.format == Format::Json)
                .map(|e| e.path.as_path());
            if let Err(e) = crate::cli::run::store::store_session(st, &session, json) {
                failures.push(format!("{e:#}"));
            }
        }
    }
    if let Some(j) = journal {
        if failures.is_empty() {
            j.finish()
                .map_err(|e| UserError::run_failed(format!("{e:#}")))?;
        }
    }
    finish(outcome, failures, &session)
}

/// Journal + progress bar, fed by the method layer.
struct Watch {
    journal: Option<Journal>,
    /// `--stream-journal`: journal lines on stdout as well.
    stream: bool,
    progress: Progress,
    current: Option<usize>,
}

impl Observer for Watch {
    fn started(&mut self, benches: &[Benchmark], current: Option<usize>) {
        self.current = current;
        self.progress.update(benches, current);
    }
    fn run_finished(&mut self, benches: &[Benchmark], index: usize) -> anyhow::Result<()> {
        if let Some(j) = &mut self.journal {
            if let Some(run) = benches[index].runs.last() {
                j.append(index, run)?;
            }
        }
        if self.stream {
            if let Some(run) = benches[index].runs.last() {
                crate::remote::host::stream_run(index, run)?;
            }
        }
        self.progress.update(benches, self.current);
        Ok(())
    }
    fn finished(&mut self, benches: &[Benchmark], _current: Option<usize>) {
        self.progress.update(benches, self.current);
    }
}

/// The exit of a session once its exports are written: the outcome's, then export failures
/// (exit 3: runs have started), then a benchmark without a counted run (exit 3).
fn finish(outcome: Outcome, mut failures: Vec<String>, session: &Session) -> anyhow::Result<i32> {
    if let Some(e) = crate::output::stdout_error() {
        failures.push(format!(
            "the summary could not be written to standard output ({e})"
        ));
    }
    let after_start = |e: anyhow::Error| -> anyhow::Error {
        if e.downcast_ref::<UserError>().is_some() {
            e
        } else {
            UserError::run_failed(format!("{e:#}")).into()
        }
    };
    let with_failures = |e: anyhow::Error| -> anyhow::Error {
        if failures.is_empty() {
            return e;
        }
        let code = crate::error::exit_code_of(&e);
        UserError {
            code,
            message: format!("{e:#}; {}", failures.join("; ")),
        }
        .into()
    };
    match outcome {
        Outcome::Complete => {}
        Outcome::Interrupted => return Err(with_failures(UserError::interrupted().into())),
        Outcome::Failed(e) => return Err(with_failures(after_start(e))),
    }
    if !failures.is_empty() {
        return Err(UserError::run_failed(failures.join("; ")).into());
    }
    if let Some(b) = session
        .benchmarks
        .iter()
        .find(|b| !b.runs.iter().any(|r| r.counted))
    {
        let measured = b.runs.iter().filter(|r| !r.warmup);
        let all_interfered = measured.clone().count() > 0
            && measured
                .clone()
                .all(|r| r.extra.get("excluded").and_then(|v| v.as_str()) == Some("interfered"));
        if all_interfered {
            return Err(UserError::run_failed(format!(
                "'{}' has no counted run: every run was excluded as interfered with (--exclude-interfered), none failed; stop the other load, pin runs away from it with --cpus, or raise --interference-threshold",
                b.name
            ))
            .into());
        }
        return Err(UserError::run_failed(format!(
            "'{}' has no counted run: every run failed, hit a limit or was excluded (see the results); fix the command, raise the limits or stop what interferes",
            b.name
        ))
        .into());
    }
    Ok(exit::OK)
}
