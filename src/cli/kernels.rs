//! `tare kernels PROGRAM...`: kernels inside programs, in any language, measured under one
//! harness. Each PROGRAM is a worker's command line (a program linked with a tare client
//! library, docs/protocol.md); kernels are matched by name and parameters across programs, so
//! implementations compare head to head, the first program's being the reference.
//!
//! This file parses and checks the arguments, discovers the kernels (one short invocation per
//! program), hands the plan to `method::kernels`, concludes (`conclude::kernels`), prints and
//! exports. No policy of its own.

use crate::conclude::analysis::CompareSettings;
use crate::conclude::kernels as ck;
use crate::error::{exit, usage, UserError};
use crate::exec::{self, Executor, RunSpec};
use crate::machine;
use crate::machine::sysfs::SysRoot;
use crate::method::kernels::{self as mk, Discovered, KernelsOutcome, KernelsPlan, Program};
use crate::plan::command;
use crate::plan::stop::{self, Cmp, Metric, StopRule};
use crate::report::Style;
use crate::units;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
#[command(
    after_help = "Example (the blur kernel in C and Python, compared head to head):\n  \
    tare kernels \"$(examples/kernels/blur/c/build.sh --print-command)\" \\\n    \
    \"$(examples/kernels/blur/python/build.sh --print-command)\" -L size 64 --export-html blur.html\n\n\
    Exit codes: 0 measured; 2 bad input (before any measurement); 3 a worker or a kernel failed, \
    a kernel had no counted sample, a worker hit a limit, or results could not be written; 128+n stopped by signal n. See docs/protocol.md."
)]
pub struct KernelsArgs {
    /// Worker programs, each one command line (split into words like a shell would, no shell).
    #[arg(required = true, value_name = "PROGRAM")]
    programs: Vec<String>,
    /// Name of each program's implementation in the output (repeat once per program, in order;
    /// default: the language the worker announces).
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    names: Vec<String>,
    /// List the kernels and parameters each program announces, then exit.
    #[arg(long)]
    list: bool,
    /// Only kernels whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    filter: Option<String>,
    #[command(flatten)]
    params: super::opts::ParamArgs,
    /// Fresh processes per program (the invocation level, as `tare run`'s runs), fixed; with
    /// --stop, the fewest. Without it they adapt: at least 5, more while a kernel's
    /// process-level interval is wider than --precision, within --time-budget and
    /// --max-invocations.
    #[arg(short = 'r', long, visible_alias = "runs", value_name = "N")]
    invocations: Option<usize>,
    /// Most invocations [default: 100; 20 with --stop].
    #[arg(short = 'M', long, visible_alias = "max-runs", value_name = "N")]
    max_invocations: Option<usize>,
    /// Adaptive invocations stop once every kernel's 95% interval over its processes is within
    /// ± this of its value [default: 5%; with --baseline 0.25%, of the ratio's interval].
    #[arg(long, value_name = "PCT")]
    precision: Option<String>,
    /// Stop measuring a benchmark after this much time, as `tare run`'s: each benchmark gets
    /// its share of the rounds' time, so a session of B benchmarks stops before a round that
    /// would end past B × this (at the pace of the slowest round so far), settled or not.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    time_budget: String,
    /// A stop rule over a benchmark's processes, as `tare run`'s over its runs (runs =
    /// invocations, ci(median) over their medians), e.g. "runs >= 3 and ci(median) < 1%".
    #[arg(long, visible_alias = "invocation-stop", value_name = "RULE")]
    stop: Option<String>,
    /// Stop rule over the samples of one invocation [default: "runs >= 10 and (ci(median) <=
    /// 1% or runs >= 30 or time >= 2s)"].
    #[arg(long, value_name = "RULE")]
    sample_stop: Option<String>,
    /// Most samples per invocation.
    #[arg(long, default_value_t = 100, value_name = "N")]
    max_samples: usize,
    /// Samples dropped at the start of each invocation (after calibration).
    #[arg(short = 'w', long, default_value_t = 1, value_name = "N")]
    warmup: usize,
    /// Detect a JIT's warm-up per invocation and exclude it: auto (for java and js workers), on, off.
    #[arg(long, value_enum, default_value_t = SteadyArg::Auto)]
    steady_state: SteadyArg,
    /// Shortest sample: calibration grows the loops per sample until one lasts this long (and
    /// ≥ 1000× the worker's clock resolution, ≥ 100× its read cost).
    #[arg(long, default_value = "5ms", value_name = "DURATION")]
    sample_time: String,
    /// Fixed loops per sample (JMH's single-shot mode with a batch of N): every sample runs
    /// exactly N loops, no calibration and no 2N linearity samples; for kernels that must run a
    /// set number of times. Samples shorter than the clock resolves are still refused.
    #[arg(long, value_name = "N", conflicts_with = "sample_time")]
    loops: Option<u64>,
    /// Wall limit on each reply line of a worker (a sample, an `ok`), plus twice the time tare
    /// expects a sample to take from the samples before (2N loops where N took seconds); past
    /// it the worker's process tree is killed.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    worker_timeout: String,
    /// Wall limit on a worker's start (until its `hello`), e.g. for a JVM.
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    start_timeout: String,
    #[command(flatten)]
    cores: super::opts::CoreArgs,
    #[command(flatten)]
    idle: super::opts::IdleArgs,
    #[command(flatten)]
    quiesce: super::opts::QuiesceArgs,
    /// Randomize each invocation's setup (as `tare run --randomize`): env (environment size),
    /// aslr, cwd (working-directory path length), argv0 (program path length), or all; a new
    /// setup per process, recorded with its invocation.
    #[arg(long, value_name = "FACTORS")]
    randomize: Option<String>,
    /// Seed for the order of programs and kernels (and resampling). Random by default.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// An action at a stage, STAGE:KIND:ARG (repeatable): stages before-/after-invocation,
    /// -benchmark, -repetition; kinds sleep:DURATION, cooldown:CELSIUS, shell:COMMAND,
    /// sysfs:PATH=VALUE[@EVERY] (re-applied when EVERY has passed). See docs/extending.md.
    #[arg(long = "action", value_name = "STAGE:KIND:ARG")]
    actions: Vec<String>,
    /// A harness meter over each invocation, NAME=FILE (repeatable): a numeric file read at its
    /// start and end (e.g. an energy counter), recorded as NAME.delta and NAME.end.
    #[arg(long = "meter", value_name = "NAME=FILE")]
    meters: Vec<String>,
    #[command(flatten)]
    energy: super::opts::EnergyArgs,
    #[command(flatten)]
    factors: super::opts::FactorArgs,
    /// Count each sample's timed region under Valgrind's Callgrind (instructions,
    /// cycles-estimate, l1-misses, ll-misses, branches, branch-misses), recorded per loop:
    /// workers of the C, C++ and Rust clients (function tare_timed_region). Invocations run 20–100×
    /// slower, and their times are Valgrind's. See docs/counters.md.
    #[arg(long, value_name = "EVENTS")]
    counters: Option<String>,
    /// Go on after a failed invocation (recorded) instead of stopping (as `tare run -i`).
    #[arg(short = 'i', long)]
    ignore_failure: bool,
    #[command(flatten)]
    command_output: super::opts::CommandOutputArgs,
    /// Head to head inside one process: every other kernel of the program against this one,
    /// their samples alternated in the same processes (blocks in ABBA order, the verdict over
    /// processes); for two implementations in one build. See docs/head-to-head.md.
    #[arg(long, value_name = "KERNEL")]
    baseline: Option<String>,
    /// With --baseline: the time the ratio is of: wall (the clock around the loops), cpu (the
    /// worker's CPU time over them, where it sends it: time waiting for a CPU that other work
    /// holds is left out), or auto: cpu where both kernels ran a sample without waiting (CPU
    /// time ≥ 90% of wall), else wall.
    #[arg(long, value_enum, default_value_t = PairTime::Auto, requires = "baseline")]
    pair_time: PairTime,
    /// The implementation others are compared with: its name or its 1-based position (default:
    /// the first program).
    #[arg(long, value_name = "NAME|INDEX")]
    reference: Option<String>,
    #[command(flatten)]
    verdict: super::opts::LevelArgs,
    #[command(flatten)]
    backend: super::opts::BackendArgs,
    #[command(flatten)]
    exports: super::opts::ExportArgs,
    /// Add the finished session to the history store: --store PATH, --store postgresql://…, or
    /// --store default, or a `tare serve` URL (as `tare run --store`).
    #[arg(long, value_name = "URL|PATH|default")]
    store: Option<String>,
    #[command(flatten)]
    style: super::opts::StyleArgs,
    /// Print every note in full; by default the notes that can change a conclusion (a first
    /// loop far dearer than the rest, time that does not grow with the loops, interference, a
    /// missing checksum, …) are printed and the rest are counted in one line.
    #[arg(short = 'v', long)]
    verbose: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum PairTime {
    Auto,
    Wall,
    Cpu,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum SteadyArg {
    Auto,
    On,
    Off,
}

fn duration(flag: &str, s: &str) -> anyhow::Result<Duration> {
    units::parse_duration(s).map_err(|e| usage(format!("--{flag} '{s}': {e}")))
}

fn rule(flag: &str, s: &str) -> anyhow::Result<StopRule> {
    stop::parse(s).map_err(|e| usage(format!("--{flag} '{s}': {e}")))
}

/// A randomizer over `factors`: each invocation gets `Setup::draw(seed)` realized in `ws`.
fn randomizer(factors: Vec<crate::setup::Factor>) -> anyhow::Result<mk::Randomizer> {
    let ws = crate::setup::realize::Workspace::create()
        .map_err(|e| usage(format!("--randomize: {e}")))?;
    let config = crate::setup::Config::new(factors);
    let cwd = std::env::current_dir().map_err(|e| usage(format!("--randomize: {e}")))?;
    Ok(Box::new(move |spec: &mut RunSpec, seed: u64| {
        let setup = crate::setup::Setup::draw(seed, &config);
        let argv: Vec<String> = spec
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let r = ws
            .realize(&setup, &argv, &spec.env, &cwd)
            .map_err(|e| format!("--randomize: {e}"))?;
        spec.argv = r.argv;
        spec.env = r.env;
        if r.cwd.is_some() {
            spec.cwd = r.cwd;
        }
        spec.aslr_off = r.aslr_off;
        Ok(setup.describe())
    }))
}

/// A note on stderr while a program's discovery takes more than a second (a Go worker builds
/// its test binary, a pyperf worker runs every benchmark once), then every 5 s; it ends when
/// dropped.
struct Waiting {
    done: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Waiting {
    fn start(program: &str) -> Waiting {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let program = program.to_string();
        let thread = std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            let mut wait = Duration::from_secs(1);
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(wait) {
                eprintln!(
                    "tare: waiting for '{program}' to list its kernels ({:.0} s; it may be building them)",
                    t0.elapsed().as_secs_f64()
                );
                wait = Duration::from_secs(5);
            }
        });
        Waiting {
            done: Some(tx),
            thread: Some(thread),
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Progress {
    quiet: bool,
}

impl mk::KernelsObserver for Progress {
    fn invocation(&mut self, round: usize, program: &Program, error: Option<&str>) {
        if self.quiet {
            return;
        }
        match error {
            None => eprintln!("tare: round {} · {}: done", round + 1, program.label),
            Some(e) => eprintln!("tare: round {} · {}: failed: {e}", round + 1, program.label),
        }
    }
}

/// `tare kernels`.
pub fn kernels(a: KernelsArgs) -> anyhow::Result<i32> {
    if a.ignore_failure && a.programs.len() > 1 && a.programs[0].parse::<u64>().is_ok() {
        // `-i N` meant --invocations N before -i became --ignore-failure (as in `tare run`).
        return Err(usage(format!(
            "-i is --ignore-failure (as in tare run and hyperfine), so '{}' was read as a program: give the number of invocations with -r {} (--invocations)",
            a.programs[0], a.programs[0]
        )));
    }
    let root = SysRoot::from_env();
    if !a.names.is_empty() && a.names.len() != a.programs.len() {
        return Err(usage(format!(
            "--name given {} times for {} programs: give one per program, in order",
            a.names.len(),
            a.programs.len()
        )));
    }
    let mut argvs = Vec::new();
    for p in &a.programs {
        let argv = command::split_words(p).map_err(|e| usage(format!("program '{p}': {e}")))?;
        if argv.is_empty() {
            return Err(usage("an empty program: give the worker's command line"));
        }
        let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
        exec::spawn::resolve(std::ffi::OsStr::new(&argv[0]), &env, None).map_err(|_| {
            usage(format!(
                "cannot run '{}': program not found or not executable; check the path (build it first?)",
                argv[0]
            ))
        })?;
        argvs.push(argv);
    }
    let filter = a
        .filter
        .as_deref()
        .map(|f| regex::Regex::new(f).map_err(|e| usage(format!("--filter '{f}': {e}"))))
        .transpose()?;
    let params = a.params.parameters()?;
    if a.energy.energy && a.baseline.is_some() {
        return Err(usage(
            "--energy meters whole invocations and --baseline pairs kernels inside one: drop one of them",
        ));
    }
    let factors = a.factors.factors()?;
    if !factors.is_empty() && a.baseline.is_some() {
        return Err(usage(
            "--cache and --background make each program two or more, measured in processes of their own, and --baseline pairs kernels inside one process: drop one of them",
        ));
    }
    let mut actions = crate::method::stages::Actions::default();
    for spec in &a.actions {
        actions.at.push(
            crate::method::stages::Actions::parse(spec, &root)
                .map_err(|e| usage(format!("--action {e}")))?,
        );
    }
    let mut meters: Vec<Box<dyn crate::method::stages::Meter>> = Vec::new();
    for m in &a.meters {
        let (name, path) = m
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
            .ok_or_else(|| usage(format!("--meter '{m}': expected NAME=FILE")))?;
        std::fs::read_to_string(path)
            .map_err(|e| usage(format!("--meter '{m}': cannot read {path}: {e}")))?;
        meters.push(Box::new(crate::method::stages::FileMeter {
            label: name.to_string(),
            path: PathBuf::from(path),
            at_start: None,
        }));
    }
    let randomize = match &a.randomize {
        None => None,
        Some(list) => Some(randomizer(
            crate::setup::Factor::parse_list(list)
                .map_err(|e| usage(format!("--randomize: {e}")))?,
        )?),
    };
    let timeout = duration("worker-timeout", &a.worker_timeout)?;
    let start_timeout = duration("start-timeout", &a.start_timeout)?;
    let min_sample = duration("sample-time", &a.sample_time)?;
    if a.loops == Some(0) {
        return Err(usage(
            "--loops 0: a sample runs at least 1 loop; give N >= 1",
        ));
    }
    if a.invocations == Some(0) || a.max_samples == 0 || a.max_invocations == Some(0) {
        return Err(usage(
            "--invocations, --max-invocations and --max-samples must be at least 1",
        ));
    }
    let precision_text = a
        .precision
        .clone()
        .unwrap_or_else(|| if a.baseline.is_some() { "0.25%" } else { "5%" }.to_string());
    let precision = units::parse_fraction(&precision_text)
        .map_err(|e| usage(format!("--precision {precision_text}: {e}")))?;
    if a.baseline.is_some() {
        for (given, flag) in [
            (a.stop.is_some(), "--stop"),
            (a.counters.is_some(), "--counters"),
            (a.sample_stop.is_some(), "--sample-stop"),
        ] {
            if given {
                return Err(usage(format!(
                    "--baseline and {flag} do not go together: a head to head takes {} pairs of blocks a process and stops on the ratio's interval (--precision, --time-budget, -r N)",
                    mk::PAIRS
                )));
            }
        }
    }
    let time_budget = duration("time-budget", &a.time_budget)?;
    let sample_stop = match &a.sample_stop {
        Some(s) => rule("sample-stop", s)?,
        None => StopRule::default_rule(10, 30, Metric::CiMedian, 0.01, 2.0),
    };
    let fewest = a.invocations.unwrap_or(1);
    let (invocation_stop, max_invocations, adaptive) = match (&a.stop, a.invocations) {
        (Some(s), _) => (
            rule("stop", s)?,
            a.max_invocations.unwrap_or(20).max(fewest),
            None,
        ),
        (None, Some(n)) => (
            StopRule::Cond(Metric::Runs, Cmp::Ge, n as f64),
            a.max_invocations.unwrap_or(n).max(n),
            None,
        ),
        (None, None) => (
            StopRule::Cond(Metric::Runs, Cmp::Ge, ck::MIN_INVOCATIONS as f64),
            a.max_invocations.unwrap_or(100),
            Some(mk::Adaptive {
                min: ck::MIN_INVOCATIONS,
                precision,
                budget: time_budget,
            }),
        ),
    };
    let noise = a.verdict.noise()?;
    let alpha = a.verdict.alpha()?;
    let output = a.command_output.sink()?;
    let _claims = a.exports.check()?;
    let style = a.style.style();
    // The store is opened (created, migrated) before the first invocation: a bad URL stops here.
    let mut history = match &a.store {
        Some(spec) => Some(super::run::store::open_for_run(Some(spec.as_str()))?),
        None => None,
    };
    // Cores: as `tare run` chooses them, registered so other sessions avoid them.
    let (cores, _pinned) = a.cores.resolve(&root, "tare kernels")?;
    let idle = a.idle.hold(&root)?;
    let quiesced = a.quiesce.apply(a.style.style() == Style::None)?;
    let run_cores = cores.run;
    let needs = exec::Needs {
        cpuset: run_cores.is_some(),
        pids: false,
    };
    let backend = a.backend.detect(&needs)?;
    let method_record = backend.method();
    let executor = Executor::new(backend);
    let cancel = crate::output::install_stop_signals()?;
    let mut spec = RunSpec::new(Vec::<String>::new());
    spec.stdout = output.clone();
    spec.stderr = output;
    spec.cores = run_cores.clone();
    // One directory for the session's workers to keep what they build once (a Go test binary).
    let session_dir = tempfile::Builder::new()
        .prefix("tare-session-")
        .tempdir()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot make a session directory in the temp directory: {e}; set TMPDIR to a writable one"
            )
        })?;
    spec.env
        .retain(|(k, _)| k != crate::exec::worker::SESSION_ENV);
    spec.env.push((
        crate::exec::worker::SESSION_ENV.into(),
        session_dir.path().into(),
    ));

    // Discovery: one short invocation per program.
    let mut found: Vec<Discovered> = Vec::new();
    let mut programs: Vec<Program> = Vec::new();
    for (i, argv) in argvs.iter().enumerate() {
        let program = Program {
            label: String::new(),
            command: a.programs[i].clone(),
            argv: argv.clone(),
        };
        let waiting = (style != Style::None).then(|| Waiting::start(&a.programs[i]));
        let d = mk::discover(&executor, &spec, &program, timeout, start_timeout, &cancel);
        drop(waiting);
        let d = d.map_err(|e| {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                anyhow::Error::from(UserError::interrupted())
            } else {
                UserError::run_failed(format!("program '{}': {e}", a.programs[i])).into()
            }
        })?;
        found.push(d);
        programs.push(program);
    }
    label_programs(&mut programs, &found, &a.names);
    // --reference: that implementation goes first, and every comparison is against the first.
    let labels: Vec<String> = programs.iter().map(|p| p.label.clone()).collect();
    let reference = super::opts::reference_index(a.reference.as_deref(), &labels)?;
    if reference > 0 {
        let p = programs.remove(reference);
        programs.insert(0, p);
        let d = found.remove(reference);
        found.insert(0, d);
    }
    if a.list {
        for (p, d) in programs.iter().zip(&found) {
            println!(
                "{} ({} {}, {}; clock resolution {} ns, read cost {:.1} ns): {}",
                p.label,
                d.hello.client,
                d.hello.version,
                d.hello.lang,
                d.clock.resolution_ns,
                d.clock.cost_ns,
                p.command
            );
            for k in &d.hello.kernels {
                if filter.as_ref().is_some_and(|f| !f.is_match(&k.name)) {
                    continue;
                }
                let ps: Vec<String> = k
                    .params
                    .iter()
                    .map(|q| {
                        if q.values.is_empty() {
                            format!("{}={}", q.name, q.default)
                        } else {
                            format!("{}={}", q.name, q.values.join(","))
                        }
                    })
                    .collect();
                let doc = if k.doc.is_empty() {
                    String::new()
                } else {
                    format!("  — {}", k.doc)
                };
                println!("  {} {}{doc}", k.name, ps.join(" "));
            }
        }
        return Ok(exit::OK);
    }
    // --cache, --background: each program measured at every level, as programs of their own
    // (`NAME [cache=cold]`, …), interleaved in the rounds; each with its own actions and meters.
    let mut units = Vec::new();
    if !factors.is_empty() {
        let (mut more, mut again) = (Vec::new(), Vec::new());
        for (p, d) in programs.into_iter().zip(found) {
            let mut files = Vec::new();
            if !factors.cache.is_empty() {
                files = crate::method::cache::files_of(&p.argv);
            }
            for level in factors.levels(&files) {
                let mut q = p.clone();
                q.label.push_str(&level.suffix);
                units.push(crate::method::level_stages(
                    &level,
                    "/bin/sh",
                    factors.background_lead,
                    crate::method::stages::Stage::BeforeRepetition,
                ));
                more.push(q);
                again.push(d.clone());
            }
        }
        programs = more;
        found = again;
    }
    let targets = mk::targets(&found, filter.as_ref(), &params).map_err(usage)?;
    let counters = a.counters.as_deref().map(kernel_counters).transpose()?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let plan = KernelsPlan {
        programs,
        targets,
        sample_stop,
        max_samples: a.max_samples,
        invocation_stop,
        max_invocations,
        adaptive,
        warmup: a.warmup,
        steady_state: match a.steady_state {
            SteadyArg::Auto => mk::SteadyState::Auto,
            SteadyArg::On => mk::SteadyState::On,
            SteadyArg::Off => mk::SteadyState::Off,
        },
        min_sample,
        loops: a.loops,
        timeout,
        start_timeout,
        seed,
        ignore_failure: a.ignore_failure,
        spec,
        randomize,
        counters,
    };
    // --baseline: the pairs, checked before anything is said about the machine.
    let pairs = a
        .baseline
        .as_deref()
        .map(|b| super::kernels_pairs::pairs(&plan, &found, b))
        .transpose()?;
    // What the machine is doing that tare cannot correct, as `tare run` says it (load above
    // what the cores take, steal, governor, turbo, swap).
    let facts = machine::inventory::read_facts(
        &root,
        &machine::inventory::InventoryOptions { steal_sample: None },
    );
    let machine_warnings = machine::warnings::session_warnings(&facts, None);
    if style != Style::None {
        for w in &machine_warnings {
            eprintln!("tare: warning: {w}");
        }
    }
    if let (Some(b), Some(pairs)) = (&a.baseline, pairs) {
        return super::kernels_pairs::run(
            super::kernels_pairs::Context {
                plan: &plan,
                pairs: &pairs,
                found: &found,
                executor,
                cancel: &cancel,
                alpha,
                baseline: b,
                style,
                root: &root,
                method: method_record,
                cores: run_cores,
                seed,
                machine_warnings,
                cpu: match a.pair_time {
                    PairTime::Auto => None,
                    PairTime::Cpu => Some(true),
                    PairTime::Wall => Some(false),
                },
            },
            &a.exports,
        );
    }
    // `--energy`: the meters `tare run --energy` uses, idle power measured once before the
    // first invocation; each invocation's energy lands in its record's meters.
    let energy_record = match a.energy.idle()? {
        None => None,
        Some(idle) => Some(
            match crate::method::energy::meters(&root, plan.spec.cores.as_deref(), idle) {
                Err(record) => record,
                Ok(mut energy) => {
                    let quiet = crate::method::stages::quiet_window(&mut energy);
                    meters.append(&mut energy);
                    crate::method::energy::session_record(idle, quiet)
                }
            },
        ),
    };
    let mut benches = mk::empty_benchmarks(&plan, &found);
    let mut observer = Progress {
        quiet: style == Style::None,
    };
    let outcome = mk::execute(
        &plan,
        &executor,
        &found,
        &mut benches,
        &mut actions,
        &mut meters,
        &mut units,
        &mut observer,
        &cancel,
    );
    drop(executor);
    let mut session =
        super::kernels_record::session_record(&root, method_record, run_cores, seed, benches);
    // Complete only when everything asked was measured: no kernel failed or ended without a
    // counted sample, no invocation failed.
    session.complete = matches!(outcome, KernelsOutcome::Complete)
        && mk::unmeasured(&session.benchmarks).is_none();
    session
        .extra
        .insert("time_per".into(), "loop (kernel iteration)".into());
    session.extra.insert(
        machine::extra_keys::SESSION_WARNINGS.into(),
        serde_json::json!(machine_warnings),
    );
    if let Some((_, record)) = &idle {
        session.extra.insert("idle".into(), record.clone());
    }
    if let Some(record) = energy_record {
        session.extra.insert("energy".into(), record);
    }
    if let Some((_, record)) = &quiesced {
        session.extra.insert("quiesced".into(), record.clone());
    }
    session.extra.insert(
        "kernels".into(),
        serde_json::json!(plan
            .programs
            .iter()
            .zip(&found)
            .map(|(p, d)| serde_json::json!({
                "implementation": p.label, "command": p.command, "client": d.hello.client,
                "version": d.hello.version, "lang": d.hello.lang,
                "clock_resolution_ns": d.clock.resolution_ns, "clock_cost_ns": d.clock.cost_ns,
            }))
            .collect::<Vec<_>>()),
    );
    ck::conclude(
        &mut session,
        &CompareSettings {
            reference: 0,
            // The samples' test; the verdict is Welch's t over processes (conclude::kernels).
            test: crate::conclude::analysis::Test::MannWhitney,
            alpha,
            noise,
            paired: false,
            resamples: 10_000,
            seed,
        },
    );
    // Parameter scans (a kernel's size over a range): how its cost grows.
    crate::conclude::scaling::record(&mut session);
    // Builds of one suite head to head: slower, faster, within noise, geometric mean.
    crate::conclude::suite::record(&mut session);
    if style != Style::None {
        print!("{}", super::kernels_summary::summary(&session, a.verbose));
    }
    let mut failures = crate::results::logger::log_all(&a.exports.loggers(), &session, None);
    if let Some(st) = history.as_mut() {
        if matches!(outcome, KernelsOutcome::Complete) {
            let json = a.exports.export_json.as_deref();
            if let Err(e) = super::run::store::store_session(st, &session, json) {
                failures.push(format!("{e:#}"));
            }
        }
    }
    let tail = if failures.is_empty() {
        String::new()
    } else {
        format!("; {}", failures.join("; "))
    };
    match outcome {
        KernelsOutcome::Interrupted => {
            return Err(UserError {
                code: UserError::interrupted().code,
                message: format!("interrupted{tail}"),
            }
            .into())
        }
        KernelsOutcome::Failed(e) => return Err(UserError::run_failed(format!("{e}{tail}")).into()),
        KernelsOutcome::Complete => {}
    }
    if !failures.is_empty() {
        return Err(UserError::run_failed(failures.join("; ")).into());
    }
    if let Some(why) = mk::unmeasured(&session.benchmarks).filter(|_| !a.ignore_failure) {
        return Err(UserError::run_failed(why).into());
    }
    if let Some(why) = mk::uncounted(&session.benchmarks) {
        return Err(UserError::run_failed(why).into());
    }
    Ok(exit::OK)
}

/// Labels: `--name`, else the announced language, made unique with a number.
fn label_programs(programs: &mut [Program], found: &[Discovered], names: &[String]) {
    let base: Vec<String> = (0..programs.len())
        .map(|i| match names.get(i) {
            Some(n) => n.clone(),
            None if !found[i].hello.lang.is_empty()
                && crate::exec::protocol::name_ok(&found[i].hello.lang) =>
            {
                found[i].hello.lang.clone()
            }
            None => Path::new(&programs[i].argv[0])
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("program{}", i + 1)),
        })
        .collect();
    for (i, p) in programs.iter_mut().enumerate() {
        let dup = base.iter().filter(|b| **b == base[i]).count() > 1;
        p.label = if dup && names.is_empty() {
            format!("{}{}", base[i], i + 1)
        } else {
            base[i].clone()
        };
    }
}

/// `--counters EVENTS` of `tare kernels`: counted by Valgrind in each sample's timed region
/// (perf cannot count one region of a process); checked on `/bin/true` before the first run.
fn kernel_counters(list: &str) -> anyhow::Result<crate::plan::Counters> {
    use crate::method::counters::{self, valgrind};
    let events = counters::parse_events(list).map_err(|e| usage(format!("--counters: {e}")))?;
    super::run::options::valgrind_counters(
        events,
        |e| {
            format!(
                "--counters: '{e}' cannot be counted in a kernel's timed region; tare kernels counts {} (with valgrind)",
                valgrind::EVENTS.join(", ")
            )
        },
        "tare kernels --counters needs valgrind in PATH: install it (apt-get install valgrind)",
    )
}
