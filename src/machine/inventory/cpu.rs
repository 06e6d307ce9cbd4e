//! The inventory's `cpu` section: the model and the topology tare chooses cores from —
//! packages, cores, SMT, NUMA nodes, caches, `cpu_capacity`, isolated and nohz_full CPUs.
//!
//! For: turning [`Facts`]' topology into items. Not for: reading the topology (that is
//! `machine::topology`) or choosing cores from it (`topology::choose_cores`).

use super::{format_bytes, Facts, Items, Verdict};
use crate::machine::sysfs::SysRoot;
use crate::machine::topology::{format_cpu_list, Topology};
use std::collections::BTreeMap;

/// The model, and the topology's items (or why there is none).
pub(super) fn cpu_items(it: &mut Items, root: &SysRoot, f: &Facts) {
    use Verdict::*;
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
            layout_items(it, t);
            cache_items(it, t);
            placement_items(it, t);
        }
    }
}

/// Packages, cores, SMT and NUMA nodes.
fn layout_items(it: &mut Items, t: &Topology) {
    use Verdict::*;
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
}

/// The caches, by level, kind and size.
fn cache_items(it: &mut Items, t: &Topology) {
    use Verdict::*;
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
}

/// Where runs can go: `cpu_capacity` (big and little cores), isolated and nohz_full CPUs.
fn placement_items(it: &mut Items, t: &Topology) {
    use Verdict::*;
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
    it.push(
        "cpu",
        "isolated (isolcpus)",
        iso,
        Ok,
        t.isolated.is_empty().then_some(
            "isolcpus=<cpus> on the kernel command line keeps other tasks off the run's cores",
        ),
    );
    match &t.nohz_full {
        None => it.push("cpu", "nohz_full", "not supported by this kernel", Ok, None),
        Some(v) if v.is_empty() => it.push("cpu", "nohz_full", "none", Ok, None),
        Some(v) => it.push("cpu", "nohz_full", format_cpu_list(v), Ok, None),
    }
}
