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

use super::freq::{format_khz, read_cpufreq, turbo_controls, CpuFreq, TurboControl};
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
                    crate::units::plural(r.cpus.len() - flagged.len(), "CPU")
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
    let at = inv
        .items
        .iter()
        .rposition(|i| i.section == "virtualization")
        .map_or(inv.items.len(), |i| i + 1);
    inv.items.splice(at..at, it.0);
    inv.facts.speed = Some(r);
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

fn pct(x: f64) -> String {
    if x == 0.0 {
        "0%".into()
    } else if x < 0.001 {
        "<0.1%".into()
    } else {
        format!("{:.1}%", 100.0 * x)
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

/// One line per distinct set of idle states (CPUs that share one are named together), and a
/// warning when a deep state is enabled.
fn idle_items(it: &mut Items, f: &Facts) {
    use super::idle::DEEP_US;
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
    let describe = |c: &super::idle::CpuIdle| -> String {
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
    let mut groups: Vec<(Vec<usize>, &super::idle::CpuIdle)> = Vec::new();
    let shape = |c: &super::idle::CpuIdle| {
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
            name: format!(
                "idle states (CPU {}, {driver})",
                super::topology::format_cpu_list(cpus)
            ),
            value: describe(c),
            verdict,
            advice,
        });
    }
}

fn derive_items(root: &SysRoot, f: &Facts) -> Vec<Item> {
    use Verdict::*;
    let mut it = Items(Vec::new());

    // --- cpu
    it.push("cpu", "model", f.info.cpu_model.clone(), Ok, None);
    match &f.topology {
        None => it.push(
            "cpu",
            "topology",
            format!(
                "unavailable (no readable {})",
                root.path("/sys/devices/system/cpu").display()
            ),
            Unknown,
            Some("cores cannot be chosen from the topology; runs are not pinned"),
        ),
        Some(t) => {
            let pk = t.packages();
            it.push("cpu", "packages", pk.len().max(1).to_string(), Ok, None);
            it.push(
                "cpu",
                "cores",
                format!(
                    "{} physical, {} logical (online {})",
                    t.cores.len(),
                    t.cpus.len(),
                    format_cpu_list(&t.cpus.iter().map(|c| c.id).collect::<Vec<_>>())
                ),
                Ok,
                None,
            );
            let tpc = t.threads_per_core();
            if tpc > 1 {
                let ex: Vec<String> = t
                    .cores
                    .iter()
                    .take(2)
                    .map(|c| format!("({})", format_cpu_list(&c.cpus)))
                    .collect();
                it.push(
                    "cpu",
                    "SMT",
                    format!("on, {tpc} threads per core, siblings {} ...", ex.join(" ")),
                    Ok,
                    Some("tare gives runs whole physical cores; SMT siblings are never shared"),
                );
            } else {
                it.push("cpu", "SMT", "off or absent (1 thread per core)", Ok, None);
            }
            if t.nodes.len() > 1 {
                let v: Vec<String> = t
                    .nodes
                    .iter()
                    .map(|(n, c)| format!("node{n}: {}", format_cpu_list(c)))
                    .collect();
                it.push(
                    "cpu",
                    "NUMA",
                    format!("{} nodes ({})", t.nodes.len(), v.join(", ")),
                    Ok,
                    Some("tare keeps a run within one node when it can"),
                );
            } else if t.nodes.len() == 1 {
                it.push("cpu", "NUMA", "1 node", Ok, None);
            } else {
                it.push(
                    "cpu",
                    "NUMA",
                    "unknown (no /sys/devices/system/node)",
                    Unknown,
                    None,
                );
            }
            let mut caches: BTreeMap<(u32, String, Option<u64>), usize> = BTreeMap::new();
            for c in &t.caches {
                *caches
                    .entry((c.level, c.kind.clone(), c.size_bytes))
                    .or_default() += 1;
            }
            if caches.is_empty() {
                it.push(
                    "cpu",
                    "caches",
                    "unknown (no cpu*/cache/index*)",
                    Unknown,
                    None,
                );
            } else {
                let v: Vec<String> = caches
                    .iter()
                    .map(|((l, k, s), n)| {
                        let k = match k.as_str() {
                            "Data" => "d",
                            "Instruction" => "i",
                            _ => "",
                        };
                        let s = s.map(format_bytes).unwrap_or_else(|| "?".into());
                        format!("L{l}{k} {s} ×{n}")
                    })
                    .collect();
                it.push("cpu", "caches", v.join(", "), Ok, None);
            }
            let caps = t.capacities();
            if caps.len() > 1 {
                let mut groups: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
                for c in &t.cpus {
                    if let Some(cap) = c.capacity {
                        groups.entry(cap).or_default().push(c.id);
                    }
                }
                let v: Vec<String> = groups
                    .iter()
                    .rev()
                    .map(|(cap, ids)| format!("{cap} ({})", format_cpu_list(ids)))
                    .collect();
                it.push(
                    "cpu",
                    "cpu_capacity",
                    format!("heterogeneous: {}", v.join(", ")),
                    Ok,
                    Some("runs go to the highest-capacity (big) cores"),
                );
            } else if let Some(c) = caps.iter().next() {
                it.push("cpu", "cpu_capacity", format!("{c} on all CPUs"), Ok, None);
            } else {
                it.push(
                    "cpu",
                    "cpu_capacity",
                    "not reported (all cores alike)",
                    Ok,
                    None,
                );
            }
            let iso = if t.isolated.is_empty() {
                "none".to_string()
            } else {
                format_cpu_list(&t.isolated)
            };
            it.push("cpu", "isolated (isolcpus)", iso, Ok,
                t.isolated.is_empty().then_some("isolcpus=<cpus> on the kernel command line keeps other tasks off the run's cores"));
            match &t.nohz_full {
                None => it.push("cpu", "nohz_full", "not supported by this kernel", Ok, None),
                Some(v) if v.is_empty() => it.push("cpu", "nohz_full", "none", Ok, None),
                Some(v) => it.push("cpu", "nohz_full", format_cpu_list(v), Ok, None),
            }
        }
    }

    // --- frequency
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

    // --- idle states
    idle_items(&mut it, f);

    // --- gpu
    for g in &f.gpus {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
        it.push(
            "gpu",
            format!("GPU {} ({})", g.index, g.name),
            format!(
                "SM clock {} MHz, memory clock {} MHz, {} °C, {} W, energy counter {}",
                opt(g.sm_clock_mhz.map(|v| v.to_string())),
                opt(g.mem_clock_mhz.map(|v| v.to_string())),
                opt(g.temperature_c.map(|v| v.to_string())),
                opt(g.power_w.map(|v| format!("{v:.1}"))),
                match g.energy_j {
                    Some(j) => format!("{j:.1} J"),
                    None => "none (runs record no GPU energy)".into(),
                }
            ),
            Verdict::Ok,
            None,
        );
    }

    // --- thermal
    if f.thermal.is_empty() {
        it.push(
            "thermal",
            "thermal zones",
            "unavailable (no /sys/class/thermal/thermal_zone*)",
            Unknown,
            Some("temperature cannot be watched; cool-down waits are not possible"),
        );
    } else {
        for z in &f.thermal {
            let trips: Vec<String> = z
                .trips
                .iter()
                .map(|t| format!("{} {:.0} °C", t.kind, t.temp_c))
                .collect();
            let temp = z
                .temp_c
                .map(|t| format!("{t:.1} °C"))
                .unwrap_or_else(|| "unreadable".into());
            let value = if trips.is_empty() {
                temp.clone()
            } else {
                format!("{temp} (trips: {})", trips.join(", "))
            };
            let lowest = z
                .trips
                .iter()
                .filter(|t| t.kind != "active")
                .map(|t| t.temp_c)
                .fold(f64::INFINITY, f64::min);
            let (v, adv) = match z.temp_c {
                None => (Unknown, None),
                Some(t) if lowest.is_finite() && t >= lowest - 10.0 => (
                    Warn,
                    Some("within 10 °C of a throttling trip point; let it cool down (--cool-down)"),
                ),
                Some(_) => (Ok, None),
            };
            it.push(
                "thermal",
                format!(
                    "{} ({}{})",
                    z.name,
                    z.kind,
                    if z.cpu { ", cpu" } else { "" }
                ),
                value,
                v,
                adv,
            );
        }
    }

    // --- power
    match f.on_battery() {
        None => it.push(
            "power",
            "power supply",
            "no /sys/class/power_supply entries (server or VM)",
            Unknown,
            None,
        ),
        Some(true) => {
            let b = f.power.iter().find(|p| p.kind == "Battery");
            let cap = b
                .and_then(|b| b.capacity_percent)
                .map(|c| format!(", {c}%"))
                .unwrap_or_default();
            it.push(
                "power",
                "power supply",
                format!(
                    "on battery ({} discharging{cap})",
                    b.map(|b| b.name.as_str()).unwrap_or("?")
                ),
                Warn,
                Some("plug in: on battery the governors and firmware save power"),
            );
        }
        Some(false) => {
            let v: Vec<String> = f
                .power
                .iter()
                .map(|p| {
                    format!(
                        "{} {}{}",
                        p.name,
                        p.kind,
                        match (p.online, &p.status) {
                            (Some(o), _) => format!(" {}", if o { "online" } else { "offline" }),
                            (None, Some(s)) => format!(" {s}"),
                            _ => String::new(),
                        }
                    )
                })
                .collect();
            it.push("power", "power supply", v.join(", "), Ok, None);
        }
    }

    // --- memory
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

    // --- kernel
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

    // --- load
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

    // --- virtualization
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

    // --- pressure
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
            let line = |l: Option<super::procfs::PsiLine>| {
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
