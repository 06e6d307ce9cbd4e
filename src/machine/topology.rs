//! The CPU topology as the kernel reports it in /sys, and the choice of cores for a run.
//!
//! For: online logical CPUs, which of them form one physical core (SMT siblings), packages,
//! NUMA nodes, caches, `cpu_capacity` (big.LITTLE), isolated and `nohz_full` CPUs; the cpu list
//! syntax (`0-3,8,10-11`); [`choose_cores`], which picks the run's cores and tare's own.
//!
//! Not for: pinning processes (exec does that with the ids chosen here), frequencies or
//! temperatures (see [`super::inventory`] and [`super::probe`]).
//!
//! Ids are never assumed to follow a pattern (BenchExec, STTT 2017, §3.4): siblings are read
//! from `topology/core_cpus_list` (or the older `thread_siblings_list`), never derived from
//! consecutive ids or from `(physical_package_id, core_id)`, which is not unique on machines
//! with several NUMA nodes per package.

use super::sysfs::SysRoot;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

const CPU_DIR: &str = "/sys/devices/system/cpu";
const NODE_DIR: &str = "/sys/devices/system/node";

/// One online logical CPU (a hardware thread).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogicalCpu {
    pub id: usize,
    /// `topology/physical_package_id`; -1 on some ARM systems; `None` when unreadable.
    pub package: Option<i64>,
    /// `topology/core_id` (only unique within a package, and not even that on some NUMA machines).
    pub core_id: Option<i64>,
    /// NUMA node, from `/sys/devices/system/node/node*/cpulist`.
    pub node: Option<usize>,
    /// `cpu_capacity` (1024 = the biggest core) on heterogeneous (big.LITTLE) systems.
    pub capacity: Option<u64>,
}

/// One physical core: the online logical CPUs that share its execution units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhysicalCore {
    /// Online logical CPU ids of this core, ascending (SMT siblings).
    pub cpus: Vec<usize>,
    pub package: Option<i64>,
    pub node: Option<usize>,
    /// Highest `cpu_capacity` among its CPUs, if the kernel reports capacities.
    pub capacity: Option<u64>,
}

/// One cache, deduplicated over the CPUs that share it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    pub level: u32,
    /// "Data", "Instruction" or "Unified".
    pub kind: String,
    pub size_bytes: Option<u64>,
    pub shared_cpus: Vec<usize>,
}

/// The machine's CPU topology.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Topology {
    /// Online logical CPUs, ascending by id.
    pub cpus: Vec<LogicalCpu>,
    /// Physical cores, ordered by their first CPU id.
    pub cores: Vec<PhysicalCore>,
    /// NUMA nodes: node id → its online CPUs. Empty when the kernel has no node directory.
    pub nodes: BTreeMap<usize, Vec<usize>>,
    pub caches: Vec<Cache>,
    /// `/sys/devices/system/cpu/isolated` (isolcpus=).
    pub isolated: Vec<usize>,
    /// `/sys/devices/system/cpu/nohz_full`, if the file exists.
    pub nohz_full: Option<Vec<usize>>,
    /// Things that could not be read, in words.
    pub notes: Vec<String>,
}

impl Topology {
    /// Distinct package ids of the online CPUs.
    pub fn packages(&self) -> BTreeSet<i64> {
        self.cpus.iter().filter_map(|c| c.package).collect()
    }

    /// Largest number of threads on one physical core (1 without SMT).
    pub fn threads_per_core(&self) -> usize {
        self.cores.iter().map(|c| c.cpus.len()).max().unwrap_or(1)
    }

    /// Distinct capacities, when the kernel reports any.
    pub fn capacities(&self) -> BTreeSet<u64> {
        self.cpus.iter().filter_map(|c| c.capacity).collect()
    }

    pub fn cpu(&self, id: usize) -> Option<&LogicalCpu> {
        self.cpus.iter().find(|c| c.id == id)
    }

    /// The physical core containing logical CPU `id`.
    pub fn core_of(&self, id: usize) -> Option<&PhysicalCore> {
        self.cores.iter().find(|c| c.cpus.contains(&id))
    }
}

/// Parses the kernel's cpu list syntax: `0-3,8,10-11` (also `0-15:2` strides, and empty).
/// Returns sorted, deduplicated ids.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>> {
    let mut out = BTreeSet::new();
    for part in s.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (range, stride) = match part.split_once(':') {
            Some((r, st)) => {
                // Kernel syntax is `a-b:used/group`; also accept a plain stride `a-b:n`.
                let st = st.split('/').next().unwrap_or("1");
                let st: usize = st.trim().parse().map_err(|_| bad_list(s))?;
                (r, st.max(1))
            }
            None => (part, 1),
        };
        match range.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().map_err(|_| bad_list(s))?;
                let b: usize = b.trim().parse().map_err(|_| bad_list(s))?;
                if b < a || b - a > 1 << 20 {
                    bail!("invalid cpu list {s:?}: range {a}-{b}");
                }
                out.extend((a..=b).step_by(stride));
            }
            None => {
                out.insert(range.trim().parse::<usize>().map_err(|_| bad_list(s))?);
            }
        }
    }
    Ok(out.into_iter().collect())
}

fn bad_list(s: &str) -> anyhow::Error {
    anyhow::anyhow!("invalid cpu list {s:?}: expected something like 0-3,8,10-11")
}

/// Formats ids in the kernel's cpu list syntax: `[0,1,2,3,8]` → `0-3,8`.
pub fn format_cpu_list(ids: &[usize]) -> String {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Parses a cache size such as `32K`, `1024K`, `8M`, or a plain byte count.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1024 * 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// Reads the topology below `root`. Missing files are tolerated and noted; only a machine with
/// no readable CPU at all is an error.
///
/// The host's topology is read once per process and then cloned: one `tare run` asks for it
/// from several places (cores, inventory, machine record), and on a large machine each reading
/// is a few hundred sysfs files. CPUs going on- or offline during one tare process are not
/// seen; synthetic roots (tests) are read anew every time.
pub fn read_topology(root: &SysRoot) -> Result<Topology> {
    static HOST: std::sync::OnceLock<Topology> = std::sync::OnceLock::new();
    if !root.is_host() {
        return read_topology_uncached(root);
    }
    if let Some(t) = HOST.get() {
        return Ok(t.clone());
    }
    let t = read_topology_uncached(root)?;
    Ok(HOST.get_or_init(|| t).clone())
}

fn read_topology_uncached(root: &SysRoot) -> Result<Topology> {
    let mut notes = Vec::new();
    let online = match root.read_string(&format!("{CPU_DIR}/online")) {
        Ok(s) => parse_cpu_list(&s).unwrap_or_else(|e| {
            notes.push(format!("{e}; using the cpu* directories instead"));
            Vec::new()
        }),
        Err(e) => {
            notes.push(format!("{e}; using the cpu* directories instead"));
            Vec::new()
        }
    };
    let online = if online.is_empty() {
        root.list_numbered(CPU_DIR, "cpu")
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    } else {
        online
    };
    if online.is_empty() {
        bail!("no CPU found under {}", root.path(CPU_DIR).display());
    }

    // NUMA nodes.
    let mut nodes: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (n, name) in root.list_numbered(NODE_DIR, "node") {
        if let Some(list) = root.opt_string(&format!("{NODE_DIR}/{name}/cpulist")) {
            if let Ok(ids) = parse_cpu_list(&list) {
                nodes.insert(n, ids.into_iter().filter(|c| online.contains(c)).collect());
            }
        }
    }
    let node_of = |cpu: usize| {
        nodes
            .iter()
            .find(|(_, v)| v.contains(&cpu))
            .map(|(n, _)| *n)
    };

    let mut cpus = Vec::new();
    let mut sibling_sets: Vec<Vec<usize>> = Vec::new();
    let mut missing_siblings = false;
    for &id in &online {
        let t = format!("{CPU_DIR}/cpu{id}/topology");
        let siblings = root
            .opt_string(&format!("{t}/core_cpus_list"))
            .or_else(|| root.opt_string(&format!("{t}/thread_siblings_list")))
            .and_then(|s| parse_cpu_list(&s).ok())
            .map(|v| {
                v.into_iter()
                    .filter(|c| online.contains(c))
                    .collect::<Vec<_>>()
            });
        let siblings = match siblings {
            Some(v) if v.contains(&id) => v,
            _ => {
                missing_siblings = true;
                vec![id]
            }
        };
        if !sibling_sets.contains(&siblings) {
            sibling_sets.push(siblings);
        }
        cpus.push(LogicalCpu {
            id,
            package: root.opt_i64(&format!("{t}/physical_package_id")),
            core_id: root.opt_i64(&format!("{t}/core_id")),
            node: node_of(id),
            capacity: root.opt_u64(&format!("{CPU_DIR}/cpu{id}/cpu_capacity")),
        });
    }
    if missing_siblings {
        notes.push("SMT siblings unknown for some CPUs (no topology/core_cpus_list or thread_siblings_list); each is taken as its own core".into());
    }
    // A CPU must belong to exactly one core: merge overlapping sets defensively.
    let mut cores: Vec<PhysicalCore> = Vec::new();
    let mut assigned: BTreeSet<usize> = BTreeSet::new();
    for set in sibling_sets {
        let set: Vec<usize> = set.into_iter().filter(|c| !assigned.contains(c)).collect();
        if set.is_empty() {
            continue;
        }
        assigned.extend(set.iter().copied());
        let first = cpus.iter().find(|c| c.id == set[0]).cloned();
        let capacity = set
            .iter()
            .filter_map(|id| cpus.iter().find(|c| c.id == *id).and_then(|c| c.capacity))
            .max();
        cores.push(PhysicalCore {
            cpus: set,
            package: first.as_ref().and_then(|c| c.package),
            node: first.as_ref().and_then(|c| c.node),
            capacity,
        });
    }
    cores.sort_by_key(|c| c.cpus[0]);

    let caches = read_caches(root, &online);
    let isolated = root
        .opt_string(&format!("{CPU_DIR}/isolated"))
        .and_then(|s| parse_cpu_list(&s).ok())
        .unwrap_or_default();
    let nohz_full = root
        .opt_string(&format!("{CPU_DIR}/nohz_full"))
        .map(|s| parse_cpu_list(&s).unwrap_or_default());

    Ok(Topology {
        cpus,
        cores,
        nodes,
        caches,
        isolated,
        nohz_full,
        notes,
    })
}

fn read_caches(root: &SysRoot, online: &[usize]) -> Vec<Cache> {
    let mut caches: Vec<Cache> = Vec::new();
    // Which caches each `indexN` directory named so far: a CPU listed in one of them shares
    // that cache and need not read it again (on a large machine most of the 4 files × indexes
    // × CPUs would otherwise be read for caches already known).
    let mut by_index: Vec<(String, usize)> = Vec::new();
    for &id in online {
        let dir = format!("{CPU_DIR}/cpu{id}/cache");
        for (_, name) in root.list_numbered(&dir, "index") {
            if by_index
                .iter()
                .any(|(n, i)| *n == name && caches[*i].shared_cpus.contains(&id))
            {
                continue;
            }
            let d = format!("{dir}/{name}");
            let Some(level) = root.opt_u64(&format!("{d}/level")) else {
                continue;
            };
            let kind = root
                .opt_string(&format!("{d}/type"))
                .unwrap_or_else(|| "Unknown".into());
            let size_bytes = root
                .opt_string(&format!("{d}/size"))
                .and_then(|s| parse_size(&s));
            let shared_cpus = root
                .opt_string(&format!("{d}/shared_cpu_list"))
                .and_then(|s| parse_cpu_list(&s).ok())
                .unwrap_or_else(|| vec![id]);
            let c = Cache {
                level: level as u32,
                kind,
                size_bytes,
                shared_cpus,
            };
            let i = match caches.iter().position(|k| *k == c) {
                Some(i) => i,
                None => {
                    caches.push(c);
                    caches.len() - 1
                }
            };
            by_index.push((name, i));
        }
    }
    caches.sort_by(|a, b| {
        (a.level, &a.kind, &a.shared_cpus).cmp(&(b.level, &b.kind, &b.shared_cpus))
    });
    caches
}

/// The cores chosen for a run and for tare itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreChoice {
    /// Logical CPUs the run is pinned to.
    pub run_cores: Vec<usize>,
    /// Logical CPUs tare's own threads are pinned to (empty when none could be kept apart).
    pub tare_cores: Vec<usize>,
    /// SMT siblings of the run's cores that are left idle on purpose (neither run nor tare).
    pub idle_siblings: Vec<usize>,
    /// What the choice had to compromise on, in words.
    pub notes: Vec<String>,
}

/// Chooses `n` logical CPUs for a run, and cores for tare, from the real topology.
///
/// Policy (in this order of importance):
/// 1. The run gets **whole physical cores**: no SMT sibling of a run CPU is given to tare.
///    While there are enough physical cores, the run is pinned to **one thread per physical
///    core** and the siblings stay idle, so no two threads of the run share execution units
///    (BenchExec measured +53% CPU time for runs sharing a physical core, STTT 2017 §4.3).
///    Only when `n` exceeds the available physical cores does the run also get the siblings of
///    its own cores (then it uses as few whole cores as possible, like BenchExec).
///    On a 4-core/8-thread machine with siblings (0,4),(1,5),(2,6),(3,7), `n = 2` gives
///    run `1,2` (siblings 5,6 idle) and tare `0,4`.
/// 2. One package and one NUMA node, if any holds enough cores (else noted).
/// 3. On heterogeneous systems, the cores with the highest `cpu_capacity` (big cores).
/// 4. Isolated CPUs (`isolcpus=`) before others; CPU 0 last, since it usually takes more
///    housekeeping interrupts.
/// 5. tare's cores: one whole physical core from what remains, preferring a non-isolated one in
///    the run's package, lowest id first (so tare, which mostly sleeps, takes CPU 0). If none remains, `tare_cores` is empty and a note says
///    "too few cores to keep tare apart from the run".
pub fn choose_cores(topo: &Topology, n: usize) -> Result<CoreChoice> {
    if n == 0 {
        bail!("--cpus must be at least 1");
    }
    let total = topo.cpus.len();
    if n > total {
        bail!("cannot pin a run to {n} CPUs: this machine has {total} online logical CPUs");
    }
    let mut notes = Vec::new();
    let isolated = |c: &PhysicalCore| c.cpus.iter().all(|id| topo.isolated.contains(id));
    // Rank of a core inside a group: bigger capacity, isolated, not CPU 0, lower id.
    let rank = |c: &PhysicalCore| {
        (
            std::cmp::Reverse(c.capacity.unwrap_or(0)),
            !isolated(c),
            c.cpus.contains(&0),
            c.cpus[0],
        )
    };

    // Groups: (package, node).
    let mut groups: BTreeMap<(Option<i64>, Option<usize>), Vec<&PhysicalCore>> = BTreeMap::new();
    for c in &topo.cores {
        groups.entry((c.package, c.node)).or_default().push(c);
    }
    for g in groups.values_mut() {
        g.sort_by_key(|c| rank(c));
    }

    // How many physical cores a run of n CPUs needs within a set of cores.
    let cores_needed = |cores: &[&PhysicalCore]| -> Option<usize> {
        if cores.len() >= n {
            return Some(n); // one thread per core
        }
        // whole cores, biggest first by rank order
        let mut threads = 0;
        for (i, c) in cores.iter().enumerate() {
            threads += c.cpus.len();
            if threads >= n {
                return Some(i + 1);
            }
        }
        None
    };

    // Pick the best group that can hold the run.
    let mut best: Option<(_, Vec<&PhysicalCore>)> = None;
    for g in groups.values() {
        let Some(k) = cores_needed(g) else { continue };
        let chosen: Vec<&PhysicalCore> = g[..k].to_vec();
        let min_cap = chosen
            .iter()
            .map(|c| c.capacity.unwrap_or(0))
            .min()
            .unwrap_or(0);
        let n_iso = chosen.iter().filter(|c| isolated(c)).count();
        let spare = g.len() > k;
        let key = (min_cap, n_iso, spare, std::cmp::Reverse(k));
        if best.as_ref().map(|(bk, _)| key > *bk).unwrap_or(true) {
            best = Some((key, chosen));
        }
    }
    let chosen: Vec<&PhysicalCore> = match best {
        Some((_, c)) => c,
        None => {
            notes.push(format!(
                "no single package/NUMA node has {n} CPUs; the run spans several, which adds memory and cache effects"
            ));
            let mut all: Vec<&PhysicalCore> = topo.cores.iter().collect();
            all.sort_by_key(|c| rank(c));
            let k = cores_needed(&all).unwrap_or(all.len());
            all[..k].to_vec()
        }
    };

    let one_per_core = chosen.len() >= n;
    let mut run_cores: Vec<usize> = Vec::new();
    let mut idle_siblings: Vec<usize> = Vec::new();
    if one_per_core {
        for c in &chosen {
            run_cores.push(c.cpus[0]);
            idle_siblings.extend(c.cpus[1..].iter().copied());
        }
    } else {
        notes.push(format!(
            "the run needs {n} CPUs but only {} physical cores are available together; it gets whole cores with their SMT siblings",
            chosen.len()
        ));
        for c in &chosen {
            for &id in &c.cpus {
                if run_cores.len() < n {
                    run_cores.push(id);
                } else {
                    idle_siblings.push(id);
                }
            }
        }
    }
    run_cores.sort_unstable();
    idle_siblings.sort_unstable();

    let caps: BTreeSet<u64> = chosen.iter().filter_map(|c| c.capacity).collect();
    if caps.len() > 1 {
        notes.push(format!(
            "the run spans cores of different capacity ({}); timings mix big and little cores",
            caps.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let n_iso_run = chosen.iter().filter(|c| isolated(c)).count();
    if !topo.isolated.is_empty() && n_iso_run < chosen.len() {
        notes.push("not all of the run's cores are isolated (isolcpus)".into());
    }

    // tare's core: a remaining whole core.
    let pkg = chosen.first().and_then(|c| c.package);
    let mut rest: Vec<&PhysicalCore> = topo
        .cores
        .iter()
        .filter(|c| !chosen.iter().any(|x| x.cpus == c.cpus))
        .collect();
    rest.sort_by_key(|c| {
        (
            c.package != pkg,
            isolated(c),
            c.capacity.unwrap_or(0),
            c.cpus[0],
        )
    });
    let tare_cores = match rest.first() {
        Some(c) => c.cpus.clone(),
        None => {
            notes.push("too few cores to keep tare apart from the run".into());
            Vec::new()
        }
    };

    Ok(CoreChoice {
        run_cores,
        tare_cores,
        idle_siblings,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("\n").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("5").unwrap(), vec![5]);
        assert_eq!(parse_cpu_list("0-7:2").unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(parse_cpu_list("0-7:2/4").unwrap(), vec![0, 2, 4, 6]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("0-").is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32K"), Some(32 * 1024));
        assert_eq!(parse_size("8M"), Some(8 << 20));
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }

    fn topo(cores: &[(&[usize], i64, usize, Option<u64>)], isolated: &[usize]) -> Topology {
        let mut t = Topology::default();
        for (cpus, pkg, node, cap) in cores {
            for &id in cpus.iter() {
                t.cpus.push(LogicalCpu {
                    id,
                    package: Some(*pkg),
                    core_id: None,
                    node: Some(*node),
                    capacity: *cap,
                });
            }
            t.cores.push(PhysicalCore {
                cpus: cpus.to_vec(),
                package: Some(*pkg),
                node: Some(*node),
                capacity: *cap,
            });
        }
        t.cpus.sort_by_key(|c| c.id);
        t.isolated = isolated.to_vec();
        t
    }

    #[test]
    fn intel_smt_whole_cores() {
        let t = topo(
            &[
                (&[0, 4], 0, 0, None),
                (&[1, 5], 0, 0, None),
                (&[2, 6], 0, 0, None),
                (&[3, 7], 0, 0, None),
            ],
            &[],
        );
        let c = choose_cores(&t, 2).unwrap();
        assert_eq!(c.run_cores, vec![1, 2]);
        assert_eq!(c.idle_siblings, vec![5, 6]);
        assert_eq!(c.tare_cores, vec![0, 4]);
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        let c = choose_cores(&t, 6).unwrap();
        assert_eq!(c.run_cores, vec![1, 2, 3, 5, 6, 7]);
        assert_eq!(c.tare_cores, vec![0, 4]);
        assert!(c
            .notes
            .iter()
            .any(|n| n.contains("whole cores with their SMT siblings")));
        let c = choose_cores(&t, 7).unwrap();
        assert_eq!(c.run_cores.len(), 7);
        assert_eq!(c.idle_siblings.len(), 1);
        assert!(c.notes.iter().any(|n| n.contains("too few cores")));
        assert!(choose_cores(&t, 9).is_err());
        assert!(choose_cores(&t, 0).is_err());
    }

    #[test]
    fn two_cpu_vm() {
        let t = topo(&[(&[0], 0, 0, Some(1024)), (&[1], 0, 0, Some(1024))], &[]);
        let c = choose_cores(&t, 1).unwrap();
        assert_eq!(
            (c.run_cores.clone(), c.tare_cores.clone()),
            (vec![1], vec![0])
        );
        let c = choose_cores(&t, 2).unwrap();
        assert_eq!(c.run_cores, vec![0, 1]);
        assert!(c.tare_cores.is_empty());
        assert_eq!(
            c.notes,
            vec!["too few cores to keep tare apart from the run".to_string()]
        );
    }
}
