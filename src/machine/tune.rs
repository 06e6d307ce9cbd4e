//! `tare machine tune` / `tare machine reset`: fix the CPU frequency for measuring, and undo it
//! exactly.
//!
//! For: planning ([`plan_tune`]) and applying ([`apply`]) the performance governor (or
//! min = max frequency where there is no performance governor) on every cpufreq policy and turbo
//! off (intel_pstate `no_turbo = 1`, `cpufreq/boost = 0`, per-policy `boost = 0`); saving the
//! exact previous bytes of every file to a JSON state file *before* changing anything; and
//! [`reset`], which writes them back in reverse order and removes the state file.
//! `--dry-run` is [`render_plan`] only.
//!
//! Not for: anything tare can avoid touching. Left alone on purpose:
//! - ASLR (`randomize_va_space`): turning it off gives every run the same memory layout, which
//!   is one setup measured many times, a biased sample (Mytkowicz et al., ASPLOS 2009); it also
//!   weakens the whole machine's security. tare varies layouts instead of freezing them.
//! - SMT: tare keeps SMT siblings of the run's cores idle ([`super::topology::choose_cores`]);
//!   switching SMT off needs no tare and changes the machine for everyone.
//! - `perf_event_paranoid`, isolcpus/nohz_full (boot parameters), swap, other processes.

use super::freq::{cpufreq_dir, policies, turbo_controls, CPU_DIR};
use super::sysfs::{SysError, SysRoot};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// Default place of the state file that `reset` reads.
pub const DEFAULT_STATE_FILE: &str = "/var/lib/tare/tune-state.json";

/// One write the tune would make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneStep {
    /// Kernel path, e.g. `/sys/devices/system/cpu/cpufreq/policy0/scaling_governor`.
    pub path: String,
    /// Value to write (without newline).
    pub value: String,
    /// Value now (trimmed), for display.
    pub current: String,
    pub why: String,
}

/// What a tune would do, and what it cannot.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TunePlan {
    pub steps: Vec<TuneStep>,
    /// Wanted but impossible on this machine (no cpufreq, no turbo control, ...).
    pub not_possible: Vec<String>,
    /// Already as wanted.
    pub already: Vec<String>,
    /// Deliberately not touched, and why.
    pub left_alone: Vec<String>,
}

/// Why a write did not happen or did not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailKind {
    Missing,
    Permission,
    WriteError,
    /// The write succeeded but the file reads back something else (the driver refused).
    NotTaken,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub path: String,
    pub wanted: String,
    pub kind: FailKind,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub path: String,
    /// Previous content, exactly (trailing newline included).
    pub from: String,
    pub to: String,
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneReport {
    pub changed: Vec<Change>,
    pub failed: Vec<Failure>,
    pub not_possible: Vec<String>,
    pub already: Vec<String>,
    pub left_alone: Vec<String>,
    /// True when every wanted setting is in place (nothing failed, nothing impossible).
    pub complete: bool,
    /// Where the previous values are saved (`None` when nothing was changed).
    pub state_file: Option<PathBuf>,
}

/// What [`reset`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResetReport {
    pub restored: Vec<Change>,
    pub failed: Vec<Failure>,
    /// Whether the state file was removed (everything restored).
    pub state_file_removed: bool,
    /// e.g. "nothing to reset: no state file at ...".
    pub note: Option<String>,
}

/// The state file: exact previous contents, in the order they were changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneState {
    pub version: u32,
    /// The root the paths belong to ("/" on a real machine).
    pub root: PathBuf,
    /// Seconds since the Unix epoch when saved.
    pub saved_at: u64,
    pub entries: Vec<SavedValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedValue {
    pub path: String,
    pub previous: String,
}

/// Plans a tune of this machine. Reads only.
pub fn plan_tune(root: &SysRoot) -> TunePlan {
    let mut plan = TunePlan {
        left_alone: vec![
            "ASLR (randomize_va_space) stays as it is: turning it off measures one memory layout over and over, a biased sample, and weakens security".into(),
            "SMT stays as it is: tare keeps the SMT siblings of the run's cores idle instead".into(),
        ],
        ..TunePlan::default()
    };

    // Turbo first: with intel_pstate, no_turbo changes the maximum the governor aims for.
    let controls = turbo_controls(root);
    for t in &controls {
        if t.on {
            plan.steps.push(TuneStep {
                path: t.path.clone(),
                value: t.off_value.clone(),
                current: t.value.clone(),
                why: "turn turbo/boost off: frequency then does not depend on load and temperature"
                    .into(),
            });
        } else {
            plan.already.push(format!(
                "turbo/boost already off ({} = {})",
                t.path, t.value
            ));
        }
    }

    // cpufreq policies (or per-CPU cpufreq directories on kernels without policy links).
    let mut dirs = policies(root);
    if dirs.is_empty() {
        dirs = root
            .list_numbered(CPU_DIR, "cpu")
            .into_iter()
            .map(|(n, _)| cpufreq_dir(n))
            .filter(|d| root.exists(d))
            .collect();
    }
    if dirs.is_empty() {
        let first = root
            .list_numbered(CPU_DIR, "cpu")
            .first()
            .map(|(n, _)| *n)
            .unwrap_or(0);
        plan.not_possible.push(format!(
            "frequency: no cpufreq (no {CPU_DIR}/cpu{first}/cpufreq); the governor and frequency cannot be fixed"
        ));
    }
    let mut drivers = Vec::new();
    for d in &dirs {
        let s = |f: &str| root.opt_string(&format!("{d}/{f}"));
        if let Some(drv) = s("scaling_driver") {
            drivers.push(drv);
        }
        let gov = s("scaling_governor");
        let available = s("scaling_available_governors").unwrap_or_default();
        let has_perf = available
            .split_ascii_whitespace()
            .any(|g| g == "performance");
        if gov.as_deref() == Some("performance") {
            plan.already
                .push(format!("{d}: governor already performance"));
        } else if has_perf && gov.is_some() {
            plan.steps.push(TuneStep {
                path: format!("{d}/scaling_governor"),
                value: "performance".into(),
                current: gov.unwrap_or_default(),
                why:
                    "performance governor: the highest frequency allowed, not one that follows load"
                        .into(),
            });
        } else {
            // No performance governor: pin min = max = the hardware maximum.
            let hw_max = root.opt_u64(&format!("{d}/cpuinfo_max_freq"));
            let min = root.opt_u64(&format!("{d}/scaling_min_freq"));
            let max = root.opt_u64(&format!("{d}/scaling_max_freq"));
            match (hw_max, min, max) {
                (Some(hw), Some(min), Some(max)) => {
                    if max != hw {
                        plan.steps.push(TuneStep {
                            path: format!("{d}/scaling_max_freq"),
                            value: hw.to_string(),
                            current: max.to_string(),
                            why: "no performance governor: raise the upper limit to the hardware maximum".into(),
                        });
                    }
                    if min != hw {
                        plan.steps.push(TuneStep {
                            path: format!("{d}/scaling_min_freq"),
                            value: hw.to_string(),
                            current: min.to_string(),
                            why: "no performance governor: lower limit = upper limit fixes the frequency".into(),
                        });
                    } else {
                        plan.already.push(format!("{d}: minimum frequency already the maximum"));
                    }
                }
                _ => plan.not_possible.push(format!(
                    "{d}: no performance governor and no scaling_min_freq/scaling_max_freq/cpuinfo_max_freq; frequency cannot be fixed"
                )),
            }
        }
    }

    if controls.is_empty() && !dirs.is_empty() {
        drivers.sort();
        drivers.dedup();
        if drivers
            .iter()
            .any(|d| d.starts_with("amd-pstate") || d == "intel_pstate")
        {
            plan.not_possible.push(format!(
                "turbo/boost: driver {} has no boost control here (amd-pstate gained per-policy boost in Linux 6.11); turbo may stay on",
                drivers.join("/")
            ));
        } else {
            plan.already.push(format!(
                "turbo/boost: no control for driver {} (this CPU/driver has no boost to turn off)",
                if drivers.is_empty() {
                    "?".into()
                } else {
                    drivers.join("/")
                }
            ));
        }
    } else if controls.is_empty() {
        plan.not_possible
            .push("turbo/boost: no cpufreq, no control to turn it off".into());
    }

    // Deep idle states: disabled, so a run that sleeps or waits does not pay their wake-up.
    let mut shallow_only = true;
    for (cpu, _) in root.list_numbered(CPU_DIR, "cpu") {
        for st in super::idle::cpu_states(root, cpu) {
            if st.exit_latency_us <= super::idle::DEEP_US {
                continue;
            }
            shallow_only = false;
            let path = format!("{CPU_DIR}/cpu{cpu}/cpuidle/state{}/disable", st.index);
            if st.disabled {
                plan.already
                    .push(format!("cpu{cpu}: idle state {} already disabled", st.name));
            } else {
                plan.steps.push(TuneStep {
                    path,
                    value: "1".into(),
                    current: "0".into(),
                    why: format!(
                        "disable idle state {} (exit latency {} µs): its wake-up adds to runs that sleep or wait",
                        st.name, st.exit_latency_us
                    ),
                });
            }
        }
    }
    if shallow_only {
        plan.already.push(format!(
            "idle states: none deeper than {} µs exit latency (or no cpuidle)",
            super::idle::DEEP_US
        ));
    }
    plan
}

/// Plan as text for `--dry-run`.
pub fn render_plan(plan: &TunePlan) -> String {
    let mut out = String::new();
    if plan.steps.is_empty() {
        out.push_str("nothing to change\n");
    }
    for s in &plan.steps {
        out.push_str(&format!(
            "set {} = {} (now {}): {}\n",
            s.path, s.value, s.current, s.why
        ));
    }
    for n in &plan.already {
        out.push_str(&format!("already: {n}\n"));
    }
    for n in &plan.not_possible {
        out.push_str(&format!("cannot: {n}\n"));
    }
    for n in &plan.left_alone {
        out.push_str(&format!("left alone: {n}\n"));
    }
    out
}

fn classify(e: &SysError) -> FailKind {
    if e.is_missing() {
        FailKind::Missing
    } else if e.is_permission() {
        FailKind::Permission
    } else {
        FailKind::WriteError
    }
}

fn write_state(path: &Path, state: &TuneState) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension("json.tmp");
    let json = serde_json::to_string_pretty(state)?;
    {
        use std::io::Write;
        let mut f =
            fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
        f.write_all(json.as_bytes())
            .and_then(|_| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
    }
    fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn read_state(path: &Path) -> Result<TuneState> {
    let s = fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&s)
        .with_context(|| format!("{} is not a tare tune state file", path.display()))
}

/// Applies a plan. The exact previous content of every file to be written is saved to
/// `state_file` before the first write; if that fails, nothing is changed (error). Refuses to
/// run while a state file from an earlier tune exists (its values would be lost).
pub fn apply(root: &SysRoot, plan: &TunePlan, state_file: &Path) -> Result<TuneReport> {
    if state_file.exists() {
        bail!(
            "a previous tune's saved values are in {}; run `tare machine reset` first",
            state_file.display()
        );
    }
    let mut failed = Vec::new();
    let mut saved = Vec::new();
    let mut to_write = Vec::new();
    for s in &plan.steps {
        match root.read_raw(&s.path) {
            Ok(prev) => {
                saved.push(SavedValue {
                    path: s.path.clone(),
                    previous: prev,
                });
                to_write.push(s);
            }
            Err(e) => failed.push(Failure {
                path: s.path.clone(),
                wanted: s.value.clone(),
                kind: classify(&e),
                message: e.to_string(),
            }),
        }
    }
    let mut state = TuneState {
        version: 1,
        root: root.root().to_path_buf(),
        saved_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        entries: saved,
    };
    let mut changed = Vec::new();
    if !state.entries.is_empty() {
        write_state(state_file, &state).context("tune aborted before changing anything")?;
        let mut kept = Vec::new();
        for (s, sv) in to_write.iter().zip(state.entries.iter()) {
            match root.write(&s.path, &format!("{}\n", s.value)) {
                Err(e) => failed.push(Failure {
                    path: s.path.clone(),
                    wanted: s.value.clone(),
                    kind: classify(&e),
                    message: e.to_string(),
                }),
                Ok(()) => {
                    kept.push(sv.clone());
                    let now = root.read_string(&s.path).unwrap_or_default();
                    if now != s.value {
                        failed.push(Failure {
                            path: s.path.clone(),
                            wanted: s.value.clone(),
                            kind: FailKind::NotTaken,
                            message: format!(
                                "{} reads {now:?} after writing {:?}",
                                s.path, s.value
                            ),
                        });
                    } else {
                        changed.push(Change {
                            path: s.path.clone(),
                            from: sv.previous.clone(),
                            to: s.value.clone(),
                        });
                    }
                }
            }
        }
        // Keep only what was written, so that reset does not fail on files it never touched.
        if kept.len() != state.entries.len() {
            state.entries = kept;
            if state.entries.is_empty() {
                let _ = fs::remove_file(state_file);
            } else {
                write_state(state_file, &state)?;
            }
        }
    }
    let state_written = !state.entries.is_empty();
    Ok(TuneReport {
        complete: failed.is_empty() && plan.not_possible.is_empty(),
        changed,
        failed,
        not_possible: plan.not_possible.clone(),
        already: plan.already.clone(),
        left_alone: plan.left_alone.clone(),
        state_file: state_written.then(|| state_file.to_path_buf()),
    })
}

/// Restores the values saved by [`apply`], in reverse order, byte for byte, and removes the
/// state file. Values that cannot be restored stay in the state file for another try.
pub fn reset(root: &SysRoot, state_file: &Path) -> Result<ResetReport> {
    if !state_file.exists() {
        return Ok(ResetReport {
            restored: Vec::new(),
            failed: Vec::new(),
            state_file_removed: false,
            note: Some(format!(
                "nothing to reset: no state file at {}",
                state_file.display()
            )),
        });
    }
    let mut state = read_state(state_file)?;
    if state.root != root.root() {
        bail!(
            "{} was saved for root {}, not {}; reset with that root",
            state_file.display(),
            state.root.display(),
            root.root().display()
        );
    }
    let mut restored = Vec::new();
    let mut failed = Vec::new();
    let mut remaining = Vec::new();
    for sv in state.entries.iter().rev() {
        let now = root.read_raw(&sv.path).unwrap_or_default();
        match root.write(&sv.path, &sv.previous) {
            Ok(()) => restored.push(Change {
                path: sv.path.clone(),
                from: now,
                to: sv.previous.clone(),
            }),
            Err(e) => {
                failed.push(Failure {
                    path: sv.path.clone(),
                    wanted: sv.previous.clone(),
                    kind: classify(&e),
                    message: e.to_string(),
                });
                remaining.push(sv.clone());
            }
        }
    }
    let removed = if remaining.is_empty() {
        fs::remove_file(state_file)
            .with_context(|| format!("restored, but cannot remove {}", state_file.display()))?;
        true
    } else {
        remaining.reverse();
        state.entries = remaining;
        write_state(state_file, &state)?;
        false
    };
    Ok(ResetReport {
        restored,
        failed,
        state_file_removed: removed,
        note: None,
    })
}

/// Report of [`apply`] as text.
pub fn render_report(r: &TuneReport) -> String {
    let mut out = String::new();
    for c in &r.changed {
        out.push_str(&format!(
            "set {} = {} (was {})\n",
            c.path,
            c.to,
            c.from.trim()
        ));
    }
    for f in &r.failed {
        out.push_str(&format!("FAILED {}: {}\n", f.path, f.message));
    }
    for n in &r.not_possible {
        out.push_str(&format!("cannot: {n}\n"));
    }
    for n in &r.already {
        out.push_str(&format!("already: {n}\n"));
    }
    match &r.state_file {
        Some(p) => out.push_str(&format!(
            "previous values saved in {}; `tare machine reset` restores them\n",
            p.display()
        )),
        None => out.push_str("nothing was changed\n"),
    }
    out.push_str(if r.complete {
        "tuning complete\n"
    } else {
        "tuning INCOMPLETE: see above\n"
    });
    out
}

/// Report of [`reset`] as text.
pub fn render_reset(r: &ResetReport) -> String {
    let mut out = String::new();
    if let Some(n) = &r.note {
        out.push_str(&format!("{n}\n"));
    }
    for c in &r.restored {
        out.push_str(&format!(
            "restored {} = {} (was {})\n",
            c.path,
            c.to.trim(),
            c.from.trim()
        ));
    }
    for f in &r.failed {
        out.push_str(&format!("FAILED {}: {}\n", f.path, f.message));
    }
    if !r.failed.is_empty() {
        out.push_str(
            "the values not restored stay in the state file; fix the cause and run reset again\n",
        );
    }
    out
}
