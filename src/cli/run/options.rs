//! `tare run`'s arguments resolved once, before the first run, into a [`Prepared`] session:
//! the plan the method layer follows and the session record it fills. Every check that can
//! fail on bad input fails here, with one line naming the option.

use super::args::*;
use crate::error::usage;
use crate::exec::{self, Input, Limits, Needs, Priority};
use crate::machine::cooldown::CoolDown;
use crate::machine::extra_keys;
use crate::machine::inventory::{self, InventoryOptions};
use crate::machine::probe::InterferenceThresholds;
use crate::machine::{self, sysfs::SysRoot, topology};
use crate::method::{self};
use crate::plan::command::{self, Parameter};
use crate::plan::stop::{self, Cmp, Metric, StopRule};
use crate::plan::{Analysis, BenchmarkPlan, Countermeasures, Order, Plan};
use crate::report::progress::Targets;
use crate::report::Style;
use crate::results::{LimitsRecord, Session, SCHEMA_VERSION};
use crate::setup::{self, Factor, Mode, SetupPlan};
use crate::units;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Finds `program` like execvp would; errors are one line with what to do.
pub(crate) fn check_program(program: &str, cwd: Option<&Path>) -> anyhow::Result<()> {
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    let Err(e) = exec::spawn::resolve(std::ffi::OsStr::new(program), &env, cwd) else {
        return Ok(());
    };
    let denied = e.kind() == std::io::ErrorKind::PermissionDenied;
    Err(usage(match (program.contains('/'), denied) {
        (true, false) => format!("cannot run '{program}': no such file; check the path"),
        (true, true) => {
            format!("cannot run '{program}': not an executable file; check its permissions (chmod +x)")
        }
        (false, false) => format!(
            "cannot run '{program}': program not found in PATH; check the name, or use --shell for shell syntax"
        ),
        (false, true) => {
            format!("cannot run '{program}': found in PATH but not executable; check its permissions (chmod +x)")
        }
    }))
}

/// `events` counted by Valgrind, checked before the first run (every command's one check):
/// an event Valgrind cannot count is refused with `unsupported(event)`, a missing valgrind
/// with `missing`, and the events are probed on `/bin/true`.
pub(crate) fn valgrind_counters(
    events: Vec<String>,
    unsupported: impl Fn(&str) -> String,
    missing: &str,
) -> anyhow::Result<crate::plan::Counters> {
    use method::counters::valgrind;
    if let Some(e) = events
        .iter()
        .find(|e| !valgrind::EVENTS.contains(&e.as_str()))
    {
        return Err(usage(unsupported(e)));
    }
    let program = "valgrind".to_string();
    check_program(&program, None).map_err(|_| usage(missing))?;
    valgrind::probe(&program, &events).map_err(|e| usage(format!("--counters: {e}")))?;
    Ok(crate::plan::Counters {
        backend: crate::plan::CounterBackend::Valgrind,
        program,
        events,
        keep: None,
    })
}

/// What counts `--counters EVENTS` with `--counters-backend`: perf where asked, or (auto) where
/// perf can count every event; Valgrind where asked, or (auto) where perf cannot and Valgrind
/// counts every event. Checked before the first run; errors say what to do.
fn counters(list: &str, backend: CountersBackendArg) -> anyhow::Result<crate::plan::Counters> {
    use crate::plan::{CounterBackend, Counters};
    use method::counters::valgrind;
    let events =
        method::counters::parse_events(list).map_err(|e| usage(format!("--counters: {e}")))?;
    let only_valgrind: Vec<&str> = events
        .iter()
        .map(String::as_str)
        .filter(|e| valgrind::ONLY_VALGRIND.contains(e))
        .collect();
    let perf = || -> anyhow::Result<Counters> {
        let program = "perf".to_string();
        check_program(&program, None).map_err(|_| {
            usage("--counters needs perf in PATH: install it (linux-tools / linux-perf), or count with --counters-backend valgrind")
        })?;
        method::counters::probe(&program, &events)
            .map_err(|e| usage(format!("--counters: {e}")))?;
        Ok(Counters {
            backend: CounterBackend::Perf,
            program,
            events: events.clone(),
            keep: None,
        })
    };
    let valgrind = || {
        valgrind_counters(
            events.clone(),
            |e| {
                format!(
                    "--counters: valgrind does not count '{e}'; it counts {}",
                    valgrind::EVENTS.join(", ")
                )
            },
            "--counters with valgrind needs valgrind in PATH: install it (apt-get install valgrind)",
        )
    };
    match backend {
        CountersBackendArg::Valgrind => valgrind(),
        CountersBackendArg::Perf => {
            if let Some(e) = only_valgrind.first() {
                return Err(usage(format!(
                    "--counters: '{e}' is simulated by valgrind, perf has no such event; use --counters-backend valgrind (or auto)"
                )));
            }
            perf()
        }
        CountersBackendArg::Auto if !only_valgrind.is_empty() => valgrind(),
        CountersBackendArg::Auto => match perf() {
            Ok(c) => Ok(c),
            Err(perf_error) if valgrind::counts_all(&events) => {
                let c = valgrind().map_err(|e| {
                    usage(format!(
                        "{perf_error}; and valgrind cannot count them either: {e}"
                    ))
                })?;
                eprintln!(
                    "tare: note: perf cannot count {} here, so valgrind counts them (exact counts; runs are 20–100× slower and their times are not the command's)",
                    events.join(",")
                );
                Ok(c)
            }
            Err(e) => Err(e),
        },
    }
}

/// The benchmarks: every command × every parameter combination.
fn benchmarks(
    a: &RunArgs,
    params: &[Parameter],
    shell: Option<&str>,
) -> anyhow::Result<Vec<BenchmarkPlan>> {
    let templates: Vec<String> = if !a.argv.is_empty() {
        if !a.commands.is_empty() {
            return Err(usage(
                "give commands as strings or one command after `--`, not both",
            ));
        }
        vec![shell_words::join(&a.argv)]
    } else {
        a.commands.clone()
    };
    if templates.is_empty() {
        if let Some(s) = a.shell_short.as_deref().filter(|s| s.contains(' ')) {
            return Err(usage(format!(
                "no command to benchmark: -S takes the shell, and '{s}' was read as one; write -S sh '{s}'"
            )));
        }
        return Err(usage(
            "no command to benchmark: give one, e.g. tare run 'sleep 0.1'",
        ));
    }
    if a.shell.as_deref() == Some("/bin/sh")
        && templates.len() > 1
        && looks_like_shell(&templates[0])
    {
        return Err(usage(format!(
            "--shell takes its shell after '=': write --shell={0} (or -S {0}); '{0}' was read as a command to benchmark",
            templates[0]
        )));
    }
    if a.names.len() > templates.len() {
        return Err(usage(format!(
            "{} names for {} commands: give at most one --name per command",
            a.names.len(),
            templates.len()
        )));
    }
    for p in params {
        let token = format!("{{{}}}", p.name);
        if !templates.iter().any(|t| t.contains(&token)) {
            return Err(usage(format!(
                "parameter '{}' is not used: write {token} in a command",
                p.name
            )));
        }
    }
    let combos = command::combinations(params);
    let mut out = Vec::new();
    for (ci, template) in templates.iter().enumerate() {
        for combo in &combos {
            let text = command::substitute(template, combo);
            let argv = if let Some(shell) = shell {
                vec![shell.to_string(), "-c".to_string(), text.clone()]
            } else if !a.argv.is_empty() {
                a.argv
                    .iter()
                    .map(|w| command::substitute(w, combo))
                    .collect()
            } else {
                command::split_words(&text).map_err(usage)?
            };
            let name = a
                .names
                .get(ci)
                .map(|n| command::substitute(n, combo))
                .unwrap_or_else(|| text.clone());
            out.push(BenchmarkPlan {
                name,
                command: text,
                argv,
                parameters: combo.clone(),
                setup: a.setup.clone(),
                cleanup: a.cleanup.clone(),
                prepare: a.prepare.clone(),
                conclude: a.conclude.clone(),
                fixed_setup: None,
            });
        }
    }
    Ok(out)
}

/// Whether `word` names a shell (`bash`, `/bin/zsh`, …), to catch `--shell bash 'cmd'`.
fn looks_like_shell(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    [
        "sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "csh", "tcsh", "ash", "none",
    ]
    .contains(&base)
}

/// The shell that runs the commands, if any: `-S SHELL`, `--shell[=SHELL]`; `none` and `-N`
/// mean none.
fn chosen_shell(a: &RunArgs) -> Option<String> {
    if a.no_shell {
        return None;
    }
    a.shell
        .clone()
        .or_else(|| a.shell_short.clone())
        .filter(|s| s != "none")
}

/// The first piece of shell syntax in `text` outside quotes (`|`, `>`, `<`, `&&`, `;`, `*`,
/// `?`, `$`, a backquote), which no shell will interpret when tare splits the words itself.
pub(crate) fn shell_syntax(text: &str) -> Option<&'static str> {
    let mut chars = text.chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\\' if !single => {
                chars.next();
            }
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ if single || double => {}
            '|' => return Some("|"),
            '>' => return Some(">"),
            '<' => return Some("<"),
            ';' => return Some(";"),
            '*' => return Some("*"),
            '?' => return Some("?"),
            '$' => return Some("$"),
            '`' => return Some("`"),
            '&' if chars.peek() == Some(&'&') => return Some("&&"),
            _ => {}
        }
    }
    None
}

/// Reference, test, α and noise threshold for the comparisons.
fn analysis_settings(a: &RunArgs, plans: &[BenchmarkPlan]) -> anyhow::Result<Analysis> {
    let names: Vec<String> = plans.iter().map(|b| b.name.clone()).collect();
    let reference = crate::cli::opts::reference_index(a.reference.as_deref(), &names)?;
    let alpha = a.verdict.alpha()?;
    let noise = a.verdict.noise()?;
    Ok(Analysis {
        reference,
        welch: a.verdict.test == crate::cli::opts::TestArg::Welch,
        alpha,
        noise,
        discard_outliers: a.discard_outliers,
        compare: true,
    })
}

/// Cool-down, heat-up, pauses, priority and interference settings.
fn countermeasures(a: &RunArgs, limits: &Limits) -> anyhow::Result<Countermeasures> {
    let cool_down = match &a.cool_down {
        None => None,
        Some(text) => {
            let (temp, wait) = match text.split_once(':') {
                Some((t, w)) => (t, Some(w)),
                None => (text.as_str(), None),
            };
            let target: f64 = temp
                .trim()
                .trim_end_matches("°C")
                .trim_end_matches('C')
                .parse()
                .ok()
                .filter(|t: &f64| t.is_finite() && *t > 0.0 && *t < 200.0)
                .ok_or_else(|| {
                    usage(format!("--cool-down '{text}': give a temperature between 0 and 200 °C, optionally with a longest wait, e.g. 60 or 55:2m"))
                })?;
            let mut cd = CoolDown::new(target);
            if let Some(w) = wait {
                cd.max_wait =
                    units::parse_duration(w).map_err(|e| usage(format!("--cool-down: {e}")))?;
            }
            Some(cd)
        }
    };
    let dur = |opt: &Option<String>, flag: &str| -> anyhow::Result<Option<std::time::Duration>> {
        opt.as_deref()
            .map(|s| units::parse_duration(s).map_err(|e| usage(format!("{flag}: {e}"))))
            .transpose()
    };
    let priority = match a.priority {
        PriorityArg::Normal => Priority::Normal,
        PriorityArg::High => Priority::High,
        PriorityArg::Realtime => Priority::Realtime {
            cap_seconds: limits
                .cpu
                .map_or(60, |d| d.as_secs_f64().ceil() as u64)
                .max(1),
        },
    };
    if priority != Priority::Normal && !crate::exec::isolate::sys::is_root() {
        return Err(usage("--priority high/realtime needs root (raising priority is privileged); run as root or drop it"));
    }
    let share = units::parse_fraction(&a.interference_threshold)
        .map_err(|e| usage(format!("--interference-threshold: {e}")))?;
    let thresholds = InterferenceThresholds {
        other_cpu_share: share,
        steal_share: share,
        ..Default::default()
    };
    Ok(Countermeasures {
        cool_down,
        heat_up: dur(&a.heat_up, "--heat-up")?,
        sleep_between: a
            .sleep_between
            .as_deref()
            .map(|s| {
                units::parse_duration_or_zero(s).map_err(|e| usage(format!("--sleep-between: {e}")))
            })
            .transpose()?
            .filter(|d| !d.is_zero()),
        priority,
        thresholds,
        exclude_interfered: a.exclude_interfered,
    })
}

/// Countermeasures asked for that cannot act on this machine, in words (said once, before the
/// first run; each run's record says "skipped" too).
fn idle_countermeasures(
    root: &SysRoot,
    c: &Countermeasures,
    cores: Option<&[usize]>,
) -> Vec<String> {
    let mut out = Vec::new();
    if c.cool_down.is_some() && crate::machine::thermal::relevant_temp_paths(root).is_empty() {
        out.push(
            "--cool-down cannot act here: this machine exposes no CPU thermal zone (/sys/class/thermal), so runs start without waiting"
                .to_string(),
        );
    }
    if c.heat_up.is_some() {
        let all: Vec<usize> = topology::read_topology(root)
            .map(|t| t.cpus.iter().map(|c| c.id).collect())
            .unwrap_or_default();
        let cores = cores.unwrap_or(&all);
        let any = cores.iter().any(|&cpu| {
            root.exists(&format!(
                "{}/scaling_cur_freq",
                crate::machine::freq::cpufreq_dir(cpu)
            ))
        });
        if !any {
            out.push(
                "--heat-up cannot act here: the run's CPUs report no frequency (no cpufreq in /sys), so runs start without heating up"
                    .to_string(),
            );
        }
    }
    out
}

/// The setup plan from --randomize, --randomize-every, --setups, --replay-setup.
fn setup_plan(a: &RunArgs, seed: u64) -> anyhow::Result<Option<SetupPlan>> {
    if a.randomize.is_none() && a.replay_setup.is_none() && a.build.is_none() {
        if a.setups.is_some() {
            return Err(usage(
                "--setups needs --randomize FACTORS (e.g. --randomize env,aslr)",
            ));
        }
        return Ok(None);
    }
    let replay = a.replay_setup.as_deref().map(replay_source).transpose()?;
    let factors = match (&a.randomize, &replay) {
        (Some(list), _) => {
            Factor::parse_list(list).map_err(|e| usage(format!("--randomize: {e}")))?
        }
        (None, Some((_, Some(recorded)))) => recorded.factors.clone(),
        (None, Some((_, None))) => {
            return Err(usage(
                "--replay-setup SEED needs the factors the setup was drawn with: repeat its --randomize (e.g. --randomize env,aslr), or give RESULTS.json:SEED to take them from the results",
            ))
        }
        (None, None) => Vec::new(),
    };
    let mut config = setup::Config::new(factors);
    if let (None, Some((_, Some(recorded)))) = (&a.randomize, &replay) {
        config = recorded.clone();
    }
    if let Some(b) = &a.build {
        if !b.contains("{out}") {
            return Err(usage(
                "--build must write to {out}, e.g. --build 'make SEED={seed} OUT={out}'",
            ));
        }
        if a.build_variants == 0 {
            return Err(usage("--build-variants must be at least 1"));
        }
        config.build_variants = Some(a.build_variants);
    }
    if replay.as_ref().is_none_or(|r| r.1.is_none()) || a.env_pad_range != "0:4096" {
        config.env_pad = setup::Range::parse(&a.env_pad_range)
            .map_err(|e| usage(format!("--env-pad-range: {e}")))?;
    }
    if a.randomize_every == 0 {
        return Err(usage("--randomize-every must be at least 1"));
    }
    if config.has(Factor::Aslr) {
        aslr_usable()?;
    }
    let mode = match (replay.as_ref().map(|r| r.0), a.setups) {
        (Some(seed), _) => Mode::Replay { seed },
        (None, Some(0)) => return Err(usage("--setups must be at least 1")),
        (None, Some(n)) => Mode::Pool { setups: n },
        (None, None) => Mode::Fresh,
    };
    Ok(Some(SetupPlan {
        config,
        mode,
        every: a.randomize_every,
        session_seed: seed,
        build: a.build.clone(),
    }))
}

/// `--replay-setup SEED` or `RESULTS.json:SEED`: the seed and, from a results file, the
/// setup configuration it was drawn under (checked to have been used there).
fn replay_source(text: &str) -> anyhow::Result<(u64, Option<setup::Config>)> {
    let (file, seed_text) = match text.rsplit_once(':') {
        Some((f, s)) => (Some(f), s),
        None => (None, text),
    };
    let seed: u64 = seed_text.trim().parse().map_err(|_| {
        usage(format!(
            "--replay-setup '{text}': '{seed_text}' is not a seed; give a run's setup.seed, e.g. --replay-setup results.json:7000116726367251297"
        ))
    })?;
    let Some(file) = file else {
        return Ok((seed, None));
    };
    let body = crate::results::input::read_text(Path::new(file), "--replay-setup: results file")?;
    let doc: serde_json::Value = serde_json::from_str(&body).map_err(|e| {
        usage(format!(
            "--replay-setup: {file} is not a tare results file ({e}); give the --export-json of a run with --randomize"
        ))
    })?;
    let config: setup::Config = doc["extra"]["setups"]["config"]
        .as_object()
        .and_then(|c| serde_json::from_value(serde_json::Value::Object(c.clone())).ok())
        .ok_or_else(|| {
            usage(format!(
                "--replay-setup: {file} records no randomized setups; give the results of a run with --randomize"
            ))
        })?;
    let used = doc["benchmarks"].as_array().into_iter().flatten().any(|b| {
        b["runs"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["extra"]["setup"]["seed"].as_u64() == Some(seed))
    });
    if !used {
        return Err(usage(format!(
            "--replay-setup: no run in {file} has setup seed {seed}; copy a seed from a run's extra.setup.seed"
        )));
    }
    Ok((seed, Some(config)))
}

/// ASLR as a factor needs the kernel to randomize at all and tare to be allowed to turn it off.
pub(crate) fn aslr_usable() -> anyhow::Result<()> {
    let level = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space").unwrap_or_default();
    if level.trim() == "0" {
        return Err(usage(
            "ASLR is off on this machine (kernel.randomize_va_space = 0), so it cannot be a factor; \
             enable it (sysctl kernel.randomize_va_space=2) or leave aslr out",
        ));
    }
    if !exec::sys::can_disable_aslr() {
        return Err(usage(
            "cannot turn ASLR off for runs here (personality(ADDR_NO_RANDOMIZE) is refused, e.g. by a container's seccomp filter); leave aslr out",
        ));
    }
    Ok(())
}

fn limits(a: &RunArgs) -> anyhow::Result<Limits> {
    let dur = |opt: &Option<String>, flag: &str| -> anyhow::Result<Option<std::time::Duration>> {
        opt.as_deref()
            .map(|s| units::parse_duration(s).map_err(|e| usage(format!("{flag}: {e}"))))
            .transpose()
    };
    if a.pids_limit == Some(0) {
        return Err(usage("--pids-limit must be at least 1"));
    }
    Ok(Limits {
        cpu: dur(&a.cpu_limit, "--cpu-limit")?,
        wall: dur(&a.wall_limit, "--wall-limit")?,
        memory: a
            .memory_limit
            .as_deref()
            .map(|s| units::parse_size_limit(s).map_err(|e| usage(format!("--memory-limit: {e}"))))
            .transpose()?,
        pids: a.pids_limit,
    })
}

/// The stop rule: `--runs`, `--stop`, or the default — the median's CI for one benchmark, the
/// widest ratio CI for an interleaved comparison — with the budget and run bounds.
/// Runs of a session whose counts Valgrind simulates, when no --runs, --stop or --min-runs
/// says otherwise: its counts repeat to the last digit, so there is no spread for more runs to
/// average (and each run costs 20–100× the command); three show whether they repeat.
pub const EXACT_RUNS: usize = 3;

fn stop_rule(a: &RunArgs, benchmarks: usize, exact: bool) -> anyhow::Result<(StopRule, Targets)> {
    let comparing = benchmarks > 1 && a.order == OrderArg::Interleaved;
    let precision =
        units::parse_fraction(&a.precision).map_err(|e| usage(format!("--precision: {e}")))?;
    let budget =
        units::parse_duration(&a.time_budget).map_err(|e| usage(format!("--time-budget: {e}")))?;
    let min_runs = a.min_runs.unwrap_or(10.min(a.max_runs));
    if a.max_runs == 0 {
        return Err(usage("--max-runs must be at least 1"));
    }
    if min_runs == 0 || a.max_runs < min_runs {
        return Err(usage(format!(
            "--min-runs ({min_runs}) must be at least 1 and at most --max-runs ({})",
            a.max_runs
        )));
    }
    let mut targets = Targets {
        runs: None,
        min_runs,
        max_runs: a.max_runs,
        precision,
        time_budget: (a.runs.is_none() && !a.no_cap).then_some(budget.as_secs_f64()),
    };
    let at_least = match &a.min_benchmarking_time {
        Some(t) => Some(
            units::parse_duration(t)
                .map_err(|e| usage(format!("--min-benchmarking-time: {e}")))?
                .as_secs_f64(),
        ),
        None => None,
    };
    // The precision (or --stop) part of a rule holds only after --min-benchmarking-time.
    let long_enough = |r: StopRule| match at_least {
        Some(t) => r.and(StopRule::Cond(Metric::Time, Cmp::Ge, t)),
        None => r,
    };
    let rule = if let Some(n) = a.runs {
        if n == 0 {
            return Err(usage("--runs must be at least 1"));
        }
        targets.runs = Some(n);
        StopRule::Cond(Metric::Runs, Cmp::Ge, n as f64)
    } else if exact && a.stop.is_none() && a.min_runs.is_none() {
        let n = EXACT_RUNS.min(a.max_runs);
        targets.runs = Some(n);
        StopRule::Cond(Metric::Runs, Cmp::Ge, n as f64)
    } else if let Some(text) = &a.stop {
        let rule = long_enough(stop::parse(text).map_err(usage)?);
        if a.no_cap {
            rule
        } else {
            rule.or(StopRule::Cond(Metric::Runs, Cmp::Ge, a.max_runs as f64))
                .or(StopRule::Cond(Metric::Time, Cmp::Ge, budget.as_secs_f64()))
        }
    } else {
        let metric = if comparing {
            Metric::RatioCi
        } else {
            Metric::CiMedian
        };
        match at_least {
            None => StopRule::default_rule(
                min_runs,
                a.max_runs,
                metric,
                precision,
                budget.as_secs_f64(),
            ),
            Some(_) => StopRule::Cond(Metric::Runs, Cmp::Ge, min_runs as f64).and(
                long_enough(StopRule::Cond(metric, Cmp::Le, precision))
                    .or(StopRule::Cond(Metric::Runs, Cmp::Ge, a.max_runs as f64))
                    .or(StopRule::Cond(Metric::Time, Cmp::Ge, budget.as_secs_f64())),
            ),
        }
    };
    if rule.uses_ratio() && !comparing {
        return Err(usage(
            "ci(ratio) in --stop needs several commands measured in interleaved order",
        ));
    }
    Ok((rule, targets))
}

/// Everything `tare run` resolved from its arguments before the first run: the plan, the
/// session record it fills, where results go, how to present them, and the guards that must
/// live as long as the session (claimed export paths, registered cores).
pub(super) struct Prepared {
    pub(super) plan: Plan,
    pub(super) session: Session,
    pub(super) backend: Box<dyn exec::Backend>,
    pub(super) targets: Targets,
    pub(super) exports: crate::cli::opts::ExportArgs,
    pub(super) history: Option<crate::cli::history::RunStore>,
    pub(super) style: Style,
    pub(super) verbose: bool,
    pub(super) overwrite_journal: bool,
    pub(super) keep_action_daemons: bool,
    pub(super) stream_journal: bool,
    pub(super) _claims: crate::results::fsio::Claims,
    pub(super) _pinned: Option<crate::machine::pinned::Registration>,
    pub(super) _idle: Option<crate::machine::idle::LatencyHold>,
    pub(super) _quiesced: Option<crate::machine::quiesce::Quiesced>,
}

/// Resolves `tare run`'s arguments once, into a checked plan and an empty session: programs
/// found, parameters expanded, limits, stop rule, setups, cores, backend and export paths
/// checked; the machine's warnings said. Nothing has run yet.
pub(super) fn prepare(mut a: RunArgs) -> anyhow::Result<Prepared> {
    if let Some(path) = a.plan.clone() {
        let p = crate::cli::plan_cmd::read_plan(&path)?;
        a.runs = Some(p.setups * p.runs_per_setup);
        a.setups = Some(p.setups);
        if a.randomize.is_none() {
            a.randomize = Some(
                p.factors
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        if let Some(r) = p.env_pad {
            if a.env_pad_range == "0:4096" {
                a.env_pad_range = format!("{}:{}", r.min, r.max);
            }
        }
    }
    let root = SysRoot::from_env();
    let chosen = chosen_shell(&a);
    let shell = chosen.clone().unwrap_or_else(|| "/bin/sh".to_string());
    let params = a.params.parameters()?;
    let plans = benchmarks(&a, &params, chosen.as_deref())?;
    let (plans, meter_plan) = a.meters.plan(plans, a.input.as_ref())?;
    let cwd: Option<PathBuf> = None;
    for b in &plans {
        if a.build.is_some() && b.argv.iter().any(|w| w.contains("{out}")) {
            continue; // built before the first run
        }
        check_program(&b.argv[0], cwd.as_deref())?;
    }
    if a.build.is_some()
        && !plans
            .iter()
            .any(|b| b.argv.iter().any(|w| w.contains("{out}")))
    {
        return Err(usage(
            "--build: no command uses {out}: write the built program as {out}, e.g. tare run --build '…' '{out} input'",
        ));
    }
    if chosen.is_some()
        || a.build.is_some()
        || a.prepare.is_some()
        || a.conclude.is_some()
        || a.setup.is_some()
        || a.cleanup.is_some()
    {
        check_program(&shell, None)?;
    }
    // Counters first: exact counts change the default stop rule.
    let counters = match &a.counters {
        None => None,
        Some(list) => Some(counters(list, a.counters_backend)?),
    };
    // Callgrind's files beside the results: `r.json` keeps them in `r.callgrind/`.
    let counters = counters.map(|mut c| {
        if c.backend == crate::plan::CounterBackend::Valgrind {
            c.keep = a
                .exports
                .export_json
                .as_ref()
                .map(|j| j.with_extension("callgrind"));
        }
        c
    });
    let exact = counters
        .as_ref()
        .is_some_and(|c| c.backend == crate::plan::CounterBackend::Valgrind);
    let (rule, targets) = stop_rule(&a, plans.len(), exact)?;
    let analysis = analysis_settings(&a, &plans)?;
    let limits = limits(&a)?;
    let countermeasures = countermeasures(&a, &limits)?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let setups = setup_plan(&a, seed)?;
    let stdin = match &a.input {
        Some(p) => {
            std::fs::File::open(p)
                .map_err(|e| usage(format!("--input: cannot read {}: {e}", p.display())))?;
            Input::File(p.clone())
        }
        None => Input::Null,
    };
    let output = a.command_output.sink()?;
    let (
        crate::cli::opts::Cores {
            run: run_cores,
            tare: tare_cores,
            notes: core_notes,
            choice: core_choice,
        },
        _pinned,
    ) = a.cores.resolve(&root, "tare run")?;
    let (_idle, idle_record) = match a.idle.hold(&root)? {
        Some((h, r)) => (Some(h), Some(r)),
        None => (None, None),
    };
    let (_quiesced, quiesce_record) = match a.quiesce.apply(a.style.style() == Style::None)? {
        Some((q, r)) => (Some(q), Some(r)),
        None => (None, None),
    };
    let _exports = a.exports.exports();
    let _claims = a.exports.check()?;
    // The store is opened (created, migrated) before the first run: a bad URL stops here.
    let history = match &a.store {
        Some(spec) => Some(crate::cli::history::open_for_run(Some(spec.as_str()))?),
        None => None,
    };
    let needs = Needs {
        cpuset: run_cores.is_some(),
        pids: limits.pids.is_some(),
    };
    let backend = a.backend.detect(&needs)?;
    let style = a.style.style();
    let _color = style.color();
    let method_record = backend.method();
    crate::cli::meters::check_backend(&meter_plan, backend.kind())?;
    if style != Style::None && chosen.is_none() && a.argv.is_empty() {
        for c in &a.commands {
            if let Some(syntax) = shell_syntax(c) {
                eprintln!(
                    "tare: warning: '{c}' holds shell syntax ({syntax}) but no shell runs it: its words go to the program as they are; add -S sh (or --shell) to run it through a shell"
                );
            }
        }
    }
    if style != Style::None {
        for w in &method_record.warnings {
            eprintln!("tare: warning: {w}");
        }
    }
    // What the machine is doing that tare cannot correct (no steal sample: start at once).
    let facts = inventory::read_facts(&root, &InventoryOptions { steal_sample: None });
    let mut machine_warnings = machine::warnings::session_warnings(&facts, core_choice.as_ref());
    let mut seen_programs = std::collections::BTreeSet::new();
    let own_env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    for b in plans.iter().map(|p| &p.argv[0]) {
        if let Ok(path) = exec::spawn::resolve(std::ffi::OsStr::new(b), &own_env, None) {
            if seen_programs.insert(path.clone()) {
                if let Some(why) = machine::binary::unoptimized_build(&path) {
                    machine_warnings.push(format!("'{b}' looks unoptimized: {why}"));
                }
            }
        }
    }
    machine_warnings.extend(idle_countermeasures(
        &root,
        &countermeasures,
        run_cores.as_deref(),
    ));
    if style != Style::None {
        // A note that a warning already says is not repeated.
        for n in core_notes
            .iter()
            .filter(|n| !machine_warnings.iter().any(|w| w.starts_with(n.as_str())))
        {
            eprintln!("tare: note: {n}");
        }
        for w in &machine_warnings {
            eprintln!("tare: warning: {w}");
        }
    }
    if !tare_cores.is_empty() {
        // Keep tare (and the threads it starts later) off the run's cores.
        if let Err(e) = exec::sys::set_affinity_self(&tare_cores) {
            eprintln!("tare: warning: cannot keep tare on CPUs {tare_cores:?}: {e}");
        }
    }
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    let isolation = a.isolation.for_run(a.isolate)?;
    if isolation.is_some() && counters.is_some() {
        // perf and Valgrind write the counts from inside the run, into tare's private directory
        // below TMPDIR, which an isolated run cannot see (its /tmp is its own).
        return Err(usage(
            "--counters cannot be combined with --isolate: the isolated run cannot write its counts where tare reads them; drop one of them",
        ));
    }
    let plan = Plan {
        benchmarks: plans,
        warmup: a.warmup,
        stop: rule,
        order: match a.order {
            OrderArg::Interleaved => Order::Interleaved,
            OrderArg::Sequential => Order::Sequential,
        },
        seed,
        limits,
        cores: run_cores.clone(),
        env: env.clone(),
        cwd,
        stdin,
        output,
        ignore_failure: a.ignore_failure,
        shell,
        actions: crate::plan::ActionPolicy {
            timeout: match a.action_timeout.as_deref() {
                None => crate::plan::ActionPolicy::default().timeout,
                Some("none") => None,
                Some(t) => Some(
                    units::parse_duration(t)
                        .map_err(|e| usage(format!("--action-timeout: {e}")))?,
                ),
            },
            keep_daemons: a.keep_action_daemons,
        },
        analysis,
        machine: countermeasures,
        setups,
        counters,
        isolation,
        meters: meter_plan,
    };
    let mut session = Session {
        schema_version: SCHEMA_VERSION,
        tare_version: env!("CARGO_PKG_VERSION").to_string(),
        invocation: std::env::args().collect(),
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        machine: machine::info::collect_info(&root),
        method: method_record,
        cores: run_cores,
        limits: LimitsRecord {
            cpu_time: limits.cpu.map(|d| d.as_secs_f64()),
            wall_time: limits.wall.map(|d| d.as_secs_f64()),
            memory: limits.memory,
            pids: limits.pids,
        },
        environment: env
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    a.record_env_values
                        .then(|| v.to_string_lossy().into_owned()),
                )
            })
            .collect::<BTreeMap<_, _>>(),
        seed,
        benchmarks: method::empty_benchmarks(&plan),
        comparisons: Vec::new(),
        complete: false,
        extra: Default::default(),
    };
    session.extra.insert(
        extra_keys::SESSION_WARNINGS.into(),
        serde_json::json!(machine_warnings),
    );
    if let Some(choice) = &core_choice {
        session
            .extra
            .insert(extra_keys::SESSION_CORES.into(), serde_json::json!(choice));
    }
    if let Some(r) = idle_record {
        session.extra.insert("idle".into(), r);
    }
    if let Some(r) = quiesce_record {
        session.extra.insert("quiesced".into(), r);
    }
    session.extra.insert(
        "stop_rule".into(),
        serde_json::Value::String(plan.stop.to_string()),
    );
    session.extra.insert(
        "order".into(),
        serde_json::Value::String(match plan.order {
            Order::Interleaved => "interleaved".into(),
            Order::Sequential => "sequential".into(),
        }),
    );
    if let Some(c) = &plan.counters {
        let (via, note) = match c.backend {
            crate::plan::CounterBackend::Perf => (
                "perf stat -x,",
                "perf's start-up is inside the wall and CPU times of these runs",
            ),
            crate::plan::CounterBackend::Valgrind => (
                "valgrind --tool=callgrind --trace-children=yes",
                "the wall and CPU times of these runs are the command's under Valgrind (20–100× its own): compare them only with runs under Valgrind",
            ),
        };
        session.extra.insert(
            "counters".into(),
            serde_json::json!({"events": c.events, "backend": c.backend.as_str(),
                               "via": via, "note": note}),
        );
    }
    if let Some(sp) = &plan.setups {
        session.extra.insert("setups".into(), serde_json::json!(sp));
    }
    if let Some(u) = a.time_unit {
        session
            .extra
            .insert("time_unit".into(), serde_json::json!(u.scale().1));
    }
    if a.sort == SortArg::MedianTime {
        session
            .extra
            .insert("sort".into(), serde_json::json!("median-time"));
    }
    if history.is_some() {
        if let Some(c) = crate::cli::history::current_commit() {
            session.extra.insert("git".into(), serde_json::json!(c));
        }
    }

    Ok(Prepared {
        plan,
        session,
        backend,
        targets,
        exports: a.exports.clone(),
        history,
        style,
        verbose: a.verbose,
        overwrite_journal: a.overwrite_journal,
        keep_action_daemons: a.keep_action_daemons,
        stream_journal: a.stream_journal,
        _claims,
        _pinned,
        _idle,
        _quiesced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> SysRoot {
        SysRoot::new(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysfs")
                .join(name),
        )
    }

    fn asking(cool: bool, heat: bool) -> Countermeasures {
        Countermeasures {
            cool_down: cool.then(|| CoolDown::new(60.0)),
            heat_up: heat.then(|| std::time::Duration::from_secs(1)),
            sleep_between: None,
            priority: Priority::Normal,
            thresholds: InterferenceThresholds::default(),
            exclude_interfered: false,
        }
    }

    #[test]
    fn countermeasures_that_cannot_act_are_named() {
        // A VM without thermal zones or cpufreq: both said.
        let vm = fixture("vm-2cpu");
        let said = idle_countermeasures(&vm, &asking(true, true), None);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].starts_with("--cool-down cannot act here"));
        assert!(said[1].starts_with("--heat-up cannot act here"));
        // A machine with both: nothing to say.
        let intel = fixture("intel-4c8t");
        assert!(idle_countermeasures(&intel, &asking(true, true), None).is_empty());
        assert!(idle_countermeasures(&intel, &asking(true, true), Some(&[0, 1])).is_empty());
        // Not asked for: nothing either.
        assert!(idle_countermeasures(&vm, &asking(false, false), None).is_empty());
    }

    #[test]
    fn shell_syntax_outside_quotes() {
        assert_eq!(shell_syntax("echo hi | wc -c"), Some("|"));
        assert_eq!(shell_syntax("a && b"), Some("&&"));
        assert_eq!(shell_syntax("grep 'a|b' f"), None);
        assert_eq!(shell_syntax("echo \"$HOME\""), None);
        assert_eq!(shell_syntax("echo \\$HOME"), None);
        assert_eq!(shell_syntax("sleep 1 &"), None);
        assert_eq!(shell_syntax("ls *.c"), Some("*"));
    }
}
