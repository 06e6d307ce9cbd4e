//! The machine a suite part ran on, as recorded in its `suite.json`: the facts of
//! [`crate::results::MachineInfo`] and a fingerprint over the ones that change measurements
//! (CPU model, CPUs, cores, memory in GiB, kernel, OS, virtualization; not the host name, so
//! identical cluster nodes agree). And the Slurm job tare runs in, if any: its id, the CPUs
//! Slurm gave it (affinity) and the cgroup it sits in.
//!
//! Not for: the machine's state while measuring (see `crate::machine::probe`).

use crate::machine::sysfs::SysRoot;
use crate::results::MachineInfo;
use serde::{Deserialize, Serialize};

/// What `suite.json` records under `"machine"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineRecord {
    pub fingerprint: String,
    #[serde(flatten)]
    pub info: MachineInfo,
}

/// This machine's record.
pub fn this_machine() -> MachineRecord {
    record(crate::machine::info::collect_info(&SysRoot::host()))
}

/// The record of `info`.
pub fn record(info: MachineInfo) -> MachineRecord {
    MachineRecord {
        fingerprint: fingerprint(&info),
        info,
    }
}

/// 16 hex digits over the facts that change measurements. FNV-1a, written here because it
/// must stay the same across Rust versions and platforms (std's hashers promise neither),
/// and ten lines do not justify a dependency.
pub fn fingerprint(m: &MachineInfo) -> String {
    let gib = (m.memory_bytes as f64 / (1u64 << 30) as f64).round() as u64;
    let text = format!(
        "{}\n{}\n{}\n{}\n{}\n{}\n{}",
        m.cpu_model,
        m.logical_cpus,
        m.physical_cores,
        gib,
        m.kernel,
        m.os,
        m.virtualization.as_deref().unwrap_or("none")
    );
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// One line describing a record, for messages: `host (fingerprint …: CPU model, N CPUs)`.
pub fn describe(m: &MachineRecord) -> String {
    format!(
        "{} (fingerprint {}: {}, {} CPUs, kernel {})",
        m.info.hostname, m.fingerprint, m.info.cpu_model, m.info.logical_cpus, m.info.kernel
    )
}

/// The Slurm job this process runs in.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmJob {
    /// `SLURM_JOB_ID` (for an array task: the task's own job id).
    pub id: String,
    /// The CPUs this process may run on (Slurm's affinity), from `Cpus_allowed_list`.
    pub cpus: Option<Vec<usize>>,
    /// The cgroup path of the memory (else cpuacct) hierarchy, from `/proc/self/cgroup`.
    pub cgroup: Option<String>,
    /// `SLURM_ARRAY_JOB_ID` and `SLURM_ARRAY_TASK_ID`: the array and this task's index in it
    /// (what `scontrol show job ARRAY_INDEX` and `sacct -j ARRAY_INDEX` take).
    pub array_job: Option<String>,
    pub array_task: Option<String>,
    /// `SLURMD_NODENAME` and `SLURM_JOB_PARTITION`: where the task ran.
    pub node: Option<String>,
    pub partition: Option<String>,
}

impl SlurmJob {
    /// The job of this process (from its environment and /proc), if any.
    pub fn current() -> Option<SlurmJob> {
        let id = std::env::var("SLURM_JOB_ID").ok()?;
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut job = SlurmJob::from_proc(id, &status, &cgroup);
        job.read_env(|k| std::env::var(k).ok());
        Some(job)
    }

    /// The array, task index, node and partition from Slurm's variables (`var` reads one).
    fn read_env(&mut self, var: impl Fn(&str) -> Option<String>) {
        let get = |k: &str| var(k).filter(|v| !v.is_empty());
        self.array_job = get("SLURM_ARRAY_JOB_ID");
        self.array_task = get("SLURM_ARRAY_TASK_ID");
        self.node = get("SLURMD_NODENAME");
        self.partition = get("SLURM_JOB_PARTITION");
    }

    /// `ARRAY_INDEX` for an array task (as squeue and sacct print it), else the job id.
    pub fn array_index(&self) -> String {
        match (&self.array_job, &self.array_task) {
            (Some(a), Some(t)) => format!("{a}_{t}"),
            _ => self.id.clone(),
        }
    }

    fn from_proc(id: String, status: &str, cgroup: &str) -> SlurmJob {
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(|l| crate::machine::topology::parse_cpu_list(l.trim()).ok());
        let mut path = None;
        for want in ["memory", "cpuacct", ""] {
            path = cgroup.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, ctrls, p) = (parts.next()?, parts.next()?, parts.next()?);
                let hit = if want.is_empty() {
                    ctrls.is_empty()
                } else {
                    ctrls.split(',').any(|c| c == want)
                };
                hit.then(|| p.to_string())
            });
            if path.is_some() {
                break;
            }
        }
        SlurmJob {
            id,
            cpus,
            cgroup: path,
            array_job: None,
            array_task: None,
            node: None,
            partition: None,
        }
    }

    /// Whether the job has a cgroup of its own (Slurm's `proctrack/cgroup` or
    /// `task/cgroup` put it below `…/slurm…/job_<id>/`).
    pub fn has_job_cgroup(&self) -> bool {
        self.cgroup
            .as_deref()
            .is_some_and(|p| p.contains("/job_") || p.contains("slurm"))
    }

    /// The one line that says how runs are measured inside this job, and whether that is the
    /// job's own cgroup subtree. `backend` is what tare detected (`cgroup-v1`, `cgroup-v2`,
    /// `rusage`).
    pub fn measurement_note(&self, backend: &str) -> (String, bool) {
        let cg = self.cgroup.as_deref().unwrap_or("?");
        if backend == "rusage" {
            return (
                format!(
                    "inside Slurm job {}: tare cannot create cgroups below the job's cgroup {cg}, so runs are measured with rusage (children never waited for are missed, no memory limit of the tree); ask the cluster's admins for cgroup delegation (Slurm's cgroup plugins) or run as a user who may write there",
                    self.id
                ),
                true,
            );
        }
        if self.has_job_cgroup() {
            (
                format!(
                    "inside Slurm job {}: runs are measured with {backend} in groups below the job's cgroup {cg}",
                    self.id
                ),
                false,
            )
        } else {
            (
                format!(
                    "inside Slurm job {}: the job has no cgroup of its own (the cluster tracks jobs without cgroups, e.g. proctrack/linuxproc); runs are measured with {backend} in tare's own groups below {cg}, exact for the runs but outside Slurm's accounting of the job",
                    self.id
                ),
                true,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_array_task_node_and_partition_are_read() {
        let mut job = SlurmJob::from_proc("1043".into(), "", "");
        assert_eq!(job.array_index(), "1043");
        let env = [
            ("SLURM_ARRAY_JOB_ID", "1041"),
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURMD_NODENAME", "node7"),
            ("SLURM_JOB_PARTITION", "debug"),
        ];
        job.read_env(|k| {
            env.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        });
        assert_eq!(job.array_index(), "1041_2");
        assert_eq!(job.node.as_deref(), Some("node7"));
        assert_eq!(job.partition.as_deref(), Some("debug"));
    }

    fn info(host: &str, kernel: &str) -> MachineInfo {
        MachineInfo {
            hostname: host.into(),
            cpu_model: "Some CPU".into(),
            logical_cpus: 8,
            physical_cores: 4,
            memory_bytes: 16 << 30,
            kernel: kernel.into(),
            os: "Debian".into(),
            virtualization: None,
        }
    }

    #[test]
    fn fingerprint_ignores_host_name_but_not_kernel() {
        let a = fingerprint(&info("n1", "6.1"));
        assert_eq!(a.len(), 16);
        assert_eq!(a, fingerprint(&info("n2", "6.1")));
        assert_ne!(a, fingerprint(&info("n1", "6.2")));
        let mut m = info("n1", "6.1");
        m.memory_bytes += 10 << 20; // a few MB less reserved by firmware: same machine
        assert_eq!(a, fingerprint(&m));
    }

    #[test]
    fn slurm_job_from_proc() {
        let status = "Name:\tsh\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        let with = "4:memory:/slurm/uid_0/job_7/step_batch\n2:cpuacct:/slurm/uid_0/job_7\n";
        let j = SlurmJob::from_proc("7".into(), status, with);
        assert_eq!(j.cpus, Some(vec![0, 1]));
        assert_eq!(j.cgroup.as_deref(), Some("/slurm/uid_0/job_7/step_batch"));
        assert!(j.has_job_cgroup());
        assert!(!j.measurement_note("cgroup-v1").1);
        assert!(j.measurement_note("rusage").1);
        let without = SlurmJob::from_proc("7".into(), status, "4:memory:/\n0::/\n");
        assert!(!without.has_job_cgroup());
        let (line, loud) = without.measurement_note("cgroup-v1");
        assert!(loud && line.contains("no cgroup of its own"), "{line}");
        let v2 = SlurmJob::from_proc(
            "7".into(),
            "",
            "0::/system.slice/slurmstepd.scope/job_7/step_batch\n",
        );
        assert!(v2.has_job_cgroup());
    }
}
