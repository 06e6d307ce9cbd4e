//! Valgrind's counts of the kernels (`--counters`), beside the other counter code
//! (`method::counters`): a worker with a native timed region runs under Callgrind with
//! collection only inside it and a dump at each return, read back as each sample's counts per
//! loop; any other worker's loops are counted after its invocation by two invocations of their
//! own with N and 2N loops. Also the keys that say in a sample's record how it was counted.
//!
//! Not for: Valgrind's command line and output files (`counters::valgrind`), the arithmetic of
//! the difference (`counters::delta`), or a session without `--counters`.

use super::{explain, KernelsPlan, Taken, Target};
use crate::exec::worker::{self, Hello};
use crate::exec::{Executor, RunSpec};
use std::sync::atomic::{AtomicBool, Ordering};

/// Key of how a sample's counts were taken in `Run.extra`: [`REGION_METHOD`] or
/// [`DELTA_METHOD`].
pub const COUNT_METHOD_KEY: &str = "counters_method";
/// Counted in the worker's timed region (`tare_timed_region`, Callgrind's toggle).
pub const REGION_METHOD: &str = "timed region";
/// Counted as the difference of whole invocations of 1× and 2× the loops
/// (`counters::delta`).
pub const DELTA_METHOD: &str = "1x/2x invocations";

/// Whether a program's timed region is a native function Callgrind can toggle collection on
/// (`tare_timed_region`, in workers of the C, C++ and Rust clients); the loops of other workers
/// (Python, Go, Java, JS, the native harnesses) are counted by [`count_delta`].
pub fn counts_region(h: &Hello) -> bool {
    matches!(
        h.client.as_str(),
        "tare-worker-c" | "tare-worker-cpp" | "tare-worker-rust"
    )
}

/// Environment of the invocations [`count_delta`] counts, where the user did not set it: what
/// makes a runtime's start-up the same in every process (Python's hash salt), and what keeps
/// Go's runtime from preempting goroutines by signals, which Callgrind's signal handling
/// asserts on (`vgCallgrind_post_signal`) and which lands wherever the simulated clock says.
pub const DETERMINISTIC_ENV: &[(&str, &str)] =
    &[("PYTHONHASHSEED", "0"), ("GODEBUG", "asyncpreemptoff=1")];

/// How much longer a worker's replies may take under Valgrind than `--worker-timeout` and
/// `--start-timeout` allow (it runs programs 20–100× slower).
const VALGRIND_SLOWER: u32 = 100;

/// An invocation's command line (`spec`) run under Valgrind counting `counters` in the
/// worker's timed region (`counters::valgrind::wrap_kernel`), where there are counters to
/// count this way, and the fresh private directory (mode 0700) its dumps go into.
pub(super) fn wrap_region(
    counters: Option<&crate::plan::Counters>,
    spec: &mut RunSpec,
) -> Result<Option<tempfile::TempDir>, String> {
    match counters {
        Some(c) => match tempfile::Builder::new().prefix("tare-counters-").tempdir() {
            Ok(d) => {
                spec.argv = crate::method::counters::valgrind::wrap_kernel(
                    &c.program,
                    &spec.argv,
                    &c.events,
                    d.path(),
                );
                Ok(Some(d))
            }
            Err(e) => Err(format!(
                "cannot make a temporary directory for the counts ({e}); check TMPDIR"
            )),
        },
        None => Ok(None),
    }
}

/// The counts of the kernels an invocation of program `p` measured (`taken`, those that did
/// not fail), each by [`count_delta`] at its loops, recorded on its first counted sample; a
/// warning for a kernel that could not be counted. `jit`: the worker's language has a JIT.
pub(super) fn count_taken(
    plan: &KernelsPlan,
    exec: &Executor,
    p: usize,
    jit: bool,
    c: &crate::plan::Counters,
    taken: &mut [Taken],
    cancel: &AtomicBool,
) {
    for t in taken.iter_mut().filter(|t| t.error.is_none()) {
        let (Some(loops), Some(first)) =
            (t.loops, t.samples.iter().position(|(_, why)| why.is_none()))
        else {
            continue;
        };
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let target = &plan.targets[t.target];
        match count_delta(plan, exec, p, target, loops, jit, c, cancel) {
            Ok(v) => {
                t.counts = vec![None; t.samples.len()];
                t.counts[first] = Some(v);
                t.count_method = Some(DELTA_METHOD);
            }
            Err(e) => eprintln!(
                "tare: warning: no counts of kernel '{}' of '{}': {e}",
                target.kernel, plan.programs[p].command
            ),
        }
    }
}

/// Counts per loop of `target`'s body in program `p` by the difference of two whole
/// invocations under Valgrind (`counters::delta`): the same conversation (setup, for a JIT a
/// warm-up sample of `loops` loops, one sample, teardown, exit) with `loops` and with
/// `2 · loops` loops in its sample.
#[allow(clippy::too_many_arguments)]
fn count_delta(
    plan: &KernelsPlan,
    exec: &Executor,
    p: usize,
    target: &Target,
    loops: u64,
    jit: bool,
    c: &crate::plan::Counters,
    cancel: &AtomicBool,
) -> Result<Vec<crate::method::counters::CounterValue>, String> {
    use crate::method::counters::{delta, valgrind};
    let once = |n: u64| -> Result<(Vec<crate::method::counters::CounterValue>, u64), String> {
        let dir = tempfile::Builder::new()
            .prefix("tare-counters-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary directory ({e}); check TMPDIR"))?;
        let mut spec = plan.spec.clone();
        let argv: Vec<std::ffi::OsString> = plan.programs[p].argv.iter().map(Into::into).collect();
        spec.argv = valgrind::wrap(&c.program, &argv, &c.events, dir.path());
        // Python salts its string hashes per process (dict layouts, and so counts, differ by
        // ~0.1% of a start-up between processes); one fixed seed makes A and B the same
        // program but for the loops. A seed the user gave is kept.
        for (k, v) in DETERMINISTIC_ENV {
            if !spec.env.iter().any(|(n, _)| n == k) {
                spec.env.push((k.into(), v.into()));
            }
        }
        let limit = plan.timeout * VALGRIND_SLOWER;
        let start = plan.start_timeout * VALGRIND_SLOWER;
        let grace = worker::EXIT_GRACE * VALGRIND_SLOWER;
        let (m, r) = worker::invoke_with_grace(exec, &spec, limit, grace, cancel, |w| {
            w.hello(start)?;
            if let Err(e) = w.setup(&target.kernel, &target.params)? {
                return Ok(Err(format!("setup failed in the worker: {e}")));
            }
            if jit {
                if let Err(e) = w.run(loops, 1, |_| {})? {
                    return Ok(Err(format!(
                        "'{}' failed in the worker: {e}",
                        target.kernel
                    )));
                }
            }
            let ran = match w.run(n, 1, |_| {})? {
                Ok(s) => s[0].loops,
                Err(e) => {
                    return Ok(Err(format!(
                        "'{}' failed in the worker: {e}",
                        target.kernel
                    )))
                }
            };
            w.teardown()?.ok();
            w.exit()?;
            Ok(Ok(ran))
        })
        .map_err(|e| format!("{e:#}"))?;
        let ran = r.map_err(|e| {
            format!(
                "{} (valgrind's log: {})",
                explain(e, &m),
                valgrind::log_line(dir.path())
            )
        })??;
        if !m.succeeded() {
            return Err(format!(
                "its invocation under valgrind ended with {:?}",
                m.termination
            ));
        }
        Ok((valgrind::collect(dir.path(), &c.events)?, ran))
    };
    let (one, n1) = once(loops)?;
    let (two, n2) = once(loops.saturating_mul(2))?;
    Ok(delta::per_loop(&one, &two, n1, n2))
}

/// Each sample's counts per loop from Valgrind's dump of its repetition; a warning when a
/// program's worker dumped none (its timed region has no name Valgrind can find).
pub(super) fn read_counts(
    taken: &mut [Taken],
    c: &crate::plan::Counters,
    dir: &std::path::Path,
    program: &str,
) {
    use crate::method::counters::valgrind;
    let mut any = false;
    for t in taken.iter_mut() {
        t.counts = t
            .samples
            .iter()
            .zip(&t.reps)
            .map(|((s, _), &n)| {
                let totals = valgrind::dump(dir, n)?;
                any = true;
                let mut v = valgrind::values(&totals, &c.events);
                for x in &mut v {
                    x.value = x.value.map(|v| v / s.loops.max(1) as f64);
                    x.unit = "per loop".into();
                }
                Some(v)
            })
            .collect();
    }
    let samples: usize = taken.iter().map(|t| t.samples.len()).sum();
    if !any && samples > 0 {
        eprintln!(
            "tare: warning: '{program}' gave no counts of its timed region: Valgrind found no function {} in it (workers of the C, C++ and Rust clients have it; a stripped binary loses it)",
            valgrind::TIMED_REGION
        );
    }
}
