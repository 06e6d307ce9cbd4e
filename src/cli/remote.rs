//! The command line of `crate::remote`: the Slurm and remote-host flags of `tare suite run`
//! and `tare run`, and what `suite run --shard | --slurm | --host` do before and instead of a
//! local suite run. Kept apart from `suite.rs` so that file only calls in here.

use crate::error::{exit, usage};
use crate::exec::{self, Needs, Preference};
use crate::remote::machine::SlurmJob;
use crate::remote::shard::Shard;
use crate::remote::slurm;
use crate::suite::plan::SuitePlan;
use clap::Args;
use std::path::{Path, PathBuf};

/// `--host`: measure on another machine over ssh (`tare run` and `tare suite run`).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct HostArgs {
    /// Measure on another machine over ssh ([user@]host): tare there measures with its
    /// cgroups, runs stream back as they finish (see docs/remote.md).
    #[arg(long, value_name = "[USER@]HOST", help_heading = "Remote host")]
    pub(crate) host: Option<String>,
    /// The tare to run on the host [default: tare in its PATH].
    #[arg(
        long,
        value_name = "PATH",
        requires = "host",
        help_heading = "Remote host"
    )]
    remote_tare: Option<String>,
    /// Directory on the host to run in [default: the login directory].
    #[arg(
        long,
        value_name = "DIR",
        requires = "host",
        help_heading = "Remote host"
    )]
    remote_dir: Option<String>,
    /// An argument for ssh, e.g. --ssh-option=-p2222 or --ssh-option=-F/path/config (repeatable).
    #[arg(
        long,
        value_name = "OPT",
        requires = "host",
        allow_hyphen_values = true,
        help_heading = "Remote host"
    )]
    ssh_option: Vec<String>,
}

impl HostArgs {
    /// The options of `--host` for the subcommand at `path` (`["run"]`, `["suite", "run"]`).
    pub(crate) fn options(&self, path: &[&str]) -> crate::remote::host::HostOptions {
        crate::remote::host::HostOptions {
            transport: crate::remote::transport::Ssh {
                destination: self.host.clone().unwrap_or_default(),
                options: self.ssh_option.clone(),
            },
            tare: self.remote_tare.clone().unwrap_or_else(|| "tare".into()),
            dir: self.remote_dir.clone(),
            local_flags: local_flags(path),
        }
    }
}

/// The option groups that stay on this side with `--host` (clap names a flattened group by its
/// struct): where to write, how to print, how to reach the host.
const LOCAL_GROUPS: &[&str] = &["HostArgs", "ExportArgs", "StyleArgs"];
/// Single options that stay on this side, by argument id.
const LOCAL_IDS: &[&str] = &["overwrite_journal", "output_dir"];

/// Every spelling of the arguments of `tare PATH…` that stay on this side, read from the
/// definitions that parse them (long names, aliases, short names), by argument id.
pub(crate) fn local_flags(path: &[&str]) -> Vec<crate::remote::host::LocalFlag> {
    use clap::CommandFactory;
    let mut root = super::Cli::command();
    root.build();
    let mut cmd = &root;
    for p in path {
        match cmd.find_subcommand(p) {
            Some(c) => cmd = c,
            None => return Vec::new(),
        }
    }
    let mut ids: Vec<String> = LOCAL_IDS.iter().map(|s| s.to_string()).collect();
    for g in cmd
        .get_groups()
        .filter(|g| LOCAL_GROUPS.contains(&g.get_id().as_str()))
    {
        ids.extend(g.get_args().map(|a| a.as_str().to_string()));
    }
    cmd.get_arguments()
        .filter(|a| ids.iter().any(|i| i == a.get_id().as_str()))
        .map(|a| {
            let mut spellings: Vec<String> = Vec::new();
            if let Some(l) = a.get_long() {
                spellings.push(format!("--{l}"));
            }
            for l in a.get_all_aliases().unwrap_or_default() {
                spellings.push(format!("--{l}"));
            }
            if let Some(c) = a.get_short() {
                spellings.push(format!("-{c}"));
            }
            for c in a.get_all_short_aliases().unwrap_or_default() {
                spellings.push(format!("-{c}"));
            }
            crate::remote::host::LocalFlag {
                spellings,
                takes_value: a.get_action().takes_values(),
            }
        })
        .collect()
}

/// `tare suite run --slurm`: the suite as one Slurm array job (see `crate::remote::slurm`).
#[derive(Args, Debug, Default)]
pub(crate) struct SlurmArgs {
    /// Submit the suite as one Slurm array job (a shard per task, each with --resume), follow
    /// it, resubmit incomplete tasks; Ctrl-C cancels it.
    #[arg(long, help_heading = "Slurm")]
    pub(crate) slurm: bool,
    /// Array tasks (= shards) [default: one per input, at most 100].
    #[arg(long, value_name = "N", requires = "slurm", help_heading = "Slurm")]
    tasks: Option<usize>,
    /// Slurm partition (sbatch --partition).
    #[arg(long, value_name = "NAME", requires = "slurm", help_heading = "Slurm")]
    partition: Option<String>,
    /// Time per task as sbatch takes it [default: 1.5 × the shard's runs × the run limit].
    #[arg(long, value_name = "TIME", requires = "slurm", help_heading = "Slurm")]
    time: Option<String>,
    /// Memory per task as sbatch takes it [default: 1.5 × memory limit × --parallel + 256M].
    #[arg(long, value_name = "SIZE", requires = "slurm", help_heading = "Slurm")]
    mem: Option<String>,
    /// Tasks running at once (sbatch --array=…%N).
    #[arg(long, value_name = "N", requires = "slurm", help_heading = "Slurm")]
    concurrency: Option<usize>,
    /// Whole nodes for each task (sbatch --exclusive).
    #[arg(long, requires = "slurm", help_heading = "Slurm")]
    exclusive: bool,
    /// Another sbatch option, e.g. --sbatch-option=--account=proj (repeatable).
    #[arg(
        long,
        value_name = "OPT",
        requires = "slurm",
        allow_hyphen_values = true,
        help_heading = "Slurm"
    )]
    sbatch_option: Vec<String>,
    /// Times a task whose shard is incomplete is submitted again.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 2,
        requires = "slurm",
        help_heading = "Slurm"
    )]
    retries: usize,
}

/// What `--slurm` and `--host` need of `tare suite run`'s arguments.
pub(crate) struct SuiteFlags<'a> {
    pub file: &'a Path,
    pub output_dir: Option<&'a Path>,
    pub parallel: usize,
    pub resume: bool,
    pub quiet: bool,
    pub shard: Option<&'a str>,
    /// Isolation and backend switches, as arguments for another tare.
    pub pass: Vec<String>,
}

/// `--shard I/N`, checked (one line when bad).
pub(crate) fn parse_shard(s: Option<&str>) -> anyhow::Result<Option<Shard>> {
    s.map(str::parse).transpose().map_err(usage)
}

/// Keeps the shard's jobs (more shards than inputs is an error: some would have no runs) and returns what `suite.json` records
/// beyond the runner's own fields: the shard and this machine.
pub(crate) fn shard_and_machine(
    p: &mut SuitePlan,
    shard: Option<Shard>,
) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let mut meta = serde_json::Map::new();
    if let Some(shard) = shard {
        let inputs: std::collections::BTreeSet<_> = p
            .jobs
            .iter()
            .map(|j| (j.input.set.clone(), j.input.id.clone()))
            .collect();
        if shard.count > inputs.len() {
            return Err(usage(format!(
                "--shard {shard}: the suite has only {} inputs, and an input's runs stay in one shard; give N of {} or less",
                inputs.len(),
                inputs.len()
            )));
        }
        shard.select(&mut p.jobs);
        meta.insert(
            "shard".into(),
            serde_json::json!({"index": shard.index, "count": shard.count}),
        );
    }
    meta.insert(
        "machine".into(),
        serde_json::to_value(crate::remote::machine::this_machine())?,
    );
    Ok(meta)
}

/// The CPUs Slurm gave this process, when it runs in a Slurm job.
pub(crate) fn slurm_cpus() -> Option<Vec<usize>> {
    SlurmJob::current().and_then(|j| j.cpus)
}

/// Inside a Slurm job: records the job in `meta` and says how runs are measured there —
/// quietly when in the job's own cgroup subtree, else as the warnings returned (the runner
/// prints them and records them in the method).
pub(crate) fn slurm_job_notes(
    pref: Preference,
    pids: bool,
    quiet: bool,
    meta: &mut serde_json::Map<String, serde_json::Value>,
) -> Vec<String> {
    let Some(job) = SlurmJob::current() else {
        return Vec::new();
    };
    let needs = Needs { cpuset: true, pids };
    let kind = exec::detect(pref, &needs, Path::new("/"))
        .map(|(b, _)| b.kind().as_str().to_string())
        .unwrap_or_else(|_| "rusage".into());
    let (line, loud) = job.measurement_note(&kind);
    meta.insert(
        "slurm".into(),
        serde_json::json!({
            "job": job.id, "array_job": job.array_job, "array_task": job.array_task,
            "array_index": job.array_index(), "node": job.node, "partition": job.partition,
            "cpus": job.cpus, "cgroup": job.cgroup, "measurement": line,
        }),
    );
    if loud {
        return vec![line];
    }
    if !quiet {
        eprintln!("tare: {line}");
    }
    Vec::new()
}

fn absolute(d: &Path) -> anyhow::Result<PathBuf> {
    Ok(if d.is_absolute() {
        d.to_path_buf()
    } else {
        std::env::current_dir()?.join(d)
    })
}

/// `tare suite run --host`: the suite file is a path over there; its records stream into
/// `--output-dir` here.
pub(crate) fn suite_on_host(h: &HostArgs, slurm: bool, s: &SuiteFlags) -> anyhow::Result<i32> {
    if slurm {
        return Err(usage(
            "--slurm and --host together: run tare suite run --slurm on the cluster's submit host (for example over ssh)",
        ));
    }
    let shard = parse_shard(s.shard)?;
    let stem = s
        .file
        .file_stem()
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_else(|| "suite".into());
    let local = s
        .output_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new("results").join(&stem));
    let remote_out = format!(
        "tare-remote/{}",
        local
            .file_name()
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or(stem)
    );
    let args = crate::remote::host::own_args(3)?;
    crate::remote::host::suite_command(
        &h.options(&["suite", "run"]),
        &[vec!["suite".to_string(), "run".to_string()], args].concat(),
        &local,
        &remote_out,
        shard,
        s.resume,
    )
}

/// `tare suite run --slurm`: submit, follow, resubmit, collect (see `crate::remote::slurm`).
pub(crate) fn run_slurm(a: &SlurmArgs, s: &SuiteFlags, p: &SuitePlan) -> anyhow::Result<i32> {
    if s.shard.is_some() {
        return Err(usage(
            "--slurm makes its own shards (one per array task); leave out --shard and give --tasks N",
        ));
    }
    let inputs: std::collections::BTreeSet<_> =
        p.jobs.iter().map(|j| (&j.input.set, &j.input.id)).collect();
    let tasks = a.tasks.unwrap_or(inputs.len().min(100)).max(1);
    if tasks > inputs.len() {
        return Err(usage(format!(
            "--tasks {tasks}: the suite has only {} inputs, and an input's runs stay in one task; give --tasks {} or less",
            inputs.len(),
            inputs.len()
        )));
    }
    let output_dir = absolute(
        &s.output_dir
            .map(Path::to_path_buf)
            .unwrap_or_else(|| Path::new("results").join(&p.name)),
    )?;
    let opts = slurm::Options {
        file: s.file.canonicalize()?,
        output_dir: output_dir.clone(),
        tasks,
        partition: a.partition.clone(),
        time: a.time.clone(),
        mem: a.mem.clone(),
        concurrency: a.concurrency,
        exclusive: a.exclusive,
        extra: a.sbatch_option.clone(),
        retries: a.retries,
        parallel: s.parallel.max(1),
        pass: s.pass.clone(),
        tare: std::env::current_exe()?,
        quiet: s.quiet,
        resume: s.resume,
    };
    let needs = slurm::Needs::of(p, tasks);
    let cancel = crate::output::install_stop_signals()?;
    let started = std::time::Instant::now();
    let o = slurm::run(&opts, &needs, &cancel)?;
    if !s.quiet {
        let counts: Vec<String> = slurm::summarize(&output_dir, tasks)
            .into_iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        eprintln!(
            "tare: suite '{}': {} runs in {} shards on Slurm (job{} {}{}) in {}: {}",
            p.name,
            o.total,
            tasks,
            if o.jobs.len() == 1 { "" } else { "s" },
            o.jobs.join(", "),
            if o.resubmitted.is_empty() {
                String::new()
            } else {
                format!("; tasks resubmitted: {:?}", o.resubmitted)
            },
            crate::units::format_time(started.elapsed().as_secs_f64(), Some(0.01)),
            if counts.is_empty() {
                "nothing to do".to_string()
            } else {
                counts.join(", ")
            }
        );
        eprintln!(
            "tare: results in {}; make a table with: tare table {} --html table.html",
            output_dir.display(),
            output_dir.display()
        );
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::local_flags;

    fn spellings(path: &[&str]) -> Vec<String> {
        local_flags(path)
            .into_iter()
            .flat_map(|f| f.spellings)
            .collect()
    }

    #[test]
    fn the_flags_that_stay_here_come_from_the_definitions() {
        let run = spellings(&["run"]);
        for f in [
            "--host",
            "--remote-tare",
            "--ssh-option",
            "--export-json",
            "--export-json-hyperfine",
            "--export-html",
            "--style",
            "-q",
            "--overwrite-journal",
        ] {
            assert!(run.iter().any(|s| s == f), "{f} not among {run:?}");
        }
        for f in ["--runs", "--warmup", "--energy", "--cpus"] {
            assert!(!run.iter().any(|s| s == f), "{f} among {run:?}");
        }
        let flags = local_flags(&["run"]);
        let style = flags
            .iter()
            .find(|f| f.spellings.iter().any(|s| s == "--style"))
            .unwrap();
        assert!(style.takes_value);
        let quiet = flags
            .iter()
            .find(|f| f.spellings.iter().any(|s| s == "-q"))
            .unwrap();
        assert!(!quiet.takes_value);
        let suite = spellings(&["suite", "run"]);
        assert!(suite.iter().any(|s| s == "--host"), "{suite:?}");
    }
}
