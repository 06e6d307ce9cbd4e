//! The master's side of one conversation with a worker (docs/protocol.md): send a request,
//! read the whole reply, each line within a wall limit, the cancel flag watched. Every way a
//! worker can fail — EOF, a hang, garbage, a broken rule, another protocol version — becomes
//! one [`WorkerError`] whose text is one line; the caller then kills the worker's tree.
//!
//! Not for: policy (how many loops, samples, invocations — `method::kernels`) or starting the
//! process (`Executor::run_with`).

use super::protocol::{self, clip, Message, MAX_LINE, VERSION};
use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Most kernels a worker may announce, and parameters per kernel (a worker announcing them
/// without end is cut here).
pub const MAX_KERNELS: usize = 10_000;
/// Most threads a kernel may declare (`threads=T`).
pub const MAX_THREADS: u32 = 4096;

/// Why a conversation ended early; `Display` is one line.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerError {
    /// The socket reached EOF or failed (the worker exited or closed it).
    Closed { waiting_for: String },
    /// No complete line within the limit; `option` is the option that sets it.
    Timeout {
        waiting_for: String,
        limit: Duration,
        option: &'static str,
        /// The time tare itself expected the line to take (a sample of many loops, from the
        /// samples before), added twice to the option's limit; `None` when it expected none.
        expected: Option<Duration>,
    },
    /// Not a message, a line too long, a reply that does not fit the request.
    Protocol(String),
    /// The worker speaks another protocol version.
    Version(String),
    /// Ctrl-C or another stop signal.
    Interrupted,
    /// The master stopped the conversation for a reason of its own (an action failed), in
    /// one line.
    Aborted(String),
}

impl std::fmt::Display for WorkerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerError::Closed { waiting_for } => {
                write!(f, "worker closed the connection (exited?) while tare waited for {waiting_for}")
            }
            WorkerError::Timeout {
                waiting_for,
                limit,
                option,
                expected: None,
            } => write!(
                f,
                "worker did not answer within {:.3} s while tare waited for {waiting_for}; its process tree was killed; raise {option} if it is slow",
                limit.as_secs_f64()
            ),
            WorkerError::Timeout {
                waiting_for,
                limit,
                option,
                expected: Some(x),
            } => write!(
                f,
                "worker did not answer within {:.3} s ({option} {:.3} s plus twice the {:.3} s its samples so far foretold) while tare waited for {waiting_for}; its process tree was killed; the kernel slowed down or hangs (raise {option} if it varies that much)",
                limit.as_secs_f64(),
                limit.saturating_sub(*x * 2).as_secs_f64(),
                x.as_secs_f64()
            ),
            WorkerError::Protocol(m) => write!(f, "worker broke the protocol: {m}"),
            WorkerError::Version(v) => write!(
                f,
                "worker speaks protocol {v}; this tare speaks protocol {VERSION}"
            ),
            WorkerError::Interrupted => write!(f, "interrupted"),
            WorkerError::Aborted(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for WorkerError {}

/// What tare waits for first: the greeting. A connection closed then means nothing of the
/// protocol was said.
const WAITING_FOR_HELLO: &str = "its 'hello'";

impl WorkerError {
    /// The worker closed the connection before its first line: it said nothing of the protocol
    /// (a program that is no worker, or one that died at start).
    pub fn closed_before_hello(&self) -> bool {
        matches!(self, WorkerError::Closed { waiting_for } if waiting_for == WAITING_FOR_HELLO)
    }
}

/// A parameter a kernel declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamInfo {
    pub name: String,
    pub default: String,
    pub doc: String,
    /// Values the worker has for the parameter (`values=A,B,...`: a native harness's own list,
    /// JMH's `@Param`), each measured by default; empty: the default only.
    pub values: Vec<String>,
}

/// A kernel a worker announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    pub doc: String,
    pub params: Vec<ParamInfo>,
    /// `threads=T` on its `kernel` line: the worker runs the body on T threads released
    /// together by a barrier, each N loops a sample, the sample's time from the barrier to the
    /// last thread's end (Google Benchmark's `->Threads`, JMH's `@Threads`); 1 otherwise.
    pub threads: u32,
}

/// What a worker says first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub client: String,
    pub version: String,
    pub lang: String,
    pub kernels: Vec<KernelInfo>,
    /// `loops=approximate` in the hello: the worker drives a harness that picks its own loop
    /// counts (Google Benchmark before 1.8), so a sample may run other loops than asked and
    /// says how many it ran.
    pub approximate_loops: bool,
}

/// The worker's clock, as it measured it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockInfo {
    pub resolution_ns: f64,
    pub cost_ns: f64,
}

/// One sample: N loops timed by the worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub loops: u64,
    pub ns: u64,
    pub cpu_ns: Option<u64>,
    pub bytes: Option<u64>,
    pub items: Option<u64>,
    pub metrics: BTreeMap<String, f64>,
}

/// A reply that is the worker's own `error message=...` (user code failed; the worker is
/// still usable), or the expected result.
pub type Reply<T> = Result<T, String>;

/// One conversation. Reads are bounded by `limit` per line.
pub struct Worker<'a> {
    sock: UnixStream,
    buf: Vec<u8>,
    line_no: usize,
    /// The socket's read timeout as last set (a setsockopt per line cost a microsecond).
    timeout_set: Option<Duration>,
    /// Wall limit on each line of a reply (a `sample` line each, in a `run`).
    pub limit: Duration,
    cancel: &'a AtomicBool,
    /// Samples received so far in this conversation (each is one repetition of the worker:
    /// under `--counters`, the number of Callgrind's dump of it).
    pub samples_received: u64,
    /// The worker said `loops=approximate`: samples of other loops than asked are read by
    /// their own count.
    approximate_loops: bool,
    /// What tare expects the line it waits for now to take (a sample of a `run` sent with
    /// [`Worker::run_expecting`]); it widens the limit to `limit + 2 × expected`.
    expected: Option<Duration>,
}

impl<'a> Worker<'a> {
    pub fn new(sock: UnixStream, limit: Duration, cancel: &'a AtomicBool) -> Self {
        Worker {
            sock,
            buf: Vec::with_capacity(4096),
            line_no: 0,
            timeout_set: None,
            limit,
            cancel,
            samples_received: 0,
            approximate_loops: false,
            expected: None,
        }
    }

    fn send(&mut self, m: &Message) -> Result<(), WorkerError> {
        let mut line = m.to_line();
        line.push('\n');
        self.sock
            .write_all(line.as_bytes())
            .map_err(|_| WorkerError::Closed {
                waiting_for: format!("it to read '{}'", m.verb),
            })
    }

    /// The next line, by `deadline` (`limit` and `option` say what set it, for the error).
    fn read_line(
        &mut self,
        waiting_for: &str,
        deadline: Instant,
        limit: Duration,
        option: &'static str,
    ) -> Result<String, WorkerError> {
        loop {
            if let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
                if pos + 1 > MAX_LINE {
                    return Err(self.too_long());
                }
                let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
                line.pop();
                self.line_no += 1;
                return String::from_utf8(line).map_err(|_| {
                    WorkerError::Protocol(format!("line {} is not UTF-8", self.line_no + 1))
                });
            }
            if self.buf.len() >= MAX_LINE {
                return Err(self.too_long());
            }
            if self.cancel.load(Ordering::Relaxed) {
                return Err(WorkerError::Interrupted);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(WorkerError::Timeout {
                    waiting_for: waiting_for.to_string(),
                    limit,
                    option,
                    expected: self.expected,
                });
            }
            // Wake at least every 250 ms to see the cancel flag; the timeout is changed only
            // near the deadline, not for every line.
            let slice = (deadline - now)
                .min(Duration::from_millis(250))
                .max(Duration::from_micros(100));
            if self.timeout_set != Some(slice) {
                let _ = self.sock.set_read_timeout(Some(slice));
                self.timeout_set = Some(slice);
            }
            let mut chunk = [0u8; 16384];
            match self.sock.read(&mut chunk) {
                Ok(0) => {
                    return Err(WorkerError::Closed {
                        waiting_for: waiting_for.to_string(),
                    })
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    return Err(WorkerError::Closed {
                        waiting_for: waiting_for.to_string(),
                    })
                }
            }
        }
    }

    fn too_long(&self) -> WorkerError {
        WorkerError::Protocol(format!(
            "line {} is longer than {MAX_LINE} bytes",
            self.line_no + 1
        ))
    }

    /// The next message, within `limit` (a reply line: `--worker-timeout`).
    fn read(&mut self, waiting_for: &str, limit: Duration) -> Result<Message, WorkerError> {
        self.read_by(
            waiting_for,
            Instant::now() + limit,
            limit,
            "--worker-timeout",
        )
    }

    /// The next message, by `deadline`.
    fn read_by(
        &mut self,
        waiting_for: &str,
        deadline: Instant,
        limit: Duration,
        option: &'static str,
    ) -> Result<Message, WorkerError> {
        let line = self.read_line(waiting_for, deadline, limit, option)?;
        Message::parse(&line).map_err(|e| {
            WorkerError::Protocol(format!(
                "'{}' is not a message ({e}; line {})",
                clip(&line),
                self.line_no
            ))
        })
    }

    fn unexpected(&self, m: &Message, expected: &str) -> WorkerError {
        WorkerError::Protocol(format!(
            "'{}' where {expected} was expected (line {})",
            clip(&m.to_line()),
            self.line_no
        ))
    }

    fn field<'m>(&self, m: &'m Message, key: &str) -> Result<&'m str, WorkerError> {
        m.get(key).ok_or_else(|| {
            WorkerError::Protocol(format!(
                "'{}' lacks {key}= (line {})",
                clip(&m.to_line()),
                self.line_no
            ))
        })
    }

    fn bad(&self, e: String) -> WorkerError {
        WorkerError::Protocol(format!("{e} (line {})", self.line_no))
    }

    /// Reads the worker's greeting: `hello`, kernels and parameters, `ready`. `limit`
    /// (`--start-timeout`) covers the start of the program (a JVM's, too) and the whole
    /// greeting: a worker that stops, or trickles kernels, is cut at one deadline. At most
    /// [`MAX_KERNELS`] kernels are read.
    pub fn hello(&mut self, limit: Duration) -> Result<Hello, WorkerError> {
        let deadline = Instant::now() + limit;
        let start = "--start-timeout";
        let m = self.read_by(WAITING_FOR_HELLO, deadline, limit, start)?;
        if m.verb != "hello" {
            return Err(self.unexpected(&m, "'hello'"));
        }
        let v = self.field(&m, "protocol")?.to_string();
        if v != VERSION.to_string() {
            return Err(WorkerError::Version(clip(&v)));
        }
        let mut hello = Hello {
            client: m.get("client").unwrap_or("").to_string(),
            version: m.get("version").unwrap_or("").to_string(),
            lang: m.get("lang").unwrap_or("").to_string(),
            kernels: Vec::new(),
            approximate_loops: m.get("loops") == Some("approximate"),
        };
        self.approximate_loops = hello.approximate_loops;
        loop {
            let m = self.read_by(
                "the rest of its greeting (kernels, 'ready')",
                deadline,
                limit,
                start,
            )?;
            match m.verb.as_str() {
                "ready" => break,
                "kernel" => {
                    let name = self.field(&m, "name")?.to_string();
                    if !protocol::name_ok(&name) {
                        return Err(self.bad(format!("'{}' is not a kernel name", clip(&name))));
                    }
                    if hello.kernels.len() >= MAX_KERNELS {
                        return Err(WorkerError::Protocol(format!(
                            "more than {MAX_KERNELS} kernels announced"
                        )));
                    }
                    if hello.kernels.iter().any(|k| k.name == name) {
                        return Err(self.bad(format!("kernel '{name}' announced twice")));
                    }
                    let threads = match m.get("threads") {
                        None => 1,
                        Some(t) => t
                            .parse::<u32>()
                            .ok()
                            .filter(|&t| (1..=MAX_THREADS).contains(&t))
                            .ok_or_else(|| {
                                self.bad(format!(
                                    "kernel '{name}': threads={} is not an integer from 1 to {MAX_THREADS}",
                                    clip(t)
                                ))
                            })?,
                    };
                    hello.kernels.push(KernelInfo {
                        name,
                        doc: m.get("doc").unwrap_or("").to_string(),
                        params: Vec::new(),
                        threads,
                    });
                }
                "param" => {
                    let kernel = self.field(&m, "kernel")?.to_string();
                    let name = self.field(&m, "name")?.to_string();
                    let default = self.field(&m, "default")?.to_string();
                    if !protocol::name_ok(&name) {
                        return Err(self.bad(format!("'{}' is not a parameter name", clip(&name))));
                    }
                    let line = self.line_no;
                    let k = hello
                        .kernels
                        .iter_mut()
                        .find(|k| k.name == kernel)
                        .ok_or_else(|| {
                            WorkerError::Protocol(format!(
                                "parameter '{name}' of kernel '{}' before its 'kernel' line (line {line})",
                                clip(&kernel)
                            ))
                        })?;
                    if k.params.len() >= MAX_KERNELS {
                        return Err(WorkerError::Protocol(format!(
                            "more than {MAX_KERNELS} parameters announced for '{kernel}'"
                        )));
                    }
                    if k.params.iter().any(|p| p.name == name) {
                        return Err(WorkerError::Protocol(format!(
                            "parameter '{name}' of '{kernel}' announced twice (line {line})"
                        )));
                    }
                    let values: Vec<String> = m
                        .get("values")
                        .map(|v| v.split(',').map(str::to_string).collect())
                        .unwrap_or_default();
                    if values.iter().any(String::is_empty) || values.len() > MAX_KERNELS {
                        return Err(self.bad(format!(
                            "values of parameter '{name}' must be up to {MAX_KERNELS} non-empty values separated by commas"
                        )));
                    }
                    k.params.push(ParamInfo {
                        name,
                        default,
                        doc: m.get("doc").unwrap_or("").to_string(),
                        values,
                    });
                }
                _ => return Err(self.unexpected(&m, "'kernel', 'param' or 'ready'")),
            }
        }
        Ok(hello)
    }

    /// Reads `ok` or `error message=...`.
    fn ok_reply(&mut self, request: &str) -> Result<Reply<()>, WorkerError> {
        let m = self.read(&format!("the reply to '{request}'"), self.limit)?;
        match m.verb.as_str() {
            "ok" => Ok(Ok(())),
            "error" => Ok(Err(m.get("message").unwrap_or("").to_string())),
            _ => Err(self.unexpected(&m, "'ok' or 'error'")),
        }
    }

    /// `clock` → the worker's clock resolution and read cost.
    pub fn clock(&mut self) -> Result<Reply<ClockInfo>, WorkerError> {
        self.send(&Message::new("clock"))?;
        let m = self.read("the reply to 'clock'", self.limit)?;
        match m.verb.as_str() {
            "clock" => {
                let r = m.float("resolution_ns").map_err(|e| self.bad(e))?;
                let c = m.float("cost_ns").map_err(|e| self.bad(e))?;
                match (r, c) {
                    (Some(r), Some(c)) if r >= 0.0 && c >= 0.0 => Ok(Ok(ClockInfo {
                        resolution_ns: r,
                        cost_ns: c,
                    })),
                    _ => Err(self.bad("'clock' without resolution_ns= and cost_ns= ≥ 0".into())),
                }
            }
            "error" => Ok(Err(m.get("message").unwrap_or("").to_string())),
            _ => Err(self.unexpected(&m, "'clock' or 'error'")),
        }
    }

    /// `setup kernel=K p.NAME=VALUE ...`.
    pub fn setup(
        &mut self,
        kernel: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<Reply<()>, WorkerError> {
        let mut m = Message::new("setup").with("kernel", kernel);
        for (k, v) in params {
            m = m.with(&format!("p.{k}"), v);
        }
        self.send(&m)?;
        self.ok_reply("setup")
    }

    /// `run loops=N reps=K` → K samples; `each` sees every sample as it arrives.
    pub fn run(
        &mut self,
        loops: u64,
        reps: u64,
        each: impl FnMut(&Sample),
    ) -> Result<Reply<Vec<Sample>>, WorkerError> {
        self.run_expecting(loops, reps, None, each)
    }

    /// [`Worker::run`] where tare expects each sample to take `expected` (its loops at the
    /// time per loop seen so far): each sample line may take the limit plus twice that, so
    /// what tare itself asks (2N loops, N loops of seconds each) is never cut by a limit meant
    /// for one reply; a timeout then says what was expected.
    pub fn run_expecting(
        &mut self,
        loops: u64,
        reps: u64,
        expected: Option<Duration>,
        mut each: impl FnMut(&Sample),
    ) -> Result<Reply<Vec<Sample>>, WorkerError> {
        self.send(&Message::new("run").with("loops", loops).with("reps", reps))?;
        let mut samples = Vec::with_capacity(reps as usize);
        let limit = self.limit + expected.map_or(Duration::ZERO, |x| x * 2);
        self.expected = expected;
        let r = self.samples_of(loops, reps, limit, &mut samples, &mut each);
        self.expected = None;
        r.map(|r| r.map(|()| samples))
    }

    fn samples_of(
        &mut self,
        loops: u64,
        reps: u64,
        limit: Duration,
        samples: &mut Vec<Sample>,
        each: &mut impl FnMut(&Sample),
    ) -> Result<Reply<()>, WorkerError> {
        loop {
            let m = self.read("a sample of 'run'", limit)?;
            match m.verb.as_str() {
                "sample" if (samples.len() as u64) < reps => {
                    let s = self.sample(&m)?;
                    if s.loops != loops && !(self.approximate_loops && s.loops > 0) {
                        return Err(self.bad(format!(
                            "a sample of {} loops where {loops} were asked",
                            s.loops
                        )));
                    }
                    self.samples_received += 1;
                    each(&s);
                    samples.push(s);
                }
                "done" if samples.len() as u64 == reps => return Ok(Ok(())),
                "error" => return Ok(Err(m.get("message").unwrap_or("").to_string())),
                _ if (samples.len() as u64) < reps => {
                    return Err(
                        self.unexpected(&m, &format!("sample {} of {reps}", samples.len() + 1))
                    )
                }
                _ => return Err(self.unexpected(&m, "'done'")),
            }
        }
    }

    fn sample(&self, m: &Message) -> Result<Sample, WorkerError> {
        let b = |e| self.bad(e);
        let loops = m
            .uint("loops")
            .map_err(b)?
            .ok_or_else(|| b("a sample without loops=".into()))?;
        let ns = m
            .uint("ns")
            .map_err(b)?
            .ok_or_else(|| b("a sample without ns=".into()))?;
        let mut metrics = BTreeMap::new();
        for (k, _) in &m.fields {
            if let Some(name) = k.strip_prefix("m.") {
                metrics.insert(name.to_string(), m.float(k).map_err(b)?.unwrap_or(0.0));
            }
        }
        Ok(Sample {
            loops,
            ns,
            cpu_ns: m.uint("cpu_ns").map_err(b)?,
            bytes: m.uint("bytes").map_err(b)?,
            items: m.uint("items").map_err(b)?,
            metrics,
        })
    }

    /// `teardown`.
    pub fn teardown(&mut self) -> Result<Reply<()>, WorkerError> {
        self.send(&Message::new("teardown"))?;
        self.ok_reply("teardown")
    }

    /// `exit` → `bye`.
    pub fn exit(&mut self) -> Result<(), WorkerError> {
        self.send(&Message::new("exit"))?;
        let m = self.read("the reply to 'exit'", self.limit)?;
        if m.verb != "bye" {
            return Err(self.unexpected(&m, "'bye'"));
        }
        Ok(())
    }
}

/// The environment variable that names the worker's descriptor.
pub const FD_ENV: &str = "TARE_WORKER_FD";
/// The environment variable that names a directory private to the `tare kernels` session,
/// the same for all its invocations and removed when it ends: where a worker keeps what it
/// builds once per session (`tare native-worker go`'s test binary).
pub const SESSION_ENV: &str = "TARE_SESSION_DIR";

/// Time a worker gets to exit after `bye` before it is killed.
pub const EXIT_GRACE: Duration = Duration::from_secs(5);

/// One invocation of a worker: a measured run of `spec` (its run group, cores, isolation, CPU
/// time and peak memory as for `tare run`) that inherits one end of a socketpair as
/// `TARE_WORKER_FD`, while `converse` talks to it. When `converse` fails, the worker's whole
/// tree is killed at once; when it succeeds, the worker has [`EXIT_GRACE`] to exit.
pub fn invoke<R>(
    executor: &super::Executor,
    spec: &super::RunSpec,
    limit: Duration,
    cancel: &AtomicBool,
    converse: impl FnOnce(&mut Worker) -> Result<R, WorkerError>,
) -> anyhow::Result<(super::Measurement, Result<R, WorkerError>)> {
    invoke_with_grace(executor, spec, limit, EXIT_GRACE, cancel, converse)
}

/// [`invoke`] with `grace` to exit after the conversation instead of [`EXIT_GRACE`] (a worker
/// under Valgrind writes its counts as it exits, which takes seconds).
pub fn invoke_with_grace<R>(
    executor: &super::Executor,
    spec: &super::RunSpec,
    limit: Duration,
    grace: Duration,
    cancel: &AtomicBool,
    converse: impl FnOnce(&mut Worker) -> Result<R, WorkerError>,
) -> anyhow::Result<(super::Measurement, Result<R, WorkerError>)> {
    use std::os::fd::AsRawFd;
    let (mine, theirs) = UnixStream::pair()
        .map_err(|e| anyhow::anyhow!("cannot create the worker's socketpair: {e}"))?;
    let mut spec = spec.clone();
    let fd = theirs.as_raw_fd();
    spec.env.retain(|(k, _)| k != FD_ENV);
    spec.env.push((FD_ENV.into(), fd.to_string().into()));
    spec.inherit_fds.push(fd);
    executor.run_with(&spec, cancel, move |_pid| {
        // The child has its copy: close ours so its death reads as EOF.
        drop(theirs);
        let mut w = Worker::new(mine, limit, cancel);
        let r = converse(&mut w);
        let after = if r.is_ok() {
            super::After::Wait(Some(grace))
        } else {
            super::After::Kill
        };
        (r, after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_past_what_tare_expected_says_so() {
        let plain = WorkerError::Timeout {
            waiting_for: "the reply to 'setup'".into(),
            limit: Duration::from_secs(10),
            option: "--worker-timeout",
            expected: None,
        };
        assert!(plain
            .to_string()
            .contains("within 10.000 s while tare waited for the reply to 'setup'; its process tree was killed; raise --worker-timeout if it is slow"));
        let scaled = WorkerError::Timeout {
            waiting_for: "a sample of 'run'".into(),
            limit: Duration::from_secs(34),
            option: "--worker-timeout",
            expected: Some(Duration::from_secs(12)),
        };
        assert!(
            scaled.to_string().contains(
                "within 34.000 s (--worker-timeout 10.000 s plus twice the 12.000 s its samples so far foretold)"
            ),
            "{scaled}"
        );
    }
}
