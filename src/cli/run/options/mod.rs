//! `tare run`'s arguments resolved once, before the first run, into a [`Prepared`] session:
//! the plan the method layer follows and the session record it fills. Every check that can
//! fail on bad input fails here, with one line naming the option.
//!
//! This file: [`Prepared`] and [`prepare`], which resolves the options in order; each group of
//! options is resolved in a file beside it: the commands and shell (`commands.rs`), counters
//! (`counters.rs`), limits, stop rule and comparison settings (`measure.rs`), countermeasures
//! (`countermeasures.rs`) and randomized setups (`setups.rs`). Not for: the command line's
//! definitions (`args.rs`) or running the session (`session.rs`).

mod commands;
mod countermeasures;
mod counters;
mod measure;
mod setups;

pub(crate) use commands::check_program;
pub(crate) use counters::valgrind_counters;
pub(crate) use setups::aslr_usable;

use commands::{benchmarks, chosen_shell, shell_syntax};
use countermeasures::{countermeasures, idle_countermeasures};
use counters::counters;
use measure::{analysis_settings, limits, stop_rule};
use setups::setup_plan;

use super::args::*;
use crate::error::usage;
use crate::exec::{self, Input, Needs};
use crate::machine::extra_keys;
use crate::machine::inventory::{self, InventoryOptions};
use crate::machine::{self, sysfs::SysRoot};
use crate::method::{self};
use crate::plan::{Order, Plan};
use crate::report::progress::Targets;
use crate::report::Style;
use crate::results::{LimitsRecord, Session, SCHEMA_VERSION};
use crate::units;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Everything `tare run` resolved from its arguments before the first run: the plan, the
/// session record it fills, where results go, how to present them, and the guards that must
/// live as long as the session (claimed export paths, registered cores).
pub(super) struct Prepared {
    pub(super) plan: Plan,
    pub(super) session: Session,
    pub(super) backend: Box<dyn exec::Backend>,
    pub(super) targets: Targets,
    pub(super) exports: crate::cli::opts::ExportArgs,
    pub(super) history: Option<crate::cli::run::store::RunStore>,
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
        Some(spec) => Some(crate::cli::run::store::open_for_run(Some(spec.as_str()))?),
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
        if let Some(c) = crate::cli::run::store::current_commit() {
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
