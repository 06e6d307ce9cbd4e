//! Allocation of cores and memory to parallel runs (seed 003 §4): each of N run slots gets
//! whole physical cores that no other slot shares, all in one package and NUMA node, whose
//! memory the run is bound to.
//!
//! Not for: pinning (exec does that with the slots chosen here) or choosing cores for a
//! single run with tare kept apart (see `crate::machine::topology::choose_cores`).

use crate::machine::topology::{PhysicalCore, Topology};
use crate::machine::{pinned, speed};
use std::collections::BTreeMap;

/// The resources of one slot; runs in one slot follow each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// Logical CPUs the run may use.
    pub cpus: Vec<usize>,
    /// SMT siblings of the slot's cores left idle (reserved, used by nobody).
    pub idle: Vec<usize>,
    pub package: Option<i64>,
    pub node: Option<usize>,
}

/// The slots, and what the user should know about them.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    pub slots: Vec<Slot>,
    pub warnings: Vec<String>,
    /// The machine has more than one NUMA node: runs' memory is bound to their slot's node.
    pub numa: bool,
}

/// Memory sizes for the overbooking check: whole machine and per NUMA node, in bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Memory {
    pub total: Option<u64>,
    pub per_node: BTreeMap<usize, u64>,
}

/// Reads MemTotal of the machine and of each NUMA node below `root` ("/" normally).
pub fn read_memory(root: &std::path::Path) -> Memory {
    let kb = |text: &str| {
        text.lines().find_map(|l| {
            let l = l.split_once("MemTotal:")?.1;
            l.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    let total = std::fs::read_to_string(root.join("proc/meminfo"))
        .ok()
        .and_then(|t| kb(&t))
        .map(|k| k * 1024);
    let mut per_node = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir(root.join("sys/devices/system/node")) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
                continue;
            };
            if let Some(k) = std::fs::read_to_string(e.path().join("meminfo"))
                .ok()
                .and_then(|t| kb(&t))
            {
                per_node.insert(id, k * 1024);
            }
        }
    }
    Memory { total, per_node }
}

/// Allocates `parallel` slots of `cpus_per_run` logical CPUs each.
///
/// A slot takes `ceil(cpus_per_run / threads per core)` whole physical cores from one
/// (package, node) group, so no two slots share a core; leftover siblings stay idle. Returns
/// an error (one line, with the largest `--parallel` that fits) when there are not enough
/// cores; warns when `memory_per_run` × slots exceeds a node's or the machine's memory.
pub fn allocate(
    topo: &Topology,
    parallel: usize,
    cpus_per_run: usize,
    memory_per_run: Option<u64>,
    memory: &Memory,
) -> Result<Allocation, String> {
    if parallel == 0 || cpus_per_run == 0 {
        return Err("--parallel and cores per run must be at least 1".into());
    }
    let mut groups: BTreeMap<(Option<i64>, Option<usize>), Vec<&PhysicalCore>> = BTreeMap::new();
    for c in &topo.cores {
        groups.entry((c.package, c.node)).or_default().push(c);
    }
    // Cores needed per slot in a group (its cores may differ in thread count; use the smallest).
    let need = |g: &[&PhysicalCore]| {
        let tpc = g.iter().map(|c| c.cpus.len()).min().unwrap_or(1).max(1);
        cpus_per_run.div_ceil(tpc)
    };
    let capacity: usize = groups.values().map(|g| g.len() / need(g)).sum();
    if capacity < parallel {
        let physical = topo.cores.len();
        return Err(format!(
            "--parallel {parallel} with {cpus_per_run} CPU(s) per run needs more physical cores than this machine has \
             ({physical} physical cores; runs never share one); use --parallel {} or fewer, or fewer cores per run",
            capacity.max(1)
        ));
    }
    let mut slots = Vec::new();
    // Fill the largest groups first, so slots spread over nodes only when they must.
    let mut ordered: Vec<_> = groups.into_iter().collect();
    ordered.sort_by_key(|(k, g)| (std::cmp::Reverse(g.len()), *k));
    'outer: for ((package, node), mut cores) in ordered {
        let k = need(&cores);
        // CPU 0's core last: it takes more housekeeping interrupts, and is left free when
        // fewer slots than cores are needed.
        cores.sort_by_key(|c| (c.cpus.contains(&0), c.cpus[0]));
        for chunk in cores.chunks(k) {
            if chunk.len() < k || slots.len() == parallel {
                break;
            }
            let mut cpus = Vec::new();
            let mut idle = Vec::new();
            // One thread per core first, then siblings.
            let depth = chunk.iter().map(|c| c.cpus.len()).max().unwrap_or(1);
            for t in 0..depth {
                for c in chunk {
                    if let Some(&id) = c.cpus.get(t) {
                        if cpus.len() < cpus_per_run {
                            cpus.push(id);
                        } else {
                            idle.push(id);
                        }
                    }
                }
            }
            cpus.sort_unstable();
            idle.sort_unstable();
            slots.push(Slot {
                cpus,
                idle,
                package,
                node,
            });
            if slots.len() == parallel {
                break 'outer;
            }
        }
    }
    let mut warnings = Vec::new();
    match memory_per_run {
        Some(m) => {
            if let Some(total) = memory.total {
                if m.saturating_mul(parallel as u64) > total {
                    warnings.push(format!(
                        "memory overbooked: {parallel} runs × {} limit exceed the machine's {}; runs may swap or be OOM-killed early — lower --parallel or the memory limit",
                        crate::units::format_bytes(m as f64, None),
                        crate::units::format_bytes(total as f64, None)
                    ));
                }
            }
            let mut per_node: BTreeMap<usize, u64> = BTreeMap::new();
            for s in &slots {
                if let Some(n) = s.node {
                    *per_node.entry(n).or_default() += m;
                }
            }
            for (n, want) in per_node {
                if let Some(&have) = memory.per_node.get(&n) {
                    if want > have {
                        warnings.push(format!(
                            "memory of NUMA node {n} overbooked: its runs may use {} but it has {}",
                            crate::units::format_bytes(want as f64, None),
                            crate::units::format_bytes(have as f64, None)
                        ));
                    }
                }
            }
        }
        None if parallel > 1 => warnings.push(
            "no memory limit: parallel runs compete for memory; set limits.memory to reserve it per run".into(),
        ),
        None => {}
    }
    let nodes: std::collections::BTreeSet<_> = topo.cores.iter().filter_map(|c| c.node).collect();
    Ok(Allocation {
        slots,
        warnings,
        numa: nodes.len() > 1,
    })
}

/// The topology without CPUs that are clearly slow or unsteady right now (`machine::speed`,
/// a check of [`speed::CHOICE_BUDGET`] over the CPUs the slots could use), each left out only
/// while `parallel` slots still fit (avoiding `busy`, other sessions' cores, where they fitted
/// before); and the one line naming what was left out. Without spare physical cores nothing is
/// measured and nothing changes: the check never makes a suite refuse to run.
pub fn prefer_steady(
    topo: &Topology,
    busy: &std::collections::BTreeSet<usize>,
    parallel: usize,
    cpus_per_run: usize,
    memory_per_run: Option<u64>,
    memory: &Memory,
) -> (Topology, Option<String>) {
    let fits_in = |t: &Topology| allocate(t, parallel, cpus_per_run, memory_per_run, memory);
    let avoiding = !busy.is_empty() && fits_in(&pinned::without(topo, busy)).is_ok();
    let pool = if avoiding {
        pinned::without(topo, busy)
    } else {
        topo.clone()
    };
    let Ok(first) = fits_in(&pool) else {
        return (topo.clone(), None);
    };
    let used = pool
        .cores
        .iter()
        .filter(|c| {
            first
                .slots
                .iter()
                .any(|s| s.cpus.iter().any(|id| c.cpus.contains(id)))
        })
        .count();
    if pool.cores.len() <= used {
        return (topo.clone(), None);
    }
    let cpus: Vec<usize> = pool.cpus.iter().map(|c| c.id).collect();
    let r = speed::check(&cpus, speed::CHOICE_BUDGET);
    steady_of(topo, &r, |t| {
        if avoiding {
            fits_in(&pinned::without(t, busy)).is_ok()
        } else {
            fits_in(t).is_ok()
        }
    })
}

/// [`prefer_steady`] given the speeds (pure).
pub fn steady_of(
    topo: &Topology,
    r: &speed::SpeedReport,
    fits: impl Fn(&Topology) -> bool,
) -> (Topology, Option<String>) {
    let (t, left) = speed::prefer_steady(topo, r, fits);
    let note = speed::left_out_note(r, &left, None);
    (t, note)
}

/// A warning when turbo boost is on and runs go in parallel (the frequency of one core then
/// depends on the load of the others), if the kernel tells.
pub fn turbo_warning(root: &std::path::Path, parallel: usize) -> Option<String> {
    if parallel < 2 {
        return None;
    }
    let read = |p: &str| {
        std::fs::read_to_string(root.join(p))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let on = match (
        read("sys/devices/system/cpu/intel_pstate/no_turbo"),
        read("sys/devices/system/cpu/cpufreq/boost"),
    ) {
        (Some(v), _) => v == "0",
        (None, Some(v)) => v == "1",
        _ => return None,
    };
    on.then(|| {
        "turbo boost is on: with parallel runs each core's frequency depends on the others' load; \
         disable it (tare machine tune) or run with --parallel 1"
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::topology::PhysicalCore;

    fn topo(cores: &[(&[usize], i64, usize)]) -> Topology {
        Topology {
            cores: cores
                .iter()
                .map(|(cpus, p, n)| PhysicalCore {
                    cpus: cpus.to_vec(),
                    package: Some(*p),
                    node: Some(*n),
                    capacity: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn slots_never_share_a_physical_core() {
        // 2 packages × 2 cores × 2 threads; siblings (0,4) (1,5) | (2,6) (3,7).
        let t = topo(&[
            (&[0, 4], 0, 0),
            (&[1, 5], 0, 0),
            (&[2, 6], 1, 1),
            (&[3, 7], 1, 1),
        ]);
        let a = allocate(&t, 4, 1, None, &Memory::default()).unwrap();
        assert_eq!(a.slots.len(), 4);
        let mut used: Vec<usize> = a
            .slots
            .iter()
            .flat_map(|s| s.cpus.iter().chain(&s.idle))
            .copied()
            .collect();
        used.sort();
        assert_eq!(used, vec![0, 1, 2, 3, 4, 5, 6, 7]);
        for s in &a.slots {
            assert_eq!(s.cpus.len(), 1);
            assert_eq!(s.idle.len(), 1, "the sibling stays idle: {s:?}");
        }
        // 2 CPUs per run: one whole core (both threads) each, within a node.
        let a = allocate(&t, 2, 2, None, &Memory::default()).unwrap();
        assert_eq!(a.slots[0].cpus.len(), 2);
        assert!(a.slots.iter().all(|s| s.node.is_some()));
        // 3 CPUs per run need 2 cores of one node: 2 slots fit, 3 do not.
        let a = allocate(&t, 2, 3, None, &Memory::default()).unwrap();
        assert_ne!(a.slots[0].node, a.slots[1].node);
        let e = allocate(&t, 3, 3, None, &Memory::default()).unwrap_err();
        assert!(e.contains("--parallel 2 or fewer"), "{e}");
    }

    #[test]
    fn slots_leave_out_clearly_unsteady_cpus_while_they_fit() {
        use crate::machine::speed::{analyse, Probe, Visit};
        // 4 cores of 1 CPU; CPU 2 runs 2x slower, CPU 3 varies 1.7x over the check.
        let mut t = topo(&[(&[0], 0, 0), (&[1], 0, 0), (&[2], 0, 0), (&[3], 0, 0)]);
        t.cpus = (0..4)
            .map(|id| crate::machine::topology::LogicalCpu {
                id,
                package: Some(0),
                core_id: None,
                node: Some(0),
                capacity: None,
            })
            .collect();
        let mut visits = Vec::new();
        for pass in 0..40 {
            for cpu in 0..4 {
                let s = match cpu {
                    2 => 6e-4,
                    3 if pass >= 20 => 5.1e-4,
                    _ => 3e-4,
                };
                visits.push(Visit {
                    cpu,
                    pass,
                    seconds: s,
                });
            }
        }
        let r = analyse(&Probe {
            loops: 1000,
            seconds: 0.3,
            passes: 40,
            visits,
            ..Default::default()
        });
        let mem = &Memory::default();
        let fits = |n: usize| move |x: &Topology| allocate(x, n, 1, Some(1), mem).is_ok();
        // 2 slots: both off CPUs left out, and the slots get 0 and 1.
        let (t2, note) = steady_of(&t, &r, fits(2));
        let a = allocate(&t2, 2, 1, Some(1), mem).unwrap();
        let mut used: Vec<usize> = a.slots.iter().flat_map(|s| s.cpus.clone()).collect();
        used.sort();
        assert_eq!(used, vec![0, 1]);
        let note = note.unwrap();
        assert!(
            note.starts_with("left out CPU 2-3: unsteady at the start (CPU 2 ran 2.0× slower"),
            "{note}"
        );
        // 3 slots: only the worst goes; 4 slots: none, and the suite still runs on all four.
        let (_, note) = steady_of(&t, &r, fits(3));
        assert!(note.unwrap().starts_with("left out CPU 2:"));
        let (t4, note) = steady_of(&t, &r, fits(4));
        assert!(note.is_none());
        assert_eq!(allocate(&t4, 4, 1, Some(1), mem).unwrap().slots.len(), 4);
    }

    #[test]
    fn refuses_more_runs_than_cores_and_warns_on_memory() {
        let t = topo(&[(&[0], 0, 0), (&[1], 0, 0)]);
        let e = allocate(&t, 3, 1, None, &Memory::default()).unwrap_err();
        assert!(e.contains("2 physical cores") && !e.contains('\n'), "{e}");
        let mem = Memory {
            total: Some(1_000),
            per_node: [(0, 1_000)].into(),
        };
        let a = allocate(&t, 2, 1, Some(600), &mem).unwrap();
        assert_eq!(a.warnings.len(), 2, "{:?}", a.warnings);
        // With room to spare, CPU 0 is avoided.
        let a = allocate(&t, 1, 1, Some(100), &mem).unwrap();
        assert_eq!(a.slots[0].cpus, vec![1]);
        assert!(a.warnings.is_empty());
    }
}
