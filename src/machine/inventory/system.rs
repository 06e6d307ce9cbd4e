//! The inventory's `memory`, `kernel`, `load`, `virtualization` and `pressure` sections: swap
//! and RAM, ASLR and perf_event_paranoid, the load average, the hypervisor and its steal time,
//! and pressure stall information.
//!
//! For: turning [`Facts`]' system-wide values into items. Not for: reading them
//! (`machine::procfs`, `machine::info`) or the warnings printed before a session
//! (`machine::warnings`).

use super::{format_bytes, Facts, Items, Verdict};

fn pct(x: f64) -> String {
    if x == 0.0 {
        "0%".into()
    } else if x < 0.001 {
        "<0.1%".into()
    } else {
        format!("{:.1}%", 100.0 * x)
    }
}

/// Swap (used is a warning) and RAM.
pub(super) fn memory_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    match (f.swap_total_bytes, f.swap_used_bytes) {
        (Some(0), _) => it.push("memory", "swap", "none", Ok, None),
        (Some(t), Some(0)) => it.push(
            "memory",
            "swap",
            format!("{} configured, none used", format_bytes(t)),
            Ok,
            None,
        ),
        (Some(t), Some(u)) => it.push(
            "memory",
            "swap",
            format!("{} used of {}", format_bytes(u), format_bytes(t)),
            Warn,
            Some("swapping adds disk I/O to timings; free memory, or `swapoff -a` while measuring"),
        ),
        _ => it.push(
            "memory",
            "swap",
            "unknown (no SwapTotal in /proc/meminfo)",
            Unknown,
            None,
        ),
    }
    it.push(
        "memory",
        "RAM",
        if f.info.memory_bytes > 0 {
            format_bytes(f.info.memory_bytes)
        } else {
            "unknown".into()
        },
        if f.info.memory_bytes > 0 { Ok } else { Unknown },
        None,
    );
}

/// ASLR, perf_event_paranoid and the kernel's version.
pub(super) fn kernel_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    match f.aslr {
        Some(0) => it.push("kernel", "ASLR", "off (randomize_va_space = 0)", Warn,
            Some("every run gets the same memory layout: one layout is a sample of one; tare leaves ASLR on")),
        Some(v) => it.push("kernel", "ASLR", format!("on (randomize_va_space = {v})"), Ok, None),
        None => it.push("kernel", "ASLR", "unknown (no /proc/sys/kernel/randomize_va_space)", Unknown, None),
    }
    match f.perf_event_paranoid {
        Some(p) if p >= 3 => it.push("kernel", "perf_event_paranoid", p.to_string(), Warn,
            Some("hardware counters are off for everyone; `sysctl kernel.perf_event_paranoid=2` allows them for one's own processes")),
        Some(p) => it.push("kernel", "perf_event_paranoid", p.to_string(), Ok, None),
        None => it.push("kernel", "perf_event_paranoid", "unknown (no perf events)", Unknown, None),
    }
    it.push("kernel", "kernel", f.info.kernel.clone(), Ok, None);
}

/// The load average against the machine's threshold.
pub(super) fn load_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    match f.loadavg {
        Some(l) => {
            let runnable = match (f.procs_running, l.threads) {
                (Some(r), Some(t)) => {
                    format!("; {r} of {t} threads runnable now, this reader included")
                }
                (Some(r), None) => format!("; {r} threads runnable now, this reader included"),
                _ => String::new(),
            };
            let value = format!(
                "{:.2} {:.2} {:.2} (1, 5, 15 min){runnable}",
                l.one, l.five, l.fifteen
            );
            if l.one > f.load_threshold() {
                it.push(
                    "load",
                    "load average",
                    value,
                    Warn,
                    Some("other work competes for CPUs and caches; stop it before measuring"),
                );
            } else {
                it.push("load", "load average", value, Ok, None);
            }
        }
        None => it.push(
            "load",
            "load average",
            "unknown (no /proc/loadavg)",
            Unknown,
            None,
        ),
    }
}

/// The hypervisor, if any, and the steal time since boot and in a short sample.
pub(super) fn virtualization_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    match &f.info.virtualization {
        None => it.push("virtualization", "virtualization", "none detected", Ok, None),
        Some(v) => it.push("virtualization", "virtualization", v.clone(), Warn,
            Some("a VM shares its host: steal time and neighbours add noise; take final numbers on bare metal")),
    }
    match f.steal_since_boot {
        None => it.push(
            "virtualization",
            "steal time",
            "unknown (no /proc/stat)",
            Unknown,
            None,
        ),
        Some(b) => {
            let sample = match (f.steal_sample, f.steal_sample_seconds) {
                (Some(s), Some(d)) => format!(", {} in a {:.0} ms sample", pct(s), d * 1000.0),
                _ => String::new(),
            };
            let worst = b.max(f.steal_sample.unwrap_or(0.0));
            let value = format!("{} since boot{sample}", pct(b));
            if worst > 0.01 {
                it.push(
                    "virtualization",
                    "steal time",
                    value,
                    Warn,
                    Some(
                        "the hypervisor runs others on this VM's CPUs; runs with steal are flagged",
                    ),
                );
            } else {
                it.push("virtualization", "steal time", value, Ok, None);
            }
        }
    }
}

/// One line per resource of pressure stall information.
pub(super) fn pressure_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    if f.psi.is_empty() {
        it.push(
            "pressure",
            "pressure stall (PSI)",
            "unavailable (no /proc/pressure; kernel without PSI or psi=0)",
            Unknown,
            None,
        );
    } else {
        for (n, p) in &f.psi {
            let line = |l: Option<crate::machine::procfs::PsiLine>| {
                l.map(|l| format!("{:.2}% / {:.2}%", l.avg10, l.avg60))
                    .unwrap_or_else(|| "-".into())
            };
            let value = format!(
                "some {}, full {} (avg10 / avg60)",
                line(p.some),
                line(p.full)
            );
            let high = p.some.map(|l| l.avg10 > 5.0).unwrap_or(false);
            it.push("pressure", format!("{n} pressure"), value, if high { Warn } else { Ok },
                high.then_some("tasks are stalled on this resource more than 5% of the time; something else is busy"));
        }
    }
}
