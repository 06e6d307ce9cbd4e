//! The results data model: what a benchmark session stores, field by field.
//!
//! Units in data are plain numbers: seconds and bytes. Every field that is added keeps old
//! readers working; a field whose meaning changes bumps [`SCHEMA_VERSION`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the results document layout. Bump it when a field changes meaning.
///
/// 2: kernel results (`tare kernels`): a benchmark is one kernel with its parameters in one
/// program, each run is one *sample* (iteration level) — `wall_time`/`cpu_time` are then
/// seconds **per loop** — with its raw record in `Run.extra["sample"]` ([`SampleRecord`]), the
/// invocations (fresh processes) in `Benchmark.extra["invocations"]` ([`InvocationRecord`]) and
/// the kernel's identity in `Benchmark.extra["kernel"]` ([`KernelRecord`]). Files of version 1
/// (only `tare run` results) read as they are.
pub const SCHEMA_VERSION: u32 = 2;

/// `Run.extra` key of a kernel sample's raw record.
pub const SAMPLE_KEY: &str = "sample";
/// `Benchmark.extra` key of a kernel benchmark's invocations.
pub const INVOCATIONS_KEY: &str = "invocations";
/// `Benchmark.extra` key of a kernel benchmark's identity and checks.
pub const KERNEL_KEY: &str = "kernel";
/// `Run.extra` key of an imported sample's process: an id of the process (fork, worker,
/// test-binary run, file) of the other harness that took it; samples with the same id come
/// from one process. Read by `conclude::levels`.
pub const PROCESS_KEY: &str = "process";
/// `Benchmark.extra` key saying what one process is in an imported format
/// ([`ProcessLevel`]).
pub const PROCESS_LEVEL_KEY: &str = "process_level";

/// What the format of an imported benchmark records about processes: the unit that
/// `Run.extra["process"]` numbers, whether the file records it or tare took the whole file as
/// one process, and a note in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessLevel {
    /// `run` (hyperfine: each run a process), `fork` (JMH), `worker` (pyperf), `test binary`
    /// (go test), `file` (the format records no process: one process per file).
    pub unit: String,
    /// False when the format does not record processes and the whole file is one.
    pub recorded: bool,
    pub note: String,
}

/// One sample of a kernel as the worker reported it (iteration level).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRecord {
    /// Index of the invocation (process) that took it, from 0, in this benchmark.
    pub invocation: usize,
    /// Position of the sample in its invocation, from 0.
    pub position: usize,
    /// Loops of the kernel body timed together.
    pub loops: u64,
    /// Elapsed nanoseconds for all the loops, on the worker's monotonic clock.
    pub ns: u64,
    /// Process CPU nanoseconds over the same interval, where the client measures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// Bytes processed by all the loops (throughput), if the kernel declares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Items processed by all the loops, if the kernel declares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
    /// User metrics (`m.NAME` in the protocol).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    /// Why the sample does not count, when it does not: "warm-up" (fixed), "steady-state"
    /// (before the detected steady state), "unresolved" (shorter than the clock resolves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
}

/// One invocation (a fresh process of the worker) in which a kernel benchmark took samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvocationRecord {
    /// Index among this benchmark's invocations, from 0.
    pub index: usize,
    /// Round of the session (each program once per round).
    pub round: usize,
    /// Wall seconds of the whole process (start to exit), shared by the kernels it ran.
    pub wall_time: f64,
    /// CPU seconds of the whole process tree (cgroup accounting), shared likewise.
    pub cpu_time: f64,
    /// Peak memory of the process tree in bytes, where the backend measures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory: Option<u64>,
    /// Samples taken for this benchmark in the invocation, and how many of them counted.
    pub samples: usize,
    pub counted: usize,
    /// Median seconds per loop of the counted samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<f64>,
    /// Mean seconds per loop of the counted samples: the invocation's value (the process level
    /// uses it, `conclude::levels::process_values`). Absent in records from before it: the
    /// median stands in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// Samples excluded at the start as not yet in a steady state (JIT warm-up), if any.
    #[serde(default)]
    pub steady_from: usize,
    /// Why the invocation failed, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Setup of the invocation (randomized surroundings), in words, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// Harness meters over the invocation (`method::stages::Meter`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meters: BTreeMap<String, f64>,
    /// What the machine did on the worker's cores while the process ran, as `tare run`
    /// records per run (`machine::probe::RunEnvironment`: other work's CPU time, steal,
    /// frequencies, temperature, `interfered` and why), shared by the kernels it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<serde_json::Value>,
}

/// What a kernel benchmark is and what tare checked about it.
fn one() -> u32 {
    1
}
fn is_one(n: &u32) -> bool {
    *n == 1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRecord {
    pub kernel: String,
    /// Label of the implementation (program), e.g. its language.
    pub implementation: String,
    /// The worker's command line.
    pub program: String,
    #[serde(default)]
    pub lang: String,
    #[serde(default)]
    pub client: String,
    /// Loops per sample chosen by calibration, or fixed by `--loops`.
    pub loops: u64,
    /// Threads the kernel runs its body on (`threads=T` in its announcement): each runs the N
    /// loops, a sample's time from their common start to the last one's end, so the time per
    /// loop is per thread and the total throughput T loops in that time; 1 if absent.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub threads: u32,
    /// The loops were fixed by `--loops N` (not calibrated).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loops_fixed: bool,
    /// The worker's clock: smallest step and cost of one read, in nanoseconds.
    pub clock_resolution_ns: f64,
    pub clock_cost_ns: f64,
    /// Shortest sample (ns) tare accepts: long enough for the clock's resolution and cost.
    pub min_sample_ns: f64,
    /// time(2N) / time(N) measured in the first invocation (≈ 2 for a kernel whose cost is
    /// in its loop); `None` when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linearity: Option<f64>,
    /// The 95% interval of that ratio: the median of alternated N/2N pairs, each pair's
    /// time(2N)/time(N), with its distribution-free interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linearity_ci: Option<[f64; 2]>,
    /// How many N/2N pairs the ratio rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linearity_pairs: Option<usize>,
    /// Why the linearity check was not made (one loop already many times the sample time), in
    /// words; `None` when it was made (or not reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linearity_skipped: Option<String>,
    /// The first-loop check (first invocation, where calibration's first steps suggested it):
    /// the median time (ns) of a sample's first loop and of a later loop, from samples of 1
    /// and 2 loops alternated; set only when the later loop took under a tenth of the first
    /// (state left by loop 1 makes later loops cheaper: a body that sorts in place).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_loop_ns: Option<[f64; 2]>,
    /// Bytes and items per loop, if the kernel reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_loop: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_per_loop: Option<f64>,
}

impl Default for KernelRecord {
    fn default() -> Self {
        KernelRecord {
            kernel: Default::default(),
            implementation: Default::default(),
            program: Default::default(),
            lang: Default::default(),
            client: Default::default(),
            loops: Default::default(),
            threads: 1,
            loops_fixed: Default::default(),
            clock_resolution_ns: Default::default(),
            clock_cost_ns: Default::default(),
            min_sample_ns: Default::default(),
            linearity: Default::default(),
            linearity_ci: Default::default(),
            linearity_pairs: Default::default(),
            linearity_skipped: Default::default(),
            first_loop_ns: Default::default(),
            bytes_per_loop: Default::default(),
            items_per_loop: Default::default(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Termination {
    /// The main process exited on its own (any exit code).
    Exit,
    /// Killed because the whole tree used more CPU time than `--cpu-limit`.
    Cpu,
    /// Killed because it ran longer than `--wall-limit`.
    Wall,
    /// Killed by the kernel's OOM killer at `--memory-limit`.
    Memory,
    /// Could not create a process or thread because of `--pids-limit` (the tree was then
    /// stopped at its end like any other run).
    Pids,
    /// The main process was ended by a signal not sent by tare.
    Signal,
    /// The command could not be started, or tare itself stopped it (e.g. Ctrl-C).
    Failed,
}

impl Termination {
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::Exit => "exit",
            Termination::Cpu => "cpu",
            Termination::Wall => "wall",
            Termination::Memory => "memory",
            Termination::Pids => "pids",
            Termination::Signal => "signal",
            Termination::Failed => "failed",
        }
    }
}

/// Which mechanism measured CPU time and memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MethodKind {
    CgroupV1,
    CgroupV2,
    Rusage,
    /// Measured by another harness and read by `tare import` (`extra.import` says which).
    Imported,
    /// Not known: recovered from a journal whose session header was damaged.
    Unknown,
}

impl MethodKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MethodKind::CgroupV1 => "cgroup-v1",
            MethodKind::CgroupV2 => "cgroup-v2",
            MethodKind::Rusage => "rusage",
            MethodKind::Imported => "imported",
            MethodKind::Unknown => "unknown",
        }
    }
}

/// How the numbers of a session were measured; printed in every summary and stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementMethod {
    pub kind: MethodKind,
    /// What each number includes, in words (e.g. "CPU time of the whole process tree from cpuacct").
    pub cpu_time: String,
    pub peak_memory: String,
    pub wall_time: String,
    /// Caveats the user must know (fallback, no peak on old kernels, ...). Empty when none.
    pub warnings: Vec<String>,
}

/// One run of one command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Position of this run in its benchmark's sequence, warm-up included, from 0.
    pub index: usize,
    /// Round number in an interleaved session (each command once per round), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<usize>,
    /// Warm-up runs are measured and stored but excluded from statistics.
    pub warmup: bool,
    /// Seconds from the start of the session to the start of this run.
    pub start_offset: f64,
    /// Monotonic wall-clock seconds from spawn to the main process's exit.
    pub wall_time: f64,
    /// User CPU seconds of the whole process tree.
    pub user_time: f64,
    /// System CPU seconds of the whole process tree.
    pub system_time: f64,
    /// `user_time + system_time` (as accounted by the kernel; may differ by rounding).
    pub cpu_time: f64,
    /// Peak memory of the whole tree in bytes, or null where the kernel offers no peak.
    pub peak_memory: Option<u64>,
    /// Exit code of the main process when it exited normally.
    pub exit_code: Option<i32>,
    /// Signal that ended the main process, if any.
    pub signal: Option<i32>,
    pub termination: Termination,
    /// Involuntary context switches of the waited-for processes (from wait4's rusage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub involuntary_context_switches: Option<u64>,
    /// Whether the run counts as a sample: not warm-up, exited normally with success (or failure
    /// ignored), no limit hit.
    pub counted: bool,
    /// Extra per-run records from later layers (machine probes, setups), keyed by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// The optional meters of the run (`--io`, `--cache`, `--ready`, `--memory-sample`,
    /// energy); each is absent when not asked for. Flattened: `io`, `cache`, ... are keys of
    /// the run itself.
    #[serde(default, flatten)]
    pub meters: Box<RunMeters>,
}

impl Run {
    /// A run that is a sample, not a process (a kernel's sample, a process's time per loop in a
    /// head to head, an imported harness's iteration): `wall` and `cpu` seconds (user time =
    /// CPU time, no system time), counted, no round, no exit or memory of its own. Callers set
    /// what else they know (round, warm-up, offset, extra).
    pub fn sample(index: usize, wall: f64, cpu: f64) -> Run {
        Run {
            index,
            round: None,
            warmup: false,
            start_offset: 0.0,
            wall_time: wall,
            user_time: cpu,
            system_time: 0.0,
            cpu_time: cpu,
            peak_memory: None,
            exit_code: None,
            signal: None,
            termination: Termination::Exit,
            involuntary_context_switches: None,
            counted: true,
            extra: BTreeMap::new(),
            meters: Default::default(),
        }
    }
}

/// The optional per-run meters (see docs/meters.md for what each includes, and its unit).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunMeters {
    /// Bytes and operations read and written by the run (`--io`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<Box<RunIo>>,
    /// The page-cache state the run started in (`--cache cold|warm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Box<RunCache>>,
    /// Seconds from spawn until the program said it was ready (`--ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_time: Option<f64>,
    /// Whether the `--background` co-runner ran during this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// The run group's memory over time (`--memory-sample`): `[seconds, bytes]` pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_timeline: Option<Vec<[f64; 2]>>,
    /// Energy of the RAPL domains around the run, where the machine has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<serde_json::Value>,
}

/// I/O of one run. Block-layer numbers cover every process of the run's group (children never
/// waited for included); syscall-level numbers cover the main process and the descendants it
/// waited for (like rusage). Bytes; operations are counts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunIo {
    /// Where the block-layer numbers come from (`blkio.throttle` of cgroup v1, `io.stat` of
    /// cgroup v2), or null when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_source: Option<String>,
    /// Bytes read from block devices by the whole tree (device reads: page-cache hits excluded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_read_bytes: Option<u64>,
    /// Bytes written to block devices on the tree's behalf during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_write_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_read_ops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_write_ops: Option<u64>,
    /// Bytes passed to read-like system calls (`rchar`: page-cache hits, pipes and terminals
    /// included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall_read_bytes: Option<u64>,
    /// Bytes passed to write-like system calls (`wchar`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall_write_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall_reads: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall_writes: Option<u64>,
    /// Bytes the waited-for processes caused to be fetched from storage (`read_bytes` of
    /// /proc/PID/io).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_read_bytes: Option<u64>,
    /// Bytes the waited-for processes dirtied for storage, less truncated ones
    /// (`write_bytes − cancelled_write_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_write_bytes: Option<u64>,
    /// Dirty or under-writeback page cache charged to the run's memory group when the run
    /// ended: data the run wrote that had not reached the device yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_left_bytes: Option<u64>,
}

/// The page-cache state one run started in.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunCache {
    /// `cold` or `warm`.
    pub state: String,
    /// How the state was made (`drop_caches`, `fadvise`, `read`).
    pub how: String,
    /// Bytes of the named files resident in the page cache just before the run (mincore).
    pub resident_bytes: u64,
    /// Total size of the named files.
    pub file_bytes: u64,
}

/// Summary statistics of one metric over the counted runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSummary {
    pub n: usize,
    pub median: f64,
    /// 95% confidence interval of the median (distribution-free, from order statistics).
    pub median_ci_low: f64,
    pub median_ci_high: f64,
    /// False when there are too few runs (n < 6) for a 95% interval: the bounds are then
    /// min and max.
    pub median_ci_exact: bool,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 when n < 2.
    pub stddev: f64,
    /// Coefficient of variation: stddev / mean.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
    pub q1: f64,
    pub q3: f64,
    pub iqr: f64,
    pub p5: f64,
    pub p95: f64,
}

impl From<crate::stats::Describe> for MetricSummary {
    fn from(d: crate::stats::Describe) -> Self {
        MetricSummary {
            n: d.n,
            median: d.median,
            median_ci_low: d.median_ci_low,
            median_ci_high: d.median_ci_high,
            median_ci_exact: d.median_ci_exact,
            mean: d.mean,
            stddev: d.stddev,
            cv: d.cv,
            min: d.min,
            max: d.max,
            q1: d.q1,
            q3: d.q3,
            iqr: d.iqr,
            p5: d.p5,
            p95: d.p95,
        }
    }
}

/// Summaries per metric; a metric is absent when no run measured it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    pub wall_time: Option<MetricSummary>,
    pub cpu_time: Option<MetricSummary>,
    pub user_time: Option<MetricSummary>,
    pub system_time: Option<MetricSummary>,
    pub peak_memory: Option<MetricSummary>,
}

/// One benchmark: a command (with its parameter values) and its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Benchmark {
    pub name: String,
    /// The command as the user wrote it, parameters substituted.
    pub command: String,
    /// The argv that was executed.
    pub argv: Vec<String>,
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    pub summary: Summary,
    /// Why measuring stopped (e.g. "precision reached: median 95% CI within ±1%").
    pub stop_reason: String,
    pub runs: Vec<Run>,
    /// Warnings about the sample (outliers, warm-up, drift, modes, ...), each with evidence.
    #[serde(default)]
    pub diagnostics: Vec<Diagnostic>,
    /// Other per-benchmark records of later layers, keyed by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// What the machine was, for the record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MachineInfo {
    pub hostname: String,
    pub cpu_model: String,
    pub logical_cpus: usize,
    pub physical_cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    pub os: String,
    pub virtualization: Option<String>,
}

/// Limits applied to every run's whole process tree.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LimitsRecord {
    pub cpu_time: Option<f64>,
    pub wall_time: Option<f64>,
    pub memory: Option<u64>,
    pub pids: Option<u64>,
}

/// A whole session: one `tare run` invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub schema_version: u32,
    pub tare_version: String,
    /// The exact command line, argv[0] included.
    pub invocation: Vec<String>,
    /// RFC 3339 UTC time the session started.
    pub started_at: String,
    pub machine: MachineInfo,
    pub method: MeasurementMethod,
    /// Cores the runs were pinned to, if any.
    pub cores: Option<Vec<usize>>,
    pub limits: LimitsRecord,
    /// Environment of the runs: names only unless `--record-env-values`.
    pub environment: BTreeMap<String, Option<String>>,
    /// Random seed of the session (order, bootstrap).
    pub seed: u64,
    pub benchmarks: Vec<Benchmark>,
    /// Each benchmark against the reference (empty with a single benchmark).
    #[serde(default)]
    pub comparisons: Vec<ComparisonRecord>,
    /// Whether the session finished (false in a journal, or after Ctrl-C).
    pub complete: bool,
    /// Session-level records of later layers, keyed by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// A warning about a benchmark's sample, with the evidence and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// What was found: `outliers`, `warmup`, `trend`, `modes`, `autocorrelation`,
    /// `too-few-runs`, `interference`, ...
    pub kind: String,
    /// One line for people.
    pub message: String,
    /// A concrete next step.
    pub suggestion: String,
    /// The numbers behind it (test statistics, indices, counts).
    pub evidence: serde_json::Value,
}

impl Diagnostic {
    /// Whether this note can change what its benchmark's line concludes — its number may be off
    /// (a first loop far dearer than the rest, time that does not grow with the loops, runs
    /// interfered with, a CPU that changed speed, several modes) or its comparison unfair (a
    /// missing checksum, setups that disagree): printed by default. The rest (outliers, a trend
    /// or warm-up over the runs, autocorrelation, the test's power at this size) are counted in
    /// one line a session unless `--verbose`; every note is in the JSON export.
    pub fn changes_a_conclusion(&self) -> bool {
        !matches!(
            self.kind.as_str(),
            "outliers" | "trend" | "warmup" | "autocorrelation" | "too-few-runs"
        )
    }
}

/// What a session's held notes come to ("3 more notes on 2 benchmarks that change no
/// conclusion (outliers 2, trend 1)"), or None where none was held.
pub fn held_notes_line<'a>(
    notes: impl IntoIterator<Item = (&'a str, &'a Diagnostic)>,
) -> Option<String> {
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut on = std::collections::BTreeSet::new();
    for (bench, d) in notes {
        if !d.changes_a_conclusion() {
            *kinds.entry(d.kind.as_str()).or_default() += 1;
            on.insert(bench);
        }
    }
    if kinds.is_empty() {
        return None;
    }
    let n: usize = kinds.values().sum();
    let list: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} {c}")).collect();
    Some(format!(
        "{} on {} that change no conclusion ({})",
        crate::units::plural(n, "more note"),
        crate::units::plural(on.len(), "benchmark"),
        list.join(", ")
    ))
}

/// One benchmark compared with the reference on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRecord {
    /// The metric compared, e.g. `wall_time`.
    pub metric: String,
    /// Indices into `Session.benchmarks`.
    pub reference: usize,
    pub candidate: usize,
    pub reference_name: String,
    pub candidate_name: String,
    /// median(candidate) / median(reference): above 1 means the candidate is slower.
    pub ratio: f64,
    pub ratio_ci_low: f64,
    pub ratio_ci_high: f64,
    /// Confidence level of the interval (0.95).
    pub confidence: f64,
    /// Whether the interval was computed by resampling interleaved rounds jointly.
    pub paired: bool,
    /// The test behind the p-value: `mann-whitney` or `welch`.
    pub test: String,
    pub p_value: f64,
    /// The p-value after Holm's correction for the number of comparisons.
    pub p_adjusted: f64,
    /// `faster`, `slower`, `no-significant-difference` or `equal-within-noise`.
    pub verdict: String,
    /// The verdict in words, e.g. "B is 1.12× faster than A (95% CI 1.10–1.14)".
    pub words: String,
}

/// Key of the parameter scans' scaling fits in `Session.extra` (`conclude::scaling`).
pub const SCALING_KEY: &str = "scaling";

/// One parameter scan of a session and how time grows along it (`conclude::scaling`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanRecord {
    /// The parameter scanned.
    pub parameter: String,
    /// What is scanned: `kernel/implementation`, or the command with the value as `{NAME}`.
    pub label: String,
    /// The other parameters, fixed along the scan.
    pub fixed: BTreeMap<String, String>,
    /// Indices of the benchmarks, in increasing parameter value.
    pub benchmarks: Vec<usize>,
    /// What one process is ("run", "invocation").
    pub unit: String,
    /// The fit of wall time (per process: a run's, or an invocation's median).
    pub fit: crate::stats::scaling::Scaling,
    /// The line people read.
    pub line: String,
    /// `tare run` only: the same fit of each run's CPU time (user + system), steadier than
    /// wall time on a loaded machine, where long runs share the CPU more than short ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_fit: Option<crate::stats::scaling::Scaling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_line: Option<String>,
}

impl ScanRecord {
    /// The scans recorded in a session (empty when none or unreadable).
    pub fn of(session: &Session) -> Vec<ScanRecord> {
        session
            .extra
            .get(SCALING_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }
}
