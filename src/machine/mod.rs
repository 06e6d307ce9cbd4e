//! What the machine is and does: topology, probes (frequency, thermal, load, steal), tuning.
//!
//! For: everything tare knows about the machine it measures on, and the few things it does to
//! it. Not for: running or measuring commands (exec), repetitions and when to act (method),
//! statistics, or printing beyond the `tare machine` text renderer.
//!
//! | module | what |
//! | --- | --- |
//! | [`sysfs`] | [`SysRoot`]: every /sys, /proc, /etc file through one root (`TARE_SYSROOT`, for tests) |
//! | [`procfs`] | parsers: /proc/stat, meminfo, loadavg, pressure, cpuinfo |
//! | [`topology`] | CPUs, physical cores, packages, NUMA, caches, capacity, isolcpus; [`topology::choose_cores`] |
//! | [`freq`], [`thermal`] | cpufreq and turbo controls; thermal zones and trip points |
//! | [`info`] | [`info::collect_info`] → `results::MachineInfo` (`Session.machine`) |
//! | [`inventory`] | `tare machine`: items with verdict ok/warn/unknown and advice; text and JSON |
//! | [`binary`] | whether the measured program is an unoptimized build (DWARF producer, target/debug) |
//! | [`warnings`] | one-line start-of-session warnings from the inventory's facts |
//! | [`tune`] | `tare machine tune/reset`: performance governor, turbo off, exact undo |
//! | [`probe`] | per-run [`probe::RunEnvironment`] (`Run.extra["environment"]`): other load, steal, freq, temp, PSI |
//! | [`cooldown`] | bounded cool-down and heat-up between runs |
//! | [`speed`] | each CPU's speed, timed: slow or unsteady vCPUs; which CPUs a core choice leaves out |
//! | [`energy`] | RAPL energy per run (`--energy`): domains, wrap-around, idle power, attribution |
//! | [`gpu`] | NVIDIA GPUs through NVML: clocks, temperature, power, energy counter; application clocks |
//! | [`gpu_energy`] | GPU energy per run (`--energy`): a sampler thread off the runs' path, counter period, idle power |
//! | [`idle`] | cpuidle states; the pinned cores' usage kept open for the probe; `--idle shallow` |
//!
//! Every sysfs/procfs file is read through one root (see [`sysfs`]) so tests can point it at a
//! synthetic tree (`tests/fixtures/sysfs/`). Missing files are never errors: they become `None`
//! or an item with verdict `unknown` that names the missing path.

pub mod binary;
pub mod blockdev;
pub mod cooldown;
pub mod energy;
pub mod freq;
pub mod gpu;
pub mod gpu_energy;
pub mod idle;
pub mod info;
pub mod inventory;
pub mod pinned;
pub mod probe;
pub mod procfs;
pub mod quiesce;
pub mod speed;
pub mod sysfs;
pub mod thermal;
pub mod topology;
pub mod tune;
pub mod warnings;

pub use sysfs::SysRoot;

/// Keys under which machine records are meant to be stored in the results' `extra` maps.
pub mod extra_keys {
    /// `Run.extra`: [`super::probe::RunEnvironment`].
    pub const RUN_ENVIRONMENT: &str = "environment";
    /// `Run.extra`: [`super::cooldown::CoolDownOutcome`] of the wait before the run.
    pub const RUN_COOLDOWN: &str = "cooldown";
    /// `Run.extra`: [`super::cooldown::HeatUpOutcome`] of the spin before the run.
    pub const RUN_HEATUP: &str = "heatup";
    /// `Session.extra`: [`super::inventory::Inventory`] at the start of the session.
    pub const SESSION_INVENTORY: &str = "machine_inventory";
    /// `Session.extra`: [`super::topology::CoreChoice`] used for the session.
    pub const SESSION_CORES: &str = "core_choice";
    /// `Session.extra`: the start-of-session warnings (list of strings).
    pub const SESSION_WARNINGS: &str = "machine_warnings";
}
