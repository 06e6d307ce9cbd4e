//! A suite as one Slurm array job (`tare suite run FILE --slurm`): task `t` of the array
//! runs shard `t+1` of N (see [`super::shard`]) with `--resume` into
//! `OUTPUT/shard-I-of-N/`; tare submits the array with sbatch, follows it with squeue and the
//! shards' `results.jsonl` (progress), resubmits the tasks whose shard is incomplete when the
//! array is done (bounded), and on Ctrl-C cancels everything it submitted with scancel and
//! waits until squeue shows none of it.
//!
//! What each task asks for: `--cpus-per-task` = parallel runs × cores per run, with
//! `--threads-per-core=1` (whole cores, as tare's own allocation gives), `--mem` and `--time`
//! padded 1.5× over what the suite's limits allow, so that tare — not Slurm — catches a run
//! at its limit and records it as such; `--exclusive` when asked. The shards' output
//! directories must be visible to the submitting host (a shared file system), and tare, the
//! suite file and its inputs must be at the same paths on the nodes.
//!
//! Not for: measuring (each task is an ordinary `tare suite run --shard`) or merging the
//! results for tables (see [`super::merge`]).

use super::shard::Shard;
use crate::error::{usage, UserError};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Test-only knob, read by the batch script: the array task with this id kills itself on its
/// first try (so tests can check resubmission without racing a running task).
pub const TEST_FAIL_TASK_ENV: &str = "TARE_TEST_SLURM_FAIL_TASK_ONCE";

/// How to submit and follow a suite.
#[derive(Debug, Clone)]
pub struct Options {
    /// The suite file, absolute.
    pub file: PathBuf,
    /// The suite's output directory, absolute.
    pub output_dir: PathBuf,
    /// Array tasks = shards.
    pub tasks: usize,
    pub partition: Option<String>,
    /// Per task, as sbatch takes it; default from the limits.
    pub time: Option<String>,
    /// Per task, as sbatch takes it (`4G`); default from the memory limit.
    pub mem: Option<String>,
    /// Tasks running at once (`--array=…%N`).
    pub concurrency: Option<usize>,
    pub exclusive: bool,
    /// More sbatch options, as given.
    pub extra: Vec<String>,
    /// Times a task whose shard is incomplete is submitted again.
    pub retries: usize,
    /// Runs at a time within a task (`-j`).
    pub parallel: usize,
    /// Arguments for each task's `tare suite run` (isolation switches, backend).
    pub pass: Vec<String>,
    /// The tare the tasks run.
    pub tare: PathBuf,
    pub quiet: bool,
    pub resume: bool,
}

/// What the plan says the array needs.
#[derive(Debug, Clone)]
pub struct Needs {
    /// The run keys of each shard (index 0 = shard 1).
    pub keys: Vec<HashSet<String>>,
    pub cores_per_run: usize,
    /// Per-run limit (the larger of wall and CPU time), if any.
    pub run_limit: Option<Duration>,
    pub memory_limit: Option<u64>,
    pub suite: String,
}

impl Needs {
    pub fn of(plan: &crate::suite::plan::SuitePlan, tasks: usize) -> Needs {
        let of = Shard::of_inputs(&plan.jobs, tasks);
        let mut keys = vec![HashSet::new(); tasks];
        for j in &plan.jobs {
            let s = of[&(j.input.set.clone(), j.input.id.clone())];
            keys[s - 1].insert(j.key.clone());
        }
        let run_limit = match (plan.limits.wall, plan.limits.cpu) {
            (Some(w), Some(c)) => Some(w.max(c)),
            (w, c) => w.or(c),
        };
        Needs {
            keys,
            cores_per_run: plan.cores_per_run,
            run_limit,
            memory_limit: plan.limits.memory,
            suite: plan.name.clone(),
        }
    }
}

/// Padding over the limits: Slurm must never be the one that stops a run.
const PAD: f64 = 1.5;
/// Memory for tare itself in a task, above the runs'.
const TARE_MEMORY: u64 = 256 << 20;
/// Memory per run slot when the suite has no memory limit.
const DEFAULT_RUN_MEMORY: u64 = 1 << 30;

/// The sbatch options (without `--array`) for a task.
pub fn sbatch_options(o: &Options, n: &Needs) -> anyhow::Result<Vec<String>> {
    let mut v = vec![
        format!("--job-name=tare-{}", n.suite),
        format!(
            "--output={}",
            o.output_dir.join("slurm").join("task-%A_%a.out").display()
        ),
        "--ntasks=1".into(),
        format!("--cpus-per-task={}", o.parallel * n.cores_per_run),
        "--threads-per-core=1".into(),
        "--no-requeue".into(),
    ];
    let mem = match &o.mem {
        Some(m) => m.clone(),
        None => {
            let per = n
                .memory_limit
                .map(|m| (m as f64 * PAD) as u64)
                .unwrap_or(DEFAULT_RUN_MEMORY);
            format!(
                "{}M",
                (per * o.parallel as u64 + TARE_MEMORY).div_ceil(1 << 20)
            )
        }
    };
    v.push(format!("--mem={mem}"));
    let time = match &o.time {
        Some(t) => t.clone(),
        None => {
            let Some(limit) = n.run_limit else {
                return Err(usage(
                    "--slurm needs a time per task: give the suite a [limits] wall or cpu, or --time (as sbatch takes it, e.g. 2:00:00)",
                ));
            };
            let most = n.keys.iter().map(HashSet::len).max().unwrap_or(0);
            let secs = limit.as_secs_f64() * PAD * most.div_ceil(o.parallel.max(1)) as f64;
            // Minutes, at least 2: tare starts, sets up and writes results too.
            format!("{}", ((secs / 60.0).ceil() as u64 + 1).max(2))
        }
    };
    v.push(format!("--time={time}"));
    if let Some(p) = &o.partition {
        v.push(format!("--partition={p}"));
    }
    if o.exclusive {
        v.push("--exclusive".into());
    }
    v.extend(o.extra.iter().cloned());
    Ok(v)
}

/// The batch script: task t runs shard t+1 of N with --resume. `sbatch` are its options, kept
/// as `#SBATCH` lines with the whole array, so that `sbatch OUTPUT/slurm/job.sh` by hand
/// submits the same job (tare gives them on the command line too, where they take precedence,
/// with the array of the tasks it (re)submits).
pub fn script(o: &Options, sbatch: &[String]) -> String {
    let directive = |opt: &str| match opt.split_once('=') {
        Some((k, v)) if v.contains(char::is_whitespace) => format!("#SBATCH {k}=\"{v}\"\n"),
        _ => format!("#SBATCH {opt}\n"),
    };
    let mut head: String = sbatch.iter().map(|s| directive(s)).collect();
    head.push_str(&directive(&format!(
        "--array={}",
        array_spec(&(0..o.tasks).collect::<Vec<_>>(), o.concurrency)
    )));
    let q = |s: &str| shell_words::quote(s).into_owned();
    let out = o.output_dir.to_string_lossy();
    let mut cmd = vec![
        q(&o.tare.to_string_lossy()),
        "suite".into(),
        "run".into(),
        q(&o.file.to_string_lossy()),
        "--shard".into(),
        format!("\"$shard/{}\"", o.tasks),
        "--resume".into(),
        "--output-dir".into(),
        q(&out),
        "--parallel".into(),
        o.parallel.to_string(),
    ];
    cmd.extend(o.pass.iter().map(|a| q(a)));
    format!(
        "#!/bin/sh\n\
         {head}\
         # Written by tare: array task t runs shard t+1 of {n} of {file} with --resume.\n\
         set -u\n\
         shard=$((SLURM_ARRAY_TASK_ID + 1))\n\
         # Test only ({knob}): the task with this id kills itself on its first try.\n\
         if [ \"${{{knob}:-}}\" = \"$SLURM_ARRAY_TASK_ID\" ] && mkdir {marker}-\"$SLURM_ARRAY_TASK_ID\" 2>/dev/null; then\n\
         \x20 echo \"tare: {knob}: task $SLURM_ARRAY_TASK_ID kills itself on its first try\" >&2\n\
         \x20 kill -9 $$\n\
         fi\n\
         exec {cmd}\n",
        n = o.tasks,
        file = o.file.display(),
        head = head,
        knob = TEST_FAIL_TASK_ENV,
        marker = q(&format!("{out}/slurm/test-failed")),
        cmd = cmd.join(" "),
    )
}

/// The `--array` value for these task ids (`0-3`, `1,4`), with `%N`.
pub fn array_spec(ids: &[usize], concurrency: Option<usize>) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + 1 {
            i += 1;
            end = ids[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    let mut s = parts.join(",");
    if let Some(c) = concurrency {
        s.push_str(&format!("%{c}"));
    }
    s
}

/// Task states from `squeue -h -o '%i %T'` lines of one array job: (running, pending).
pub fn parse_squeue(text: &str) -> (usize, usize) {
    let (mut running, mut pending) = (0, 0);
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(id), Some(state)) = (it.next(), it.next()) else {
            continue;
        };
        // `12_3` is one task; `12_[4-7%2]` is the pending rest of the array.
        let n = match id.split_once("_[") {
            Some((_, rest)) => {
                let inner = rest.trim_end_matches(']');
                let inner = inner.split('%').next().unwrap_or("");
                inner
                    .split(',')
                    .map(|p| match p.split_once('-') {
                        Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                            (Ok(a), Ok(b)) if b >= a => b - a + 1,
                            _ => 1,
                        },
                        None => 1,
                    })
                    .sum()
            }
            None => 1,
        };
        if state == "PENDING" || state == "CONFIGURING" {
            pending += n;
        } else {
            running += n;
        }
    }
    (running, pending)
}

fn slurm_cmd(prog: &str, args: &[String]) -> anyhow::Result<std::process::Output> {
    Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                usage(format!(
                    "{prog} is not installed here: --slurm needs the Slurm client commands (sbatch, squeue, scancel) on the submitting host"
                ))
            } else {
                usage(format!("cannot run {prog}: {e}"))
            }
        })
}

fn one_line(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Submits the array for `ids`; returns the job id.
fn submit(
    opts: &[String],
    ids: &[usize],
    concurrency: Option<usize>,
    script: &Path,
) -> anyhow::Result<String> {
    let mut args = vec!["--parsable".to_string()];
    args.extend(opts.iter().cloned());
    args.push(format!("--array={}", array_spec(ids, concurrency)));
    args.push(script.to_string_lossy().into_owned());
    let out = slurm_cmd("sbatch", &args)?;
    if !out.status.success() {
        return Err(usage(format!(
            "sbatch refused the array job: {}; check --partition, --time, --mem and --sbatch-option",
            one_line(&out.stderr)
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(
            UserError::run_failed(format!("sbatch printed no job id ('{}')", text.trim())).into(),
        );
    }
    Ok(id)
}

/// Tasks of `job` still known to squeue: (running, pending), or None once it has none.
fn queue(job: &str) -> anyhow::Result<Option<(usize, usize)>> {
    for attempt in 0..10 {
        let out = slurm_cmd(
            "squeue",
            &[
                "-h".into(),
                "-j".into(),
                job.into(),
                "-o".into(),
                "%i %T".into(),
            ],
        )?;
        if out.status.success() {
            let (r, p) = parse_squeue(&String::from_utf8_lossy(&out.stdout));
            return Ok((r + p > 0).then_some((r, p)));
        }
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("Invalid job id") {
            return Ok(None);
        }
        if attempt == 9 {
            return Err(UserError::run_failed(format!(
                "squeue fails for job {job}: {}; the job may still run: check with squeue, cancel with scancel {job}",
                one_line(&out.stderr)
            ))
            .into());
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    unreachable!()
}

/// Cancels the jobs and waits (at most a minute) until squeue shows none of them.
fn cancel_all(jobs: &[String]) -> anyhow::Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let out = slurm_cmd("scancel", jobs)?;
    if !out.status.success() {
        eprintln!("tare: warning: scancel: {}", one_line(&out.stderr));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let mut left = false;
        for j in jobs {
            if queue(j).ok().flatten().is_some() {
                left = true;
            }
        }
        if !left {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(UserError::run_failed(format!(
        "scancel {} did not empty the queue within a minute; check squeue",
        jobs.join(" ")
    ))
    .into())
}

/// Finished runs per shard, re-reading a shard's results only when its size changed (a
/// large suite is polled every 2 s).
#[derive(Default)]
struct Tally {
    seen: std::collections::HashMap<usize, (u64, usize)>,
}

impl Tally {
    fn count(&mut self, shards: &[PathBuf], keys: &[HashSet<String>]) -> usize {
        let mut total = 0;
        for (i, (d, k)) in shards.iter().zip(keys).enumerate() {
            let len = std::fs::metadata(d.join(crate::suite::record::RESULTS_FILE))
                .map_or(0, |m| m.len());
            let n = match self.seen.get(&i) {
                Some(&(l, n)) if l == len => n,
                _ => {
                    let n = finished(d).intersection(k).count();
                    self.seen.insert(i, (len, n));
                    n
                }
            };
            total += n;
        }
        total
    }
}

/// The run keys finished in a shard's results.
fn finished(dir: &Path) -> HashSet<String> {
    let mut keys = HashSet::new();
    let f = dir.join(crate::suite::record::RESULTS_FILE);
    if f.exists() {
        let _ = crate::suite::record::for_each(&f, |r| {
            keys.insert(r.key);
        });
    }
    keys
}

/// How Slurm says a task ended: `sacct` where the cluster keeps accounting, else `scontrol`
/// (which knows a job for `MinJobAge` after it ends). `FAILED, exit 0:9` or None.
fn task_state(job: &str, task: usize) -> Option<String> {
    let id = format!("{job}_{task}");
    let sacct = Command::new("sacct")
        .args(["-j", &id, "-n", "-P", "-X", "-o", "State,ExitCode"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let t = String::from_utf8_lossy(&o.stdout);
            let l = t.lines().find(|l| !l.trim().is_empty())?.to_string();
            let (state, code) = l.split_once('|')?;
            Some(format!("{state}, exit {code}"))
        });
    sacct.or_else(|| {
        let o = Command::new("scontrol")
            .args(["-o", "show", "job", &id])
            .stdin(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        let t = String::from_utf8_lossy(&o.stdout).into_owned();
        let field = |k: &str| {
            t.split_whitespace()
                .find_map(|w| w.strip_prefix(k).map(str::to_string))
        };
        Some(format!(
            "{}, exit {}",
            field("JobState=")?,
            field("ExitCode=")?
        ))
    })
}

/// The last line of a task's output.
fn task_output(o: &Options, job: &str, task: usize) -> String {
    let f = o
        .output_dir
        .join("slurm")
        .join(format!("task-{job}_{task}.out"));
    match std::fs::read_to_string(&f) {
        Ok(t) => t
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!("{} ({})", l.trim(), f.display()))
            .unwrap_or_else(|| format!("no output in {}", f.display())),
        Err(_) => format!("no output file {}", f.display()),
    }
}

/// What the array did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub jobs: Vec<String>,
    pub resubmitted: Vec<usize>,
    pub finished: usize,
    pub total: usize,
}

/// Submits the suite as one array job, follows it, resubmits incomplete tasks, cancels on
/// `cancel`.
pub fn run(o: &Options, n: &Needs, cancel: &AtomicBool) -> anyhow::Result<Outcome> {
    let slurm_dir = o.output_dir.join("slurm");
    std::fs::create_dir_all(&slurm_dir)
        .map_err(|e| usage(format!("cannot create {}: {e}", slurm_dir.display())))?;
    let shards: Vec<PathBuf> = (1..=o.tasks)
        .map(|i| {
            Shard {
                index: i,
                count: o.tasks,
            }
            .dir(&o.output_dir)
        })
        .collect();
    // Shards of another count (an earlier --tasks): their finished runs count as done.
    let others = Shard {
        index: 1,
        count: o.tasks,
    }
    .other_counts(&o.output_dir);
    let mut done_before: HashSet<String> = HashSet::new();
    if o.resume {
        for d in &others {
            done_before.extend(finished(d));
        }
    }
    let finished = |d: &Path| -> HashSet<String> {
        let mut k = finished(d);
        k.extend(done_before.iter().cloned());
        k
    };
    if !o.resume {
        if let Some(d) = shards
            .iter()
            .chain(&others)
            .find(|d| d.join(crate::suite::record::RESULTS_FILE).exists())
        {
            return Err(usage(format!(
                "{} already holds results; use --resume to continue that suite, or another --output-dir",
                d.display()
            )));
        }
    }
    // A follower that was killed leaves its jobs running: never submit a second array that
    // would write the same shards at the same time.
    let jobs_file = slurm_dir.join("jobs");
    let earlier: Vec<String> = std::fs::read_to_string(&jobs_file)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    for j in &earlier {
        if queue(j)?.is_some() {
            return Err(usage(format!(
                "Slurm job {j} of this suite ({}) is still queued or running; wait for it (squeue -j {j}) or cancel it (scancel {j}), then continue with --resume",
                o.output_dir.display()
            )));
        }
    }
    let script_path = slurm_dir.join("job.sh");
    let opts = sbatch_options(o, n)?;
    std::fs::write(&script_path, script(o, &opts))
        .map_err(|e| usage(format!("cannot write {}: {e}", script_path.display())))?;
    let total: usize = n.keys.iter().map(HashSet::len).sum();
    let mut outcome = Outcome {
        total,
        ..Default::default()
    };
    let todo: Vec<usize> = (0..o.tasks)
        .filter(|&t| !n.keys[t].is_subset(&finished(&shards[t])))
        .collect();
    if todo.is_empty() {
        outcome.finished = total;
        return Ok(outcome);
    }
    let mut ids = todo;
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut attempt = 0;
    let mut tally = Tally::default();
    loop {
        let job = submit(&opts, &ids, o.concurrency, &script_path)?;
        outcome.jobs.push(job.clone());
        {
            use std::io::Write;
            let recorded = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&jobs_file)
                .and_then(|mut f| writeln!(f, "{job}"));
            if let Err(e) = recorded {
                eprintln!(
                    "tare: warning: cannot record job {job} in {}: {e}",
                    jobs_file.display()
                );
            }
        }
        if !o.quiet {
            eprintln!(
                "tare: submitted Slurm array job {job} ({} task{}, {}); follow with squeue -j {job}; Ctrl-C cancels it",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                opts.iter()
                    .filter(|s| s.starts_with("--cpus") || s.starts_with("--mem") || s.starts_with("--time") || s.starts_with("--partition"))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        let mut last_print: Option<Instant> = None;
        loop {
            // Check the stop flag often; ask Slurm every 2 s.
            for _ in 0..20 {
                if cancel.load(Ordering::Relaxed) {
                    if tty && !o.quiet {
                        eprint!("\r\x1b[2K");
                    }
                    cancel_all(&outcome.jobs)?;
                    outcome.finished = shards
                        .iter()
                        .zip(&n.keys)
                        .map(|(d, k)| finished(d).intersection(k).count())
                        .sum();
                    return Err(UserError {
                        code: crate::output::stop_exit_code(),
                        message: format!(
                            "interrupted: Slurm job{} {} cancelled (squeue shows none of it); {} of {total} runs kept in {}; continue with --slurm --resume",
                            if outcome.jobs.len() == 1 { "" } else { "s" },
                            outcome.jobs.join(", "),
                            outcome.finished,
                            o.output_dir.display()
                        ),
                    }
                    .into());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let state = queue(&job)?;
            let done = tally.count(&shards, &n.keys);
            if !o.quiet {
                let every = if tty {
                    Duration::ZERO
                } else {
                    Duration::from_secs(10)
                };
                if last_print.is_none_or(|t| t.elapsed() >= every) {
                    last_print = Some(Instant::now());
                    let (r, p) = state.unwrap_or((0, 0));
                    let line = format!(
                        "[{done}/{total}] Slurm job {job}: {r} running, {p} pending, {}",
                        humantime::format_duration(Duration::from_secs(
                            started.elapsed().as_secs()
                        ))
                    );
                    if tty {
                        eprint!("\r\x1b[2K{line}");
                    } else {
                        eprintln!("{line}");
                    }
                }
            }
            if state.is_none() {
                break;
            }
        }
        if tty && !o.quiet {
            eprint!("\r\x1b[2K");
        }
        let incomplete: Vec<usize> = (0..o.tasks)
            .filter(|&t| ids.contains(&t) && !n.keys[t].is_subset(&finished(&shards[t])))
            .collect();
        if incomplete.is_empty() {
            break;
        }
        let states: Vec<Option<String>> = incomplete.iter().map(|&t| task_state(&job, t)).collect();
        let reasons: Vec<String> = incomplete
            .iter()
            .zip(&states)
            .map(|(&t, st)| {
                let out = task_output(o, &job, t);
                match st {
                    Some(s) => format!("task {t}: {s}: {out}"),
                    None => format!("task {t}: {out}"),
                }
            })
            .collect();
        // Cancelled by someone (scancel): a decision, not a crash; tare's own Ctrl-C returned
        // above. Not submitted again.
        let cancelled: Vec<usize> = incomplete
            .iter()
            .zip(&states)
            .filter(|(_, st)| st.as_deref().is_some_and(|s| s.starts_with("CANCELLED")))
            .map(|(&t, _)| t)
            .collect();
        if !cancelled.is_empty() {
            return Err(UserError::run_failed(format!(
                "Slurm tasks {} of job {job} were cancelled (scancel), so tare does not submit them again: {}; finished runs are kept in {}; continue with --slurm --resume",
                cancelled.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(","),
                reasons.join("; "),
                o.output_dir.display()
            ))
            .into());
        }
        if attempt >= o.retries {
            return Err(UserError::run_failed(format!(
                "Slurm tasks {} did not finish their shards after {} tr{}: {}; finished runs are kept in {}; continue with --slurm --resume",
                incomplete.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(","),
                attempt + 1,
                if attempt == 0 { "y" } else { "ies" },
                reasons.join("; "),
                o.output_dir.display()
            ))
            .into());
        }
        attempt += 1;
        if !o.quiet {
            eprintln!(
                "tare: Slurm tasks {} ended with their shards incomplete ({}); submitting them again (try {} of {})",
                incomplete.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(","),
                reasons.join("; "),
                attempt + 1,
                o.retries + 1
            );
        }
        outcome.resubmitted.extend(incomplete.iter().copied());
        ids = incomplete;
    }
    outcome.finished = total;
    Ok(outcome)
}

/// Counts per category over the shards' records (for the closing line).
pub fn summarize(dir: &Path, tasks: usize) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for i in 1..=tasks {
        let f = Shard {
            index: i,
            count: tasks,
        }
        .dir(dir)
        .join(crate::suite::record::RESULTS_FILE);
        if f.exists() {
            let _ = crate::suite::record::for_each(&f, |r| {
                if seen.insert(r.key.clone()) {
                    *counts.entry(r.category.as_str().to_string()).or_default() += 1;
                }
            });
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_specs() {
        assert_eq!(array_spec(&[0, 1, 2, 3], None), "0-3");
        assert_eq!(array_spec(&[1, 4, 5], Some(2)), "1,4-5%2");
        assert_eq!(array_spec(&[7], None), "7");
    }

    #[test]
    fn squeue_lines() {
        let text = "12_[4-7%2] PENDING\n12_1 RUNNING\n12_3 COMPLETING\n13_[1,3] PENDING\n";
        assert_eq!(parse_squeue(text), (2, 6));
        assert_eq!(parse_squeue(""), (0, 0));
    }

    fn opts() -> Options {
        Options {
            file: "/s/suite.toml".into(),
            output_dir: "/o u/t".into(),
            tasks: 4,
            partition: Some("p".into()),
            time: None,
            mem: None,
            concurrency: Some(2),
            exclusive: true,
            extra: vec!["--account=x".into()],
            retries: 1,
            parallel: 2,
            pass: vec!["--no-isolation".into()],
            tare: "/usr/bin/tare".into(),
            quiet: true,
            resume: false,
        }
    }

    #[test]
    fn options_pad_limits_and_ask_for_whole_cores() {
        let n = Needs {
            keys: vec![(0..10).map(|i| i.to_string()).collect(); 4],
            cores_per_run: 1,
            run_limit: Some(Duration::from_secs(60)),
            memory_limit: Some(1 << 30),
            suite: "s".into(),
        };
        let v = sbatch_options(&opts(), &n).unwrap();
        for want in [
            "--cpus-per-task=2",
            "--threads-per-core=1",
            "--partition=p",
            "--exclusive",
            "--account=x",
            // 2 × 1.5 GiB + 256 MiB
            "--mem=3328M",
            // 10 runs / 2 slots × 60 s × 1.5 = 7.5 min → 8 + 1
            "--time=9",
        ] {
            assert!(v.iter().any(|s| s == want), "{want} in {v:?}");
        }
        let mut no_limit = n.clone();
        no_limit.run_limit = None;
        assert!(sbatch_options(&opts(), &no_limit).is_err());
        let s = script(&opts(), &v);
        assert!(s.contains("\n#SBATCH --mem=3328M\n"), "{s}");
        assert!(s.contains("\n#SBATCH --array=0-3%2\n"), "{s}");
        assert!(
            s.contains("\n#SBATCH --output=\"/o u/t/slurm/task-%A_%a.out\"\n"),
            "{s}"
        );
        assert!(
            s.contains(
                "--shard \"$shard/4\" --resume --output-dir '/o u/t' --parallel 2 --no-isolation"
            ),
            "{s}"
        );
        assert!(s.starts_with("#!/bin/sh\n"));
    }
}
