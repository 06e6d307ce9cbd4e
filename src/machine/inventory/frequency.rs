//! The inventory's `frequency` and `idle` sections: each cpufreq policy's driver, governor and
//! limits, turbo/boost, and the cpuidle states each set of CPUs can enter.
//!
//! For: turning [`Facts`]' cpufreq, turbo and idle values into items with their advice. Not for:
//! reading them (`machine::freq`, `machine::idle`) or changing them (`machine::tune`,
//! `--idle shallow`).

use super::{Facts, Item, Items, Verdict};
use crate::machine::freq::{format_khz, CpuFreq, TurboControl};
use crate::machine::topology::format_cpu_list;

/// One line per group of CPUs with the same driver, governor and limits.
pub(super) fn frequency_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    let cpu0 = f
        .topology
        .as_ref()
        .and_then(|t| t.cpus.first().map(|c| c.id))
        .unwrap_or(0);
    if f.cpufreq.is_empty() {
        it.push("frequency", "cpufreq",
            format!("unavailable (no /sys/devices/system/cpu/cpu{cpu0}/cpufreq)"), Unknown,
            Some("frequency can be neither read nor fixed here (VMs usually hide it); compare only results from this same machine"));
    } else {
        // Group CPUs with the same driver, governor and limits.
        let mut groups: Vec<(Vec<usize>, &CpuFreq, Vec<u64>)> = Vec::new();
        for c in &f.cpufreq {
            let key = |x: &CpuFreq| {
                (
                    x.driver.clone(),
                    x.governor.clone(),
                    x.min_khz,
                    x.max_khz,
                    x.hw_min_khz,
                    x.hw_max_khz,
                )
            };
            match groups.iter_mut().find(|g| key(g.1) == key(c)) {
                Some(g) => {
                    g.0.push(c.cpu);
                    g.2.extend(c.cur_khz);
                }
                None => groups.push((vec![c.cpu], c, c.cur_khz.into_iter().collect())),
            }
        }
        for (cpus, c, curs) in groups {
            let gov = c.governor.clone().unwrap_or_else(|| "?".into());
            let range = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (Some(a), Some(b)) => format!("{}–{}", format_khz(a), format_khz(b)),
                _ => "?".into(),
            };
            let now = match (curs.iter().min(), curs.iter().max()) {
                (Some(a), Some(b)) if a == b => format_khz(*a),
                (Some(a), Some(b)) => format!("{}–{}", format_khz(*a), format_khz(*b)),
                _ => "unreadable".into(),
            };
            let value = format!(
                "{}, governor {gov}, limits {} (hardware {}), now {now}",
                c.driver.clone().unwrap_or_else(|| "?".into()),
                range(c.min_khz, c.max_khz),
                range(c.hw_min_khz, c.hw_max_khz)
            );
            let (v, adv) = if gov == "performance" {
                (Ok, None)
            } else {
                (Warn, Some("frequency follows load; `sudo tare machine tune` sets the performance governor (undo: `tare machine reset`)"))
            };
            it.push(
                "frequency",
                format!("cpu{}", format_cpu_list(&cpus)),
                value,
                v,
                adv,
            );
        }
    }
}

/// Whether turbo/boost is on, by the controls found.
pub(super) fn turbo_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    if f.turbo.is_empty() {
        let why = if f.cpufreq.is_empty() {
            "unavailable (no cpufreq)"
        } else {
            "no control found (no intel_pstate/no_turbo, cpufreq/boost or policy*/boost)"
        };
        it.push("frequency", "turbo/boost", why, Unknown, None);
    } else {
        let on: Vec<&TurboControl> = f.turbo.iter().filter(|t| t.on).collect();
        let desc = |t: &TurboControl| {
            format!(
                "{} = {}",
                t.path.trim_start_matches("/sys/devices/system/cpu/"),
                t.value
            )
        };
        if on.is_empty() {
            it.push(
                "frequency",
                "turbo/boost",
                format!("off ({})", desc(&f.turbo[0])),
                Ok,
                None,
            );
        } else {
            let more = if on.len() > 1 {
                format!(" and {} more", on.len() - 1)
            } else {
                String::new()
            };
            it.push("frequency", "turbo/boost", format!("on ({}{more})", desc(on[0])), Warn,
                Some("with turbo the frequency depends on load and temperature; `sudo tare machine tune` turns it off"));
        }
    }
}

/// One line per distinct set of idle states (CPUs that share one are named together), and a
/// warning when a deep state is enabled.
pub(super) fn idle_items(it: &mut Items, f: &Facts) {
    use crate::machine::idle::DEEP_US;
    if f.idle.cpus.is_empty() {
        it.push(
            "idle",
            "idle states",
            "none (no cpuidle in sysfs): the CPUs idle as the kernel's default idle loop does",
            Verdict::Unknown,
            None,
        );
        return;
    }
    let describe = |c: &crate::machine::idle::CpuIdle| -> String {
        c.states
            .iter()
            .map(|s| {
                format!(
                    "{} (exit {} µs, residency {} µs{}; entered {} times, {:.1} s)",
                    s.name,
                    s.exit_latency_us,
                    s.target_residency_us,
                    if s.disabled { ", disabled" } else { "" },
                    s.usage,
                    s.time_us as f64 / 1e6
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    // Group CPUs by the shape of their states (names, latencies, disabled), not the counters.
    let mut groups: Vec<(Vec<usize>, &crate::machine::idle::CpuIdle)> = Vec::new();
    let shape = |c: &crate::machine::idle::CpuIdle| {
        c.states
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.exit_latency_us,
                    s.target_residency_us,
                    s.disabled,
                )
            })
            .collect::<Vec<_>>()
    };
    for c in &f.idle.cpus {
        match groups.iter_mut().find(|(_, g)| shape(g) == shape(c)) {
            Some((cpus, _)) => cpus.push(c.cpu),
            None => groups.push((vec![c.cpu], c)),
        }
    }
    let driver = f.idle.driver.as_deref().unwrap_or("unknown driver");
    for (cpus, c) in &groups {
        let deep: Vec<&str> = c
            .states
            .iter()
            .filter(|s| !s.disabled && s.exit_latency_us > DEEP_US)
            .map(|s| s.name.as_str())
            .collect();
        let (verdict, advice) = if deep.is_empty() {
            (Verdict::Ok, None)
        } else {
            (
                Verdict::Warn,
                Some(format!(
                    "{} can add up to {} µs of wake-up latency to runs that sleep or wait: --idle shallow holds every CPU out of them for a session",
                    deep.join(", "),
                    c.states.iter().map(|s| s.exit_latency_us).max().unwrap_or(0)
                )),
            )
        };
        it.0.push(Item {
            section: "idle".into(),
            name: format!("idle states (CPU {}, {driver})", format_cpu_list(cpus)),
            value: describe(c),
            verdict,
            advice,
        });
    }
}
