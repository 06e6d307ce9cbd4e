//! A fake tare master: starts real worker processes (this crate's examples test_worker and
//! blur) with TARE_WORKER_FD on one end of a socketpair and checks every reply; also the
//! standalone mode.
use std::io::{BufRead, BufReader, Write};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tare_worker::percent_decode;

/// target/<profile>/examples/<name>, next to this test binary's deps directory. `cargo test`
/// builds the examples first; `cargo test --test fake_master` alone does not, so a binary older
/// than the sources fails here instead of testing stale code.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples").join(name);
    let built = std::fs::metadata(&path).and_then(|m| m.modified()).unwrap_or_else(|_| {
        panic!(
            "{} is missing: run `cargo test` (it builds the examples)",
            path.display()
        )
    });
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec![root.join("src/lib.rs"), root.join(format!("examples/{name}.rs"))];
    if name == "blur" {
        sources.push(root.join("../../examples/kernels/blur/rust/src/main.rs"));
    }
    for src in sources {
        let modified = std::fs::metadata(&src).and_then(|m| m.modified()).unwrap();
        assert!(
            modified <= built,
            "{} is older than {}: run `cargo test` or `cargo build --examples` first",
            path.display(),
            src.display()
        );
    }
    path
}

struct Worker {
    child: Child,
    out: UnixStream,
    lines: BufReader<UnixStream>,
}

impl Worker {
    fn start(name: &str) -> Worker {
        let (ours, theirs) = UnixStream::pair().unwrap();
        ours.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let fd = theirs.as_raw_fd();
        let mut cmd = Command::new(example(name));
        cmd.env("TARE_WORKER_FD", fd.to_string())
            .env("TEST_FD", fd.to_string())
            .stdout(Stdio::null());
        // SAFETY: between fork and exec only fcntl (async-signal-safe) on an fd we own.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        drop(theirs);
        Worker {
            child,
            out: ours.try_clone().unwrap(),
            lines: BufReader::new(ours),
        }
    }
    fn next(&mut self) -> String {
        let mut s = String::new();
        match self.lines.read_line(&mut s) {
            Ok(0) => "(EOF)".into(),
            Ok(_) => s.trim_end_matches('\n').to_string(),
            Err(e) => format!("(error: {e})"),
        }
    }
    fn say(&mut self, s: &str) {
        self.out.write_all(s.as_bytes()).unwrap();
    }
    fn skip_hello(&mut self) -> Vec<String> {
        let mut v = Vec::new();
        loop {
            let l = self.next();
            let end = l == "ready" || l.starts_with('(');
            v.push(l);
            if end {
                return v;
            }
        }
    }
    fn error_of(&mut self, request: &str) -> String {
        self.say(request);
        let l = self.next();
        assert!(l.starts_with("error message="), "{request:?} should fail: {l}");
        get(&l, "message")
    }
    fn wait(&mut self) -> i32 {
        // EOF for the worker: our end is shut down in both directions.
        let _ = self.out.shutdown(std::net::Shutdown::Both);
        for _ in 0..2000 {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code().unwrap_or(-1);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        -1
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(line: &str, key: &str) -> String {
    for part in line.split(' ').skip(1) {
        if let Some((k, v)) = part.split_once('=') {
            if k == key {
                return String::from_utf8(percent_decode(v).expect("valid encoding")).unwrap();
            }
        }
    }
    "(none)".into()
}

#[test]
fn hello_announces_rust_and_every_kernel() {
    let mut w = Worker::start("test_worker");
    let h = w.skip_hello();
    assert_eq!(
        h[0],
        format!(
            "hello protocol=1 client=tare-worker-rust version={} lang=rust",
            tare_worker::VERSION
        )
    );
    assert_eq!(h[1], "kernel name=counter doc=counts%20loops%20%26%20inits:%20100%25");
    assert_eq!(
        h[2..5],
        [
            "param kernel=counter name=n default=3",
            "param kernel=counter name=scale default=0.5",
            "param kernel=counter name=label default=x"
        ]
    );
    assert_eq!(h.iter().filter(|l| l.starts_with("kernel ")).count(), 9);
    assert!(h.contains(&"kernel name=threads threads=3".to_string()), "{h:?}");
    assert_eq!(h.last().unwrap(), "ready");
    w.say("clock\n");
    let l = w.next();
    let (res, cost): (f64, f64) = (
        get(&l, "resolution_ns").parse().unwrap(),
        get(&l, "cost_ns").parse().unwrap(),
    );
    assert!(res > 0.0 && res < 1e6 && cost > 0.0 && cost < 1e5, "{l}");
    w.say("exit\n");
    assert_eq!(w.next(), "bye");
    assert_eq!(w.next(), "(EOF)");
    assert_eq!(w.wait(), 0);
}

#[test]
fn out_of_order_and_malformed_requests_are_errors() {
    let mut w = Worker::start("test_worker");
    w.skip_hello();
    assert!(w.error_of("setup kernel=nope\n").contains("unknown kernel"));
    assert!(w
        .error_of("setup kernel=counter p.zz=1\n")
        .contains("no parameter 'zz'"));
    assert!(w.error_of("setup\n").contains("kernel="));
    assert!(w.error_of("run loops=1 reps=1\n").contains("no kernel set up"));
    assert!(w.error_of("teardown\n").contains("no kernel set up"));
    assert!(w.error_of("frobnicate x=1\n").contains("unknown request"));
    assert!(w
        .error_of("setup kernel=counter kernel=counter\n")
        .contains("repeated key"));
    assert!(w.error_of("setup kernel=co%zunt\n").contains("percent"));
    assert!(w.error_of("setup kernel\n").contains("key=value"));
    assert!(w.error_of("\n").contains("empty"));
    let big = format!("clock x={}\n", "a".repeat(70_000));
    assert!(w.error_of(&big).contains("longer than"));
    w.say("clock\n");
    assert!(w.next().starts_with("clock "));
    // 65536 bytes with the newline: the limit, accepted; one more byte is refused
    let edge = format!("clock x={}", "a".repeat(65_536 - 9));
    w.say(&format!("{edge}\n"));
    assert!(w.next().starts_with("clock "));
    assert!(w.error_of(&format!("{edge}a\n")).contains("longer than"));
}

#[test]
fn setup_run_teardown_with_init_metrics_counts_and_drop() {
    let mut w = Worker::start("test_worker");
    w.skip_hello();
    w.say("setup kernel=counter p.n=4 p.label=a%20b%c3%A9 future=field\n");
    assert_eq!(w.next(), "ok");
    assert!(w.error_of("setup kernel=counter\n").contains("already set up"));
    assert!(w.error_of("run loops=0 reps=1\n").contains("loops"));
    assert!(w.error_of("run loops=5\n").contains("reps"));
    w.say("run loops=5 reps=3 extra=1\n");
    for r in 1..=3 {
        let l = w.next();
        assert!(l.starts_with("sample loops=5 ns="), "{l}");
        assert_eq!(get(&l, "m.inits"), r.to_string(), "init once per repetition: {l}");
        assert!(get(&l, "cpu_ns").parse::<u64>().is_ok(), "cpu_ns: {l}");
        assert_eq!(get(&l, "m.loops"), (5 * r).to_string(), "exactly N loops: {l}");
        assert_eq!(
            (get(&l, "items").as_str(), get(&l, "bytes").as_str()),
            ("20", "25"),
            "{l}"
        );
        assert_eq!(get(&l, "m.labellen"), "5", "{l}");
        assert_eq!(get(&l, "m.live"), "1", "{l}");
        assert_eq!(get(&l, "m.env_set"), "0", "TARE_WORKER_FD removed: {l}");
        assert_eq!(
            get(&l, "m.child_sockets"),
            "0",
            "a child of the worker inherits no socket: {l}"
        );
    }
    assert_eq!(w.next(), "done");
    w.say("teardown\nsetup kernel=live\nrun loops=1 reps=1\n");
    assert_eq!(w.next(), "ok");
    assert_eq!(w.next(), "ok");
    assert_eq!(get(&w.next(), "m.live"), "0", "the state was dropped at teardown");
    assert_eq!(w.next(), "done");
}

#[test]
fn body_runs_exactly_loops_times_reps() {
    let mut w = Worker::start("test_worker");
    w.skip_hello();
    w.say("setup kernel=body p.expect=21\nrun loops=7 reps=3\nteardown\n");
    assert_eq!(w.next(), "ok");
    for _ in 0..3 {
        assert!(w.next().starts_with("sample loops=7 "));
    }
    assert_eq!(w.next(), "done");
    assert_eq!(w.next(), "ok");
    w.say("setup kernel=body p.expect=1\nrun loops=2 reps=1\n");
    assert_eq!(w.next(), "ok");
    w.next();
    w.next();
    assert!(w.error_of("teardown\n").contains("ran 2 times"));
}

#[test]
fn the_last_sample_and_done_come_in_one_write() {
    use std::io::Read;
    let mut w = Worker::start("test_worker");
    w.skip_hello();
    w.say("setup kernel=body p.expect=1\n");
    assert_eq!(w.next(), "ok");
    assert!(w.lines.buffer().is_empty(), "nothing pending before the run");
    w.say("run loops=1 reps=1\n");
    let mut buf = vec![0u8; 4096];
    let n = w.lines.get_mut().read(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(
        text.starts_with("sample loops=1 ") && text.ends_with("\ndone\n") && text.lines().count() == 2,
        "one read of the reply: {text:?}"
    );
    w.say("teardown\n");
    assert_eq!(w.next(), "ok");
}

#[test]
fn per_loop_input_is_fresh_for_every_loop() {
    let mut w = Worker::start("test_worker");
    w.skip_hello();
    // Batches of 3: 3+2 loops a sample, every one on an input of its own.
    w.say("setup kernel=each p.expect=10\nrun loops=5 reps=2\nteardown\n");
    assert_eq!(w.next(), "ok");
    for _ in 0..2 {
        let l = w.next();
        assert!(l.starts_with("sample loops=5 ns="), "{l}");
    }
    assert_eq!(w.next(), "done");
    assert_eq!(w.next(), "ok", "teardown checks loops, inits and stale inputs");
    w.say("setup kernel=each p.expect=4\nrun loops=2 reps=1\n");
    assert_eq!(w.next(), "ok");
    w.next();
    w.next();
    assert_eq!(w.error_of("teardown\n"), "loops 2 inits 2 stale 0");
}

#[test]
fn a_threaded_kernel_runs_the_loops_on_every_thread() {
    let mut w = Worker::start("test_worker");
    w.skip_hello();
    w.say("setup kernel=threads p.expect=8\nrun loops=4 reps=2\nteardown\n");
    assert_eq!(w.next(), "ok");
    for _ in 0..2 {
        let l = w.next();
        assert!(l.starts_with("sample loops=4 ns="), "{l}");
    }
    assert_eq!(w.next(), "done");
    assert_eq!(w.next(), "ok", "every thread ran 4 loops a sample");
}

#[test]
fn failures_and_panics_are_one_line_errors_and_the_worker_stays_usable() {
    let mut w = Worker::start("test_worker");
    w.skip_hello();
    assert_eq!(w.error_of("setup kernel=setup_fails\n"), "no setup today second line");
    assert_eq!(w.error_of("setup kernel=setup_panics\n"), "panic: setup exploded");
    assert!(w
        .error_of("setup kernel=counter p.n=x\n")
        .contains("n=x of kernel counter is not an integer"));
    assert!(w
        .error_of("setup kernel=counter p.scale=inf\n")
        .contains("not a finite number"));
    w.say("setup kernel=run_panics\nrun loops=2 reps=1\n");
    assert_eq!(w.next(), "ok");
    assert!(w.next().starts_with("sample loops=2 "));
    assert_eq!(w.next(), "done");
    w.say("run loops=3 reps=2\n");
    assert_eq!(w.next(), "error message=panic:%20three%20is%20a%20bad%20number");
    w.say("teardown\nsetup kernel=teardown_fails\n");
    assert_eq!(w.next(), "ok");
    assert_eq!(w.next(), "ok");
    assert_eq!(w.error_of("teardown\n"), "teardown refused");
    assert!(w.error_of("teardown\n").contains("no kernel set up"));
}

#[test]
fn eof_ends_the_worker_with_status_zero() {
    let mut w = Worker::start("test_worker");
    w.skip_hello();
    w.say("setup kernel=counter\n");
    assert_eq!(w.next(), "ok");
    assert_eq!(w.wait(), 0);
}

#[test]
fn a_bad_fd_is_a_one_line_error() {
    let out = Command::new(example("test_worker"))
        .env("TARE_WORKER_FD", "99")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("tare-worker: error: TARE_WORKER_FD=99 ") && err.lines().count() == 1,
        "{err}"
    );
}

fn reference_checksum(size: u32, radius: u32) -> f64 {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels/blur/CHECKSUMS");
    let text = std::fs::read_to_string(&path).unwrap();
    for l in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f[0] == size.to_string() && f[1] == radius.to_string() {
            return f[2].parse().unwrap();
        }
    }
    panic!("{} has no size={size} radius={radius}", path.display());
}

#[test]
fn blur_example_matches_the_reference_checksum() {
    let mut w = Worker::start("blur");
    w.skip_hello();
    let want = reference_checksum(64, 3);
    w.say("setup kernel=blur p.size=64 p.radius=3\nrun loops=2 reps=2\n");
    assert_eq!(w.next(), "ok");
    for _ in 0..2 {
        let l = w.next();
        let got: f64 = get(&l, "m.checksum").parse().unwrap();
        assert!((got - want).abs() <= 1e-9 * want.abs(), "{got} vs {want}");
        assert_eq!(get(&l, "bytes"), "65536");
    }
    assert_eq!(w.next(), "done");
    w.say("teardown\n");
    assert_eq!(w.next(), "ok");
    assert!(w.error_of("setup kernel=blur p.size=0\n").contains("size=0"));
}

fn standalone(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(example("test_worker"))
        .args(args)
        .env_remove("TARE_WORKER_FD")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn standalone_mode_lists_filters_and_measures() {
    let (code, out, _) = standalone(&["--list"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("counter  # counts loops & inits: 100%\n  -p n=3\n"),
        "{out}"
    );
    let (code, out, err) = standalone(&["--filter", "^coun", "-p", "n=1000", "--param=label=yy"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("counter n=1000 scale=0.5 label=yy "), "{out}");
    assert!(
        out.contains(" ns/loop  ") && out.contains("B/s  (N=") && out.ends_with(", 10 samples)\n"),
        "{out}"
    );
    for bad in [
        &["--frob"][..],
        &["-p", "nope=1"],
        &["--filter", "("],
        &["--filter", "setup_fails"],
    ] {
        let (code, _, err) = standalone(bad);
        assert_eq!(code, 1, "{bad:?}");
        assert!(
            err.starts_with("tare-worker: error: ") && err.lines().count() == 1,
            "{bad:?}: {err}"
        );
    }
}
