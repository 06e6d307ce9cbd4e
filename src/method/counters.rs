//! Hardware and software event counters per run (`--counters cycles,instructions,…`), by
//! running each command under `perf stat -x, -e EVENTS -o FILE --` and parsing its CSV.
//!
//! Before the first run, [`probe`] runs the same `perf stat` on `/bin/true`: an event the
//! kernel cannot count (`<not supported>`, e.g. hardware events in a VM without a virtual
//! PMU) or that perf does not know is a one-line usage error, so no session pretends to have
//! counters it cannot have. perf's own start-up is inside the measured wall and CPU times of
//! runs with counters (a few milliseconds); compare runs with counters only with each other.

pub mod delta;
pub mod valgrind;

use std::path::Path;
use std::process::{Command, Stdio};

/// Key of a run's counters in `Run.extra`.
pub const RUN_KEY: &str = "counters";

/// Key of the backend that counted a run (`perf` or `valgrind`) in `Run.extra`.
pub use crate::conclude::counts::{backend_of, BACKEND_KEY};

/// Key of a Valgrind run's busiest functions in `Run.extra`: `[{function, instructions}]`,
/// instructions executed in each function itself, most first.
pub use crate::conclude::counts::FUNCTIONS_KEY;

/// Key of the directory that holds a Valgrind run's Callgrind output files in `Run.extra`
/// (with `--export-json NAME.json`: `NAME.callgrind/BENCHMARK-runRUN`, 1-based).
pub const CALLGRIND_KEY: &str = "callgrind";

/// How many functions a run keeps (by instructions executed in them).
pub const FUNCTIONS_KEPT: usize = 40;

/// One line of `perf stat -x,` output.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CounterValue {
    pub event: String,
    /// The count (for `task-clock`, milliseconds as perf prints it); `None` when not counted.
    pub value: Option<f64>,
    /// perf's unit (`msec` for task-clock, empty for plain counts).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// `counted`, `not-supported` or `not-counted`.
    pub status: String,
    /// Share of the run the event was actually counted (multiplexing), percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
}

impl CounterValue {
    /// A value Valgrind (or a difference of two of its counts) gave: `counted` where there is
    /// one, `not-counted` where not; never multiplexed.
    pub fn exact(event: &str, value: Option<f64>, unit: &str) -> CounterValue {
        CounterValue {
            event: event.to_string(),
            value,
            unit: unit.to_string(),
            status: if value.is_some() {
                "counted"
            } else {
                "not-counted"
            }
            .into(),
            running: None,
        }
    }
}

/// Parses the CSV that `perf stat -x,` writes (comment and blank lines skipped; fields
/// value, unit, event, run time, percentage running, metric value, metric unit).
pub fn parse_perf_csv(text: &str) -> Vec<CounterValue> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 3 || f[2].is_empty() {
                return None;
            }
            let (value, status) = match f[0].trim() {
                "<not supported>" => (None, "not-supported"),
                "<not counted>" => (None, "not-counted"),
                v => (Some(v.parse::<f64>().ok()?), "counted"),
            };
            Some(CounterValue {
                event: f[2].to_string(),
                value,
                unit: f[1].to_string(),
                status: status.into(),
                running: f.get(4).and_then(|p| p.parse().ok()),
            })
        })
        .collect()
}

/// The event list of `--counters`, checked for characters perf event names use.
pub fn parse_events(list: &str) -> Result<Vec<String>, String> {
    let events: Vec<String> = list
        .split(',')
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect();
    if events.is_empty() {
        return Err("give events, e.g. --counters cycles,instructions or task-clock".into());
    }
    for e in &events {
        if !e
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:./=@".contains(c))
        {
            return Err(format!(
                "'{e}' is not a perf event name; see perf list for the events of this machine"
            ));
        }
    }
    Ok(events)
}

/// `argv` wrapped so that perf counts `events` and writes them to `out`.
pub fn wrap(
    perf: &str,
    argv: &[std::ffi::OsString],
    events: &[String],
    out: &Path,
) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = vec![
        perf.into(),
        "stat".into(),
        "-x,".into(),
        "-e".into(),
        events.join(",").into(),
        "-o".into(),
        out.as_os_str().to_os_string(),
        "--".into(),
    ];
    v.extend(argv.iter().cloned());
    v
}

/// Checks that `perf` runs and can count every event here; the error says what to do.
pub fn probe(perf: &str, events: &[String]) -> Result<(), String> {
    let out = Command::new(perf)
        .args(["stat", "-x,", "-e", &events.join(","), "--", "/bin/true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| {
            format!("cannot run '{perf}' ({e}); install perf (linux-tools) or drop --counters")
        })?;
    let text = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!(
            "perf stat refused the events ({}); check the names with perf list",
            first.trim()
        ));
    }
    check_supported(&parse_perf_csv(&text), events)
}

/// An error naming the requested events perf reported as not supported (or did not report).
pub fn check_supported(values: &[CounterValue], events: &[String]) -> Result<(), String> {
    let missing: Vec<&str> = events
        .iter()
        .filter(|e| {
            !values
                .iter()
                .any(|v| &v.event == *e || v.event.starts_with(&format!("{e}:")))
        })
        .map(String::as_str)
        .collect();
    let unsupported: Vec<&str> = values
        .iter()
        .filter(|v| v.status == "not-supported")
        .map(|v| v.event.as_str())
        .collect();
    if !unsupported.is_empty() {
        return Err(format!(
            "{} not supported on this machine (perf stat reports <not supported>; hardware counters are usually missing in VMs without a virtual PMU); drop them, or count software events such as task-clock,page-faults,context-switches",
            unsupported.join(", ") + if unsupported.len() == 1 { " is" } else { " are" }
        ));
    }
    if !missing.is_empty() {
        return Err(format!(
            "perf stat did not report {}; check the names with perf list",
            missing.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_checked() {
        assert_eq!(parse_events("cycles, instructions").unwrap().len(), 2);
        assert!(parse_events("").is_err());
        assert!(parse_events("cycles;rm").is_err());
    }

    #[test]
    fn wraps_the_command() {
        let v = wrap(
            "perf",
            &["prog".into(), "a".into()],
            &["cycles".into()],
            Path::new("/tmp/x"),
        );
        let s: Vec<String> = v.iter().map(|x| x.to_string_lossy().into()).collect();
        assert_eq!(
            s,
            ["perf", "stat", "-x,", "-e", "cycles", "-o", "/tmp/x", "--", "prog", "a"]
        );
    }
}
