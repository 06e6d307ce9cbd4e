//! Executes a suite: every job of a [`SuitePlan`] on N parallel slots (one thread and one
//! executor each), each run classified and appended to `results.jsonl` as it finishes, with
//! progress (counts per category, ETA) on stderr.
//!
//! Output directory layout: `results.jsonl` (one [`RunRecord`] per line), `suite.json` (what
//! was run, where and how), `logs/<run>.log` (stdout and stderr of each run), `files/<run>/`
//! (result files), `work/` (per-slot scratch, removed after each run).
//!
//! Not for: deciding cores (see [`super::alloc`]) or what to run (see [`super::plan`]).

use super::alloc::Allocation;
use super::classify::{Category, Outcome};
use super::plan::{Job, SuitePlan};
use super::record::{self, RunRecord, Writer, RESULTS_FILE};
use crate::error::{usage, UserError};
use crate::exec::isolate::files::Workdir;
use crate::exec::{self, Executor, Needs, Preference, RunSpec, Sink};
use crate::results::Termination;
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

/// How to run a suite.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub output_dir: PathBuf,
    pub resume: bool,
    pub backend: Preference,
    /// Print no progress (for tests).
    pub quiet: bool,
    /// More fields for `suite.json` (the shard, the machine; see `crate::remote`).
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// Notes on how runs are measured here (inside a Slurm job, ...), printed and recorded
    /// in the method's warnings.
    pub notes: Vec<String>,
    /// Also print each record to stdout as its line is written (`tare suite run --host`
    /// reads them over the connection).
    pub stream: bool,
    /// Other output directories whose finished runs count as done here (shards of another
    /// count of the same suite, see `Shard::other_counts`).
    pub done_elsewhere: Vec<PathBuf>,
}

/// What a suite run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcomes {
    pub finished: usize,
    /// Runs skipped because `--resume` found them finished.
    pub skipped: usize,
    pub counts: BTreeMap<Category, usize>,
    pub score: f64,
    pub interrupted: bool,
}

/// Output log cap for classification: more than this is not searched by the rules.
const MAX_OUTPUT: u64 = 64 << 20;

enum Msg {
    Done(Box<RunRecord>),
    Fatal(String),
}

/// A file-name-safe name for a run (its key with separators replaced).
pub fn run_name(job: &Job) -> String {
    job.key
        .chars()
        .map(|c| match c {
            '/' => '.',
            '#' => '.',
            c if c.is_ascii_alphanumeric() || "-_.+".contains(c) => c,
            _ => '_',
        })
        .collect()
}

/// Runs every job not yet finished. Returns when all are done, or when `cancel` is set (then
/// the run in progress on each slot is discarded, everything finished is kept).
pub fn run_suite(
    plan: &SuitePlan,
    alloc: &Allocation,
    opts: &RunOptions,
    cancel: Arc<AtomicBool>,
) -> anyhow::Result<Outcomes> {
    let out = &opts.output_dir;
    std::fs::create_dir_all(out.join("logs")).map_err(|e| {
        usage(format!(
            "cannot create output directory {}: {e}",
            out.display()
        ))
    })?;
    let _writer = lock_writer(out)?;
    let results = out.join(RESULTS_FILE);
    let mut done_keys = HashSet::new();
    if results.exists() {
        if !opts.resume {
            return Err(usage(format!(
                "{} already exists; use --resume to continue that suite, or another --output-dir",
                results.display()
            )));
        }
        record::repair_tail(&results)?;
        record::for_each(&results, |r| {
            done_keys.insert(r.key);
        })?;
    }
    let mut elsewhere = false;
    for d in &opts.done_elsewhere {
        let f = d.join(RESULTS_FILE);
        if f.exists() {
            elsewhere = true;
            if opts.resume {
                record::for_each(&f, |r| {
                    done_keys.insert(r.key);
                })?;
            }
        }
    }
    if elsewhere && !opts.resume {
        return Err(usage(format!(
            "{} already holds shards of this suite with another shard count; use --resume to continue that suite (their finished runs count), or another --output-dir",
            out.parent().unwrap_or(out).display()
        )));
    }
    let pending: Vec<Job> = plan
        .jobs
        .iter()
        .filter(|j| !done_keys.contains(&j.key))
        .cloned()
        .collect();
    let mut outcomes = Outcomes {
        skipped: plan.jobs.len() - pending.len(),
        ..Default::default()
    };
    // Detected once here, before any thread: the method is announced and recorded, and the
    // backend is held until every slot is done (the slots' own backends share its set-up).
    let needs = Needs {
        cpuset: true,
        pids: plan.limits.pids.is_some(),
    };
    let (backend, reasons) = exec::detect(opts.backend, &needs, Path::new("/"))
        .map_err(|e| UserError::run_failed(format!("cannot set up measurement: {e}")))?;
    let mut method = backend.method();
    method.warnings.extend(opts.notes.iter().cloned());
    if !opts.quiet {
        eprintln!("tare: {}", method_line(&method, &reasons));
        for w in &method.warnings {
            eprintln!("tare: warning: {w}");
        }
    }
    write_meta(plan, alloc, &method, out, &opts.meta)?;
    let mut writer = Writer::append(&results)?;
    let total = pending.len();
    let pending = Arc::new(pending);
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel::<Msg>();
    let started = Instant::now();
    let mut handles = Vec::new();
    for (i, slot) in alloc.slots.iter().enumerate() {
        let ctx = Worker {
            index: i,
            cpus: slot.cpus.clone(),
            nodes: slot.node.filter(|_| alloc.numa).map(|n| vec![n]),
            jobs: Arc::clone(&pending),
            next: Arc::clone(&next),
            cancel: Arc::clone(&cancel),
            tx: tx.clone(),
            out: out.clone(),
            backend: opts.backend,
            plan_dir: plan.dir.clone(),
            suite: plan.name.clone(),
            limits: plan.limits,
            output_limit: plan.output_limit,
            isolation: plan.isolation.clone(),
        };
        let classifiers = plan.classifiers.clone();
        let scoring = plan.scoring;
        handles.push(std::thread::spawn(move || ctx.work(&classifiers, &scoring)));
    }
    drop(tx);
    let mut progress = Progress::new(opts.quiet, total, outcomes.skipped, alloc.slots.len());
    let mut fatal = None;
    for msg in rx {
        match msg {
            Msg::Done(r) => {
                if let Err(e) = writer.write(&r) {
                    // Stop every slot (killing its run) and wait for them: never leave runs
                    // or groups behind by returning early.
                    cancel.store(true, Ordering::Relaxed);
                    fatal.get_or_insert(format!(
                        "cannot append to {}: {e}; measuring stopped, the finished runs before it are kept there; free space, then continue with --resume",
                        results.display()
                    ));
                    continue;
                }
                if opts.stream {
                    if let Ok(line) = serde_json::to_string(&r) {
                        println!("{line}");
                    }
                }
                outcomes.finished += 1;
                *outcomes.counts.entry(r.category).or_default() += 1;
                outcomes.score += r.score;
                progress.update(&outcomes, started.elapsed());
            }
            Msg::Fatal(e) => {
                cancel.store(true, Ordering::Relaxed);
                fatal.get_or_insert(e);
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
    drop(backend);
    progress.finish(&outcomes, started.elapsed());
    let _ = std::fs::remove_dir_all(out.join("work"));
    if let Some(e) = fatal {
        return Err(UserError::run_failed(e).into());
    }
    outcomes.interrupted = cancel.load(Ordering::Relaxed) && outcomes.finished < total;
    Ok(outcomes)
}

/// What one slot's thread needs.
struct Worker {
    index: usize,
    cpus: Vec<usize>,
    nodes: Option<Vec<usize>>,
    jobs: Arc<Vec<Job>>,
    next: Arc<AtomicUsize>,
    cancel: Arc<AtomicBool>,
    tx: mpsc::Sender<Msg>,
    out: PathBuf,
    backend: Preference,
    plan_dir: PathBuf,
    suite: String,
    limits: exec::Limits,
    output_limit: u64,
    isolation: Option<exec::isolate::Isolation>,
}

impl Worker {
    fn work(self, classifiers: &[super::classify::Classifier], scoring: &super::def::Scoring) {
        // The cgroup backends are not Send: each thread detects its own.
        let needs = Needs {
            cpuset: true,
            pids: self.limits.pids.is_some(),
        };
        // The same backend the suite announced (`run_suite` holds one for the whole run, so
        // a cgroup v2 subtree is shared, not set up again).
        let executor = match exec::detect(self.backend, &needs, Path::new("/")) {
            Ok((b, _)) => Executor::new(b),
            Err(e) => {
                let _ = self
                    .tx
                    .send(Msg::Fatal(format!("cannot set up measurement: {e}")));
                return;
            }
        };
        loop {
            if self.cancel.load(Ordering::Relaxed) {
                return;
            }
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = self.jobs.get(i) else { return };
            match self.one(&executor, job, classifiers, scoring) {
                Ok(Some(r)) => {
                    let _ = self.tx.send(Msg::Done(Box::new(r)));
                }
                Ok(None) => return, // interrupted: the partial run is not recorded
                Err(e) => {
                    let _ = self.tx.send(Msg::Fatal(format!("run {}: {e:#}", job.key)));
                    return;
                }
            }
        }
    }

    fn one(
        &self,
        executor: &Executor,
        job: &Job,
        classifiers: &[super::classify::Classifier],
        scoring: &super::def::Scoring,
    ) -> anyhow::Result<Option<RunRecord>> {
        let name = run_name(job);
        let log_rel = format!("logs/{name}.log");
        let log = self.out.join(&log_rel);
        let _ = std::fs::remove_file(&log);
        let work = Workdir::create(&self.out.join("work"), &format!("slot{}", self.index))?;
        let mut spec = RunSpec::new(&job.argv);
        spec.cwd = Some(work.path().to_path_buf());
        spec.env
            .push(("TARE_SUITE_DIR".into(), self.plan_dir.clone().into()));
        let capture = exec::capture::Capture::start(&log, self.output_limit)
            .map_err(|e| anyhow::anyhow!("cannot create log {}: {e}", log.display()))?;
        spec.stdout = Sink::File(capture.sink().to_path_buf());
        spec.stderr = Sink::File(capture.sink().to_path_buf());
        spec.limits = self.limits;
        spec.cores = Some(self.cpus.clone());
        spec.isolation = self.isolation.clone().map(|mut iso| {
            iso.workdir = Some(work.path().to_path_buf());
            iso.memory_nodes = self.nodes.clone();
            iso
        });
        let measured = executor.run(&spec, &self.cancel);
        let captured = capture.finish()?;
        let m = match measured {
            Ok(m) => Some(m),
            Err(e) if e.downcast_ref::<exec::SpawnError>().is_some() => {
                // The tool could not start: an error result, with the reason in its log.
                std::fs::write(&log, format!("tare: {e}\n"))?;
                None
            }
            Err(e) => return Err(e),
        };
        if self.cancel.load(Ordering::Relaxed)
            && m.as_ref()
                .is_some_and(|m| m.termination == Termination::Failed)
        {
            return Ok(None);
        }
        let output = read_capped(&log);
        let outcome = match &m {
            Some(m) => Outcome {
                termination: m.termination,
                exit_code: m.exit_code,
                signal: m.signal,
            },
            None => Outcome {
                termination: Termination::Failed,
                exit_code: None,
                signal: None,
            },
        };
        let verdict = classifiers[job.tool_index].classify(
            outcome,
            &output,
            job.input.expected.as_deref(),
            scoring,
        );
        let globs = self
            .isolation
            .as_ref()
            .map(|i| i.result_files.clone())
            .unwrap_or_default();
        let mut withheld = Vec::new();
        if captured.cut() {
            withheld.push(crate::exec::isolate::collect::Withheld {
                file: log_rel.clone(),
                reason: format!(
                    "log cut to {} bytes of {} written (over the output limit of {}): its first part, a note, its last part",
                    captured.kept, captured.written, self.output_limit
                ),
            });
        }
        let files = if globs.is_empty() {
            Vec::new()
        } else {
            let c = work.collect(
                &globs,
                &self.out.join("files").join(&name),
                self.output_limit,
            )?;
            withheld.extend(c.withheld);
            c.files
                .into_iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        };
        work.remove()?;
        let secs = |d: Duration| d.as_secs_f64();
        Ok(Some(RunRecord {
            key: job.key.clone(),
            suite: self.suite.clone(),
            tool: job.tool.clone(),
            config: job.config.clone(),
            input_set: job.input.set.clone(),
            input: job.input.id.clone(),
            rep: job.rep,
            expected: job.input.expected.clone(),
            status: verdict.status,
            category: verdict.category,
            score: verdict.score,
            wall_time: m.as_ref().map_or(0.0, |m| secs(m.wall)),
            cpu_time: m.as_ref().map_or(0.0, |m| secs(m.cpu())),
            user_time: m.as_ref().map_or(0.0, |m| secs(m.user)),
            system_time: m.as_ref().map_or(0.0, |m| secs(m.system)),
            peak_memory: m.as_ref().and_then(|m| m.peak_memory),
            exit_code: m.as_ref().and_then(|m| m.exit_code),
            signal: m.as_ref().and_then(|m| m.signal),
            termination: outcome.termination.as_str().into(),
            cores: self.cpus.clone(),
            log: log_rel,
            files,
            withheld,
            isolated: self.isolation.is_some(),
            method: executor.backend().kind().as_str().into(),
            orphans_killed: m.as_ref().map_or(0, |m| m.orphans_killed),
            finished_at: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        }))
    }
}

/// The run's output, at most [`MAX_OUTPUT`] bytes of it, lossily decoded.
fn read_capped(path: &Path) -> String {
    let mut buf = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(MAX_OUTPUT).read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Name of the lock file that makes one session the only writer of an output directory.
pub const WRITER_LOCK: &str = ".tare-writer.lock";

/// Takes `out/.tare-writer.lock` for as long as the returned file lives (the kernel drops it
/// when the session ends, however it ends); a second session writing the same directory
/// (another `--resume`, a resubmitted Slurm task, a shard resumed by hand) is refused at once.
fn lock_writer(out: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = out.join(WRITER_LOCK);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(&path)
        .map_err(|e| usage(format!("cannot open lock file {}: {e}", path.display())))?;
    if !crate::lock::try_lock_exclusive(&f)? {
        return Err(usage(format!(
            "{} is being written by another tare session (it holds {}); wait for it to end, or use another --output-dir",
            out.display(),
            path.display()
        )));
    }
    Ok(f)
}

/// The one line that says how a suite is measured: the backend actually in use.
pub fn method_line(method: &crate::results::MeasurementMethod, reasons: &[String]) -> String {
    use crate::results::MethodKind;
    match method.kind {
        MethodKind::Rusage => format!(
            "measuring with the rusage fallback (less exact: {})",
            reasons.join("; ")
        ),
        kind => format!(
            "measuring with {}: CPU time = {}; peak memory = {}",
            kind.as_str(),
            method.cpu_time,
            method.peak_memory
        ),
    }
}

/// `suite.json`: what was run, where and how (for people and for the table's title).
fn write_meta(
    plan: &SuitePlan,
    alloc: &Allocation,
    method: &crate::results::MeasurementMethod,
    out: &Path,
    extra: &serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<()> {
    let mut meta = serde_json::json!({
        "method": method,
        "suite": plan.name,
        "definition_dir": plan.dir,
        "tare_version": env!("CARGO_PKG_VERSION"),
        "runs": plan.jobs.len(),
        "slots": alloc.slots.iter().map(|s| serde_json::json!({
            "cpus": s.cpus, "idle_siblings": s.idle, "package": s.package, "node": s.node,
        })).collect::<Vec<_>>(),
        "limits": {
            "cpu_time": plan.limits.cpu.map(|d| d.as_secs_f64()),
            "wall_time": plan.limits.wall.map(|d| d.as_secs_f64()),
            "memory": plan.limits.memory,
            "pids": plan.limits.pids,
            "output": plan.output_limit,
        },
        "isolation": plan.isolation,
        "scoring": plan.scoring,
        "warnings": alloc.warnings,
    });
    if let Some(m) = meta.as_object_mut() {
        m.extend(extra.clone());
    }
    std::fs::write(out.join("suite.json"), serde_json::to_vec_pretty(&meta)?)?;
    Ok(())
}

/// Progress on stderr: a rewritten line on a terminal, a line every 10 s otherwise.
struct Progress {
    quiet: bool,
    tty: bool,
    total: usize,
    parallel: usize,
    last: Option<Instant>,
}

impl Progress {
    fn new(quiet: bool, total: usize, skipped: usize, parallel: usize) -> Self {
        if !quiet && skipped > 0 {
            eprintln!("tare: resuming: {skipped} finished runs kept, {total} to do");
        }
        Progress {
            quiet,
            tty: std::io::stderr().is_terminal(),
            total,
            parallel,
            last: None,
        }
    }

    fn line(&self, o: &Outcomes, elapsed: Duration) -> String {
        let counts: Vec<String> = o
            .counts
            .iter()
            .map(|(c, n)| format!("{} {n}", c.as_str()))
            .collect();
        let eta = if o.finished > 0 && o.finished < self.total {
            let per = elapsed.as_secs_f64() / o.finished as f64;
            let left = per * (self.total - o.finished) as f64;
            format!(
                ", ETA {}",
                humantime::format_duration(Duration::from_secs(left.ceil() as u64))
            )
        } else {
            String::new()
        };
        format!(
            "[{}/{}] {} ({} parallel{eta})",
            o.finished,
            self.total,
            if counts.is_empty() {
                "—".to_string()
            } else {
                counts.join(", ")
            },
            self.parallel
        )
    }

    fn update(&mut self, o: &Outcomes, elapsed: Duration) {
        if self.quiet {
            return;
        }
        let every = if self.tty {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(10)
        };
        if o.finished >= self.total || self.last.is_some_and(|t| t.elapsed() < every) {
            return;
        }
        self.last = Some(Instant::now());
        if self.tty {
            eprint!("\r\x1b[2K{}", self.line(o, elapsed));
        } else {
            eprintln!("{}", self.line(o, elapsed));
        }
    }

    fn clear(&self) {
        if self.tty && !self.quiet {
            eprint!("\r\x1b[2K");
        }
    }

    fn finish(&self, o: &Outcomes, elapsed: Duration) {
        if self.quiet {
            return;
        }
        self.clear();
        eprintln!(
            "{} in {}",
            self.line(o, elapsed),
            crate::units::format_time(elapsed.as_secs_f64(), Some(0.01))
        );
    }
}
