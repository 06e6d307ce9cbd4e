//! Start-of-session warnings: one line each, saying what is wrong for measuring and what to do.
//!
//! For: turning [`Facts`] (and the core choice) into the few warnings printed before a session
//! starts: governor not `performance`, turbo on, swap in use, other load, VM steal time, on
//! battery, too few cores to keep tare apart from the run.
//! Not for: the full picture (that is `tare machine`, see [`super::inventory`]) or per-run
//! interference (see [`super::probe`]).

use super::inventory::Facts;
use super::topology::{format_cpu_list, CoreChoice};

/// Warnings for a session about to start on this machine. Empty when nothing is worth saying.
pub fn session_warnings(facts: &Facts, choice: Option<&CoreChoice>) -> Vec<String> {
    let mut w = Vec::new();

    let slow = facts.non_performance_governors();
    if !slow.is_empty() {
        let mut govs: Vec<&str> = slow.iter().map(|(_, g)| g.as_str()).collect();
        govs.sort_unstable();
        govs.dedup();
        let cpus: Vec<usize> = slow.iter().map(|(c, _)| *c).collect();
        w.push(format!(
            "governor is {} on CPUs {}, not performance: frequency follows load; run `sudo tare machine tune` (undo with `tare machine reset`)",
            govs.join("/"),
            format_cpu_list(&cpus)
        ));
    }

    let on: Vec<&str> = facts
        .turbo
        .iter()
        .filter(|t| t.on)
        .map(|t| t.path.as_str())
        .collect();
    if !on.is_empty() {
        w.push(format!(
            "turbo/boost is on ({}): frequency depends on load and temperature; run `sudo tare machine tune` to turn it off",
            on[0]
        ));
    }

    if let (Some(used), Some(total)) = (facts.swap_used_bytes, facts.swap_total_bytes) {
        if used > 0 {
            w.push(format!(
                "swap in use ({} of {}): paging adds disk I/O to timings; free memory or run `swapoff -a` while measuring",
                super::inventory::format_bytes(used),
                super::inventory::format_bytes(total)
            ));
        }
    }

    if let Some(l) = facts.loadavg {
        if l.one > facts.load_threshold() {
            w.push(format!(
                "load average is {:.2} on {} CPUs: other work competes with the runs; stop it, or pin runs away from it",
                l.one, facts.info.logical_cpus
            ));
        }
    }

    if let Some(v) = &facts.info.virtualization {
        let steal = facts
            .steal_sample
            .unwrap_or(0.0)
            .max(facts.steal_since_boot.unwrap_or(0.0));
        if steal > 0.0 {
            w.push(format!(
                "running in a VM ({v}) with steal time ({:.1}% of CPU time): the host takes CPUs away; runs with steal are flagged, final numbers belong on bare metal",
                100.0 * steal
            ));
        } else {
            w.push(format!(
                "running in a VM ({v}): the host can take CPUs away (steal) and frequency is hidden; final numbers belong on bare metal"
            ));
        }
    }

    if facts.on_battery() == Some(true) {
        w.push("on battery: power saving changes frequencies; plug in before measuring".into());
    }

    if let Some(c) = choice {
        if c.tare_cores.is_empty() {
            w.push(format!(
                "too few cores to keep tare apart from the run: tare shares CPUs {} with it; use fewer --cpus on this machine",
                format_cpu_list(&c.run_cores)
            ));
        }
        for n in &c.notes {
            if !n.starts_with("too few cores") {
                w.push(format!("core choice: {n}"));
            }
        }
    }
    w
}
