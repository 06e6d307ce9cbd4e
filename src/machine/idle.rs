//! CPU idle states (cpuidle): what each CPU's states are, how often and how long they were
//! entered, and holding the deep ones off for a session through `/dev/cpu_dma_latency`.
//!
//! A run that sleeps or waits (I/O, a child, a lock) lets its CPU idle; waking from a deep
//! state (C6: tens to hundreds of µs exit latency) adds to the wall time, and how often that
//! happens varies from run to run. `--idle shallow` writes a 0 µs latency request to
//! `/dev/cpu_dma_latency` and keeps the file open for the session: the kernel's PM QoS keeps
//! every CPU in states whose exit latency is 0 (polling or C1 where that is 0) while the file is
//! open, and drops the request when it is closed — by tare's exit, however it ends, kill -9
//! included, so nothing is left to undo.

use super::sysfs::SysRoot;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// One idle state of one CPU, as `/sys/devices/system/cpu/cpuN/cpuidle/stateK/` has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleState {
    pub index: usize,
    pub name: String,
    pub desc: String,
    /// Exit latency, µs.
    pub exit_latency_us: u64,
    /// Target residency, µs: the shortest idle period the state pays off for.
    pub target_residency_us: u64,
    /// Times entered since boot.
    pub usage: u64,
    /// Time spent in it since boot, µs.
    pub time_us: u64,
    /// Disabled through sysfs (`disable` = 1).
    pub disabled: bool,
}

/// The idle states of one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuIdle {
    pub cpu: usize,
    pub states: Vec<IdleState>,
}

/// The cpuidle driver and each CPU's states (empty where the kernel has no cpuidle).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Idle {
    pub driver: Option<String>,
    pub governor: Option<String>,
    pub cpus: Vec<CpuIdle>,
}

/// A state's exit latency above which `tare machine` calls it deep.
pub const DEEP_US: u64 = 10;

fn state_dir(cpu: usize, index: usize) -> String {
    format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{index}")
}

/// The states of `cpu`, in index order.
pub fn cpu_states(root: &SysRoot, cpu: usize) -> Vec<IdleState> {
    let mut out = Vec::new();
    for index in 0.. {
        let d = state_dir(cpu, index);
        let Some(name) = root.opt_string(&format!("{d}/name")) else {
            break;
        };
        out.push(IdleState {
            index,
            name,
            desc: root.opt_string(&format!("{d}/desc")).unwrap_or_default(),
            exit_latency_us: root.opt_u64(&format!("{d}/latency")).unwrap_or(0),
            target_residency_us: root.opt_u64(&format!("{d}/residency")).unwrap_or(0),
            usage: root.opt_u64(&format!("{d}/usage")).unwrap_or(0),
            time_us: root.opt_u64(&format!("{d}/time")).unwrap_or(0),
            disabled: root.opt_u64(&format!("{d}/disable")) == Some(1),
        });
    }
    out
}

/// The driver, governor and states of every CPU in `cpus`.
pub fn read(root: &SysRoot, cpus: &[usize]) -> Idle {
    Idle {
        driver: root.opt_string("/sys/devices/system/cpu/cpuidle/current_driver"),
        governor: root
            .opt_string("/sys/devices/system/cpu/cpuidle/current_governor_ro")
            .or_else(|| root.opt_string("/sys/devices/system/cpu/cpuidle/current_governor")),
        cpus: cpus
            .iter()
            .map(|&cpu| CpuIdle {
                cpu,
                states: cpu_states(root, cpu),
            })
            .filter(|c| !c.states.is_empty())
            .collect(),
    }
}

/// The pinned cores' idle-state counters, resolved once a session: each state's name is read
/// once, and its `usage` and `time` files are kept open (close-on-exec) and re-read from offset
/// 0, so a snapshot costs two reads a state a core and opens nothing (the states of a CPU do
/// not change while the cpuidle driver stays loaded).
#[derive(Debug)]
pub struct UsageWatch {
    /// (state name, `usage`, `time`) of every state of every watched core.
    files: Vec<(String, super::sysfs::KernelFile, super::sysfs::KernelFile)>,
    buf: String,
}

impl UsageWatch {
    /// The states of `cores` (`None` when none of them has cpuidle states).
    pub fn new(root: &SysRoot, cores: &[usize]) -> Option<UsageWatch> {
        let mut files = Vec::new();
        for &c in cores {
            for index in 0.. {
                let d = state_dir(c, index);
                let Some(name) = root.opt_string(&format!("{d}/name")) else {
                    break;
                };
                files.push((
                    name,
                    super::sysfs::KernelFile::new(root, &format!("{d}/usage")),
                    super::sysfs::KernelFile::new(root, &format!("{d}/time")),
                ));
            }
        }
        (!files.is_empty()).then(|| UsageWatch {
            files,
            buf: String::with_capacity(32),
        })
    }

    /// Entries into and time in each state (by name) summed over the cores: a snapshot to
    /// subtract ([`delta`]).
    pub fn read(&mut self) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (name, usage, time) in &mut self.files {
            let mut value = |f: &mut super::sysfs::KernelFile| {
                f.read_into(&mut self.buf).ok()?;
                self.buf.trim().parse::<u64>().ok()
            };
            let (u, t) = (value(usage).unwrap_or(0), value(time).unwrap_or(0));
            let e = out.entry(name.clone()).or_default();
            e.0 += u;
            e.1 += t;
        }
        out
    }
}

/// What happened in each idle state on a run's cores during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateDelta {
    /// Times entered.
    pub entries: u64,
    /// Time spent in it, µs.
    pub time_us: u64,
}

/// `after - before`, by state name (states that were not entered are left out).
pub fn delta(
    before: &BTreeMap<String, (u64, u64)>,
    after: &BTreeMap<String, (u64, u64)>,
) -> BTreeMap<String, StateDelta> {
    after
        .iter()
        .filter_map(|(name, &(u1, t1))| {
            let (u0, t0) = before.get(name).copied().unwrap_or((u1, t1));
            let d = StateDelta {
                entries: u1.saturating_sub(u0),
                time_us: t1.saturating_sub(t0),
            };
            (d.entries > 0 || d.time_us > 0).then(|| (name.clone(), d))
        })
        .collect()
}

/// A PM QoS CPU latency request held open: while it lives no CPU enters an idle state whose
/// exit latency is above the request. Dropping it (or tare's exit, however it ends) releases it.
#[derive(Debug)]
pub struct LatencyHold {
    _file: std::fs::File,
    /// The value the device read before the request (the kernel's aggregate), µs.
    pub previous_us: Option<i64>,
    pub requested_us: i32,
}

/// The device of the request, under `root` (a synthetic tree in tests).
pub fn dma_latency_path(root: &SysRoot) -> std::path::PathBuf {
    root.path("/dev/cpu_dma_latency")
}

/// The current aggregate request of the device (a native-endian 32-bit value), µs.
pub fn read_dma_latency(path: &std::path::Path) -> std::io::Result<i64> {
    let mut b = [0u8; 4];
    std::fs::File::open(path)?.read_exact(&mut b)?;
    Ok(i32::from_ne_bytes(b) as i64)
}

impl LatencyHold {
    /// Requests `us` µs (0: no deep state at all) and keeps the request for as long as the
    /// value lives. One line naming the device and what to do when it cannot.
    pub fn request(root: &SysRoot, us: i32) -> anyhow::Result<LatencyHold> {
        let path = dma_latency_path(root);
        let previous_us = read_dma_latency(&path).ok();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| {
                anyhow::anyhow!(
                    "--idle shallow: cannot open {} for writing: {e}; run as root on a kernel with PM QoS (CONFIG_PM), or drop --idle",
                    path.display()
                )
            })?;
        file.write_all(&us.to_ne_bytes()).map_err(|e| {
            anyhow::anyhow!(
                "--idle shallow: cannot write a latency request to {}: {e}; drop --idle",
                path.display()
            )
        })?;
        Ok(LatencyHold {
            _file: file,
            previous_us,
            requested_us: us,
        })
    }
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

    #[test]
    fn states_of_a_laptop_and_of_this_kind_of_vm() {
        let intel = read(&fixture("intel-4c8t"), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(intel.driver.as_deref(), Some("intel_idle"));
        assert_eq!(intel.cpus.len(), 8);
        let s = &intel.cpus[3].states;
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["POLL", "C1_ACPI", "C2_ACPI", "C3_ACPI"]);
        assert_eq!(
            (s[3].exit_latency_us, s[3].target_residency_us),
            (1048, 3144)
        );
        assert_eq!(s[1].usage, 200_003);
        let vm = read(&fixture("vm-2cpu"), &[0, 1]);
        assert_eq!(vm.driver.as_deref(), Some("haltpoll"));
        assert_eq!(vm.cpus[1].states[1].name, "haltpoll idle");
        // No cpuidle: nothing, no error.
        assert!(read(&fixture("xeon-2s"), &[0, 1]).cpus.is_empty());
    }

    /// The states' entries and time summed over `cores` by name, from [`read`]: what a
    /// [`UsageWatch`] must give.
    fn usage(root: &SysRoot, cores: &[usize]) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for s in read(root, cores).cpus.into_iter().flat_map(|c| c.states) {
            let e = out.entry(s.name).or_default();
            e.0 += s.usage;
            e.1 += s.time_us;
        }
        out
    }

    #[test]
    fn usage_sums_the_cores_and_deltas_keep_what_moved() {
        let root = fixture("intel-4c8t");
        let a = UsageWatch::new(&root, &[0, 4]).unwrap().read();
        assert_eq!(a["C1_ACPI"], (400_004, 1_800_000_000));
        let mut b = a.clone();
        b.get_mut("C3_ACPI").unwrap().0 += 7;
        b.get_mut("C3_ACPI").unwrap().1 += 1500;
        let d = delta(&a, &b);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d["C3_ACPI"],
            StateDelta {
                entries: 7,
                time_us: 1500
            }
        );
    }

    #[test]
    fn the_watch_reads_what_usage_reads_and_follows_changes() {
        let dir = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/intel-4c8t");
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(&src)
            .arg(dir.path().join("t"))
            .status()
            .unwrap();
        assert!(status.success());
        let root = SysRoot::new(dir.path().join("t"));
        let mut w = UsageWatch::new(&root, &[0, 4]).unwrap();
        assert_eq!(w.read(), usage(&root, &[0, 4]));
        // Rewritten in place (as the kernel's counters change): the kept files see it.
        let f = root.path("/sys/devices/system/cpu/cpu4/cpuidle/state3/usage");
        let was: u64 = std::fs::read_to_string(&f).unwrap().trim().parse().unwrap();
        std::fs::write(&f, format!("{}\n", was + 7)).unwrap();
        let d = delta(&usage(&root, &[0, 4]), &w.read());
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(w.read()["C3_ACPI"].0, usage(&root, &[0, 4])["C3_ACPI"].0);
        assert!(UsageWatch::new(&fixture("xeon-2s"), &[0, 1]).is_none());
    }

    #[test]
    fn a_request_is_written_and_held() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        let dev = dir.path().join("dev/cpu_dma_latency");
        std::fs::write(&dev, 2_000_000_000i32.to_ne_bytes()).unwrap();
        let root = SysRoot::new(dir.path());
        let hold = LatencyHold::request(&root, 0).unwrap();
        assert_eq!(hold.previous_us, Some(2_000_000_000));
        assert_eq!(read_dma_latency(&dev).unwrap(), 0);
        let missing = SysRoot::new(dir.path().join("nothing"));
        let e = LatencyHold::request(&missing, 0).unwrap_err().to_string();
        assert!(e.contains("cpu_dma_latency") && e.contains("--idle"), "{e}");
    }
}
