//! The Rust client of the tare worker protocol, version 1 (docs/protocol.md in the tare
//! repository).
//!
//! A program registers kernels (a name, parameters with defaults, and closures for the stages)
//! and calls [`Worker::main`]. Started by `tare kernels` (`TARE_WORKER_FD` set) it obeys the
//! master over that socket; run directly it measures each kernel quickly and prints one line
//! per kernel (standalone mode, as Google Benchmark programs do).
//!
//! ```no_run
//! use tare_worker::{black_box, Kernel, Worker};
//!
//! Worker::new()
//!     .kernel(
//!         Kernel::new("sum")
//!             .param("n", 1000)
//!             .setup(|s| {
//!                 let n = s.int("n")?;
//!                 s.items_per_loop(n as f64);
//!                 Ok((0..n).collect::<Vec<i64>>())
//!             })
//!             .run(|v, sample, loops| {
//!                 let mut total = 0;
//!                 for _ in 0..loops {
//!                     total = black_box(v.iter().sum::<i64>());
//!                 }
//!                 sample.metric("total", total as f64);
//!             }),
//!     )
//!     .kernel(Kernel::new("empty").body(|_| {
//!         black_box(());
//!     }))
//!     .main()
//! ```
//!
//! The library holds no policy (loops, samples, warm-up are tare's), never writes protocol text
//! to stdout, and turns a panic in a stage into an `error` reply. Samples carry `cpu_ns` from
//! the process CPU clock (libc's `clock_gettime`). The protocol is a few
//! line-oriented verbs, so the codec is hand-written here rather than pulled in.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::io::FromRawFd;
use std::os::unix::net::UnixStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

/// The do-not-optimize helper: `std::hint::black_box`, re-exported. It returns its argument,
/// and the compiler must assume the value is used in any way possible, so the computation that
/// produced it is kept.
pub use std::hint::black_box;

/// This library's version, announced in `hello`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The protocol's line limit, newline included.
pub const MAX_LINE: usize = 65_536;

/// An error from a stage: anything that converts into a boxed error (a `String`, an `&str`,
/// any `std::error::Error`), so `?` and `.into()` work.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// What the setup stage sees: parameters (defaults filled in) and the throughput counts.
pub struct Setup<'a> {
    kernel: &'a str,
    params: &'a [(String, String)],
    bytes_per_loop: f64,
    items_per_loop: f64,
}

impl Setup<'_> {
    /// The parameter's value as text; an error when the kernel declared no such parameter.
    pub fn str(&self, name: &str) -> Result<&str, Error> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| format!("kernel {} has no parameter '{name}'", self.kernel).into())
    }
    /// The parameter as an integer, or an error naming the value.
    pub fn int(&self, name: &str) -> Result<i64, Error> {
        let v = self.str(name)?;
        v.parse()
            .map_err(|_| format!("parameter {name}={v} of kernel {} is not an integer", self.kernel).into())
    }
    /// The parameter as a finite float, or an error naming the value.
    pub fn float(&self, name: &str) -> Result<f64, Error> {
        let v = self.str(name)?;
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(format!("parameter {name}={v} of kernel {} is not a finite number", self.kernel).into()),
        }
    }
    /// Bytes one loop processes; samples carry `bytes` = this × loops.
    pub fn bytes_per_loop(&mut self, n: f64) {
        self.bytes_per_loop = n;
    }
    /// Items one loop processes; samples carry `items` = this × loops.
    pub fn items_per_loop(&mut self, n: f64) {
        self.items_per_loop = n;
    }
}

/// What init and run see: the metrics of the current sample.
#[derive(Default)]
pub struct Sample {
    metrics: Vec<(String, f64)>,
}

impl Sample {
    /// Records a named metric for this sample (sent as `m.<name>`). Names must match
    /// `[a-z0-9_.-]+`; non-finite values are dropped (the protocol has no NaN).
    pub fn metric(&mut self, name: &str, value: f64) {
        if !valid_key(name) || !value.is_finite() {
            return;
        }
        match self.metrics.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.metrics.push((name.to_string(), value)),
        }
    }
}

type SetupFn<S> = Box<dyn FnMut(&mut Setup) -> Result<S, Error>>;
type InitFn<S> = Box<dyn FnMut(&mut S, &mut Sample)>;
type RunFn<S> = Box<dyn FnMut(&mut S, &mut Sample, u64)>;
type TeardownFn<S> = Box<dyn FnMut(S) -> Result<(), Error>>;
/// A repetition that times itself (per-loop input in batches, or threads): `loops` loops;
/// returns (ns, cpu ns).
type EachFn<S> = Box<dyn FnMut(&mut S, u64) -> (u64, Option<u64>)>;

/// A kernel under construction: `Kernel::new(name)`, then `param`s, then `setup` (which fixes
/// the state type `S`), then `init`, `run` or `body`, `teardown`.
pub struct Kernel<S> {
    name: String,
    doc: Option<String>,
    params: Vec<(String, String)>,
    setup: SetupFn<S>,
    init: Option<InitFn<S>>,
    run: Option<RunFn<S>>,
    each: Option<EachFn<S>>,
    threads: u32,
    teardown: Option<TeardownFn<S>>,
}

impl Kernel<()> {
    /// A kernel with no state (until `setup` gives it one).
    pub fn new(name: &str) -> Self {
        Kernel {
            name: name.to_string(),
            doc: None,
            params: Vec::new(),
            setup: Box::new(|_| Ok(())),
            init: None,
            run: None,
            each: None,
            threads: 1,
            teardown: None,
        }
    }
}

impl<S: 'static> Kernel<S> {
    /// One line describing the kernel (announced in `hello`, printed by `--list`).
    pub fn doc(mut self, doc: &str) -> Self {
        self.doc = Some(doc.to_string());
        self
    }
    /// A parameter and its default (any `Display`: `256`, `0.5`, `"fast"`).
    pub fn param(mut self, name: &str, default: impl fmt::Display) -> Self {
        self.params.push((name.to_string(), default.to_string()));
        self
    }
    /// The setup stage: parameters → state `T`, untimed. Call it before init/run/body/teardown
    /// (it replaces them: they are typed by the state).
    pub fn setup<T: 'static>(self, f: impl FnMut(&mut Setup) -> Result<T, Error> + 'static) -> Kernel<T> {
        Kernel {
            name: self.name,
            doc: self.doc,
            params: self.params,
            setup: Box::new(f),
            init: None,
            run: None,
            each: None,
            threads: 1,
            teardown: None,
        }
    }
    /// Before each repetition, untimed.
    pub fn init(mut self, f: impl FnMut(&mut S, &mut Sample) + 'static) -> Self {
        self.init = Some(Box::new(f));
        self
    }
    /// The timed region: the closure runs its own loop `loops` times.
    pub fn run(mut self, f: impl FnMut(&mut S, &mut Sample, u64) + 'static) -> Self {
        self.run = Some(Box::new(f));
        self
    }
    /// Convenience: the body of one loop; the client loops (the closure is inlined into the
    /// loop, so the per-loop cost is the body's own).
    pub fn body(mut self, mut f: impl FnMut(&mut S) + 'static) -> Self {
        self.run = Some(Box::new(move |s, _, loops| {
            for _ in 0..loops {
                f(s);
            }
        }));
        self
    }
    /// Per-loop input, untimed (Criterion's `iter_batched_ref`): `init(&mut S)` makes one
    /// loop's input, `body(&mut S, &mut I)` is the loop on it. The client makes `batch` inputs,
    /// reads the clock, runs the body on each, reads the clock; a sample's time is the sum of
    /// its batches' (the clock read once a batch, not once a loop; inputs are dropped untimed).
    /// Instead of `run`/`body`, for a body that changes its input (sorts in place), where
    /// `init` (once per sample) would leave loops 2..N what loop 1 left.
    pub fn each<I: 'static>(
        mut self,
        batch: usize,
        mut init: impl FnMut(&mut S) -> I + 'static,
        mut body: impl FnMut(&mut S, &mut I) + 'static,
    ) -> Self {
        let batch = batch.max(1);
        let mut inputs: Vec<I> = Vec::with_capacity(batch);
        self.each = Some(Box::new(move |s, loops| {
            let (mut ns, mut cpu) = (0u64, Some(0u64));
            let mut done = 0u64;
            while done < loops {
                let b = batch.min((loops - done) as usize);
                inputs.clear();
                inputs.extend((0..b).map(|_| init(s)));
                let c0 = cpu_ns();
                let t0 = Instant::now();
                tare_timed_batch(&mut |i| body(s, &mut inputs[i]), b);
                ns += t0.elapsed().as_nanos() as u64;
                cpu = match (cpu, c0, cpu_ns()) {
                    (Some(t), Some(c0), Some(c1)) => Some(t + c1.saturating_sub(c0)),
                    _ => None,
                };
                done += b as u64;
            }
            inputs.clear();
            (ns, cpu)
        }));
        self
    }
    /// A threaded kernel (Google Benchmark's `->Threads`, JMH's `@Threads`), instead of
    /// `run`/`body`: `f(&S, thread, loops)` runs on `threads` threads at once, each doing the
    /// sample's `loops` loops (`thread` is 0..threads-1). The threads are started before the
    /// clock and released together by a barrier; the sample's time is from the release to the
    /// last thread's end, so the time per loop is per thread and tare reports the total
    /// throughput. The state is shared (`S: Sync`); `init` runs once per sample before them.
    pub fn threads(mut self, threads: u32, f: impl Fn(&S, u32, u64) + Send + Sync + 'static) -> Self
    where
        S: Sync,
    {
        let threads = threads.max(1);
        self.threads = threads;
        self.each = Some(Box::new(move |s, loops| {
            let s: &S = s;
            let start = std::sync::Barrier::new(threads as usize + 1);
            let finished = std::sync::atomic::AtomicU32::new(0);
            let last = std::sync::Mutex::new(None::<Instant>);
            let f = &f;
            let c0 = cpu_ns();
            let t0 = std::thread::scope(|scope| {
                for t in 0..threads {
                    let (start, finished, last) = (&start, &finished, &last);
                    scope.spawn(move || {
                        start.wait();
                        tare_timed_region(&mut |n| f(s, t, n), loops);
                        let end = Instant::now();
                        if finished.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1 == threads {
                            *last.lock().unwrap_or_else(|e| e.into_inner()) = Some(end);
                        }
                    });
                }
                start.wait();
                Instant::now()
            });
            let end = last.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or(t0);
            let ns = end.saturating_duration_since(t0).as_nanos() as u64;
            let cpu = cpu_ns().zip(c0).map(|(c1, c0)| c1.saturating_sub(c0));
            (ns, cpu)
        }));
        self
    }
    /// Finalize: gets the state by value (it is dropped afterwards in any case).
    pub fn teardown(mut self, f: impl FnMut(S) -> Result<(), Error> + 'static) -> Self {
        self.teardown = Some(Box::new(f));
        self
    }
}

/// The type-erased kernel the worker drives.
trait Erased {
    fn name(&self) -> &str;
    fn doc(&self) -> Option<&str>;
    fn params(&self) -> &[(String, String)];
    fn has_run(&self) -> bool;
    fn threads(&self) -> u32;
    /// Setup with all parameter values; returns the throughput counts.
    fn setup(&mut self, values: &[(String, String)]) -> Result<(f64, f64), String>;
    /// One repetition: init (untimed), the timed loop; returns elapsed ns and process CPU ns.
    fn rep(&mut self, loops: u64, sample: &mut Sample) -> Result<(u64, Option<u64>), String>;
    fn teardown(&mut self) -> Result<(), String>;
}

struct Live<S> {
    def: Kernel<S>,
    state: Option<S>,
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panic: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panic: {s}")
    } else {
        "panic with a non-text payload".to_string()
    }
}

/// The timed region of one repetition: the kernel's loop, `loops` times. Never inlined and
/// not mangled, so that `tare kernels --counters` can count instructions in it alone under
/// Valgrind's Callgrind (`--toggle-collect=tare_timed_region`, one dump at each return), not
/// in setup, init, clock reads or the protocol; as the C client's function of the same name.
#[no_mangle]
#[inline(never)]
pub fn tare_timed_region(run: &mut dyn FnMut(u64), loops: u64) {
    run(loops)
}

/// One batch of a per-loop kernel: the body on inputs 0..b. Never inlined, so the clock reads
/// around it stay where they are.
#[inline(never)]
fn tare_timed_batch(body: &mut dyn FnMut(usize), b: usize) {
    for i in 0..b {
        body(i)
    }
}

impl<S: 'static> Erased for Live<S> {
    fn name(&self) -> &str {
        &self.def.name
    }
    fn doc(&self) -> Option<&str> {
        self.def.doc.as_deref()
    }
    fn params(&self) -> &[(String, String)] {
        &self.def.params
    }
    fn has_run(&self) -> bool {
        self.def.run.is_some() || self.def.each.is_some()
    }
    fn threads(&self) -> u32 {
        self.def.threads
    }
    fn setup(&mut self, values: &[(String, String)]) -> Result<(f64, f64), String> {
        let mut ctx = Setup {
            kernel: &self.def.name,
            params: values,
            bytes_per_loop: 0.0,
            items_per_loop: 0.0,
        };
        let f = &mut self.def.setup;
        match catch_unwind(AssertUnwindSafe(|| f(&mut ctx))) {
            Ok(Ok(s)) => {
                self.state = Some(s);
                Ok((ctx.bytes_per_loop, ctx.items_per_loop))
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(p) => Err(panic_text(p)),
        }
    }
    fn rep(&mut self, loops: u64, sample: &mut Sample) -> Result<(u64, Option<u64>), String> {
        let state = self.state.as_mut().ok_or("no kernel set up")?;
        let init = &mut self.def.init;
        if let Some(each) = self.def.each.as_mut() {
            return catch_unwind(AssertUnwindSafe(|| {
                if let Some(i) = init.as_mut() {
                    i(state, sample);
                }
                each(state, loops)
            }))
            .map_err(panic_text);
        }
        let run = self
            .def
            .run
            .as_mut()
            .ok_or_else(|| format!("kernel {} has no run or body", self.def.name))?;
        catch_unwind(AssertUnwindSafe(|| {
            if let Some(i) = init.as_mut() {
                i(state, sample);
            }
            let c0 = cpu_ns();
            let t0 = Instant::now();
            tare_timed_region(&mut |n| run(state, sample, n), loops);
            let ns = t0.elapsed().as_nanos() as u64;
            let cpu = cpu_ns().zip(c0).map(|(c1, c0)| c1.saturating_sub(c0));
            (ns, cpu)
        }))
        .map_err(panic_text)
    }
    fn teardown(&mut self) -> Result<(), String> {
        let state = self.state.take().ok_or("teardown with no kernel set up")?;
        match self.def.teardown.as_mut() {
            None => Ok(()),
            Some(f) => match catch_unwind(AssertUnwindSafe(|| f(state))) {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(p) => Err(panic_text(p)),
            },
        }
    }
}

/// The program's kernels and the entry point.
#[derive(Default)]
pub struct Worker {
    kernels: Vec<Box<dyn Erased>>,
    client: String,
    lang: String,
}

fn valid_key(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_.-".contains(&c))
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || b"_./-".contains(&c))
}

/// Percent-encodes bytes: everything outside `A-Z a-z 0-9 - . _ ~ : / , +` becomes `%XX`.
pub fn percent_encode(value: &[u8]) -> String {
    let mut out = String::with_capacity(value.len());
    for &b in value {
        if b.is_ascii_alphanumeric() || b"-._~:/,+".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (either hex case); `None` on a bad escape.
pub fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let raw = text.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hex = raw.get(i + 1..i + 3)?;
            let s = std::str::from_utf8(hex).ok()?;
            if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(s, 16).ok()?);
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    Some(out)
}

/// A finite float in JSON number syntax (Rust's shortest round-trip `Display`; integers plain).
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// One protocol line from a verb and (key, value) fields.
fn line(verb: &str, fields: &[(&str, &str)]) -> String {
    let mut s = verb.to_string();
    for (k, v) in fields {
        s.push(' ');
        s.push_str(k);
        s.push('=');
        s.push_str(&percent_encode(v.as_bytes()));
    }
    s.push('\n');
    s
}

fn error_line(message: &str) -> String {
    let one: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    line("error", &[("message", &one)])
}

/// Decoded fields of a message, in order.
type Fields = Vec<(String, String)>;

/// Splits one request into its verb and decoded fields.
fn parse(text: &str) -> Result<(String, Fields), &'static str> {
    if text.is_empty() {
        return Err("empty line");
    }
    let mut parts = text.split(' ');
    let verb = parts.next().unwrap_or_default();
    if !valid_key(verb) {
        return Err("malformed verb");
    }
    let mut fields: Vec<(String, String)> = Vec::new();
    for part in parts {
        let (k, v) = part.split_once('=').ok_or("malformed field (expected key=value)")?;
        if !valid_key(k) {
            return Err("malformed field key");
        }
        if fields.iter().any(|(f, _)| f == k) {
            return Err("repeated key");
        }
        let v = percent_decode(v).ok_or("bad percent-encoding")?;
        let v = String::from_utf8(v).map_err(|_| "value is not UTF-8")?;
        fields.push((k.to_string(), v));
    }
    Ok((verb.to_string(), fields))
}

/// Process CPU time in ns (CLOCK_PROCESS_CPUTIME_ID), or None where the clock is unavailable.
fn cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// (resolution_ns, cost_ns) of `Instant`, measured now for about 10 ms.
pub fn clock_measure() -> (f64, f64) {
    let start = Instant::now();
    let mut reads = 0u64;
    let mut last = start;
    while last.duration_since(start).as_nanos() < 5_000_000 {
        for _ in 0..64 {
            last = black_box(Instant::now());
        }
        reads += 64;
    }
    let cost = last.duration_since(start).as_nanos() as f64 / reads as f64;
    let mut best = u128::MAX;
    let start = Instant::now();
    let mut prev = start;
    while prev.duration_since(start).as_nanos() < 5_000_000 {
        let now = Instant::now();
        let d = now.duration_since(prev).as_nanos();
        if d > 0 && d < best {
            best = d;
        }
        prev = now;
    }
    (if best == u128::MAX { 0.0 } else { best as f64 }, cost)
}

fn field<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn positive(fields: &[(String, String)], key: &str) -> Result<u64, String> {
    match field(fields, key).map(|v| (v, v.parse::<u64>())) {
        Some((v, Ok(n))) if n >= 1 && v.bytes().all(|c| c.is_ascii_digit()) => Ok(n),
        _ => Err(format!("run needs {key}=<integer >= 1>")),
    }
}

struct Active {
    index: usize,
    bytes_per_loop: f64,
    items_per_loop: f64,
}

impl Worker {
    /// A worker with no kernels yet.
    pub fn new() -> Self {
        Worker {
            kernels: Vec::new(),
            client: "tare-worker-rust".into(),
            lang: "rust".into(),
        }
    }

    /// Registers a kernel. An invalid or repeated name is a programming error: it panics with a
    /// message saying which.
    pub fn kernel<S: 'static>(mut self, k: Kernel<S>) -> Self {
        assert!(
            valid_name(&k.name),
            "kernel name '{}' must match [A-Za-z0-9_./-]+",
            k.name
        );
        assert!(
            self.kernels.iter().all(|e| e.name() != k.name),
            "kernel '{}' is registered twice",
            k.name
        );
        for (i, (p, _)) in k.params.iter().enumerate() {
            assert!(
                valid_name(p),
                "parameter '{p}' of kernel '{}' must match [A-Za-z0-9_./-]+",
                k.name
            );
            assert!(
                k.params[..i].iter().all(|(q, _)| q != p),
                "parameter '{p}' of kernel '{}' is declared twice",
                k.name
            );
        }
        self.kernels.push(Box::new(Live { def: k, state: None }));
        self
    }

    /// Worker mode when `TARE_WORKER_FD` is set, standalone mode otherwise; exits the process
    /// with the status (0, or 1 after a one-line error on stderr).
    pub fn main(self) -> ! {
        let code = self.run(std::env::args().skip(1).collect());
        std::process::exit(code)
    }

    /// Like [`Worker::main`] but returns the exit status.
    pub fn run(mut self, args: Vec<String>) -> i32 {
        if let Some(k) = self.kernels.iter().find(|k| !k.has_run()) {
            eprintln!(
                "tare-worker: error: kernel {} has neither run nor body; add .run(...) or .body(...)",
                k.name()
            );
            return 1;
        }
        match std::env::var("TARE_WORKER_FD") {
            Ok(fd) => self.worker(&fd),
            Err(_) => match self.standalone(&args) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!(
                        "tare-worker: error: {}",
                        e.split_whitespace().collect::<Vec<_>>().join(" ")
                    );
                    1
                }
            },
        }
    }

    fn open(fd: &str) -> Option<UnixStream> {
        let n: i32 = fd.parse().ok().filter(|n| *n >= 0)?;
        // An fd that is not open is rejected by fstat before we take ownership of it.
        std::fs::metadata(format!("/proc/self/fd/{n}")).ok()?;
        // SAFETY: the fd was handed to this process by tare for this purpose; nothing else in
        // the process owns it, and it was just checked to be open.
        let original = unsafe { UnixStream::from_raw_fd(n) };
        // try_clone duplicates with F_DUPFD_CLOEXEC: the copy is close-on-exec, so children of
        // the worker do not inherit it; the original (inheritable) fd is closed on drop.
        original.try_clone().ok()
    }

    fn worker(&mut self, fd: &str) -> i32 {
        let Some(stream) = Self::open(fd) else {
            eprintln!(
                "tare-worker: error: TARE_WORKER_FD={fd} is not an open socket; start this program with tare kernels, \
                 or unset TARE_WORKER_FD for standalone mode"
            );
            return 1;
        };
        std::env::remove_var("TARE_WORKER_FD");
        // Any I/O error means tare went away: exit 0 as at EOF.
        let _ = self.serve(stream);
        0
    }

    fn serve(&mut self, stream: UnixStream) -> std::io::Result<()> {
        let mut out = stream.try_clone()?;
        let mut reader = BufReader::new(stream);
        let mut hello = line(
            "hello",
            &[
                ("protocol", "1"),
                ("client", &self.client),
                ("version", VERSION),
                ("lang", &self.lang),
            ],
        );
        for k in &self.kernels {
            let mut fields = vec![("name", k.name())];
            if let Some(d) = k.doc() {
                fields.push(("doc", d));
            }
            let threads = k.threads().to_string();
            if k.threads() > 1 {
                fields.push(("threads", &threads));
            }
            hello.push_str(&line("kernel", &fields));
            for (p, d) in k.params() {
                hello.push_str(&line("param", &[("kernel", k.name()), ("name", p), ("default", d)]));
            }
        }
        hello.push_str("ready\n");
        out.write_all(hello.as_bytes())?;
        let mut active: Option<Active> = None;
        let mut buf = Vec::with_capacity(1024);
        loop {
            buf.clear();
            let n = reader.by_ref().take(MAX_LINE as u64).read_until(b'\n', &mut buf)?;
            if n == 0 || (buf.last() != Some(&b'\n') && n < MAX_LINE) {
                return Ok(()); // EOF (possibly inside a line): tare went away
            }
            if buf.last() != Some(&b'\n') {
                // Over the limit: discard up to the newline, then refuse.
                loop {
                    buf.clear();
                    let m = reader.by_ref().take(MAX_LINE as u64).read_until(b'\n', &mut buf)?;
                    if m == 0 {
                        return Ok(());
                    }
                    if buf.last() == Some(&b'\n') {
                        break;
                    }
                }
                out.write_all(error_line("request line longer than 65536 bytes").as_bytes())?;
                continue;
            }
            buf.pop();
            let parsed = std::str::from_utf8(&buf).map_err(|_| "not UTF-8").and_then(parse);
            let (verb, fields) = match parsed {
                Ok(p) => p,
                Err(e) => {
                    out.write_all(error_line(&format!("malformed request: {e}")).as_bytes())?;
                    continue;
                }
            };
            match verb.as_str() {
                "exit" => {
                    out.write_all(b"bye\n")?;
                    return Ok(());
                }
                "clock" => {
                    let (res, cost) = clock_measure();
                    let reply = line("clock", &[("resolution_ns", &number(res)), ("cost_ns", &number(cost))]);
                    out.write_all(reply.as_bytes())?;
                }
                "setup" => {
                    let reply = self.setup(&mut active, &fields);
                    out.write_all(reply.as_bytes())?;
                }
                "run" => self.run_request(&active, &fields, &mut out)?,
                "teardown" => {
                    let reply = match active.take() {
                        None => error_line("teardown with no kernel set up"),
                        Some(a) => match self.kernels[a.index].teardown() {
                            Ok(()) => "ok\n".to_string(),
                            Err(e) => error_line(&e),
                        },
                    };
                    out.write_all(reply.as_bytes())?;
                }
                other => out.write_all(error_line(&format!("unknown request '{other}'")).as_bytes())?,
            }
        }
    }

    fn values(&self, index: usize, overrides: &[(String, String)]) -> Result<Vec<(String, String)>, String> {
        let k = &self.kernels[index];
        let mut values: Vec<(String, String)> = k.params().to_vec();
        for (name, v) in overrides {
            match values.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = v.clone(),
                None => return Err(format!("kernel {} has no parameter '{name}'", k.name())),
            }
        }
        Ok(values)
    }

    fn setup(&mut self, active: &mut Option<Active>, fields: &[(String, String)]) -> String {
        if let Some(a) = active {
            return error_line(&format!(
                "kernel {} is already set up; send teardown first",
                self.kernels[a.index].name()
            ));
        }
        let Some(name) = field(fields, "kernel") else {
            return error_line("setup needs kernel=<name>");
        };
        let Some(index) = self.kernels.iter().position(|k| k.name() == name) else {
            return error_line(&format!("unknown kernel '{name}'"));
        };
        let overrides: Vec<(String, String)> = fields
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("p.").map(|p| (p.to_string(), v.clone())))
            .collect();
        let values = match self.values(index, &overrides) {
            Ok(v) => v,
            Err(e) => return error_line(&e),
        };
        match self.kernels[index].setup(&values) {
            Ok((bytes_per_loop, items_per_loop)) => {
                *active = Some(Active {
                    index,
                    bytes_per_loop,
                    items_per_loop,
                });
                "ok\n".to_string()
            }
            Err(e) => error_line(&e),
        }
    }

    fn run_request(
        &mut self,
        active: &Option<Active>,
        fields: &[(String, String)],
        out: &mut UnixStream,
    ) -> std::io::Result<()> {
        let Some(a) = active else {
            return out.write_all(error_line("run with no kernel set up; send setup first").as_bytes());
        };
        let (loops, reps) = match (positive(fields, "loops"), positive(fields, "reps")) {
            (Ok(l), Ok(r)) => (l, r),
            (Err(e), _) | (_, Err(e)) => return out.write_all(error_line(&e).as_bytes()),
        };
        use std::fmt::Write as _;
        let mut sample = Sample::default();
        let mut text = String::with_capacity(128);
        for r in 0..reps {
            sample.metrics.clear();
            let (ns, cpu) = match self.kernels[a.index].rep(loops, &mut sample) {
                Ok(r) => r,
                Err(e) => return out.write_all(error_line(&e).as_bytes()),
            };
            // Writing into a String cannot fail.
            text.clear();
            let _ = write!(text, "sample loops={loops} ns={ns}");
            if let Some(cpu) = cpu {
                let _ = write!(text, " cpu_ns={cpu}");
            }
            if a.bytes_per_loop > 0.0 {
                let _ = write!(text, " bytes={}", number(a.bytes_per_loop * loops as f64));
            }
            if a.items_per_loop > 0.0 {
                let _ = write!(text, " items={}", number(a.items_per_loop * loops as f64));
            }
            for (k, v) in &sample.metrics {
                let _ = write!(text, " m.{k}={}", percent_encode(number(*v).as_bytes()));
            }
            text.push('\n');
            // Each sample is sent as soon as it is measured; the last one carries the `done`,
            // in the same write (one send, one wake-up of tare, not two).
            if r + 1 == reps {
                text.push_str("done\n");
            }
            out.write_all(text.as_bytes())?;
        }
        Ok(())
    }

    fn standalone(&mut self, args: &[String]) -> Result<(), String> {
        let (mut list, mut filter, mut overrides) = (false, None::<String>, Vec::<(String, String)>::new());
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let value = |v: Option<&String>| v.cloned().ok_or_else(|| format!("{a} needs a value"));
            let param = match a.as_str() {
                "--list" => {
                    list = true;
                    None
                }
                "--filter" => {
                    filter = Some(value(it.next())?);
                    None
                }
                "-p" | "--param" => Some(value(it.next())?),
                s if s.starts_with("--filter=") => {
                    filter = Some(s["--filter=".len()..].to_string());
                    None
                }
                s if s.starts_with("--param=") => Some(s["--param=".len()..].to_string()),
                s => {
                    return Err(format!(
                        "unknown argument '{s}' (known: --list, --filter REGEX, -p NAME=VALUE)"
                    ))
                }
            };
            if let Some(p) = param {
                let (n, v) = p
                    .split_once('=')
                    .ok_or_else(|| format!("-p {p}: expected NAME=VALUE"))?;
                if !self.kernels.iter().any(|k| k.params().iter().any(|(q, _)| q == n)) {
                    return Err(format!("-p {p}: no kernel has this parameter (see --list)"));
                }
                overrides.push((n.to_string(), v.to_string()));
            }
        }
        let re = match &filter {
            Some(f) => Some(regex::Regex::new(f).map_err(|e| {
                let why = e.to_string().lines().last().unwrap_or_default().trim().to_string();
                format!("--filter '{f}' is not a valid regular expression: {why}")
            })?),
            None => None,
        };
        for index in 0..self.kernels.len() {
            let name = self.kernels[index].name().to_string();
            if re.as_ref().is_some_and(|r| !r.is_match(&name)) {
                continue;
            }
            if list {
                let k = &self.kernels[index];
                println!("{name}{}", k.doc().map(|d| format!("  # {d}")).unwrap_or_default());
                for (p, d) in k.params() {
                    println!("  -p {p}={d}");
                }
                continue;
            }
            let mine: Vec<(String, String)> = {
                let declared = self.kernels[index].params();
                overrides
                    .iter()
                    .filter(|(n, _)| declared.iter().any(|(q, _)| q == n))
                    .cloned()
                    .collect()
            };
            let values = self.values(index, &mine)?;
            let k = &mut self.kernels[index];
            let (bpl, ipl) = k.setup(&values)?;
            let mut loops = 1u64;
            loop {
                let (ns, _) = k.rep(loops, &mut Sample::default())?;
                if ns >= 10_000_000 || loops >= 1 << 62 {
                    break;
                }
                loops *= 2;
            }
            let mut per = Vec::with_capacity(10);
            for _ in 0..10 {
                per.push(k.rep(loops, &mut Sample::default())?.0 as f64 / loops as f64);
            }
            k.teardown()?;
            per.sort_by(|a, b| a.total_cmp(b));
            let med = (per[4] + per[5]) / 2.0;
            let tp = if bpl > 0.0 && med > 0.0 {
                format!("  {}", throughput(bpl / (med * 1e-9), "B"))
            } else if ipl > 0.0 && med > 0.0 {
                format!("  {}", throughput(ipl / (med * 1e-9), "items"))
            } else {
                String::new()
            };
            let params: String = values.iter().map(|(n, v)| format!(" {n}={v}")).collect();
            // four significant digits below 1000 ns, whole ns above
            let decimals = if med > 0.0 && med < 1000.0 {
                (3 - med.log10().floor() as i32).max(0) as usize
            } else {
                0
            };
            let medtext = format!("{med:.decimals$}");
            println!("{name}{params} {medtext} ns/loop{tp}  (N={loops}, 10 samples)");
        }
        Ok(())
    }
}

fn throughput(mut per_sec: f64, unit: &str) -> String {
    for prefix in ["", "k", "M", "G"] {
        if per_sec < 1000.0 {
            // three significant digits
            let decimals = if per_sec >= 100.0 {
                0
            } else if per_sec >= 10.0 {
                1
            } else {
                2
            };
            return format!("{per_sec:.decimals$} {prefix}{unit}/s");
        }
        per_sec /= 1000.0;
    }
    format!("{per_sec:.3} T{unit}/s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_round_trips_every_byte_and_keeps_the_unreserved_set() {
        let all: Vec<u8> = (0..=255).collect();
        let enc = percent_encode(&all);
        assert!(!enc.contains(' ') && !enc.contains('=') && !enc.contains('\n'));
        assert_eq!(percent_decode(&enc).unwrap(), all);
        assert_eq!(percent_encode(b"Az09-._~:/,+"), "Az09-._~:/,+");
        assert_eq!(percent_encode("a b=c%\n\u{e9}".as_bytes()), "a%20b%3Dc%25%0A%C3%A9");
        assert_eq!(percent_decode("a%3d%3D%c3%A9").unwrap(), "a==\u{e9}".as_bytes());
        assert_eq!(percent_decode("").unwrap(), b"");
        for bad in ["%", "%4", "%zz", "a%g0", "%+1"] {
            assert!(percent_decode(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn parse_rejects_malformed_requests() {
        assert_eq!(parse("run loops=1 reps=2").unwrap().1.len(), 2);
        assert_eq!(parse("setup kernel=a%20b").unwrap().1[0].1, "a b");
        assert_eq!(parse("x k=").unwrap().1[0].1, "");
        assert_eq!(parse(""), Err("empty line"));
        assert_eq!(parse("setup kernel"), Err("malformed field (expected key=value)"));
        assert_eq!(parse("setup K=1"), Err("malformed field key"));
        assert_eq!(parse("setup a=1 a=2"), Err("repeated key"));
        assert_eq!(parse("setup a=%zz"), Err("bad percent-encoding"));
    }

    #[test]
    fn numbers_are_json_and_shortest() {
        assert_eq!(number(500.0), "500");
        assert_eq!(number(0.0025), "0.0025");
        assert_eq!(number(2043.2024388212296), "2043.2024388212296");
    }
}
