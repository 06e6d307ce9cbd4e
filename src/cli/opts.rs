//! Option groups several subcommands share, each declared once (clap `flatten`) with one long
//! name, one short name and one value set, and resolved here into the typed values the
//! commands pass on: output style, exports, parameters, cores, the measured command's output,
//! the measurement backend, the comparison test. `tests/cli_help.rs` walks every subcommand's
//! `--help` and fails when a shared option is missing or spelled differently.
//!
//! Old spellings stay accepted as hidden aliases for a release (`--html`, `--csv`,
//! `--parameter-step`, kernels' `--invocations`).

use crate::error::usage;
use crate::exec::{self, Backend, Needs, Preference, Sink};
use crate::machine::{pinned, speed, sysfs::SysRoot, topology};
use crate::plan::command::{self, Parameter};
use crate::report::Style;
use crate::results::export::{self, Export, Format};
use crate::results::logger::Logger;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// `--style` values.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum StyleArg {
    #[default]
    #[value(alias = "auto")]
    Full,
    Basic,
    None,
    // hyperfine's: colors without progress.
    Color,
    // hyperfine's: progress without colors.
    #[value(name = "nocolor")]
    NoColor,
}

/// `--style` and `-q`: what tare prints on the terminal.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct StyleArgs {
    /// Output style: full (colors and progress on a terminal), basic (plain text, no progress),
    /// none (errors only), color (colors, no progress), nocolor (progress, no colors), as
    /// hyperfine has them (auto is full). NO_COLOR is respected.
    #[arg(long, value_enum, value_name = "STYLE", default_value_t = StyleArg::Full)]
    style: StyleArg,
    /// Print errors only (same as --style none).
    #[arg(short = 'q', long)]
    quiet: bool,
}

impl StyleArgs {
    /// `--style basic`: plain text, no progress bar.
    pub(crate) fn basic() -> StyleArgs {
        StyleArgs {
            style: StyleArg::Basic,
            quiet: false,
        }
    }

    pub(crate) fn style(&self) -> Style {
        if self.quiet {
            return Style::None;
        }
        match self.style {
            StyleArg::Full => Style::Full,
            StyleArg::Basic => Style::Basic,
            StyleArg::None => Style::None,
            StyleArg::Color => Style::Color,
            StyleArg::NoColor => Style::NoColor,
        }
    }
}

/// The results exports, one option per format.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct ExportArgs {
    /// Write every run and the summary as JSON (tare's results format).
    #[arg(long, value_name = "FILE")]
    pub(crate) export_json: Option<PathBuf>,
    /// Write one CSV row per run.
    #[arg(long, value_name = "FILE")]
    export_csv: Option<PathBuf>,
    /// Write the summary table as Markdown.
    #[arg(long, value_name = "FILE")]
    export_markdown: Option<PathBuf>,
    /// Write the summary table as AsciiDoc.
    #[arg(long, value_name = "FILE")]
    export_asciidoc: Option<PathBuf>,
    /// Write the summary table as an Emacs Org-mode table.
    #[arg(long, value_name = "FILE")]
    export_orgmode: Option<PathBuf>,
    /// Write the runs in hyperfine's JSON shape (results[]: command, mean, stddev, median, user,
    /// system, min, max, times, exit_codes, parameters), for scripts written for hyperfine.
    #[arg(long, value_name = "FILE")]
    export_json_hyperfine: Option<PathBuf>,
    /// Write a self-contained HTML report with plots (as `tare report --export-html`).
    #[arg(long, value_name = "FILE")]
    pub(crate) export_html: Option<PathBuf>,
}

impl ExportArgs {
    /// The file exports asked for (HTML apart: it is a report, see [`ExportArgs::loggers`]).
    pub(crate) fn exports(&self) -> Vec<Export> {
        [
            (&self.export_json, Format::Json),
            (&self.export_csv, Format::Csv),
            (&self.export_markdown, Format::Markdown),
            (&self.export_asciidoc, Format::AsciiDoc),
            (&self.export_orgmode, Format::OrgMode),
            (&self.export_json_hyperfine, Format::Hyperfine),
        ]
        .into_iter()
        .filter_map(|(p, format)| {
            p.as_ref().map(|p| Export {
                format,
                path: p.clone(),
            })
        })
        .collect()
    }

    pub(crate) fn html(&self) -> Option<&Path> {
        self.export_html.as_deref()
    }

    /// Checks every destination before the first run (distinct, writable, not another user's
    /// link) and claims them for the session.
    pub(crate) fn check(&self) -> anyhow::Result<crate::results::fsio::Claims> {
        export::check_all(&self.exports(), self.html())
    }

    /// Every export as a logger, the HTML report last.
    pub(crate) fn loggers(&self) -> Vec<Box<dyn Logger>> {
        let mut v: Vec<Box<dyn Logger>> = self
            .exports()
            .into_iter()
            .map(|e| Box::new(e) as Box<dyn Logger>)
            .collect();
        if let Some(p) = &self.export_html {
            v.push(Box::new(crate::report::HtmlLogger { path: p.clone() }));
        }
        v
    }
}

/// Parameters: `{NAME}` in commands (or a kernel's parameters) replaced by each value.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct ParamArgs {
    /// A parameter with a list of values: {NAME} in commands is replaced (repeatable; cross product).
    #[arg(short = 'L', long, num_args = 2, value_names = ["NAME", "VALUES"], action = clap::ArgAction::Append)]
    parameter_list: Vec<String>,
    /// A numeric parameter scanned from MIN to MAX (see --parameter-step-size).
    #[arg(short = 'P', long, num_args = 3, value_names = ["NAME", "MIN", "MAX"], action = clap::ArgAction::Append)]
    parameter_scan: Vec<String>,
    /// Step of --parameter-scan.
    #[arg(
        short = 'D',
        long = "parameter-step-size",
        alias = "parameter-step",
        value_name = "STEP",
        default_value = "1"
    )]
    parameter_step: String,
}

impl ParamArgs {
    /// The parameters, checked: names, values, combinations, each name once.
    pub(crate) fn parameters(&self) -> anyhow::Result<Vec<Parameter>> {
        let mut out: Vec<Parameter> = Vec::new();
        for pair in self.parameter_list.chunks(2) {
            let (name, list) = (&pair[0], &pair[1]);
            command::check_name(name).map_err(usage)?;
            out.push(Parameter {
                name: name.clone(),
                values: command::list_values(name, list).map_err(usage)?,
            });
        }
        let step: f64 = self.parameter_step.parse().map_err(|_| {
            usage(format!(
                "invalid --parameter-step-size '{}': expected a number",
                self.parameter_step
            ))
        })?;
        for t in self.parameter_scan.chunks(3) {
            let name = &t[0];
            command::check_name(name).map_err(usage)?;
            let num = |s: &str| -> anyhow::Result<f64> {
                s.parse().map_err(|_| {
                    usage(format!(
                        "invalid --parameter-scan {name}: '{s}' is not a number"
                    ))
                })
            };
            let values =
                command::scan_values(name, num(&t[1])?, num(&t[2])?, step).map_err(usage)?;
            out.push(Parameter {
                name: name.clone(),
                values,
            });
        }
        command::check_combinations(&out).map_err(usage)?;
        for (i, p) in out.iter().enumerate() {
            if out[..i].iter().any(|q| q.name == p.name) {
                return Err(usage(format!(
                    "parameter '{}' is given twice; give each name once",
                    p.name
                )));
            }
        }
        Ok(out)
    }
}

/// `--cores` / `--cpus`: where the measured processes run.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct CoreArgs {
    /// Pin the measured processes to these logical CPUs (e.g. 2,3 or 4-7), with cpuset.
    #[arg(long, value_name = "LIST", conflicts_with = "cpus")]
    pub(crate) cores: Option<String>,
    /// Pin the measured processes to N CPUs chosen from the topology (whole cores; tare kept
    /// apart when possible; cores other tare sessions pinned avoided).
    #[arg(long, value_name = "N")]
    pub(crate) cpus: Option<usize>,
}

/// Cores chosen for the runs and, with --cpus, for tare itself, with notes on compromises.
pub(crate) struct Cores {
    pub(crate) run: Option<Vec<usize>>,
    pub(crate) tare: Vec<usize>,
    pub(crate) notes: Vec<String>,
    pub(crate) choice: Option<topology::CoreChoice>,
}

impl CoreArgs {
    /// The cores, registered for other sessions to see (see `machine::pinned`) as `who`, with
    /// a note when they overlap another live session's. Keep the registration alive for the
    /// session.
    pub(crate) fn resolve(
        &self,
        root: &SysRoot,
        who: &str,
    ) -> anyhow::Result<(Cores, Option<pinned::Registration>)> {
        let registry = pinned::lock_registry();
        let others = pinned::others();
        let busy = pinned::cpus_of(&others);
        let mut c = self.choose(root, &busy)?;
        let Some(run) = &c.run else {
            return Ok((c, None));
        };
        let shared: std::collections::BTreeSet<usize> =
            run.iter().copied().filter(|id| busy.contains(id)).collect();
        if !shared.is_empty() {
            c.notes.push(format!(
                "runs share cores with other tare sessions, which disturbs both measurements: {}",
                pinned::describe(&others, &shared)
            ));
        } else if self.cpus.is_some() && !busy.is_empty() {
            c.notes.push(format!(
                "avoiding cores pinned by other tare sessions: {}",
                pinned::describe(&others, &busy)
            ));
        }
        let reg = pinned::register(run, who);
        drop(registry);
        Ok((c, reg))
    }

    fn choose(
        &self,
        root: &SysRoot,
        busy: &std::collections::BTreeSet<usize>,
    ) -> anyhow::Result<Cores> {
        let none = Cores {
            run: None,
            tare: Vec::new(),
            notes: Vec::new(),
            choice: None,
        };
        if let Some(list) = &self.cores {
            let cores = topology::parse_cpu_list(list)
                .map_err(|e| usage(format!("--cores '{list}': {e}")))?;
            let online = topology::read_topology(root)
                .map(|t| t.cpus.iter().map(|c| c.id).collect::<Vec<_>>())
                .unwrap_or_default();
            if let Some(bad) = cores
                .iter()
                .find(|c| !online.is_empty() && !online.contains(c))
            {
                return Err(usage(format!(
                    "--cores: CPU {bad} is not online here (online: {})",
                    topology::format_cpu_list(&online)
                )));
            }
            // The user's choice stands; a CPU that is clearly slow or unsteady now is said.
            let mut notes = Vec::new();
            if root.is_host() && online.len() > 1 {
                let r = speed::check(&online, speed::CHOICE_BUDGET);
                let off: Vec<&speed::CpuSpeed> = r
                    .beyond(speed::CLEARLY)
                    .into_iter()
                    .filter(|c| cores.contains(&c.cpu))
                    .collect();
                if !off.is_empty() {
                    notes.push(format!(
                        "--cores {list}: {} at the start (kept, as asked; --cpus {} would choose steady ones)",
                        r.findings(&off, speed::CLEARLY),
                        cores.len()
                    ));
                }
            }
            return Ok(Cores {
                run: Some(cores),
                notes,
                ..none
            });
        }
        if let Some(n) = self.cpus {
            let topo = topology::read_topology(root)
                .map_err(|e| usage(format!("--cpus: cannot read the CPU topology: {e}")))?;
            // Cores other sessions have pinned are avoided while enough others are left.
            let pool = match topology::choose_cores(&pinned::without(&topo, busy), n) {
                Ok(_) if !busy.is_empty() => pinned::without(&topo, busy),
                _ => topo,
            };
            let mut choice =
                topology::choose_cores(&pool, n).map_err(|e| usage(format!("--cpus: {e}")))?;
            let mut notes = choice.notes.clone();
            // With more cores than the run needs, CPUs clearly slow or unsteady right now are
            // left out while the choice makes no compromise it did not make with them, and a
            // run CPU that is still off trades places with tare's (machine::speed).
            if root.is_host() && pool.cores.len() > n {
                let cpus: Vec<usize> = pool.cpus.iter().map(|c| c.id).collect();
                let r = speed::check(&cpus, speed::CHOICE_BUDGET);
                let first = choice.clone();
                let (steady, left) = speed::prefer_steady(&pool, &r, |t| {
                    topology::choose_cores(t, n).is_ok_and(|c| {
                        c.notes.len() <= first.notes.len()
                            && c.tare_cores.is_empty() == first.tare_cores.is_empty()
                    })
                });
                if !left.is_empty() {
                    choice = topology::choose_cores(&steady, n)
                        .map_err(|e| usage(format!("--cpus: {e}")))?;
                }
                let to_tare = speed::swap_with_tare(&mut choice, &steady, &r);
                notes = choice.notes.clone();
                notes.extend(speed::left_out_note(&r, &left, to_tare));
            }
            return Ok(Cores {
                run: Some(choice.run_cores.clone()),
                tare: choice.tare_cores.clone(),
                notes,
                choice: Some(choice),
            });
        }
        Ok(none)
    }
}

/// Where the measured command's (or worker's) own output goes.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct CommandOutputArgs {
    /// Where the measured commands' output goes: null (discarded), pipe (read through a pipe
    /// and discarded), inherit (the terminal), or a file (appended; ./NAME for a file named
    /// like one of those words).
    #[arg(long, value_name = "WHERE", default_value = "null")]
    output: String,
    /// Show the measured commands' output (same as --output inherit).
    #[arg(long, conflicts_with = "output")]
    show_output: bool,
}

impl CommandOutputArgs {
    pub(crate) fn sink(&self) -> anyhow::Result<Sink> {
        if self.show_output {
            return Ok(Sink::Inherit);
        }
        Ok(match self.output.as_str() {
            "null" => Sink::Null,
            "inherit" => Sink::Inherit,
            "pipe" => Sink::File(drained_pipe()?),
            word if !word.contains('/')
                && !word.contains('.')
                && !Path::new(word).exists()
                && ["nul", "none", "devnull", "dev-null", "discard", "pipes", "inherited", "stdout"]
                    .contains(&word.to_ascii_lowercase().as_str()) =>
            {
                return Err(usage(format!(
                    "--output '{word}' is not one of null, pipe, inherit; to write to a file of that name, give ./{word}"
                )))
            }
            path => {
                crate::results::fsio::check_append(Path::new(path))
                    .map_err(|e| usage(format!("--output: {e}")))?;
                Sink::File(PathBuf::from(path))
            }
        })
    }
}

/// A pipe whose read end a thread drains and discards, named by a path the runs' output can be
/// opened at (`/proc/self/fd/N` of its write end): `--output pipe`, as hyperfine has it.
fn drained_pipe() -> anyhow::Result<PathBuf> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two file descriptors into the array it is given, of length 2.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(anyhow::anyhow!(
            "--output pipe: cannot create a pipe: {}",
            std::io::Error::last_os_error()
        ));
    }
    use std::os::fd::FromRawFd;
    // SAFETY: fds[0] is a fresh descriptor owned by nothing else.
    let mut reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    // The write end stays open for the whole session; runs reopen it through /proc.
    Ok(PathBuf::from(format!("/proc/self/fd/{}", fds[1])))
}

/// `--backend`: how runs are measured.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct BackendArgs {
    /// Measurement backend: auto (cgroup v1, then v2, then rusage), v1, v2 or rusage. Also TARE_BACKEND.
    #[arg(long, value_name = "BACKEND")]
    pub(crate) backend: Option<String>,
}

impl BackendArgs {
    pub(crate) fn preference(&self) -> anyhow::Result<Preference> {
        match self
            .backend
            .clone()
            .or_else(|| std::env::var("TARE_BACKEND").ok())
        {
            Some(s) => s.parse().map_err(usage),
            None => Ok(Preference::Auto),
        }
    }

    /// The backend that measures this session, or one line naming the one asked for and why
    /// it cannot.
    pub(crate) fn detect(&self, needs: &Needs) -> anyhow::Result<Box<dyn Backend>> {
        let (backend, _reasons) =
            exec::detect(self.preference()?, needs, Path::new("/")).map_err(|e| {
                usage(format!(
                    "measurement backend '{}' is not usable: {e}",
                    self.backend.as_deref().unwrap_or("auto")
                ))
            })?;
        Ok(backend)
    }
}

/// `--test` values.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum TestArg {
    #[default]
    MannWhitney,
    Welch,
}

impl TestArg {
    pub(crate) fn test(self) -> crate::conclude::analysis::Test {
        match self {
            TestArg::MannWhitney => crate::conclude::analysis::Test::MannWhitney,
            TestArg::Welch => crate::conclude::analysis::Test::Welch,
        }
    }
}

/// How a difference is judged: the test, and its level and noise band.
#[derive(Args, Debug, Clone)]
pub(crate) struct VerdictArgs {
    /// Test behind the comparison p-values (over processes: each run or invocation is one unit).
    #[arg(long, value_enum, value_name = "TEST", default_value_t = TestArg::MannWhitney)]
    pub(crate) test: TestArg,
    #[command(flatten)]
    pub(crate) level: LevelArgs,
}

impl VerdictArgs {
    pub(crate) fn noise(&self) -> anyhow::Result<f64> {
        self.level.noise()
    }
    pub(crate) fn alpha(&self) -> anyhow::Result<f64> {
        self.level.alpha()
    }
}

/// The significance level and the noise band of comparisons (`tare kernels` has its own test:
/// Welch's t over processes, the test that agrees with its interval of a ratio of means).
#[derive(Args, Debug, Clone)]
pub(crate) struct LevelArgs {
    /// Significance level of the comparisons: each interval is at 1 − ALPHA/m for m comparisons,
    /// and a verdict is that interval's (it excludes 1).
    #[arg(long, value_name = "ALPHA", default_value_t = crate::store::load::COMPARE_ALPHA)]
    pub(crate) alpha: f64,
    /// A difference whose whole CI lies within ± this is reported as "equal within noise".
    #[arg(long, value_name = "PCT", default_value_t = format!("{}%", 100.0 * crate::store::load::COMPARE_NOISE))]
    noise_threshold: String,
}

impl LevelArgs {
    /// The noise band as a fraction, checked.
    pub(crate) fn noise(&self) -> anyhow::Result<f64> {
        crate::units::parse_fraction(&self.noise_threshold)
            .map_err(|e| usage(format!("--noise-threshold {}: {e}", self.noise_threshold)))
    }

    /// The significance level, checked.
    pub(crate) fn alpha(&self) -> anyhow::Result<f64> {
        if self.alpha > 0.0 && self.alpha < 1.0 {
            Ok(self.alpha)
        } else {
            Err(usage(format!(
                "--alpha {}: expected a level between 0 and 1, e.g. 0.05",
                self.alpha
            )))
        }
    }
}

/// `--reference`: the benchmark others are compared with, by name or 1-based position.
pub(crate) fn reference_index(spec: Option<&str>, names: &[String]) -> anyhow::Result<usize> {
    let Some(spec) = spec else {
        return Ok(0);
    };
    if let Some(i) = names.iter().position(|n| n == spec) {
        return Ok(i);
    }
    match spec.parse::<usize>() {
        Ok(i) if i >= 1 && i <= names.len() => Ok(i - 1),
        _ => Err(usage(format!(
            "--reference '{spec}': no such benchmark; give a name ({}) or a position 1-{}",
            names.join(", "),
            names.len()
        ))),
    }
}

/// `--idle` values.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum IdleArg {
    #[default]
    Default,
    Shallow,
}

/// `--idle`: the CPUs' idle states during the session.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct IdleArgs {
    /// CPU idle states while measuring: default (as the machine has them) or shallow (no deep
    /// state on any CPU: a 0 µs request held on /dev/cpu_dma_latency until tare exits, kill -9
    /// included; needs root). Recorded in the results.
    #[arg(long, value_enum, value_name = "STATES", default_value_t = IdleArg::Default)]
    idle: IdleArg,
}

impl IdleArgs {
    /// The same choice as arguments for a tare elsewhere (`--host`, `--slurm`).
    pub(crate) fn to_flags(&self) -> Vec<String> {
        match self.idle {
            IdleArg::Default => Vec::new(),
            IdleArg::Shallow => vec!["--idle=shallow".into()],
        }
    }

    /// The request, held for as long as the value lives, and its record for the results.
    pub(crate) fn hold(
        &self,
        root: &SysRoot,
    ) -> anyhow::Result<Option<(crate::machine::idle::LatencyHold, serde_json::Value)>> {
        if self.idle == IdleArg::Default {
            return Ok(None);
        }
        let hold = crate::machine::idle::LatencyHold::request(root, 0)
            .map_err(|e| usage(format!("{e:#}")))?;
        let record = serde_json::json!({
            "states": "shallow",
            "cpu_dma_latency_us": hold.requested_us,
            "previous_us": hold.previous_us,
            "via": "/dev/cpu_dma_latency held open for the session",
        });
        Ok(Some((hold, record)))
    }
}

/// `--quiesce`: background work stopped for the session.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct QuiesceArgs {
    /// Stop background work while measuring and resume it on every exit path: a regular
    /// expression matched against process names and command lines (SIGSTOP), or a cgroup
    /// directory (frozen); repeatable. Never tare, its ancestors or PID 1. After a kill -9 the
    /// next tare resumes them. Recorded in the results.
    #[arg(long, value_name = "PATTERN|CGROUP")]
    quiesce: Vec<String>,
}

impl QuiesceArgs {
    /// The same targets as arguments for a tare elsewhere (`--host`, `--slurm`).
    pub(crate) fn to_flags(&self) -> Vec<String> {
        self.quiesce
            .iter()
            .map(|q| format!("--quiesce={q}"))
            .collect()
    }

    /// First resumes what a killed session left stopped (a note each), then stops what this
    /// session asks for; the guard resumes it when dropped.
    pub(crate) fn apply(
        &self,
        quiet: bool,
    ) -> anyhow::Result<Option<(crate::machine::quiesce::Quiesced, serde_json::Value)>> {
        for n in crate::machine::quiesce::resume_leftovers() {
            if !quiet {
                eprintln!("tare: note: {n}");
            }
        }
        if self.quiesce.is_empty() {
            return Ok(None);
        }
        let targets = self
            .quiesce
            .iter()
            .map(|s| {
                crate::machine::quiesce::Target::parse(s)
                    .map_err(|e| usage(format!("--quiesce: {e}")))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let q = crate::machine::quiesce::quiesce(&targets).map_err(|e| usage(format!("{e:#}")))?;
        let record = serde_json::json!({
            "asked": self.quiesce,
            "stopped": q.record.stopped.iter().map(|s| serde_json::json!({"pid": s.pid, "comm": s.comm})).collect::<Vec<_>>(),
            "frozen": q.record.frozen.iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>(),
        });
        Ok(Some((q, record)))
    }
}

/// `--cache`, `--cache-file`, `--background`, `--background-lead`: the controlled factors
/// (`plan::meters::Factors`) of `tare run` (each run) and `tare kernels` (each invocation; the
/// cache state before each sample).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct FactorArgs {
    /// Page-cache state before each run (tare kernels: before each sample): cold (dropped),
    /// warm (the files read first), or cold,warm to measure every command in both states,
    /// interleaved and compared.
    #[arg(long, value_name = "cold|warm|cold,warm")]
    pub cache: Option<String>,
    /// A file whose cache state --cache controls and records (repeatable; the program, its
    /// libraries and --input are always included).
    #[arg(long, value_name = "FILE", requires = "cache")]
    pub cache_file: Vec<std::path::PathBuf>,
    /// A co-runner (through the shell, in its own process group) during every other run
    /// (tare kernels: invocation): each command is measured [background=off] and
    /// [background=on], interleaved, and the comparison is the slowdown with its CI.
    #[arg(long, value_name = "CMD")]
    pub background: Option<String>,
    /// How long the co-runner runs before each run starts.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "100ms",
        requires = "background"
    )]
    pub background_lead: String,
}

impl FactorArgs {
    /// The factors, checked: known states, existing files, a duration.
    pub(crate) fn factors(&self) -> anyhow::Result<crate::plan::meters::Factors> {
        use crate::plan::meters::CacheState;
        let mut f = crate::plan::meters::Factors {
            cache_files: self.cache_file.clone(),
            background: self.background.clone(),
            ..Default::default()
        };
        if self.background.is_some() {
            f.background_lead = crate::units::parse_duration(&self.background_lead)
                .map_err(|e| usage(format!("--background-lead: {e}")))?;
        }
        if let Some(spec) = &self.cache {
            for w in spec.split(',').map(str::trim) {
                let s = match w {
                    "cold" => CacheState::Cold,
                    "warm" => CacheState::Warm,
                    _ => {
                        return Err(usage(format!(
                            "--cache: unknown state '{w}'; use cold, warm or cold,warm"
                        )))
                    }
                };
                if !f.cache.contains(&s) {
                    f.cache.push(s);
                }
            }
        }
        for file in &self.cache_file {
            let m = std::fs::metadata(file).map_err(|e| {
                usage(format!(
                    "--cache-file: cannot read {}: {e}; name an existing file",
                    file.display()
                ))
            })?;
            // A FIFO would hold the warm read (and the residency count) until a writer came,
            // a device could be read forever: only files have a cache state to control.
            if !m.is_file() {
                return Err(usage(format!(
                    "--cache-file: {} is not a regular file (a FIFO, device or directory has no page-cache state to set); name a file",
                    file.display()
                )));
            }
        }
        Ok(f)
    }
}

/// `--energy` and `--energy-idle`: the energy meters (`method::energy`: RAPL, NVIDIA GPUs)
/// around each run of `tare run` and each invocation of `tare kernels`.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct EnergyArgs {
    /// Energy of the RAPL domains (package, core, dram, psys) and NVIDIA GPUs around each run
    /// (each invocation in tare kernels), and the dynamic energy above idle power (measured
    /// before the first); see docs/meters.md.
    #[arg(long)]
    pub energy: bool,
    /// How long idle power is measured before the first run (with --energy).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1s",
        requires = "energy"
    )]
    pub energy_idle: String,
}

impl EnergyArgs {
    /// The idle window to measure before the first interval; `None` without `--energy`.
    pub(crate) fn idle(&self) -> anyhow::Result<Option<std::time::Duration>> {
        if !self.energy {
            return Ok(None);
        }
        crate::units::parse_duration(&self.energy_idle)
            .map(Some)
            .map_err(|e| usage(format!("--energy-idle: {e}")))
    }
}
