//! `tare run`'s and `tare recover`'s command lines (clap derive): what is parsed, nothing
//! resolved. The shared groups come from `cli/opts.rs`.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tare run 'sleep 0.1'\n  tare run --runs 20 'gzip -k -f data' 'zstd -f data'\n  \
                  tare run --export-json out.json -L count 10,20 'seq {count}'\n  tare run --memory-limit 512MB --wall-limit 10s -- ./solver input.cnf"
)]
pub struct RunArgs {
    /// Commands to benchmark, each one string split into words like a shell would (no shell is
    /// started unless --shell). After `--`, one command given as separate words.
    #[arg(value_name = "COMMAND")]
    pub(super) commands: Vec<String>,
    /// One command as argv, after `--` (e.g. `tare run -- prog arg1 arg2`).
    #[arg(last = true, value_name = "ARGV")]
    pub(super) argv: Vec<String>,

    /// Name of a command in the output (repeat once per command, in order; {PARAM} allowed).
    /// Without one a command is named by its text; two of one name are told apart (`true`,
    /// `true (2)`).
    #[arg(
        short = 'n',
        long = "name",
        visible_alias = "command-name",
        value_name = "NAME"
    )]
    pub(super) names: Vec<String>,
    /// Run commands through this shell: --shell=bash, or --shell alone for /bin/sh;
    /// --shell=none runs them without one (the default: split into words, no shell).
    #[arg(long, value_name = "SHELL", num_args = 0..=1, require_equals = true,
          default_missing_value = "/bin/sh", conflicts_with_all = ["shell_short", "no_shell"])]
    pub(super) shell: Option<String>,
    /// Run commands through this shell, e.g. -S bash (hyperfine's -S); -S none: no shell.
    #[arg(short = 'S', value_name = "SHELL", conflicts_with = "no_shell")]
    pub(super) shell_short: Option<String>,
    /// Run commands without a shell (tare's default; hyperfine's -N).
    #[arg(short = 'N', long = "no-shell")]
    pub(super) no_shell: bool,

    /// Runs before measuring each command: measured and kept in the results, excluded from statistics.
    #[arg(short = 'w', long, value_name = "N", default_value_t = 0)]
    pub(super) warmup: usize,
    /// Exactly N counted runs per command (instead of stopping at the precision target).
    #[arg(short = 'r', long, value_name = "N", conflicts_with_all = ["min_runs", "max_runs", "stop", "precision"])]
    pub(super) runs: Option<usize>,
    /// Fewest counted runs before the adaptive rule may stop [default: 10, or --max-runs if lower].
    #[arg(short = 'm', long, value_name = "N")]
    pub(super) min_runs: Option<usize>,
    /// Most counted runs per command.
    #[arg(short = 'M', long, value_name = "N", default_value_t = 10_000)]
    pub(super) max_runs: usize,
    /// Stop once the 95% CI of the median wall time is within ± this of the median.
    #[arg(long, value_name = "PCT", default_value = "1%")]
    pub(super) precision: String,
    /// Stop measuring a command after this much time (e.g. 30s, 2m).
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub(super) time_budget: String,
    /// Measure each command at least this long before the precision rule may stop it (e.g. 3s,
    /// hyperfine's default; tare's is none: it stops once precise). --max-runs and
    /// --time-budget still cap it.
    #[arg(long, value_name = "DURATION", conflicts_with = "runs")]
    pub(super) min_benchmarking_time: Option<String>,
    /// A stop rule, e.g. "runs >= 20 and ci(median) < 1%"; see docs/statistics.md. It is
    /// capped by --max-runs and --time-budget unless --no-cap.
    #[arg(long, value_name = "RULE")]
    pub(super) stop: Option<String>,
    /// Let a --stop rule run without the --max-runs / --time-budget caps (until it holds or Ctrl-C).
    #[arg(long, requires = "stop")]
    pub(super) no_cap: bool,
    /// Order of runs with several commands: interleaved rounds (each command in every position of a round equally often) or sequential.
    #[arg(long, value_enum, default_value_t = OrderArg::Interleaved)]
    pub(super) order: OrderArg,
    /// Seed for the run order (and resampling); recorded in the results. Random by default.
    #[arg(long, value_name = "N")]
    pub(super) seed: Option<u64>,

    /// The benchmark others are compared with: its name or its 1-based position (default: the first).
    #[arg(long, value_name = "NAME|INDEX")]
    pub(super) reference: Option<String>,
    #[command(flatten)]
    pub(super) verdict: crate::cli::opts::VerdictArgs,
    /// Drop runs beyond Tukey's fences from the statistics (they stay in the results, marked).
    #[arg(long)]
    pub(super) discard_outliers: bool,

    /// Shell command run before every run (untimed).
    #[arg(short = 'p', long, value_name = "CMD")]
    pub(super) prepare: Option<String>,
    /// Shell command run after every run (untimed).
    #[arg(short = 'C', long, value_name = "CMD")]
    pub(super) conclude: Option<String>,
    /// Shell command run once before each command's runs.
    #[arg(short = 's', long, value_name = "CMD")]
    pub(super) setup: Option<String>,
    /// Shell command run once after each command's runs.
    #[arg(short = 'c', long, value_name = "CMD")]
    pub(super) cleanup: Option<String>,
    /// Wall-time limit of each --setup/--cleanup/--prepare/--conclude action (default 10min; "none" for no limit).
    #[arg(long, value_name = "DURATION")]
    pub(super) action_timeout: Option<String>,
    /// Leave what actions start in the background running (e.g. a server started by --setup); by default it is killed when the action ends.
    #[arg(long)]
    pub(super) keep_action_daemons: bool,
    /// File given to every run as standard input (default: nothing).
    #[arg(long, value_name = "FILE")]
    pub(super) input: Option<PathBuf>,
    #[command(flatten)]
    pub(super) command_output: crate::cli::opts::CommandOutputArgs,
    /// Keep going when a run exits non-zero (it is counted) or hits a limit (it is recorded, not counted).
    #[arg(short = 'i', long)]
    pub(super) ignore_failure: bool,

    #[command(flatten)]
    pub(super) params: crate::cli::opts::ParamArgs,

    /// CPU time limit of each run's whole process tree (seconds, or with a unit).
    #[arg(long, value_name = "SECONDS")]
    pub(super) cpu_limit: Option<String>,
    /// Wall time limit of each run.
    #[arg(long, value_name = "SECONDS")]
    pub(super) wall_limit: Option<String>,
    /// Memory + swap limit of each run's whole tree, with a unit (e.g. 512MB, 2GiB).
    #[arg(long, value_name = "BYTES")]
    pub(super) memory_limit: Option<String>,
    /// Most tasks (processes + threads) alive at once in a run: stops fork bombs.
    #[arg(long, value_name = "N")]
    pub(super) pids_limit: Option<u64>,
    #[command(flatten)]
    pub(super) cores: crate::cli::opts::CoreArgs,
    #[command(flatten)]
    pub(super) idle: crate::cli::opts::IdleArgs,
    #[command(flatten)]
    pub(super) quiesce: crate::cli::opts::QuiesceArgs,

    /// Before each run, wait until the hottest CPU thermal zone is below TEMP °C (5 °C
    /// hysteresis), at most MAX_WAIT (default 60s), e.g. 60 or 55:2m.
    #[arg(long, value_name = "TEMP[:MAX_WAIT]")]
    pub(super) cool_down: Option<String>,
    /// Before each run, spin on the run's cores until they report maximum frequency, at most
    /// MAX (default 10s): for machines whose governor cannot be set.
    #[arg(long, value_name = "MAX", num_args = 0..=1, require_equals = true, default_missing_value = "10s")]
    pub(super) heat_up: Option<String>,
    /// Pause between runs (e.g. 500ms; 0 for none).
    #[arg(long, value_name = "DURATION")]
    pub(super) sleep_between: Option<String>,
    /// Scheduling priority of runs: normal, high (nice -20) or realtime (SCHED_FIFO, capped
    /// at --cpu-limit or 60 s of CPU without blocking); high and realtime need root.
    #[arg(long, value_enum, default_value_t = PriorityArg::Normal)]
    pub(super) priority: PriorityArg,
    /// Runs during which other processes used more than this share of the run's CPUs (or the
    /// hypervisor stole it) are flagged as interfered; 100% flags none.
    #[arg(long, value_name = "PCT", default_value = "5%")]
    pub(super) interference_threshold: String,
    /// Interfered runs do not count in the statistics (they stay in the results, marked).
    #[arg(long)]
    pub(super) exclude_interfered: bool,

    /// Run each run (or block of --randomize-every runs; rounds when interleaved) in a freshly
    /// drawn setup: comma list of env (padding variable TARE_PAD), aslr (on/off), cwd (path
    /// length/depth), argv0 (program path length), or all. Each run records its setup and seed.
    #[arg(long, value_name = "FACTORS")]
    pub(super) randomize: Option<String>,
    /// A new setup every N runs (rounds when interleaved).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(super) randomize_every: usize,
    /// Draw N setups up front and rotate through them (repeated runs per setup).
    #[arg(long, value_name = "N", conflicts_with = "replay_setup")]
    pub(super) setups: Option<usize>,
    /// Run every run in one recorded setup: RESULTS.json:SEED takes the factors and ranges from
    /// those results; a bare SEED (a run's `setup.seed`) needs the --randomize it was drawn with.
    #[arg(long, value_name = "[RESULTS.json:]SEED")]
    pub(super) replay_setup: Option<String>,
    /// Follow a plan written by `tare plan --output`: its setups × runs per setup, its factors.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["runs", "stop", "setups", "replay_setup"])]
    pub(super) plan: Option<PathBuf>,
    /// Count events per run (e.g. instructions,cycles-estimate or task-clock,page-faults);
    /// checked before the first run. With perf, perf's start-up is inside the measured times;
    /// with valgrind (instructions, cycles-estimate, l1-misses, ll-misses, branches,
    /// branch-misses) runs are 20–100× slower and their times are not the command's.
    #[arg(long, value_name = "EVENTS")]
    pub(super) counters: Option<String>,
    /// What counts --counters: perf (the PMU), valgrind (simulation: exact counts on any
    /// machine) or auto (perf where it can count every event, else valgrind).
    #[arg(
        long,
        value_enum,
        value_name = "BACKEND",
        default_value = "auto",
        requires = "counters"
    )]
    pub(super) counters_backend: CountersBackendArg,
    /// Build-time setups: a shell command run once per variant before measuring, with {seed}
    /// (1…N) and {out} (a fresh output path); {out} in the commands is the run's variant
    /// (e.g. --build 'make SEED={seed} OUT={out}' '{out} input'). Variants rotate with setups.
    #[arg(long, value_name = "CMD")]
    pub(super) build: Option<String>,
    /// Number of build variants.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub(super) build_variants: usize,
    /// Size range of the TARE_PAD variable for --randomize env, in bytes.
    #[arg(long, value_name = "MIN:MAX", default_value = "0:4096")]
    pub(super) env_pad_range: String,

    #[command(flatten)]
    pub(super) exports: crate::cli::opts::ExportArgs,
    /// Add the finished session to the history store: --store PATH, --store postgresql://…, or
    /// --store default (TARE_STORE, else .tare/history.sqlite in the git repository, see `tare
    /// history --help`), or --store http://HOST:PORT (a `tare serve`, with TARE_TOKEN); the commit
    /// is read from git in the current directory.
    #[arg(long, value_name = "URL|PATH|default")]
    pub(super) store: Option<String>,
    /// Record environment variable values in the results (names only by default).
    #[arg(long)]
    pub(super) record_env_values: bool,
    /// Start even when the journal beside the export (FILE.journal) holds the runs of a session
    /// that did not finish, discarding them (default: refuse; keep them with `tare recover`).
    #[arg(long)]
    pub(super) overwrite_journal: bool,
    #[command(flatten)]
    pub(super) style: crate::cli::opts::StyleArgs,
    /// Unit of times on the terminal and in the summary tables (default: chosen per benchmark).
    #[arg(short = 'u', long, value_enum, value_name = "UNIT")]
    pub(super) time_unit: Option<TimeUnitArg>,
    /// Order of benchmarks on the terminal and in the summary tables: auto/command (as given)
    /// or median-time (fastest first; hyperfine's mean-time is accepted).
    #[arg(long, value_enum, value_name = "METHOD", default_value_t = SortArg::Auto)]
    pub(super) sort: SortArg,
    /// Print the full measurement method after the summary (always in the exports).
    #[arg(short = 'v', long)]
    pub(super) verbose: bool,
    #[command(flatten)]
    pub(super) backend: crate::cli::opts::BackendArgs,

    /// Isolate every run: own user, mount, PID, IPC, UTS and network namespaces, read-only
    /// file system, private /tmp, no capabilities (see docs/isolation.md).
    #[arg(long)]
    pub(super) isolate: bool,
    #[command(flatten)]
    pub(super) isolation: crate::cli::suite::IsolationArgs,
    #[command(flatten)]
    pub(super) meters: crate::cli::meters::MeterArgs,
    #[command(flatten)]
    pub(super) remote: crate::cli::remote::HostArgs,
    /// Print the session and each finished run as journal lines on stdout, and the results at
    /// the end, instead of the summary (what `--host` reads over the connection).
    #[arg(long, hide = true)]
    pub(super) stream_journal: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum TimeUnitArg {
    Second,
    Millisecond,
    Microsecond,
    Nanosecond,
}

impl TimeUnitArg {
    pub(super) fn scale(self) -> (f64, &'static str) {
        match self {
            TimeUnitArg::Second => (1.0, "s"),
            TimeUnitArg::Millisecond => (1e3, "ms"),
            TimeUnitArg::Microsecond => (1e6, "µs"),
            TimeUnitArg::Nanosecond => (1e9, "ns"),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum CountersBackendArg {
    Auto,
    Perf,
    Valgrind,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum SortArg {
    Auto,
    Command,
    #[value(alias = "mean-time")]
    MedianTime,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum OrderArg {
    Interleaved,
    Sequential,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum PriorityArg {
    Normal,
    High,
    Realtime,
}

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// The journal left beside an export file (FILE.journal).
    pub(super) journal: PathBuf,
    #[command(flatten)]
    pub(super) exports: crate::cli::opts::ExportArgs,
    #[command(flatten)]
    pub(super) style: crate::cli::opts::StyleArgs,
}
