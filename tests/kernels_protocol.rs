//! The master's side of the worker protocol against a real worker process (a Python script
//! speaking docs/protocol.md, tests/kernels/fake_worker.py): a whole conversation, the
//! worker's own errors, and every way a worker can fail — crash, hang, garbage, another
//! protocol version, a line too long — each a one-line reason with nothing left running.

mod common;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use tare::exec::worker::{self, WorkerError};
use tare::exec::{detect, Executor, Needs, Preference, RunSpec};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/fake_worker.py");

fn executor() -> Executor {
    let (backend, _) = detect(
        Preference::Auto,
        &Needs {
            cpuset: false,
            pids: false,
        },
        Path::new("/"),
    )
    .unwrap();
    Executor::new(backend)
}

fn spec(mode: &str) -> RunSpec {
    let mut s = RunSpec::new([FAKE]);
    s.env.push(("FAKE_MODE".into(), mode.into()));
    s.env.push(("FAKE_CHILD_SLEEP".into(), "317.25".into()));
    s
}

#[test]
fn a_whole_conversation() {
    let ex = executor();
    let cancel = AtomicBool::new(false);
    let (m, r) = worker::invoke(&ex, &spec(""), Duration::from_secs(10), &cancel, |w| {
        let hello = w.hello(Duration::from_secs(30))?;
        let clock = w.clock()?.expect("clock");
        let unknown = w.setup("nosuch", &Default::default())?;
        let bad_param = w.setup(
            "spin",
            &[("nope".to_string(), "1".to_string())]
                .into_iter()
                .collect(),
        )?;
        w.setup(
            "spin",
            &[("n".to_string(), "50".to_string())].into_iter().collect(),
        )?
        .expect("setup");
        let mut seen = 0;
        let samples = w.run(7, 4, |_| seen += 1)?.expect("run");
        w.teardown()?.expect("teardown");
        let again = w.teardown()?;
        w.exit()?;
        Ok((hello, clock, unknown, bad_param, samples, seen, again))
    })
    .unwrap();
    let (hello, clock, unknown, bad_param, samples, seen, again) = r.unwrap();
    assert_eq!(hello.lang, "python");
    let names: Vec<&str> = hello.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(
        names,
        ["spin", "empty", "vanished", "jit", "failing", "levels", "fades"]
    );
    assert_eq!(hello.kernels[0].params[0].name, "n");
    assert_eq!(hello.kernels[0].params[0].default, "200");
    assert!(
        clock.resolution_ns > 0.0 && clock.cost_ns > 0.0,
        "{clock:?}"
    );
    assert!(unknown.unwrap_err().contains("unknown kernel nosuch"));
    assert!(bad_param.unwrap_err().contains("unknown parameter nope"));
    assert!(again.is_err(), "teardown with nothing set up is an error");
    assert_eq!(samples.len(), 4);
    assert_eq!(seen, 4);
    for s in &samples {
        assert_eq!(s.loops, 7);
        assert!(s.ns > 0);
        assert_eq!(s.items, Some(350));
        assert_eq!(s.metrics.get("checksum"), Some(&1225.0));
        assert!(s.cpu_ns.is_some());
    }
    assert!(m.succeeded(), "{m:?}");
    assert!(
        m.cpu() > Duration::ZERO,
        "the invocation's CPU time is accounted"
    );
}

/// A sample of other loops than asked breaks the protocol, unless the worker said
/// `loops=approximate` in its hello (a harness that picks its own counts: Google Benchmark
/// before 1.8, Criterion.rs, pytest-benchmark); then it is read by its own count.
#[test]
fn samples_of_other_loops_only_from_an_approximate_worker() {
    let ex = executor();
    let cancel = AtomicBool::new(false);
    let talk = |w: &mut worker::Worker| {
        let hello = w.hello(Duration::from_secs(30))?;
        w.setup("empty", &Default::default())?.expect("setup");
        let s = w.run(7, 2, |_| {})?;
        Ok((hello.approximate_loops, s))
    };
    let (_, r) = worker::invoke(
        &ex,
        &spec("other-loops"),
        Duration::from_secs(10),
        &cancel,
        talk,
    )
    .unwrap();
    let e = r.unwrap_err().to_string();
    assert!(e.contains("a sample of 8 loops where 7 were asked"), "{e}");
    let (_, r) = worker::invoke(
        &ex,
        &spec("other-loops,approximate"),
        Duration::from_secs(10),
        &cancel,
        talk,
    )
    .unwrap();
    let (approximate, s) = r.unwrap();
    assert!(approximate);
    let s = s.expect("run");
    assert_eq!(s.iter().map(|s| s.loops).collect::<Vec<_>>(), [8, 8]);
}

/// Runs a conversation against a misbehaving worker; returns the error and the time it took.
fn failing(mode: &str, limit: Duration) -> (WorkerError, Duration) {
    let ex = executor();
    let cancel = AtomicBool::new(false);
    let t = Instant::now();
    let (m, r) = worker::invoke(&ex, &spec(mode), limit, &cancel, |w| {
        w.hello(limit)?;
        w.setup("spin", &Default::default())?.expect("setup");
        w.run(3, 2, |_| {})?.expect("run");
        w.teardown()?.expect("teardown");
        w.exit()
    })
    .unwrap();
    let e = r.expect_err(mode);
    assert!(!m.succeeded() || mode.is_empty(), "{mode}: {m:?}");
    let text = e.to_string();
    assert!(!text.contains('\n'), "{mode}: one line: {text}");
    (e, t.elapsed())
}

#[test]
fn a_crash_is_a_closed_connection() {
    let (e, _) = failing("crash-run", Duration::from_secs(10));
    assert!(matches!(e, WorkerError::Closed { .. }), "{e}");
    assert!(e.to_string().contains("a sample of 'run'"), "{e}");
}

#[test]
fn a_hang_is_cut_at_the_limit_and_the_tree_killed() {
    let (e, took) = failing("hang-setup,child", Duration::from_millis(800));
    assert!(matches!(e, WorkerError::Timeout { .. }), "{e}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    let left = common::survivors("317.25");
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_silent_start_is_cut_too() {
    let (e, took) = failing("hang-start", Duration::from_millis(800));
    assert!(e.to_string().contains("'hello'"), "{e}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

#[test]
fn garbage_version_and_long_lines_break_the_protocol() {
    let (e, _) = failing("garbage", Duration::from_secs(10));
    assert!(
        e.to_string()
            .starts_with("worker broke the protocol: 'Segmentation fault"),
        "{e}"
    );
    let (e, _) = failing("version2", Duration::from_secs(10));
    assert_eq!(
        e.to_string(),
        "worker speaks protocol 2; this tare speaks protocol 1"
    );
    let (e, _) = failing("long-line", Duration::from_secs(10));
    assert!(e.to_string().contains("longer than 65536 bytes"), "{e}");
}

#[test]
fn chatter_on_stdout_is_not_the_protocol() {
    let ex = executor();
    let cancel = AtomicBool::new(false);
    let (_, r) = worker::invoke(
        &ex,
        &spec("stdout"),
        Duration::from_secs(10),
        &cancel,
        |w| {
            let h = w.hello(Duration::from_secs(30))?;
            w.exit()?;
            Ok(h)
        },
    )
    .unwrap();
    assert_eq!(r.unwrap().kernels.len(), 7);
}

/// CPU time of the calling thread (the master's side of the conversation runs on it).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into `ts`, which lives for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The protocol's cost per sample: `run loops=1 reps=K` against the same K samples' own
/// time. Printed (the number the docs quote); asserted only loosely (a busy 2-core VM).
#[test]
fn round_trip_per_sample() {
    let ex = executor();
    let cancel = AtomicBool::new(false);
    let k = 3000u64;
    let (_, r) = worker::invoke(&ex, &spec(""), Duration::from_secs(30), &cancel, |w| {
        w.hello(Duration::from_secs(30))?;
        w.setup("empty", &Default::default())?.expect("setup");
        // Warm the path once.
        w.run(1, 100, |_| {})?.expect("run");
        let mut best_stream = f64::INFINITY;
        let mut best_single = f64::INFINITY;
        let mut best_master = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            let c = thread_cpu_ns();
            let s = w.run(1, k, |_| {})?.expect("run");
            best_master = best_master.min((thread_cpu_ns() - c) as f64 / k as f64);
            let inside: u64 = s.iter().map(|s| s.ns).sum();
            let per = (t.elapsed().as_nanos() as f64 - inside as f64) / k as f64;
            best_stream = best_stream.min(per);
            let t = Instant::now();
            for _ in 0..300 {
                w.run(1, 1, |_| {})?.expect("run");
            }
            best_single = best_single.min(t.elapsed().as_nanos() as f64 / 300.0);
        }
        w.teardown()?.expect("teardown");
        w.exit()?;
        Ok((best_stream, best_single, best_master))
    })
    .unwrap();
    let (stream, single, master) = r.unwrap();
    eprintln!(
        "protocol cost with the Python fake worker: {:.1} µs per streamed sample (reps={k}), {:.1} µs per one-sample request round trip; the master's own CPU {:.2} µs per sample",
        stream / 1e3,
        single / 1e3,
        master / 1e3
    );
    assert!(stream > 0.0 && stream < 5e6, "{stream}");
    assert!(single > 0.0 && single < 5e7, "{single}");
}

/// The greeting of a worker that stops after its hello, or trickles kernels without end, is cut
/// at one `--start-timeout` deadline (not a fresh limit per line), the error names that option,
/// and the worker's tree is killed (issue 23).
#[test]
fn a_greeting_that_stops_or_never_ends_is_cut_at_the_start_deadline() {
    for mode in ["hang-start", "hang-greeting", "trickle"] {
        let ex = executor();
        let cancel = AtomicBool::new(false);
        let t = Instant::now();
        // A long per-line limit: only the start deadline (1.5 s) may end these.
        let (_, r) = worker::invoke(&ex, &spec(mode), Duration::from_secs(120), &cancel, |w| {
            w.hello(Duration::from_millis(1500))
        })
        .unwrap();
        let took = t.elapsed();
        let e = r.expect_err(mode);
        assert!(matches!(e, WorkerError::Timeout { .. }), "{mode}: {e}");
        assert!(e.to_string().contains("--start-timeout"), "{mode}: {e}");
        assert!(took < Duration::from_secs(20), "{mode}: took {took:?}");
    }
    // Kernels announced as fast as the worker can: cut at the bound, not by memory.
    let ex = executor();
    let cancel = AtomicBool::new(false);
    let (_, r) = worker::invoke(
        &ex,
        &spec("endless"),
        Duration::from_secs(120),
        &cancel,
        |w| w.hello(Duration::from_secs(120)),
    )
    .unwrap();
    let e = r.expect_err("endless");
    assert!(
        e.to_string().contains("more than 10000 kernels"),
        "endless: {e}"
    );
}

/// A worker for the points docs/protocol.md settles: a `lang` beyond the seven, a clock whose
/// resolution is not known (`resolution_ns=0`), and a `done` sent after an `error` (which the
/// page says breaks the protocol: nothing follows an `error`).
const ODD_WORKER: &str = r#"#!/usr/bin/env python3
import os, socket
sock = socket.socket(fileno=int(os.environ["TARE_WORKER_FD"]))
r = sock.makefile("r", encoding="utf-8", newline="\n")
w = sock.makefile("w", encoding="utf-8", newline="\n")
def say(line):
    w.write(line + "\n"); w.flush()
say("hello protocol=1 client=odd version=0 lang=perl")
say("kernel name=k")
say("ready")
for line in r:
    verb = line.split()[0]
    if verb == "clock":
        say("clock resolution_ns=0 cost_ns=20")
    elif verb == "setup":
        say("ok")
    elif verb == "run":
        say("error message=boom")
        say("done")
    elif verb == "teardown":
        say("ok")
    elif verb == "exit":
        say("bye")
        break
"#;

#[test]
fn any_lang_unknown_resolution_and_nothing_after_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("odd_worker.py");
    std::fs::write(&script, ODD_WORKER).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ex = executor();
    let cancel = AtomicBool::new(false);
    let spec = RunSpec::new([script.to_str().unwrap()]);
    let (_, r) = worker::invoke(&ex, &spec, Duration::from_secs(10), &cancel, |w| {
        let hello = w.hello(Duration::from_secs(30))?;
        let clock = w.clock()?.expect("clock");
        w.setup("k", &Default::default())?.expect("setup");
        let run = w.run(1, 1, |_| {})?;
        // The `done` after the `error` is read as the reply to `teardown`.
        let torn = w.teardown();
        Ok((hello, clock, run, torn))
    })
    .unwrap();
    let (hello, clock, run, torn) = r.unwrap();
    assert_eq!(hello.lang, "perl");
    assert_eq!(clock.resolution_ns, 0.0);
    assert_eq!(clock.cost_ns, 20.0);
    assert_eq!(run.unwrap_err(), "boom");
    let e = torn.expect_err("a done after an error breaks the protocol");
    assert!(e.to_string().contains("done"), "{e}");
}

/// A worker that announces kernel `k` with the parameter line in `$PARAM_LINE`, then stops.
const PARAM_WORKER: &str = r#"#!/usr/bin/env python3
import os, socket
sock = socket.socket(fileno=int(os.environ["TARE_WORKER_FD"]))
w = sock.makefile("w", encoding="utf-8", newline="\n")
for line in ["hello protocol=1 client=p version=0 lang=c", "kernel name=k",
             os.environ["PARAM_LINE"], "ready"]:
    w.write(line + "\n"); w.flush()
sock.makefile("r").read()
"#;

/// `values=` on a `param` line (docs/protocol.md): the worker's own list of a parameter's
/// values, read in order; an empty value breaks the protocol in one line naming it.
#[test]
fn a_parameter_may_list_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("param_worker.py");
    std::fs::write(&script, PARAM_WORKER).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hello = |line: &str| {
        let ex = executor();
        let cancel = AtomicBool::new(false);
        let mut spec = RunSpec::new([script.to_str().unwrap()]);
        spec.env.push(("PARAM_LINE".into(), line.into()));
        let (_, r) = worker::invoke(&ex, &spec, Duration::from_secs(10), &cancel, |w| {
            w.hello(Duration::from_secs(30))
        })
        .unwrap();
        r
    };
    let h = hello("param kernel=k name=size default=256 values=256,4096,64").unwrap();
    let p = &h.kernels[0].params[0];
    assert_eq!((p.name.as_str(), p.default.as_str()), ("size", "256"));
    assert_eq!(p.values, ["256", "4096", "64"]);
    let h = hello("param kernel=k name=size default=256").unwrap();
    assert!(h.kernels[0].params[0].values.is_empty());
    let e = hello("param kernel=k name=size default=1 values=1,,2").unwrap_err();
    assert!(
        e.to_string()
            .contains("values of parameter 'size' must be up to 10000 non-empty values"),
        "{e}"
    );
}
