//! `tare machine`: everything about the machine that matters for measuring, with a verdict.
//!
//! For: one [`Inventory`] (serializable for `--json`) made of [`Facts`] (structured values, read
//! once) and [`Item`]s (`name`, `value`, `verdict` ok | warn | unknown, `advice`), and
//! [`render_text`] for the terminal. What cannot be read is said, with the path that is missing,
//! and gets the verdict `unknown`, never a guess.
//!
//! Not for: changing the machine (see [`super::tune`]), per-run records (see [`super::probe`]),
//! or deciding what to warn about at the start of a session (see [`super::warnings`], which
//! reads [`Facts`]).
//!
//! This file: the records, reading the facts, the CPU speed section, rendering, and
//! `derive_items`, which takes the sections in order from the files beside it: `cpu.rs`,
//! `frequency.rs` (frequency, turbo, idle states), `devices.rs` (GPU, thermal, power) and
//! `system.rs` (memory, kernel, load, virtualization, pressure).

mod cpu;
mod devices;
mod frequency;
mod system;

use super::freq::{read_cpufreq, turbo_controls, CpuFreq, TurboControl};
use super::info::collect_info_with;
use super::procfs::{meminfo_bytes, parse_loadavg, parse_proc_stat, parse_psi, LoadAvg, Psi};
use super::sysfs::SysRoot;
use super::thermal::{read_zones, Zone};
use super::topology::{format_cpu_list, read_topology, Topology};
use crate::results::MachineInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// How an item looks for benchmarking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Fine for measuring (or nothing to do about it).
    Ok,
    /// Adds noise or bias; the advice says what to do.
    Warn,
    /// Could not be read here; the value says why.
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Unknown => "unknown",
        }
    }
}

/// One line of the inventory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Group: "cpu", "frequency", "thermal", "power", "memory", "kernel", "load",
    /// "virtualization", "pressure".
    pub section: String,
    pub name: String,
    pub value: String,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}

/// A power supply under /sys/class/power_supply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerSupply {
    pub name: String,
    /// "Mains", "Battery", "USB", ...
    pub kind: String,
    pub online: Option<bool>,
    /// Battery status: "Charging", "Discharging", "Full", ...
    pub status: Option<String>,
    pub capacity_percent: Option<u64>,
}

/// The structured values behind the items.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Facts {
    pub info: MachineInfo,
    pub topology: Option<Topology>,
    /// cpufreq state per online CPU that has a cpufreq directory.
    pub cpufreq: Vec<CpuFreq>,
    pub turbo: Vec<TurboControl>,
    /// /proc/sys/kernel/randomize_va_space (0 off, 1 partial, 2 full).
    pub aslr: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_used_bytes: Option<u64>,
    pub loadavg: Option<LoadAvg>,
    /// `procs_running` of /proc/stat (includes tare itself).
    pub procs_running: Option<u64>,
    pub thermal: Vec<Zone>,
    pub power: Vec<PowerSupply>,
    /// Share of all CPU time stolen by the hypervisor since boot (0..1).
    pub steal_since_boot: Option<f64>,
    /// Share stolen during the short sample, if one was taken.
    pub steal_sample: Option<f64>,
    pub steal_sample_seconds: Option<f64>,
    /// /proc/pressure/{cpu,io,memory}.
    pub psi: BTreeMap<String, Psi>,
    pub perf_event_paranoid: Option<i64>,
    /// cpuidle: the driver and each online CPU's idle states.
    #[serde(default)]
    pub idle: super::idle::Idle,
    /// NVIDIA GPUs (NVML), empty where there are none.
    #[serde(default)]
    pub gpus: Vec<super::gpu::GpuReading>,
    /// Each CPU's speed, timed (`tare machine` only: [`add_speed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<super::speed::SpeedReport>,
}

impl Facts {
    /// Whether a battery is discharging and no mains supply is online.
    pub fn on_battery(&self) -> Option<bool> {
        if self.power.is_empty() {
            return None;
        }
        let mains = self
            .power
            .iter()
            .any(|p| p.kind == "Mains" && p.online == Some(true));
        let discharging = self
            .power
            .iter()
            .any(|p| p.kind == "Battery" && p.status.as_deref() == Some("Discharging"));
        Some(discharging && !mains)
    }

    /// CPUs whose governor is not `performance`, with the governor.
    pub fn non_performance_governors(&self) -> Vec<(usize, String)> {
        self.cpufreq
            .iter()
            .filter_map(|f| {
                let g = f.governor.clone()?;
                (g != "performance").then_some((f.cpu, g))
            })
            .collect()
    }

    /// Load average threshold above which other work is assumed: max(0.5, 5% of the CPUs).
    pub fn load_threshold(&self) -> f64 {
        (0.05 * self.info.logical_cpus as f64).max(0.5)
    }
}

/// The whole inventory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inventory {
    pub items: Vec<Item>,
    pub facts: Facts,
}

impl Inventory {
    pub fn item(&self, name: &str) -> Option<&Item> {
        self.items.iter().find(|i| i.name == name)
    }
}

/// How to take the inventory.
#[derive(Debug, Clone, PartialEq)]
pub struct InventoryOptions {
    /// Length of the steal-time sample (two reads of /proc/stat); `None` skips it (tests).
    pub steal_sample: Option<Duration>,
}

impl Default for InventoryOptions {
    fn default() -> Self {
        InventoryOptions {
            steal_sample: Some(Duration::from_millis(200)),
        }
    }
}

/// Reads all facts and derives the items.
pub fn take_inventory(root: &SysRoot, opts: &InventoryOptions) -> Inventory {
    let facts = read_facts(root, opts);
    let items = derive_items(root, &facts);
    Inventory { items, facts }
}

/// Reads the facts only.
pub fn read_facts(root: &SysRoot, opts: &InventoryOptions) -> Facts {
    let topology = read_topology(root).ok();
    let info = collect_info_with(root, topology.as_ref());
    let cpus: Vec<usize> = match &topology {
        Some(t) => t.cpus.iter().map(|c| c.id).collect(),
        None => Vec::new(),
    };
    let cpufreq = cpus.iter().filter_map(|&c| read_cpufreq(root, c)).collect();
    let meminfo = root.read_raw("/proc/meminfo").ok();
    let swap_total_bytes = meminfo
        .as_deref()
        .and_then(|m| meminfo_bytes(m, "SwapTotal"));
    let swap_free = meminfo
        .as_deref()
        .and_then(|m| meminfo_bytes(m, "SwapFree"));
    let swap_used_bytes = match (swap_total_bytes, swap_free) {
        (Some(t), Some(f)) => Some(t.saturating_sub(f)),
        _ => None,
    };
    let stat1 = root
        .read_raw("/proc/stat")
        .ok()
        .map(|s| parse_proc_stat(&s));
    let steal_since_boot = stat1.as_ref().and_then(|s| {
        let tot = s.total.total();
        (tot > 0).then(|| s.total.steal as f64 / tot as f64)
    });
    let (mut steal_sample, mut steal_sample_seconds) = (None, None);
    if let (Some(d), Some(a)) = (opts.steal_sample, stat1.as_ref()) {
        std::thread::sleep(d);
        if let Some(b) = root
            .read_raw("/proc/stat")
            .ok()
            .map(|s| parse_proc_stat(&s))
        {
            let delta = b.total.since(&a.total);
            if delta.total() > 0 {
                steal_sample = Some(delta.steal as f64 / delta.total() as f64);
                steal_sample_seconds = Some(d.as_secs_f64());
            }
        }
    }
    let mut psi = BTreeMap::new();
    for n in ["cpu", "io", "memory"] {
        if let Ok(s) = root.read_raw(&format!("/proc/pressure/{n}")) {
            psi.insert(n.to_string(), parse_psi(&s));
        }
    }
    Facts {
        info,
        cpufreq,
        turbo: turbo_controls(root),
        aslr: root.opt_u64("/proc/sys/kernel/randomize_va_space"),
        swap_total_bytes,
        swap_used_bytes,
        loadavg: root
            .read_raw("/proc/loadavg")
            .ok()
            .and_then(|s| parse_loadavg(&s)),
        procs_running: stat1.as_ref().and_then(|s| s.procs_running),
        thermal: read_zones(root),
        power: read_power(root),
        steal_since_boot,
        steal_sample,
        steal_sample_seconds,
        psi,
        perf_event_paranoid: root.opt_i64("/proc/sys/kernel/perf_event_paranoid"),
        idle: super::idle::read(root, &cpus),
        gpus: super::gpu::Nvml::load()
            .map(|n| n.read())
            .unwrap_or_default(),
        topology,
        speed: None,
    }
}

/// Adds the CPU speed section (`machine::speed`) after the virtualization items: a summary
/// with the verdict, and a line per CPU (per flagged CPU only beyond 16 CPUs).
pub fn add_speed(inv: &mut Inventory, r: super::speed::SpeedReport) {
    use super::speed::{SLOW, UNSTEADY};
    let mut it = Items(Vec::new());
    let fmt = |s: f64| crate::units::format_time(s, None);
    if r.cpus.is_empty() {
        it.push(
            "speed",
            "CPU speed",
            format!(
                "not measured: no CPU could be pinned to{}",
                if r.unpinnable.is_empty() {
                    String::new()
                } else {
                    format!(" (tried {})", format_cpu_list(&r.unpinnable))
                }
            ),
            Verdict::Unknown,
            None,
        );
    } else {
        let fastest = r.cpus.iter().map(|c| c.typical).fold(f64::MAX, f64::min);
        let flagged = r.flagged();
        let head = format!(
            "{} timed {} times each over {:.1} s in shuffled order (a {}-step integer loop, {} on the fastest); typical times {:.2}× apart",
            crate::units::plural(r.cpus.len(), "CPU"),
            r.passes,
            r.seconds,
            crate::units::format_count(r.loops as f64),
            fmt(fastest),
            r.across
        ) + &r
            .together
            .map(|t| format!(", all together moved {t:.2}× over time"))
            .unwrap_or_default();
        if flagged.is_empty() && !r.machine_unsteady() {
            it.push("speed", "CPU speed", head, Verdict::Ok, None);
        } else {
            let virtualized = inv.facts.info.virtualization.is_some();
            let limit = SLOW.min(UNSTEADY);
            it.push(
                "speed",
                "CPU speed",
                format!(
                    "{}: {}",
                    r.findings(&flagged, limit),
                    r.cause(&flagged, virtualized)
                ),
                Verdict::Warn,
                Some(&format!(
                    "{head}. Runs on these CPUs take longer by chance; --cpus N leaves CPUs that are unsteady at its start out, \
                     and comparing commands head to head (interleaved rounds, the default) puts both through the same speeds"
                )),
            );
        }
        speed_cpu_items(&mut it, &r, flagged.len());
    }
    let at = inv
        .items
        .iter()
        .rposition(|i| i.section == "virtualization")
        .map_or(inv.items.len(), |i| i + 1);
    inv.items.splice(at..at, it.0);
    inv.facts.speed = Some(r);
}

/// The speed section's line per CPU (per flagged CPU only beyond 16 CPUs, the others in one
/// line) and the CPUs that could not be timed.
fn speed_cpu_items(it: &mut Items, r: &super::speed::SpeedReport, flagged: usize) {
    use super::speed::{SLOW, UNSTEADY};
    let fmt = |s: f64| crate::units::format_time(s, None);
    let many = r.cpus.len() > 16;
    for c in &r.cpus {
        let off = c.slow(SLOW) || c.unsteady(UNSTEADY);
        if many && !off {
            continue;
        }
        let over = match (c.over_time, c.own_over_time, r.together) {
            (Some(o), Some(own), Some(_)) => {
                format!(", varied {o:.2}× over time ({own:.2}× beyond the others)")
            }
            (Some(o), _, _) => format!(", varied {o:.2}× over time"),
            _ => String::new(),
        };
        let extra = match (c.other_busy, c.steal) {
            (Some(o), _) if o > super::speed::OTHER_WORK => {
                format!(", other work {:.0}% of its time", 100.0 * o)
            }
            (_, Some(st)) if st > 0.01 => format!(", steal {:.0}%", 100.0 * st),
            _ => String::new(),
        };
        it.push(
            "speed",
            format!("CPU {}", c.cpu),
            format!(
                "{} a loop, {:.2}× the fastest{over}{extra}; {} loops",
                fmt(c.typical),
                c.slower,
                c.visits
            ),
            if off { Verdict::Warn } else { Verdict::Ok },
            None,
        );
    }
    if many {
        it.push(
            "speed",
            "other CPUs",
            format!(
                "{} within {SLOW}× of the fastest and steady",
                crate::units::plural(r.cpus.len() - flagged, "CPU")
            ),
            Verdict::Ok,
            None,
        );
    }
    if !r.unpinnable.is_empty() {
        it.push(
            "speed",
            "not timed",
            format!(
                "CPU {}: not allowed to this process (cpuset or affinity)",
                format_cpu_list(&r.unpinnable)
            ),
            Verdict::Unknown,
            None,
        );
    }
}

fn read_power(root: &SysRoot) -> Vec<PowerSupply> {
    let dir = "/sys/class/power_supply";
    let mut out = Vec::new();
    for name in root.list_dir(dir).unwrap_or_default() {
        let d = format!("{dir}/{name}");
        out.push(PowerSupply {
            kind: root
                .opt_string(&format!("{d}/type"))
                .unwrap_or_else(|| "unknown".into()),
            online: root.opt_u64(&format!("{d}/online")).map(|v| v == 1),
            status: root.opt_string(&format!("{d}/status")),
            capacity_percent: root.opt_u64(&format!("{d}/capacity")),
            name,
        });
    }
    out
}

/// Formats bytes with binary prefixes: 1536 → "1.5 KiB".
pub fn format_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        let s = format!("{v:.2}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s} {}", units[i])
    }
}

struct Items(Vec<Item>);
impl Items {
    fn push(
        &mut self,
        section: &str,
        name: impl Into<String>,
        value: impl Into<String>,
        v: Verdict,
        advice: Option<&str>,
    ) {
        self.0.push(Item {
            section: section.into(),
            name: name.into(),
            value: value.into(),
            verdict: v,
            advice: advice.map(String::from),
        });
    }
}

fn derive_items(root: &SysRoot, f: &Facts) -> Vec<Item> {
    let mut it = Items(Vec::new());

    // --- cpu
    cpu::cpu_items(&mut it, root, f);

    // --- frequency
    frequency::frequency_items(&mut it, f);
    frequency::turbo_items(&mut it, f);

    // --- idle states
    frequency::idle_items(&mut it, f);

    // --- gpu
    devices::gpu_items(&mut it, f);

    // --- thermal
    devices::thermal_items(&mut it, f);

    // --- power
    devices::power_items(&mut it, f);

    // --- memory
    system::memory_items(&mut it, f);

    // --- kernel
    system::kernel_items(&mut it, f);

    // --- load
    system::load_items(&mut it, f);

    // --- virtualization
    system::virtualization_items(&mut it, f);

    // --- pressure
    system::pressure_items(&mut it, f);
    it.0
}

const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// Renders the inventory as aligned columns, grouped by section:
/// `verdict  name  value`, and the advice below the value after `→`.
pub fn render_text(inv: &Inventory, color: bool) -> String {
    let w_name = inv
        .items
        .iter()
        .map(|i| i.name.chars().count())
        .max()
        .unwrap_or(0);
    let w_verdict = "unknown".len();
    let mut out = String::new();
    let mut section = "";
    for i in &inv.items {
        if i.section != section {
            section = &i.section;
            if !out.is_empty() {
                out.push('\n');
            }
            if color {
                out.push_str(&format!("{BOLD}{section}{RESET}\n"));
            } else {
                out.push_str(&format!("{section}\n"));
            }
        }
        let v = i.verdict.as_str();
        let pad_v = " ".repeat(w_verdict - v.len());
        let v = if color {
            let c = match i.verdict {
                Verdict::Ok => GREEN,
                Verdict::Warn => YELLOW,
                Verdict::Unknown => DIM,
            };
            format!("{c}{v}{RESET}")
        } else {
            v.to_string()
        };
        let pad_name = " ".repeat(w_name - i.name.chars().count());
        out.push_str(&format!(
            "  {v}{pad_v}  {}{pad_name}  {}\n",
            i.name, i.value
        ));
        if let Some(a) = &i.advice {
            out.push_str(&format!(
                "  {}  {}  → {a}\n",
                " ".repeat(w_verdict),
                " ".repeat(w_name)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes() {
        assert_eq!(super::format_bytes(0), "0 B");
        assert_eq!(super::format_bytes(1536), "1.5 KiB");
        assert_eq!(super::format_bytes(12 << 20), "12 MiB");
    }
}
