//! `tare run`'s countermeasures: `--cool-down`, `--heat-up`, `--sleep-between`, `--priority`
//! and the interference threshold, and the ones asked for that cannot act on this machine.
//!
//! For: [`countermeasures`] and [`idle_countermeasures`]. Not for: acting on them (the method
//! layer does, run by run) or the machine's other settings (`--idle`, `--quiesce`, in
//! `mod.rs`).

use crate::cli::run::args::*;
use crate::error::usage;
use crate::exec::{Limits, Priority};
use crate::machine::cooldown::CoolDown;
use crate::machine::probe::InterferenceThresholds;
use crate::machine::{sysfs::SysRoot, topology};
use crate::plan::Countermeasures;
use crate::units;

/// Cool-down, heat-up, pauses, priority and interference settings.
pub(super) fn countermeasures(a: &RunArgs, limits: &Limits) -> anyhow::Result<Countermeasures> {
    let cool_down = match &a.cool_down {
        None => None,
        Some(text) => {
            let (temp, wait) = match text.split_once(':') {
                Some((t, w)) => (t, Some(w)),
                None => (text.as_str(), None),
            };
            let target: f64 = temp
                .trim()
                .trim_end_matches("°C")
                .trim_end_matches('C')
                .parse()
                .ok()
                .filter(|t: &f64| t.is_finite() && *t > 0.0 && *t < 200.0)
                .ok_or_else(|| {
                    usage(format!("--cool-down '{text}': give a temperature between 0 and 200 °C, optionally with a longest wait, e.g. 60 or 55:2m"))
                })?;
            let mut cd = CoolDown::new(target);
            if let Some(w) = wait {
                cd.max_wait =
                    units::parse_duration(w).map_err(|e| usage(format!("--cool-down: {e}")))?;
            }
            Some(cd)
        }
    };
    let dur = |opt: &Option<String>, flag: &str| -> anyhow::Result<Option<std::time::Duration>> {
        opt.as_deref()
            .map(|s| units::parse_duration(s).map_err(|e| usage(format!("{flag}: {e}"))))
            .transpose()
    };
    let priority = match a.priority {
        PriorityArg::Normal => Priority::Normal,
        PriorityArg::High => Priority::High,
        PriorityArg::Realtime => Priority::Realtime {
            cap_seconds: limits
                .cpu
                .map_or(60, |d| d.as_secs_f64().ceil() as u64)
                .max(1),
        },
    };
    if priority != Priority::Normal && !crate::exec::isolate::sys::is_root() {
        return Err(usage("--priority high/realtime needs root (raising priority is privileged); run as root or drop it"));
    }
    // 100% is allowed: no run is flagged (a share of the run's CPUs cannot exceed all of them).
    let share = units::parse_fraction_to_whole(&a.interference_threshold).map_err(|e| {
        usage(format!(
            "--interference-threshold {}: {e}",
            a.interference_threshold
        ))
    })?;
    let thresholds = InterferenceThresholds {
        other_cpu_share: share,
        steal_share: share,
        ..Default::default()
    };
    Ok(Countermeasures {
        cool_down,
        heat_up: dur(&a.heat_up, "--heat-up")?,
        sleep_between: a
            .sleep_between
            .as_deref()
            .map(|s| {
                units::parse_duration_or_zero(s).map_err(|e| usage(format!("--sleep-between: {e}")))
            })
            .transpose()?
            .filter(|d| !d.is_zero()),
        priority,
        thresholds,
        exclude_interfered: a.exclude_interfered,
    })
}

/// Countermeasures asked for that cannot act on this machine, in words (said once, before the
/// first run; each run's record says "skipped" too).
pub(super) fn idle_countermeasures(
    root: &SysRoot,
    c: &Countermeasures,
    cores: Option<&[usize]>,
) -> Vec<String> {
    let mut out = Vec::new();
    if c.cool_down.is_some() && crate::machine::thermal::relevant_temp_paths(root).is_empty() {
        out.push(
            "--cool-down cannot act here: this machine exposes no CPU thermal zone (/sys/class/thermal), so runs start without waiting"
                .to_string(),
        );
    }
    if c.heat_up.is_some() {
        let all: Vec<usize> = topology::read_topology(root)
            .map(|t| t.cpus.iter().map(|c| c.id).collect())
            .unwrap_or_default();
        let cores = cores.unwrap_or(&all);
        let any = cores.iter().any(|&cpu| {
            root.exists(&format!(
                "{}/scaling_cur_freq",
                crate::machine::freq::cpufreq_dir(cpu)
            ))
        });
        if !any {
            out.push(
                "--heat-up cannot act here: the run's CPUs report no frequency (no cpufreq in /sys), so runs start without heating up"
                    .to_string(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> SysRoot {
        SysRoot::new(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysfs")
                .join(name),
        )
    }

    fn asking(cool: bool, heat: bool) -> Countermeasures {
        Countermeasures {
            cool_down: cool.then(|| CoolDown::new(60.0)),
            heat_up: heat.then(|| std::time::Duration::from_secs(1)),
            sleep_between: None,
            priority: Priority::Normal,
            thresholds: InterferenceThresholds::default(),
            exclude_interfered: false,
        }
    }

    #[test]
    fn countermeasures_that_cannot_act_are_named() {
        // A VM without thermal zones or cpufreq: both said.
        let vm = fixture("vm-2cpu");
        let said = idle_countermeasures(&vm, &asking(true, true), None);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].starts_with("--cool-down cannot act here"));
        assert!(said[1].starts_with("--heat-up cannot act here"));
        // A machine with both: nothing to say.
        let intel = fixture("intel-4c8t");
        assert!(idle_countermeasures(&intel, &asking(true, true), None).is_empty());
        assert!(idle_countermeasures(&intel, &asking(true, true), Some(&[0, 1])).is_empty());
        // Not asked for: nothing either.
        assert!(idle_countermeasures(&vm, &asking(false, false), None).is_empty());
    }
}
