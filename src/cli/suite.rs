//! `tare suite run|check|exec`: benchmark suites from a TOML definition (see `crate::suite`),
//! and one isolated, measured command (`exec`, for scripts and overhead measurements).

use crate::error::{exit, usage, UserError};
use crate::exec::isolate::Isolation;
use crate::exec::{self, Executor, Needs, RunSpec, Sink};
use crate::machine::pinned;
use crate::machine::sysfs::SysRoot;
use crate::machine::topology::read_topology;
use crate::suite::{alloc, def, plan, runner};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

/// The definition file, in short (see `src/suite/def.rs` for every field):
const FORMAT: &str = "\
Suite file (TOML):
  name = \"compressors\"           repetitions = 2
  [limits]     cpu = \"10s\"  wall = \"30s\"  memory = \"256MB\"  pids = 64
  [resources]  cores = 1                       (logical CPUs per run)
  [isolation]  enabled = true  network = false  writable = []  readable = []
               hide_home = false  result_files = [\"out.*\"]
  [[tool]]     name = \"gzip\"  command = \"gzip {options} -c {input}\"  params = { k = \"v\" }
  [[tool.config]]  name = \"fast\"  options = [\"-1\"]
  [[inputs]]   name = \"text\"  files = [\"inputs/*.txt\"]  expected = \"ok\"
               (or expected_from_name = \"regex(group)\", or tasks = [\"tasks/*.toml\"]
                with input = \"file\" and expected = \"result\" in each task file)
  [[classify]] result = \"ok\"  exit = [0]  output = \"^ROUNDTRIP OK$\"  polarity = \"true\"
  [scoring]    correct_true = 2  correct_false = 1  wrong_true = -32  wrong_false = -16
Categories: correct, wrong, unknown, timeout, out-of-memory, error, missing.
Example: examples/suite/compressors.toml";

#[derive(Args, Debug)]
#[command(after_long_help = FORMAT)]
pub struct SuiteArgs {
    #[command(subcommand)]
    command: SuiteCommand,
}

#[derive(Subcommand, Debug)]
enum SuiteCommand {
    /// Run every tool × configuration × input × repetition of a suite file.
    Run(Box<RunArgs>),
    /// Check a suite file and show how many runs it has and how cores would be allocated.
    Check(CheckArgs),
    /// Run one command measured, optionally isolated, N times; one JSON line per run.
    Exec(ExecArgs),
}

/// Isolation switches shared by `suite run`, `suite exec` and `tare run --isolate`.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct IsolationArgs {
    /// Keep the host's network (default: only a private loopback).
    #[arg(long)]
    network: bool,
    /// A directory the runs may write to (repeatable); everything else is read-only.
    #[arg(long, value_name = "DIR")]
    writable: Vec<PathBuf>,
    /// A directory to keep visible, read-only, even below the private /tmp (repeatable).
    #[arg(long, value_name = "DIR")]
    readable: Vec<PathBuf>,
    /// Hide $HOME behind an empty tmpfs.
    #[arg(long)]
    hide_home: bool,
    /// Files to keep from each run's work directory (glob, repeatable).
    #[arg(long, value_name = "GLOB")]
    result_files: Vec<String>,
}

impl IsolationArgs {
    /// These switches as arguments again (directories made absolute), for the `tare suite
    /// run` of each Slurm task.
    pub(crate) fn to_flags(&self) -> anyhow::Result<Vec<String>> {
        let mut v = Vec::new();
        if self.network {
            v.push("--network".to_string());
        }
        if self.hide_home {
            v.push("--hide-home".into());
        }
        for (flag, dirs) in [
            ("--writable", &self.writable),
            ("--readable", &self.readable),
        ] {
            for d in dirs {
                v.push(flag.into());
                let abs = if d.is_absolute() {
                    d.clone()
                } else {
                    std::env::current_dir()?.join(d)
                };
                v.push(abs.to_string_lossy().into_owned());
            }
        }
        for g in &self.result_files {
            v.push("--result-files".into());
            v.push(g.clone());
        }
        Ok(v)
    }

    fn apply(&self, iso: &mut Isolation) {
        iso.network |= self.network;
        iso.writable.extend(self.writable.iter().cloned());
        iso.readable.extend(self.readable.iter().cloned());
        iso.hide_home |= self.hide_home;
        iso.result_files.extend(self.result_files.iter().cloned());
    }

    /// The isolation of `tare run` (`--isolate`): the command runs in the current directory,
    /// so there is no work directory to collect result files from.
    pub(crate) fn for_run(&self, isolate: bool) -> anyhow::Result<Option<Isolation>> {
        let any = self.network
            || self.hide_home
            || !self.writable.is_empty()
            || !self.readable.is_empty()
            || !self.result_files.is_empty();
        if !isolate {
            return if any {
                Err(usage(
                    "--network, --writable, --readable and --hide-home shape an isolated run; add --isolate",
                ))
            } else {
                Ok(None)
            };
        }
        if !self.result_files.is_empty() {
            return Err(usage(
                "--result-files needs a per-run work directory (tare suite); with tare run --isolate, let the command write to a --writable directory",
            ));
        }
        let mut iso = Isolation::default();
        self.apply(&mut iso);
        Ok(Some(iso))
    }
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The suite definition (TOML).
    file: PathBuf,
    /// Runs at a time, each on its own physical cores.
    #[arg(long, short = 'j', default_value_t = 1)]
    parallel: usize,
    /// Continue a suite in --output-dir: skip runs already in its results.jsonl.
    #[arg(long)]
    resume: bool,
    /// Where results, logs and result files go (default: results/<suite name>).
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Run without namespaces (isolation is on unless the file or this flag turns it off).
    #[arg(long)]
    no_isolation: bool,
    #[command(flatten)]
    isolation: IsolationArgs,
    #[command(flatten)]
    backend: super::opts::BackendArgs,
    #[command(flatten)]
    style: super::opts::StyleArgs,
    #[command(flatten)]
    idle: super::opts::IdleArgs,
    #[command(flatten)]
    quiesce: super::opts::QuiesceArgs,
    /// Run only part I of N (1-based): inputs dealt round-robin, every configuration and
    /// repetition of an input in the same part; results go to OUTPUT/shard-I-of-N/.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    #[command(flatten)]
    slurm: super::remote::SlurmArgs,
    #[command(flatten)]
    remote: super::remote::HostArgs,
    /// Print each result record on stdout as it is written (used by --host).
    #[arg(long, hide = true)]
    stream_results: bool,
    /// Result files, and log, kept per run at most (default: [limits] output of the suite
    /// file, else 64MiB); what passes it is withheld and recorded.
    #[arg(long, value_name = "SIZE")]
    output_limit: Option<String>,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// The suite file (TOML) to check.
    file: PathBuf,
    /// Runs at a time, as `tare suite run --parallel` would use, for the core allocation.
    #[arg(long, short = 'j', default_value_t = 1)]
    parallel: usize,
}

#[derive(Args, Debug)]
struct ExecArgs {
    /// Run in fresh namespaces (see `tare suite --help`).
    #[arg(long)]
    isolate: bool,
    #[command(flatten)]
    isolation: IsolationArgs,
    /// How many times to run the command.
    #[arg(short = 'r', long, value_name = "N", default_value_t = 1)]
    runs: usize,
    #[command(flatten)]
    cores: super::opts::CoreArgs,
    /// Show the measured command's output (default: discarded).
    #[arg(long)]
    show_output: bool,
    #[command(flatten)]
    backend: super::opts::BackendArgs,
    /// The command and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

pub fn run(args: SuiteArgs) -> anyhow::Result<i32> {
    match args.command {
        SuiteCommand::Run(a) => run_suite(*a),
        SuiteCommand::Check(a) => check(a),
        SuiteCommand::Exec(a) => exec_cmd(a),
    }
}

fn load(file: &Path) -> anyhow::Result<plan::SuitePlan> {
    let d = def::load(file)?;
    plan::expand(&d, file)
}

/// Cores for the slots, avoiding physical cores another live tare session has pinned (see
/// `machine::pinned`); when the rest are too few, the shared ones are used with a warning.
fn allocate(p: &plan::SuitePlan, parallel: usize) -> anyhow::Result<alloc::Allocation> {
    let mut topo = read_topology(&SysRoot::host())?;
    // Inside a Slurm job: only the CPUs Slurm gave this task (its affinity), whole cores;
    // Slurm, not the registry, keeps jobs on one node apart.
    let slurm_cpus = super::remote::slurm_cpus();
    if let Some(cpus) = &slurm_cpus {
        let outside: std::collections::BTreeSet<usize> = topo
            .cpus
            .iter()
            .map(|c| c.id)
            .filter(|id| !cpus.contains(id))
            .collect();
        topo = pinned::without(&topo, &outside);
    }
    let mem = alloc::read_memory(Path::new("/"));
    let others = if slurm_cpus.is_some() {
        Vec::new()
    } else {
        pinned::others()
    };
    let busy = pinned::cpus_of(&others);
    // CPUs clearly slow or unsteady right now are left out while the slots still fit.
    let (topo, steady) = alloc::prefer_steady(
        &topo,
        &busy,
        parallel,
        p.cores_per_run,
        p.limits.memory,
        &mem,
    );
    let avoiding = (!busy.is_empty())
        .then(|| {
            alloc::allocate(
                &pinned::without(&topo, &busy),
                parallel,
                p.cores_per_run,
                p.limits.memory,
                &mem,
            )
            .ok()
        })
        .flatten();
    let mut a = match avoiding {
        Some(mut a) => {
            a.warnings.push(format!(
                "avoiding cores pinned by other tare sessions: {}",
                pinned::describe(&others, &busy)
            ));
            a
        }
        None => {
            let mut a = alloc::allocate(&topo, parallel, p.cores_per_run, p.limits.memory, &mem)
                .map_err(usage)?;
            let used: std::collections::BTreeSet<usize> = a
                .slots
                .iter()
                .flat_map(|s| s.cpus.iter().copied())
                .collect();
            let shared: std::collections::BTreeSet<usize> =
                used.intersection(&busy).copied().collect();
            if !shared.is_empty() {
                a.warnings.push(format!(
                    "runs share cores with other tare sessions, which disturbs both measurements: {}; wait for them or use fewer --parallel",
                    pinned::describe(&others, &shared)
                ));
            }
            a
        }
    };
    a.warnings.extend(steady);
    a.warnings
        .extend(alloc::turbo_warning(Path::new("/"), parallel));
    Ok(a)
}

fn run_suite(a: RunArgs) -> anyhow::Result<i32> {
    let quiet = a.style.style() == crate::report::Style::None;
    if a.remote.host.is_some() {
        return super::remote::suite_on_host(&a.remote, a.slurm.slurm, &flags(&a)?);
    }
    let shard = super::remote::parse_shard(a.shard.as_deref())?;
    let mut p = load(&a.file)?;
    if a.slurm.slurm {
        return super::remote::run_slurm(&a.slurm, &flags(&a)?, &p);
    }
    let base_dir = a
        .output_dir
        .clone()
        .unwrap_or_else(|| Path::new("results").join(&p.name));
    let mut meta = super::remote::shard_and_machine(&mut p, shard)?;
    if let Some(s) = &a.output_limit {
        p.output_limit =
            crate::units::parse_bytes(s).map_err(|e| usage(format!("--output-limit: {e}")))?;
    }
    if a.no_isolation {
        p.isolation = None;
    } else if let Some(iso) = p.isolation.as_mut() {
        a.isolation.apply(iso);
    }
    // Choose and register cores under the registry's lock, so that two suites starting at
    // once do not both take the same free cores.
    let registry = pinned::lock_registry();
    let alloc = allocate(&p, a.parallel)?;
    let cpus: Vec<usize> = alloc
        .slots
        .iter()
        .flat_map(|s| s.cpus.iter().chain(&s.idle).copied())
        .collect();
    let _pinned = pinned::register(&cpus, &format!("tare suite run {}", p.name));
    drop(registry);
    if !quiet {
        for w in &alloc.warnings {
            eprintln!("tare: warning: {w}");
        }
        let slots: Vec<String> = alloc
            .slots
            .iter()
            .map(|s| crate::machine::topology::format_cpu_list(&s.cpus))
            .collect();
        eprintln!(
            "tare: suite '{}': {} runs, {} at a time on CPUs [{}], {}",
            p.name,
            p.jobs.len(),
            alloc.slots.len(),
            slots.join("] ["),
            if p.isolation.is_some() {
                "isolated (read-only /, private /tmp, no network)"
            } else {
                "not isolated"
            }
        );
    }
    let (output_dir, done_elsewhere) = match shard {
        Some(s) => (s.dir(&base_dir), s.other_counts(&base_dir)),
        None => (base_dir, Vec::new()),
    };
    // Idle states and background work held for the whole suite, recorded in suite.json.
    let idle = a.idle.hold(&crate::machine::sysfs::SysRoot::from_env())?;
    if let Some((_, r)) = &idle {
        meta.insert("idle".into(), r.clone());
    }
    let quiesced = a.quiesce.apply(quiet)?;
    if let Some((_, r)) = &quiesced {
        meta.insert("quiesced".into(), r.clone());
    }
    // Inside a Slurm job: how runs are measured there, said and recorded.
    let notes = super::remote::slurm_job_notes(
        a.backend.preference()?,
        p.limits.pids.is_some(),
        quiet,
        &mut meta,
    );
    let cancel = crate::output::install_stop_signals()?;
    crate::exec::reaper::become_subreaper();
    let opts = runner::RunOptions {
        output_dir: output_dir.clone(),
        resume: a.resume,
        backend: a.backend.preference()?,
        quiet,
        meta,
        notes,
        stream: a.stream_results,
        done_elsewhere,
    };
    let o = runner::run_suite(&p, &alloc, &opts, cancel)?;
    if o.interrupted {
        return Err(UserError {
            code: crate::output::stop_exit_code(),
            message: format!(
                "{}; {} finished runs kept in {}; continue with --resume",
                UserError::interrupted()
                    .message
                    .split(';')
                    .next()
                    .unwrap_or("interrupted"),
                o.finished + o.skipped,
                output_dir.display()
            ),
        }
        .into());
    }
    if !quiet {
        eprintln!(
            "tare: results in {}; make a table with: tare table {} --export-html table.html",
            output_dir.display(),
            output_dir.display()
        );
    }
    Ok(exit::OK)
}

/// What `--slurm` and `--host` need of `tare suite run`'s arguments.
fn flags(a: &RunArgs) -> anyhow::Result<super::remote::SuiteFlags<'_>> {
    let mut pass = Vec::new();
    if a.no_isolation {
        pass.push("--no-isolation".to_string());
    }
    pass.extend(a.isolation.to_flags()?);
    if let Some(b) = &a.backend.backend {
        pass.push(format!("--backend={b}"));
    }
    if let Some(o) = &a.output_limit {
        pass.push(format!("--output-limit={o}"));
    }
    pass.extend(a.idle.to_flags());
    pass.extend(a.quiesce.to_flags());
    Ok(super::remote::SuiteFlags {
        file: &a.file,
        output_dir: a.output_dir.as_deref(),
        parallel: a.parallel,
        resume: a.resume,
        quiet: a.style.style() == crate::report::Style::None,
        shard: a.shard.as_deref(),
        pass,
    })
}

fn check(a: CheckArgs) -> anyhow::Result<i32> {
    let p = load(&a.file)?;
    let alloc = allocate(&p, a.parallel)?;
    let tools: std::collections::BTreeSet<_> =
        p.jobs.iter().map(|j| (&j.tool, &j.config)).collect();
    let inputs: std::collections::BTreeSet<_> =
        p.jobs.iter().map(|j| (&j.input.set, &j.input.id)).collect();
    let expected = p
        .jobs
        .iter()
        .filter(|j| j.rep == 0 && j.input.expected.is_some())
        .count();
    println!(
        "suite '{}': {} runs = {} tool configurations × {} inputs × {} repetitions; {} of {} first-repetition runs have an expected result",
        p.name,
        p.jobs.len(),
        tools.len(),
        inputs.len(),
        p.jobs.iter().map(|j| j.rep + 1).max().unwrap_or(0),
        expected,
        p.jobs.iter().filter(|j| j.rep == 0).count()
    );
    for (i, s) in alloc.slots.iter().enumerate() {
        println!(
            "slot {i}: CPUs {} (idle siblings: {}), package {:?}, node {:?}",
            crate::machine::topology::format_cpu_list(&s.cpus),
            if s.idle.is_empty() {
                "none".to_string()
            } else {
                crate::machine::topology::format_cpu_list(&s.idle)
            },
            s.package,
            s.node
        );
    }
    for w in &alloc.warnings {
        println!("warning: {w}");
    }
    Ok(exit::OK)
}

fn exec_cmd(a: ExecArgs) -> anyhow::Result<i32> {
    let pref = a.backend.preference()?;
    let (chosen, _pinned) = a.cores.resolve(&SysRoot::from_env(), "tare suite exec")?;
    let cores = chosen.run;
    let needs = Needs {
        cpuset: cores.is_some(),
        pids: false,
    };
    let (backend, _) = exec::detect(pref, &needs, Path::new("/"))?;
    let executor = Executor::new(backend);
    let cancel = crate::output::install_stop_signals()?;
    // A fresh private directory (mkdtemp, mode 0700): a predictable name in /tmp could be made
    // beforehand by another user, who would then reach the run's work directory.
    let base_dir = tempfile::Builder::new()
        .prefix("tare-exec-")
        .tempdir()
        .map_err(|e| anyhow::anyhow!("cannot create a temporary directory: {e}"))?;
    let base = base_dir.path().to_path_buf();
    for i in 0..a.runs {
        let mut spec = RunSpec::new(&a.command);
        spec.cores = cores.clone();
        if a.show_output {
            spec.stdout = Sink::Inherit;
            spec.stderr = Sink::Inherit;
        }
        let work = if a.isolate {
            let w = crate::exec::isolate::files::Workdir::create(&base, "work")?;
            let mut iso = Isolation {
                workdir: Some(w.path().to_path_buf()),
                ..Default::default()
            };
            a.isolation.apply(&mut iso);
            spec.isolation = Some(iso);
            Some(w)
        } else {
            None
        };
        let m = executor.run(&spec, &cancel)?;
        if let (Some(w), Some(iso)) = (&work, &spec.isolation) {
            if !iso.result_files.is_empty() {
                let c = w.collect(
                    &iso.result_files,
                    &std::env::current_dir()?,
                    crate::exec::isolate::collect::DEFAULT_OUTPUT_LIMIT,
                )?;
                for h in c.withheld {
                    eprintln!("tare: result file {} withheld: {}", h.file, h.reason);
                }
            }
        }
        drop(work);
        println!(
            "{}",
            serde_json::json!({
                "run": i,
                "wall_time": m.wall.as_secs_f64(),
                "cpu_time": m.cpu().as_secs_f64(),
                "peak_memory": m.peak_memory,
                "exit_code": m.exit_code,
                "signal": m.signal,
                "termination": m.termination.as_str(),
                "isolated": a.isolate,
            })
        );
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = std::fs::remove_dir_all(&base);
            return Err(UserError::interrupted().into());
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    Ok(exit::OK)
}
