//! What a comparison compares: the metric of a run ([`Metric`]: wall, CPU, user or system time,
//! peak memory, a counter's event, package or GPU energy), how its values are written, and the
//! one reading of a run's energy it rests on.
//!
//! For: naming a metric (`--metric`, `--counters`, `--energy`) and reading its value off one
//! run. Not for: grouping runs into processes (`groups.rs`) or comparing them (`compare.rs`).

/// What a comparison compares: the runs' wall times, their CPU time (whole tree, or its user or
/// system part) or peak memory — every run records these — one of their counters
/// (`--counters`), by event name, or their energy (`--energy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    WallTime,
    CpuTime,
    UserTime,
    SystemTime,
    PeakMemory,
    Counter(String),
    Energy(EnergyKind),
}

/// Which energy of a run (`Run.meters.energy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnergyKind {
    /// The CPU packages' (RAPL `package-N` domains, or `psys` without them), where the run
    /// could use every CPU of its packages (`attributed`).
    Package,
    /// Every NVIDIA GPU's (NVML), where the run was long enough for the counter's resolution
    /// (not `coarse`).
    Gpu,
}

impl Metric {
    /// `time` is the wall time; `cpu_time`, `user_time`, `system_time`, `peak_memory` the
    /// run's own; `energy`/`package_energy` and `gpu_energy` the runs' energy; any other name a
    /// counter's event.
    pub fn parse(name: &str) -> Metric {
        match name {
            "time" | "wall" | "wall-time" | "wall_time" => Metric::WallTime,
            "cpu" | "cpu-time" | "cpu_time" => Metric::CpuTime,
            "user" | "user-time" | "user_time" => Metric::UserTime,
            "system" | "system-time" | "system_time" => Metric::SystemTime,
            "memory" | "peak-memory" | "peak_memory" => Metric::PeakMemory,
            "energy" | "package_energy" | "package-energy" => Metric::Energy(EnergyKind::Package),
            "gpu_energy" | "gpu-energy" => Metric::Energy(EnergyKind::Gpu),
            e => Metric::Counter(e.to_string()),
        }
    }

    /// The run's value of this metric; None for a run that has none (a counter not counted,
    /// energy not measured, not attributed or too coarse to judge).
    pub fn value(&self, r: &crate::results::Run) -> Option<f64> {
        match self {
            Metric::WallTime => Some(r.wall_time),
            Metric::CpuTime => Some(r.cpu_time),
            Metric::UserTime => Some(r.user_time),
            Metric::SystemTime => Some(r.system_time),
            Metric::PeakMemory => r.peak_memory.map(|b| b as f64),
            Metric::Counter(event) => r
                .extra
                .get("counters")?
                .as_array()?
                .iter()
                .find(|c| c["event"] == event.as_str())?["value"]
                .as_f64(),
            Metric::Energy(EnergyKind::Package) => package_joules(r),
            Metric::Energy(EnergyKind::Gpu) => {
                let (j, coarse) = gpu_joules(r)?;
                (!coarse).then_some(j)
            }
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Metric::WallTime => "wall time",
            Metric::CpuTime => "CPU time",
            Metric::UserTime => "user time",
            Metric::SystemTime => "system time",
            Metric::PeakMemory => "peak memory",
            Metric::Counter(e) => e,
            Metric::Energy(EnergyKind::Package) => "package energy (J)",
            Metric::Energy(EnergyKind::Gpu) => "GPU energy (J)",
        }
    }
}

/// The metrics every run records, as the reports show them.
const RECORDED: [Metric; 5] = [
    Metric::WallTime,
    Metric::CpuTime,
    Metric::UserTime,
    Metric::SystemTime,
    Metric::PeakMemory,
];

impl Metric {
    /// The name in results files (`wall_time`, …; a counter's event; `package_energy`,
    /// `gpu_energy`).
    pub fn key(&self) -> &str {
        match self {
            Metric::WallTime => "wall_time",
            Metric::CpuTime => "cpu_time",
            Metric::UserTime => "user_time",
            Metric::SystemTime => "system_time",
            Metric::PeakMemory => "peak_memory",
            Metric::Counter(e) => e,
            Metric::Energy(EnergyKind::Package) => "package_energy",
            Metric::Energy(EnergyKind::Gpu) => "gpu_energy",
        }
    }

    /// One of the metrics every run records and the summary holds (`wall_time` or
    /// `wall-time`, …), by its key; None for any other name.
    pub fn from_key(key: &str) -> Option<Metric> {
        RECORDED
            .into_iter()
            .find(|m| m.key() == key || m.key().replace('_', "-") == key)
    }

    /// The value of this metric in one run, if measured and finite.
    pub fn of_run(&self, r: &crate::results::Run) -> Option<f64> {
        self.value(r).filter(|v| v.is_finite())
    }

    /// This metric's summary, if the summary holds one (the recorded metrics do, when any
    /// run measured them).
    pub fn summary<'a>(
        &self,
        s: &'a crate::results::Summary,
    ) -> Option<&'a crate::results::MetricSummary> {
        match self {
            Metric::WallTime => s.wall_time.as_ref(),
            Metric::CpuTime => s.cpu_time.as_ref(),
            Metric::UserTime => s.user_time.as_ref(),
            Metric::SystemTime => s.system_time.as_ref(),
            Metric::PeakMemory => s.peak_memory.as_ref(),
            Metric::Counter(_) | Metric::Energy(_) => None,
        }
    }

    /// The SI prefix to show values around `v` in, and its unit.
    pub fn scale(&self, v: f64) -> (f64, &'static str) {
        match self {
            m if m.is_time() => crate::units::time_scale(v),
            Metric::PeakMemory => crate::units::bytes_scale(v),
            _ => (1.0, ""),
        }
    }

    /// Whether the values are seconds (a time of the run).
    pub fn is_time(&self) -> bool {
        matches!(
            self,
            Metric::WallTime | Metric::CpuTime | Metric::UserTime | Metric::SystemTime
        )
    }

    /// A value of this metric as every view writes it: a time, bytes, or a count (joules and
    /// counters' events).
    pub fn format(&self, v: f64) -> String {
        match self {
            m if m.is_time() => crate::units::format_time(v, None),
            Metric::PeakMemory => crate::units::format_bytes(v, None),
            _ => crate::units::format_count(v),
        }
    }
}

/// The run's package energy: the sum of its `package-N` domains (or `psys` when there is no
/// package domain), joules; `None` when not measured or not attributed to the run.
pub fn package_joules(r: &crate::results::Run) -> Option<f64> {
    let attributed = r.meters.energy.as_ref()?["attributed"] == true;
    attributed
        .then(|| crate::results::facts::recorded_package_joules(r))
        .flatten()
}

/// The run's GPU energy, summed over its GPUs (joules), and whether any GPU's reading was
/// coarse: the one reading of the record (`results::facts`), which exports and reports use too.
pub use crate::results::facts::gpu_joules;
