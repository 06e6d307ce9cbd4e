//! The per-run environment record: what the machine did on the run's cores while it ran.
//!
//! For: a snapshot just before a run and one just after ([`RunProbe::start`],
//! [`RunProbe::finish`]) giving a [`RunEnvironment`]: frequencies and temperature before and
//! after, CPU time of *other* work on the run's cores, steal and iowait time, pressure stall
//! deltas, and whether the run counts as interfered with ([`InterferenceThresholds`]).
//! Stored per run under `Run.extra["environment"]`.
//!
//! Not for: measuring the run itself (exec does that with cgroups), acting on the machine
//! (see [`super::cooldown`]), or session-level facts (see [`super::inventory`]).
//!
//! Cost: files are found once per session in [`RunProbe::new`] and kept open (close-on-exec, so
//! runs do not inherit them); each snapshot re-reads `/proc/stat`, the `scaling_cur_freq` of the
//! pinned cores, the CPU thermal zones and the three `/proc/pressure` files from offset 0 into
//! one reusable buffer: about 20–40 µs per snapshot on the 2-CPU CI VM under load (release). `/proc/stat` counts in scheduler ticks
//! (USER_HZ, normally 10 ms) and is sampled at tick granularity, so CPU times here carry an
//! error of about one tick per core; the thresholds allow for it.

use super::freq::cur_freq_path;
use super::procfs::{clock_ticks_per_second, parse_psi, sum_cpu_ticks, CpuTicks, Psi};
use super::sysfs::{KernelFile, SysRoot};
use super::thermal::{parse_millicelsius, relevant_temp_paths};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// When a run counts as interfered with. Compared against the probe window (from the first
/// snapshot to the second, a little longer than the run's wall time) times the number of cores
/// watched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InterferenceThresholds {
    /// Other work's CPU time on the run's cores, as a share of window × cores. Default 0.05.
    pub other_cpu_share: f64,
    /// Steal time (the hypervisor ran someone else) as a share of window × cores. Default 0.05.
    pub steal_share: f64,
    /// Ticks per core that are always tolerated, for the tick granularity of /proc/stat.
    /// Default 2 (20 ms per core at USER_HZ = 100).
    pub tick_allowance: u64,
}

impl Default for InterferenceThresholds {
    fn default() -> Self {
        InterferenceThresholds {
            other_cpu_share: 0.05,
            steal_share: 0.05,
            tick_allowance: 2,
        }
    }
}

/// Pressure stall deltas during a run, in microseconds (`None` where the kernel has no PSI).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PsiDelta {
    pub cpu_some_us: Option<u64>,
    pub cpu_full_us: Option<u64>,
    pub io_some_us: Option<u64>,
    pub io_full_us: Option<u64>,
    pub memory_some_us: Option<u64>,
    pub memory_full_us: Option<u64>,
}

/// What the machine did during one run. Times in seconds, frequencies in kHz, temperatures in
/// °C. Stored as `Run.extra["environment"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnvironment {
    /// Cores watched: the run's pinned cores, or empty when it was not pinned (then all CPUs
    /// are watched and no frequencies are recorded).
    pub cores: Vec<usize>,
    /// Seconds between the two snapshots (covers the run).
    pub window: f64,
    /// `scaling_cur_freq` per watched core before and after, in the order of `cores`.
    pub freq_before_khz: Vec<Option<u64>>,
    pub freq_after_khz: Vec<Option<u64>>,
    /// Hottest CPU thermal zone before and after.
    pub temp_before_c: Option<f64>,
    pub temp_after_c: Option<f64>,
    /// Non-idle CPU time (user, nice, system, irq, softirq) on the watched cores in the window.
    pub busy_time: f64,
    /// `busy_time` minus the run's own CPU time, clamped at 0: other work that competed with
    /// the run (tare's own threads included if they share the cores).
    pub other_cpu_time: f64,
    /// Time the hypervisor did not run the watched (virtual) cores.
    pub steal_time: f64,
    /// Idle time with I/O outstanding on the watched cores.
    pub iowait_time: f64,
    pub psi: PsiDelta,
    /// Idle states entered on the run's pinned cores during the window, by state name (see
    /// `machine::idle`); empty when the run was not pinned or the kernel has no cpuidle.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub idle: BTreeMap<String, super::idle::StateDelta>,
    /// Each NVIDIA GPU's clocks and temperature before and after, and the energy it used
    /// (NVML, `machine::gpu`); empty where there is no GPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu: Vec<super::gpu::GpuDelta>,
    pub interfered: bool,
    /// Why, in words, when `interfered`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference_reason: Option<String>,
}

/// Snapshot taken by [`RunProbe::start`].
#[derive(Debug, Clone)]
pub struct ProbeStart {
    at: Instant,
    ticks: Option<CpuTicks>,
    freqs: Vec<Option<u64>>,
    temp: Option<f64>,
    psi: [Option<Psi>; 3],
    idle: BTreeMap<String, (u64, u64)>,
    gpu: Vec<super::gpu::GpuReading>,
}

/// Session-long prober for one set of cores; reuse it for every run. Keeps its files open.
#[derive(Debug)]
pub struct RunProbe {
    cores: Vec<usize>,
    stat: KernelFile,
    freq_files: Vec<Option<KernelFile>>,
    temp_files: Vec<KernelFile>,
    psi_files: [Option<KernelFile>; 3],
    thresholds: InterferenceThresholds,
    ticks_per_sec: u64,
    buf: String,
    /// The snapshot `finish` took last, offered to the next `start` (see [`REUSE_WITHIN`]).
    last: Option<ProbeStart>,
    reuse_within: std::time::Duration,
    /// The pinned cores' idle-state counters, kept open (none when not pinned or no cpuidle).
    idle: Option<super::idle::UsageWatch>,
    /// NVML where the machine has NVIDIA GPUs.
    nvml: Option<super::gpu::Nvml>,
    /// The last GPU reading and when it was taken (see [`GPU_REFRESH`]).
    gpu_last: Option<(Instant, Vec<super::gpu::GpuReading>)>,
}

/// GPU clocks, temperature and power are read at most this often: on an H200 VM the four
/// NVML calls of a reading cost about 90 µs, a tenth of a `/bin/true` run, while the driver's
/// power figure is itself an average over about a second and clocks and temperature move on
/// the scale of tens of milliseconds. A run shorter than this gets the reading of up to this
/// long ago; a longer one gets fresh ones before and after.
pub const GPU_REFRESH: std::time::Duration = std::time::Duration::from_millis(100);

/// A `finish` snapshot this recent stands in for the next run's `start` snapshot: back to back,
/// nothing but tare's own bookkeeping (microseconds of CPU, far below the one-tick allowance)
/// happens between the two, and reading `/proc/stat` and the pressure files again would cost
/// about 30 µs per run, the largest part of the probe's price. The window then starts at the
/// previous run's end. Anything slower in between (an action, a pause, a cool-down) takes
/// longer than this, and a fresh snapshot is taken.
pub const REUSE_WITHIN: std::time::Duration = std::time::Duration::from_micros(500);

const PSI_NAMES: [&str; 3] = ["cpu", "io", "memory"];

impl RunProbe {
    /// The prober of a session's runs (`tare run`) or worker invocations (`tare kernels`):
    /// over the `pinned` cores where runs are held to them, else over all online CPUs; with
    /// those cores (for heat-up). The one place both engines build it.
    pub fn for_runs(
        root: &SysRoot,
        pinned: Option<&[usize]>,
        thresholds: InterferenceThresholds,
    ) -> (RunProbe, Vec<usize>) {
        let cores = pinned.map(<[usize]>::to_vec).unwrap_or_else(|| {
            super::topology::read_topology(root)
                .map(|t| t.cpus.iter().map(|c| c.id).collect())
                .unwrap_or_default()
        });
        let probe = RunProbe::new(root, &cores, pinned.is_some(), thresholds);
        (probe, cores)
    }

    /// Resolves the files to read for a run on `cores` (empty: watch all CPUs). `pinned`: the
    /// run is held to `cores`, so their idle states are its own and are recorded; an unpinned
    /// run's are not (every CPU's would be read each run: hundreds of files on a large machine).
    pub fn new(
        root: &SysRoot,
        cores: &[usize],
        pinned: bool,
        thresholds: InterferenceThresholds,
    ) -> RunProbe {
        let psi_files = PSI_NAMES.map(|n| {
            let p = format!("/proc/pressure/{n}");
            root.exists(&p).then(|| KernelFile::new(root, &p))
        });
        RunProbe {
            cores: cores.to_vec(),
            stat: KernelFile::new(root, "/proc/stat"),
            freq_files: cores
                .iter()
                .map(|&c| cur_freq_path(root, c).map(|p| KernelFile::new(root, &p)))
                .collect(),
            temp_files: relevant_temp_paths(root)
                .iter()
                .map(|p| KernelFile::new(root, p))
                .collect(),
            psi_files,
            thresholds,
            ticks_per_sec: clock_ticks_per_second(),
            buf: String::with_capacity(16 * 1024),
            last: None,
            reuse_within: REUSE_WITHIN,
            idle: (pinned && !cores.is_empty())
                .then(|| super::idle::UsageWatch::new(root, cores))
                .flatten(),
            nvml: super::gpu::Nvml::load(),
            gpu_last: None,
        }
    }

    /// Clocks, temperature and power (tens of microseconds a GPU, at most every
    /// [`GPU_REFRESH`]); not the energy counter, which takes milliseconds a read and is the GPU
    /// energy meter's (`machine::gpu_energy`).
    fn read_gpu(&mut self) -> Vec<super::gpu::GpuReading> {
        let Some(nvml) = &self.nvml else {
            return Vec::new();
        };
        if let Some((at, r)) = &self.gpu_last {
            if at.elapsed() < GPU_REFRESH {
                return r.clone();
            }
        }
        let r = nvml.read_cheap();
        self.gpu_last = Some((Instant::now(), r.clone()));
        r
    }

    fn read_idle(&mut self) -> BTreeMap<String, (u64, u64)> {
        match &mut self.idle {
            Some(w) => w.read(),
            None => BTreeMap::new(),
        }
    }

    /// How old the last end snapshot may be to stand in for the next start snapshot
    /// ([`REUSE_WITHIN`] by default; zero never reuses).
    pub fn set_reuse_within(&mut self, d: std::time::Duration) {
        self.reuse_within = d;
    }

    pub fn cores(&self) -> &[usize] {
        &self.cores
    }

    /// Summed ticks of the watched cores and how many cores had a line.
    fn read_ticks(&mut self) -> Option<(CpuTicks, usize)> {
        self.stat.read_into(&mut self.buf).ok()?;
        let (t, found) = sum_cpu_ticks(&self.buf, &self.cores);
        (found > 0).then_some((t, found))
    }

    fn read_freqs(&mut self) -> Vec<Option<u64>> {
        let mut out = Vec::with_capacity(self.freq_files.len());
        for f in &mut self.freq_files {
            let v = f.as_mut().and_then(|f| {
                f.read_into(&mut self.buf).ok()?;
                self.buf.trim().parse::<u64>().ok()
            });
            out.push(v);
        }
        out
    }

    fn read_psi(&mut self) -> [Option<Psi>; 3] {
        let mut out = [None; 3];
        for (i, f) in self.psi_files.iter_mut().enumerate() {
            if let Some(f) = f {
                if f.read_into(&mut self.buf).is_ok() {
                    out[i] = Some(parse_psi(&self.buf));
                }
            }
        }
        out
    }

    /// Hottest plausible reading of the CPU thermal zones.
    fn read_temp(&mut self) -> Option<f64> {
        let mut best: Option<f64> = None;
        for f in &mut self.temp_files {
            if f.read_into(&mut self.buf).is_ok() {
                if let Some(c) = parse_millicelsius(&self.buf) {
                    best = Some(best.map_or(c, |b: f64| b.max(c)));
                }
            }
        }
        best
    }

    /// Snapshot just before the run. /proc/stat is read last, closest to the run. The previous
    /// run's end snapshot is used instead when it is less than [`REUSE_WITHIN`] old.
    pub fn start(&mut self) -> ProbeStart {
        if let Some(last) = self.last.take() {
            if last.at.elapsed() < self.reuse_within {
                return last;
            }
        }
        let freqs = self.read_freqs();
        let temp = self.read_temp();
        let psi = self.read_psi();
        let idle = self.read_idle();
        let gpu = self.read_gpu();
        let ticks = self.read_ticks().map(|(t, _)| t);
        ProbeStart {
            at: Instant::now(),
            ticks,
            freqs,
            temp,
            psi,
            idle,
            gpu,
        }
    }

    /// Snapshot just after the run (/proc/stat first) and the record of the window.
    /// `run_cpu_seconds` is the run's own CPU time (user + system of its tree).
    pub fn finish(
        &mut self,
        start: ProbeStart,
        run_cpu_seconds: f64,
        run_wall_seconds: f64,
    ) -> RunEnvironment {
        let ticks = self.read_ticks();
        let found = ticks.map(|(_, n)| n).unwrap_or(0);
        let ticks = ticks.map(|(t, _)| t);
        let window = start.at.elapsed().as_secs_f64().max(run_wall_seconds);
        let freqs = self.read_freqs();
        let temp = self.read_temp();
        let psi = self.read_psi();
        let idle = self.read_idle();
        let idle_delta = super::idle::delta(&start.idle, &idle);
        let gpu = self.read_gpu();
        let gpu_delta = super::gpu::delta(&start.gpu, &gpu);
        self.last = Some(ProbeStart {
            at: Instant::now(),
            ticks,
            freqs: freqs.clone(),
            temp,
            psi,
            idle,
            gpu,
        });

        let hz = self.ticks_per_sec as f64;
        let delta = match (start.ticks, ticks) {
            (Some(a), Some(b)) => Some(b.since(&a)),
            _ => None,
        };
        let d = delta.unwrap_or_default();
        let busy_time = d.busy() as f64 / hz;
        let other_cpu_time = (busy_time - run_cpu_seconds.max(0.0)).max(0.0);
        let steal_time = d.steal as f64 / hz;
        let iowait_time = d.iowait as f64 / hz;

        let psi_delta = |i: usize, full: bool| -> Option<u64> {
            let pick = |p: &Psi| if full { p.full } else { p.some };
            let a = pick(start.psi[i].as_ref()?)?;
            let b = pick(psi[i].as_ref()?)?;
            Some(b.total_us.saturating_sub(a.total_us))
        };
        let psi_d = PsiDelta {
            cpu_some_us: psi_delta(0, false),
            cpu_full_us: psi_delta(0, true),
            io_some_us: psi_delta(1, false),
            io_full_us: psi_delta(1, true),
            memory_some_us: psi_delta(2, false),
            memory_full_us: psi_delta(2, true),
        };

        // Not pinned: every CPU with a line in /proc/stat.
        let ncores = if self.cores.is_empty() {
            found.max(1)
        } else {
            self.cores.len()
        } as f64;
        let capacity = window * ncores;
        let allowance = self.thresholds.tick_allowance as f64 * ncores / hz;
        let mut reasons = Vec::new();
        if delta.is_none() {
            reasons.push("no /proc/stat reading; interference unknown".to_string());
        }
        let other_limit = (self.thresholds.other_cpu_share * capacity).max(allowance);
        if other_cpu_time > other_limit {
            reasons.push(format!(
                "other work used {:.3} s of CPU on the run's cores ({:.0}% of {:.3} s × {} cores)",
                other_cpu_time,
                100.0 * other_cpu_time / capacity.max(f64::MIN_POSITIVE),
                window,
                ncores
            ));
        }
        let steal_limit = (self.thresholds.steal_share * capacity).max(allowance);
        if steal_time > steal_limit {
            reasons.push(format!(
                "the hypervisor stole {:.3} s ({:.0}% of the window)",
                steal_time,
                100.0 * steal_time / capacity.max(f64::MIN_POSITIVE)
            ));
        }
        let interfered = delta.is_some() && !reasons.is_empty();
        RunEnvironment {
            cores: self.cores.clone(),
            window,
            freq_before_khz: start.freqs,
            freq_after_khz: freqs,
            temp_before_c: start.temp,
            temp_after_c: temp,
            busy_time,
            other_cpu_time,
            steal_time,
            iowait_time,
            psi: psi_d,
            idle: idle_delta,
            gpu: gpu_delta,
            interfered,
            interference_reason: if reasons.is_empty() {
                None
            } else {
                Some(reasons.join("; "))
            },
        }
    }
}
