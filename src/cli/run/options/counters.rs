//! `tare run`'s `--counters` and `--counters-backend`: which backend counts the events (perf,
//! or Valgrind where perf cannot or is not asked), checked and probed before the first run.
//!
//! For: [`counters`] and [`valgrind_counters`] (which `tare kernels` uses too). Not for:
//! counting (`method::counters`).

use super::commands::check_program;
use crate::cli::run::args::*;
use crate::error::usage;
use crate::method::{self};

/// `events` counted by Valgrind, checked before the first run (every command's one check):
/// an event Valgrind cannot count is refused with `unsupported(event)`, a missing valgrind
/// with `missing`, and the events are probed on `/bin/true`.
pub(crate) fn valgrind_counters(
    events: Vec<String>,
    unsupported: impl Fn(&str) -> String,
    missing: &str,
) -> anyhow::Result<crate::plan::Counters> {
    use method::counters::valgrind;
    if let Some(e) = events
        .iter()
        .find(|e| !valgrind::EVENTS.contains(&e.as_str()))
    {
        return Err(usage(unsupported(e)));
    }
    let program = "valgrind".to_string();
    check_program(&program, None).map_err(|_| usage(missing))?;
    valgrind::probe(&program, &events).map_err(|e| usage(format!("--counters: {e}")))?;
    Ok(crate::plan::Counters {
        backend: crate::plan::CounterBackend::Valgrind,
        program,
        events,
        keep: None,
    })
}

/// What counts `--counters EVENTS` with `--counters-backend`: perf where asked, or (auto) where
/// perf can count every event; Valgrind where asked, or (auto) where perf cannot and Valgrind
/// counts every event. Checked before the first run; errors say what to do.
pub(super) fn counters(
    list: &str,
    backend: CountersBackendArg,
) -> anyhow::Result<crate::plan::Counters> {
    use crate::plan::{CounterBackend, Counters};
    use method::counters::valgrind;
    let events =
        method::counters::parse_events(list).map_err(|e| usage(format!("--counters: {e}")))?;
    let only_valgrind: Vec<&str> = events
        .iter()
        .map(String::as_str)
        .filter(|e| valgrind::ONLY_VALGRIND.contains(e))
        .collect();
    let perf = || -> anyhow::Result<Counters> {
        let program = "perf".to_string();
        check_program(&program, None).map_err(|_| {
            usage("--counters needs perf in PATH: install it (linux-tools / linux-perf), or count with --counters-backend valgrind")
        })?;
        method::counters::probe(&program, &events)
            .map_err(|e| usage(format!("--counters: {e}")))?;
        Ok(Counters {
            backend: CounterBackend::Perf,
            program,
            events: events.clone(),
            keep: None,
        })
    };
    let valgrind = || {
        valgrind_counters(
            events.clone(),
            |e| {
                format!(
                    "--counters: valgrind does not count '{e}'; it counts {}",
                    valgrind::EVENTS.join(", ")
                )
            },
            "--counters with valgrind needs valgrind in PATH: install it (apt-get install valgrind)",
        )
    };
    match backend {
        CountersBackendArg::Valgrind => valgrind(),
        CountersBackendArg::Perf => {
            if let Some(e) = only_valgrind.first() {
                return Err(usage(format!(
                    "--counters: '{e}' is simulated by valgrind, perf has no such event; use --counters-backend valgrind (or auto)"
                )));
            }
            perf()
        }
        CountersBackendArg::Auto if !only_valgrind.is_empty() => valgrind(),
        CountersBackendArg::Auto => match perf() {
            Ok(c) => Ok(c),
            Err(perf_error) if valgrind::counts_all(&events) => {
                let c = valgrind().map_err(|e| {
                    usage(format!(
                        "{perf_error}; and valgrind cannot count them either: {e}"
                    ))
                })?;
                eprintln!(
                    "tare: note: perf cannot count {} here, so valgrind counts them (exact counts; runs are 20–100× slower and their times are not the command's)",
                    events.join(",")
                );
                Ok(c)
            }
            Err(e) => Err(e),
        },
    }
}
