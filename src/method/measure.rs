//! One run of `tare run`, measured and recorded: its cool-down or heat-up, its setup, its
//! counters' wrapper, its `--prepare`/`--conclude` actions, its cache state and co-runner, the
//! machine's probe and energy around it, and the line that says how a failed run failed.
//!
//! Not for: when runs happen (`rounds`, driven by `super::RunEngine`) or the process itself
//! (`exec`).

use super::{
    background, cache, counters, energy, setups, Observer, Runner, Step, CGROUP_JOIN_KEY,
    ESCAPED_KEY, INCOMPLETE_KEY, ORPHANS_KEY,
};
use crate::error::UserError;
use crate::exec::RunSpec;
use crate::machine::cooldown::{self, SystemClock};
use crate::machine::extra_keys;
use crate::method::stages::{Span, Stage};
use crate::plan::{BenchmarkPlan, CounterBackend, Plan};
use crate::results::{Benchmark, Run, Termination};
use crate::setup::Setup;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Runner<'_> {
    /// One run with its prepare/conclude actions, appended to `benches[i]`.
    pub(super) fn measure(
        &self,
        bp: &BenchmarkPlan,
        benches: &mut [Benchmark],
        i: usize,
        warmup: bool,
        round: Option<usize>,
        obs: &mut dyn Observer,
    ) -> anyhow::Result<Step> {
        let mc = &self.plan.machine;
        let mut extra = BTreeMap::new();
        if let Some(cd) = &mc.cool_down {
            let o = cooldown::cool_down(&self.root, cd, &SystemClock::default());
            extra.insert(extra_keys::RUN_COOLDOWN.to_string(), json!(o));
        }
        if let Some(max) = mc.heat_up {
            let o = cooldown::heat_up(&self.root, &self.cores, max);
            extra.insert(extra_keys::RUN_HEATUP.to_string(), json!(o));
        }
        let mut spec_argv: Vec<std::ffi::OsString> = bp.argv.iter().map(Into::into).collect();
        let mut spec_cwd = self.plan.cwd.clone();
        let mut spec_env = self.plan.env.clone();
        let mut aslr_off = false;
        if let (Some((setup, block)), Some(ws)) = (
            self.setup_of(bp, &benches[i], warmup, round),
            &self.workspace,
        ) {
            let mut words = bp.argv.clone();
            let built = setup.build.and_then(|v| self.builds.as_ref()?.out(v));
            if let Some(out) = built {
                let out = out.to_string_lossy();
                for w in &mut words {
                    *w = w.replace("{out}", &out);
                }
            }
            let r = ws.realize(&setup, &words, &self.plan.env, &self.real_cwd)?;
            spec_argv = r.argv;
            spec_env = r.env;
            spec_cwd = r.cwd.or(spec_cwd);
            aslr_off = r.aslr_off;
            let mut record = r.record;
            if let Some(block) = block {
                record["block"] = json!(block);
            }
            extra.insert(setups::RUN_KEY.to_string(), record);
        }
        // perf and Valgrind write their counts into a fresh private directory (mode 0700): a
        // predictable name in /tmp could be a FIFO or a link another user planted there
        // beforehand.
        let counter_dir = match &self.plan.counters {
            Some(_) => Some(
                tempfile::Builder::new()
                    .prefix("tare-counters-")
                    .tempdir()?,
            ),
            None => None,
        };
        let counter_file = self
            .plan
            .counters
            .as_ref()
            .zip(counter_dir.as_ref())
            .map(|(c, d)| match c.backend {
                CounterBackend::Perf => {
                    let f = d.path().join("counters.csv");
                    spec_argv = counters::wrap(&c.program, &spec_argv, &c.events, &f);
                    f
                }
                CounterBackend::Valgrind => {
                    spec_argv =
                        counters::valgrind::wrap(&c.program, &spec_argv, &c.events, d.path());
                    d.path().to_path_buf()
                }
            });
        self.act(Stage::BeforeInvocation, &bp.prepare, i, round)?;
        let spec = RunSpec {
            argv: spec_argv,
            cwd: spec_cwd,
            env: spec_env,
            stdin: self.plan.stdin.clone(),
            stdout: self.plan.output.clone(),
            stderr: self.plan.output.clone(),
            limits: self.plan.limits,
            cores: self.plan.cores.clone(),
            priority: mc.priority,
            isolation: self.plan.isolation.clone(),
            aslr_off,
            meters: self.plan.meters.run.clone(),
            inherit_fds: Vec::new(),
        };
        // The benchmark's own meters (the `--background` co-runner), started after its
        // actions (the `--cache` state, set in `act` after `--prepare`: nothing may read the
        // files after it) and before the machine's probe.
        let mut units = self.units.borrow_mut();
        let mut unit = units.get_mut(i).filter(|u| !u.is_empty());
        if let Some(u) = unit.as_mut() {
            if let Err(e) = u.start() {
                let _ = u.stop(&Span::now());
                return Err(UserError::run_failed(format!("{e:#}")).into());
            }
        }
        let start_offset = self.t0.elapsed().as_secs_f64();
        let probe_start = self.probe.borrow_mut().start();
        // The meters (`--energy`) read right around the run; none asked for, nothing done.
        let mut meters = self.meters.borrow_mut();
        let metering = !meters.is_empty();
        if metering {
            for m in meters.iter_mut() {
                m.start()
                    .map_err(|e| UserError::run_failed(format!("{e:#}")))?;
            }
        }
        let run_start = Instant::now();
        let m = self.exec.run(&spec, self.cancel);
        let span = || {
            let end = Instant::now();
            Span {
                start: run_start,
                end,
                wall: m
                    .as_ref()
                    .map_or((end - run_start).as_secs_f64(), |m| m.wall.as_secs_f64()),
            }
        };
        let mut readings: Vec<(String, crate::method::stages::Reading)> = Vec::new();
        if metering {
            let span = span();
            self.metered.borrow_mut().push(None);
            readings.extend(meters.iter_mut().map(|x| (x.name(), x.stop(&span))));
        }
        drop(meters);
        // Its co-runner stopped, and what its actions found (the cache state it was set to).
        if let Some(u) = unit {
            readings.extend(u.stop(&span()));
        }
        drop(units);
        let m = m?;
        let env = self.probe.borrow_mut().finish(
            probe_start,
            m.cpu().as_secs_f64(),
            m.wall.as_secs_f64(),
        );
        let interfered = env.interfered;
        if let (Some(f), Some(c)) = (&counter_file, &self.plan.counters) {
            let values = match c.backend {
                CounterBackend::Perf => crate::results::input::read(f, "perf's counter file")
                    .map(|t| counters::parse_perf_csv(&String::from_utf8_lossy(&t)))
                    .unwrap_or_default(),
                CounterBackend::Valgrind => counters::valgrind::collect(f, &c.events)
                    .unwrap_or_else(|why| {
                        if m.termination == Termination::Exit && m.exit_code == Some(0) {
                            eprintln!(
                                "tare: warning: run {} of '{}' has no counts: {why}",
                                benches[i].runs.len() + 1,
                                benches[i].name
                            );
                        }
                        Vec::new()
                    }),
            };
            extra.insert(counters::RUN_KEY.to_string(), json!(values));
            extra.insert(counters::BACKEND_KEY.to_string(), json!(c.backend.as_str()));
            if c.backend == CounterBackend::Valgrind {
                let top = counters::valgrind::top_functions(f, counters::FUNCTIONS_KEPT);
                if !top.is_empty() {
                    let list: Vec<serde_json::Value> = top
                        .into_iter()
                        .map(|(name, ir)| json!({"function": name, "instructions": ir}))
                        .collect();
                    extra.insert(counters::FUNCTIONS_KEY.to_string(), json!(list));
                }
                if let Some(keep) = &c.keep {
                    let dest = keep.join(format!("{}-run{}", i + 1, benches[i].runs.len() + 1));
                    match counters::valgrind::keep_outputs(f, &dest) {
                        Ok(()) => {
                            extra.insert(
                                counters::CALLGRIND_KEY.to_string(),
                                json!(dest.display().to_string()),
                            );
                        }
                        Err(e) => eprintln!(
                            "tare: warning: Callgrind's files of run {} of '{}' were not kept: {e}",
                            benches[i].runs.len() + 1,
                            benches[i].name
                        ),
                    }
                }
            }
        }
        extra.insert(extra_keys::RUN_ENVIRONMENT.to_string(), json!(env));
        if !m.join.is_zero() {
            extra.insert(CGROUP_JOIN_KEY.to_string(), json!(m.join.as_secs_f64()));
        }
        if m.escaped {
            extra.insert(ESCAPED_KEY.to_string(), json!(true));
            extra.insert(
                INCOMPLETE_KEY.to_string(),
                json!(["cpu_time", "user_time", "system_time", "peak_memory"]),
            );
            if m.orphans_killed > 0 {
                extra.insert(ORPHANS_KEY.to_string(), json!(m.orphans_killed));
            }
            let first = !benches[i]
                .runs
                .iter()
                .any(|r| r.extra.contains_key(ESCAPED_KEY));
            if first {
                let fate = if m.orphans_killed > 0 {
                    format!(
                        "{} process(es) that left were killed at the run's end (tare is their subreaper)",
                        m.orphans_killed
                    )
                } else {
                    "what left was not killed".to_string()
                };
                eprintln!(
                    "tare: warning: run {} of '{}' left its cgroups (a process moved itself out): its CPU time and peak memory are incomplete and {fate}; marked escaped in the results",
                    benches[i].runs.len() + 1,
                    benches[i].name
                );
            }
        }
        if m.termination == Termination::Failed && self.cancel.load(Ordering::Relaxed) {
            // The interrupted run is incomplete: it is not recorded.
            return Ok(Step::Interrupted);
        }
        self.act(Stage::AfterInvocation, &bp.conclude, i, round)?;
        let ready_stopped = m.ready.is_some_and(|r| r.stopped);
        let never_ready = m.ready.is_some_and(|r| r.ready.is_none());
        if never_ready {
            extra.insert("not_ready".into(), json!(true));
        }
        let ok_exit = m.termination == Termination::Exit
            && (m.exit_code == Some(0) || ready_stopped || self.plan.ignore_failure)
            && !never_ready;
        let excluded = interfered && mc.exclude_interfered;
        if excluded {
            extra.insert("excluded".into(), json!("interfered"));
        }
        let bench = &mut benches[i];
        let index = bench.runs.len();
        if metering {
            if let Some(at) = self.metered.borrow_mut().last_mut() {
                *at = Some((i, index));
            }
        }
        bench.runs.push(Run {
            index,
            round,
            warmup,
            start_offset,
            wall_time: m.wall.as_secs_f64(),
            user_time: m.user.as_secs_f64(),
            system_time: m.system.as_secs_f64(),
            cpu_time: m.cpu().as_secs_f64(),
            peak_memory: m.peak_memory,
            exit_code: m.exit_code,
            signal: m.signal,
            termination: m.termination,
            involuntary_context_switches: Some(m.involuntary_context_switches),
            counted: ok_exit && !warmup && !excluded,
            extra,
            meters: Box::new(crate::results::RunMeters {
                io: m.io.clone().map(Box::new),
                cache: None,
                ready_time: m.ready.and_then(|r| r.ready).map(|t| t.as_secs_f64()),
                // Off until the co-runner's reading says on, where the session has one.
                background: self
                    .plan
                    .meters
                    .levels
                    .iter()
                    .any(|l| l.background.is_some())
                    .then_some(false),
                memory_timeline: m.memory_timeline.clone(),
                energy: None,
            }),
        });
        if let Some(run) = bench.runs.last_mut() {
            for (name, r) in readings {
                place(run, &name, r);
            }
        }
        obs.run_finished(benches, i)?;
        if let Some(pause) = mc.sleep_between {
            self.pause(pause);
        }
        if !ok_exit && !self.plan.ignore_failure {
            return Err(UserError::run_failed(failure_message(&benches[i], self.plan)).into());
        }
        Ok(Step::Ok)
    }

    /// The setup of the next run of `b` and its block (none for a fixed setup), if setups are
    /// used: the fixed setup of the benchmark, else the plan's setup of the run's block (its
    /// round when interleaved, its position among measured runs otherwise; warm-ups use 0).
    fn setup_of(
        &self,
        bp: &BenchmarkPlan,
        b: &Benchmark,
        warmup: bool,
        round: Option<usize>,
    ) -> Option<(Setup, Option<usize>)> {
        if let Some(s) = &bp.fixed_setup {
            return Some((s.clone(), None));
        }
        let sp = self.plan.setups.as_ref()?;
        let index = if warmup {
            0
        } else {
            round.unwrap_or_else(|| b.runs.iter().filter(|r| !r.warmup).count())
        };
        let block = sp.block_of(index);
        Some((sp.setup_for(block), Some(block)))
    }

    /// Sleeps for `d`, waking early when the session is interrupted.
    fn pause(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.cancel.load(Ordering::Relaxed) {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
}

/// Puts a reading into a run's record where `tare run` keeps it: the cache state in
/// `meters.cache`, the co-runner in `meters.background` (and `background_ended_early` where it
/// had ended before the run did), the energy meters' where `energy::place` says.
fn place(run: &mut Run, meter: &str, r: crate::method::stages::Reading) {
    match (meter, &r.record) {
        (cache::NAME, Some(rec)) => {
            run.meters.cache = serde_json::from_value(rec.clone()).ok().map(Box::new);
        }
        (background::NAME, Some(rec)) => {
            run.meters.background = Some(true);
            if rec["ran_throughout"] == json!(false) {
                run.extra
                    .insert("background_ended_early".into(), json!(true));
            }
        }
        _ => energy::place(run, meter, r),
    }
}

/// What a failed run said, for its error line: the last lines of its output file, or where to
/// see output tare discarded (`--show-output`, as hyperfine suggests).
fn output_cause(sink: &crate::exec::Sink) -> String {
    match sink {
        crate::exec::Sink::Null => " (its output was discarded: --show-output shows it)".into(),
        crate::exec::Sink::Inherit => String::new(),
        crate::exec::Sink::File(path) => match crate::exec::capture::last_lines_of_file(path, 3) {
            Some(t) if !t.is_empty() => format!(" (its output ends: {t})"),
            _ => String::new(),
        },
    }
}

/// One line saying which run failed how, and what to do.
fn failure_message(b: &Benchmark, plan: &Plan) -> String {
    let r = b.runs.last().expect("a run was just recorded");
    let which = format!("run {} of '{}'", r.index + 1, b.name);
    if r.extra.contains_key("not_ready") {
        return format!(
            "{which} ended without the --ready sign; check the sign (and that the program's output is not buffered), or pass --ignore-failure to record such runs and go on"
        );
    }
    let cause = output_cause(&plan.output);
    match r.termination {
        Termination::Exit => format!(
            "{which} exited with code {}{cause}; fix the command or pass --ignore-failure to measure it anyway",
            r.exit_code.unwrap_or(-1)
        ),
        Termination::Signal => format!(
            "{which} was killed by signal {}{cause}; fix the command or pass --ignore-failure to measure it anyway",
            r.signal.unwrap_or(0)
        ),
        Termination::Cpu => format!(
            "{which} hit the CPU time limit ({} s); raise --cpu-limit, or pass --ignore-failure to record such runs and go on",
            plan.limits.cpu.map_or(0.0, |d| d.as_secs_f64())
        ),
        Termination::Wall => format!(
            "{which} hit the wall time limit ({} s); raise --wall-limit, or pass --ignore-failure to record such runs and go on",
            plan.limits.wall.map_or(0.0, |d| d.as_secs_f64())
        ),
        Termination::Memory => format!(
            "{which} hit the memory limit ({}); raise --memory-limit, or pass --ignore-failure to record such runs and go on",
            crate::units::format_bytes(plan.limits.memory.unwrap_or(0) as f64, None)
        ),
        Termination::Pids => format!(
            "{which} hit the task limit ({} processes and threads); raise --pids-limit, or pass --ignore-failure to record such runs and go on",
            plan.limits.pids.unwrap_or(0)
        ),
        Termination::Failed => format!("{which} could not be completed"),
    }
}
