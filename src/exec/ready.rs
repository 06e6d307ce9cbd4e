//! Readiness of a run (`--ready`): the time from spawn until the program says it is ready —
//! a line on its output matching a pattern, a TCP port on localhost accepting connections, a
//! file appearing, or `READY=1` on the `NOTIFY_SOCKET` (systemd's sd_notify protocol) — then
//! tare stops it (the whole group: the main process is killed and the executor kills the rest)
//! or, with `--ready-then wait`, lets it run to its end.
//!
//! For servers and interactive programs whose "run" never ends. Not a health check: the first
//! sign counts, and nothing is retried after it.
//!
//! How precise: output and notify are noticed when the kernel wakes tare's watcher thread
//! (microseconds after the write); port and file are probed every millisecond, so their times
//! are late by up to 1 ms plus a connect or stat.

// The settings (`Ready`, `ReadySource`) and the outcome live in `spec`, with the rest of
// what a run is given and yields; re-exported here for the ready check's callers.
pub use super::spec::{Outcome, Ready, ReadySource};
use super::spec::{RunSpec, Sink};
use super::sys;
use regex::Regex;
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the watcher looks, set up before the spawn.
enum Watch {
    Lines { reader: OwnedFd, regex: Regex },
    Port(u16),
    File(PathBuf),
    Notify { sock: UnixDatagram },
}

/// A readiness watch made before the spawn: the pipe or socket exists, the spec's output or
/// environment points at it.
pub struct Armed {
    watch: Watch,
    /// The pipe's write end, kept until the child has its own copy.
    writer: Option<OwnedFd>,
    /// `/proc/self/fd/N` of `writer`, for the spec's sink.
    sink: Option<(bool, PathBuf)>,
    env: Option<(OsString, OsString)>,
    _dir: Option<tempfile::TempDir>,
    stop: bool,
}

/// A pipe, both ends close-on-exec (the child gets its write end by reopening
/// `/proc/self/fd/N`).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two file descriptors into the array it is given, of length 2.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn port_open(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(50),
    )
    .is_ok()
}

/// Sets up the watch for one run; fails when the sign is already there (a port already open,
/// the file already present), which would make every run "ready" at once.
pub fn arm(r: &Ready) -> anyhow::Result<Armed> {
    let mut a = Armed {
        watch: Watch::Port(0),
        writer: None,
        sink: None,
        env: None,
        _dir: None,
        stop: !r.then_wait,
    };
    match &r.source {
        ReadySource::Stdout(re) | ReadySource::Stderr(re) => {
            let (reader, writer) = pipe()?;
            use std::os::fd::AsRawFd;
            let path = PathBuf::from(format!("/proc/self/fd/{}", writer.as_raw_fd()));
            a.sink = Some((matches!(r.source, ReadySource::Stdout(_)), path));
            a.writer = Some(writer);
            a.watch = Watch::Lines {
                reader,
                regex: re.clone(),
            };
        }
        ReadySource::Port(p) => {
            if port_open(*p) {
                anyhow::bail!(
                    "--ready port:{p}: something already listens on port {p} before the run; stop it or pick another port"
                );
            }
            a.watch = Watch::Port(*p);
        }
        ReadySource::File(f) => {
            if f.exists() {
                anyhow::bail!(
                    "--ready file:{}: the file exists before the run; remove it (e.g. with --prepare 'rm -f {}')",
                    f.display(),
                    f.display()
                );
            }
            a.watch = Watch::File(f.clone());
        }
        ReadySource::Notify => {
            let dir = tempfile::Builder::new().prefix("tare-notify").tempdir()?;
            let path = dir.path().join("notify");
            let sock = UnixDatagram::bind(&path)?;
            a.env = Some(("NOTIFY_SOCKET".into(), path.into_os_string()));
            a._dir = Some(dir);
            a.watch = Watch::Notify { sock };
        }
    }
    Ok(a)
}

impl Armed {
    /// `spec` with its output or environment pointed at the watch.
    pub fn apply(&self, spec: &RunSpec) -> RunSpec {
        let mut s = spec.clone();
        match &self.sink {
            Some((true, p)) => s.stdout = Sink::File(p.clone()),
            Some((false, p)) => s.stderr = Sink::File(p.clone()),
            None => {}
        }
        if let Some((k, v)) = &self.env {
            s.env.retain(|(name, _)| name != k);
            s.env.push((k.clone(), v.clone()));
        }
        s
    }

    /// Starts watching the spawned main process `pid` (not yet reaped), timing from `start`.
    pub fn start(mut self, pid: i32, start: Instant) -> io::Result<Watcher> {
        // The child has its copy of the write end: without ours, the pipe ends with the tree.
        self.writer = None;
        let pidfd = sys::pidfd_open(pid)?;
        let done = Arc::new(AtomicBool::new(false));
        let d = Arc::clone(&done);
        let handle = std::thread::Builder::new()
            .name("tare-ready".into())
            .spawn(move || self.watch(pid, &pidfd, start, &d))?;
        Ok(Watcher { handle, done })
    }

    fn watch(self, pid: i32, pidfd: &OwnedFd, start: Instant, done: &AtomicBool) -> Outcome {
        let ended = || done.load(Ordering::Relaxed);
        let mut ready = None;
        match &self.watch {
            Watch::Lines { reader, regex } => {
                let Ok(fd) = reader.try_clone() else {
                    return Outcome::default();
                };
                let mut file = std::fs::File::from(fd);
                let mut text = String::new();
                let mut buf = [0u8; 8192];
                loop {
                    if ended() {
                        break;
                    }
                    match sys::poll_readable(reader, Duration::from_millis(2)) {
                        Ok(true) => match file.read(&mut buf) {
                            Ok(0) => break, // every writer is gone
                            Ok(n) => {
                                if ready.is_none() {
                                    text.push_str(&String::from_utf8_lossy(&buf[..n]));
                                    if matches_a_line(regex, &mut text) {
                                        ready = Some(start.elapsed());
                                        if self.stop {
                                            break;
                                        }
                                    }
                                }
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(_) => break,
                        },
                        Ok(false) => {
                            if ready.is_none()
                                && sys::poll_readable(pidfd, Duration::ZERO).unwrap_or(true)
                            {
                                // The main process is gone; whatever it wrote is read above.
                                if !sys::poll_readable(reader, Duration::ZERO).unwrap_or(false) {
                                    break;
                                }
                            }
                        }
                        Err(_) => break,
                    }
                }
            }
            Watch::Notify { sock } => {
                let mut buf = [0u8; 4096];
                sock.set_nonblocking(true).ok();
                let fd = sock.as_fd().try_clone_to_owned();
                while let (false, Ok(fd)) = (ended(), fd.as_ref()) {
                    if sys::poll_readable(fd, Duration::from_millis(2)).unwrap_or(false) {
                        if let Ok(n) = sock.recv(&mut buf) {
                            let msg = String::from_utf8_lossy(&buf[..n]);
                            if msg.lines().any(|l| l.trim() == "READY=1") {
                                ready = Some(start.elapsed());
                                break;
                            }
                        }
                    } else if sys::poll_readable(pidfd, Duration::ZERO).unwrap_or(true) {
                        break;
                    }
                }
            }
            Watch::Port(_) | Watch::File(_) => loop {
                if ended() {
                    break;
                }
                let yes = match &self.watch {
                    Watch::Port(p) => port_open(*p),
                    Watch::File(f) => f.exists(),
                    _ => false,
                };
                if yes {
                    ready = Some(start.elapsed());
                    break;
                }
                if sys::poll_readable(pidfd, Duration::from_millis(1)).unwrap_or(true) {
                    break;
                }
            },
        }
        let stopped = ready.is_some() && self.stop && !ended();
        if stopped {
            // Not reaped yet (the executor joins this thread before wait4): the pid is ours.
            let _ = sys::kill(pid, libc::SIGKILL);
        } else if ready.is_some() {
            // Let it run to its end; keep its output flowing so it never blocks on a full pipe.
            if let Watch::Lines { reader, .. } = &self.watch {
                if let Ok(fd) = reader.try_clone() {
                    let mut f = std::fs::File::from(fd);
                    let mut buf = [0u8; 8192];
                    while !ended() {
                        match sys::poll_readable(reader, Duration::from_millis(5)) {
                            Ok(true) => match f.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(_) => {}
                            },
                            Ok(false) => {}
                            Err(_) => break,
                        }
                    }
                }
            }
        }
        Outcome { ready, stopped }
    }
}

/// Whether a line of `text` matches (each line without its newline; the unfinished last line
/// too, as a prompt without a newline is a sign as well). Complete lines are consumed.
fn matches_a_line(regex: &Regex, text: &mut String) -> bool {
    let cut = text.rfind('\n').map_or(0, |i| i + 1);
    let hit = text[..cut].lines().any(|l| regex.is_match(l)) || regex.is_match(&text[cut..]);
    text.drain(..cut);
    if text.len() > 1 << 16 {
        text.clear(); // a line this long is not a readiness sign
    }
    hit
}

/// The running watcher of one run.
pub struct Watcher {
    handle: std::thread::JoinHandle<Outcome>,
    done: Arc<AtomicBool>,
}

impl Watcher {
    /// Ends the watch (the main process has exited or was killed) and returns what it saw.
    pub fn finish(self) -> Outcome {
        self.done.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_match_whole_and_unfinished() {
        let re = Regex::new("^READY$").unwrap();
        let mut t = String::from("starting\nREA");
        assert!(!matches_a_line(&re, &mut t));
        assert_eq!(t, "REA");
        t.push_str("DY\n");
        assert!(matches_a_line(&re, &mut t));
        let mut prompt = String::from("READY");
        assert!(matches_a_line(&re, &mut prompt));
    }

    #[test]
    fn parses_every_source_and_says_what_is_wrong() {
        assert!(matches!("stdout:READY".parse(), Ok(ReadySource::Stdout(_))));
        assert!(matches!("stderr:^up$".parse(), Ok(ReadySource::Stderr(_))));
        assert!(matches!("port:8080".parse(), Ok(ReadySource::Port(8080))));
        assert!(matches!("file:/tmp/x".parse(), Ok(ReadySource::File(_))));
        assert!(matches!("notify".parse(), Ok(ReadySource::Notify)));
        for bad in [
            "port:0",
            "port:http",
            "stdout:",
            "stdout:(",
            "tcp:80",
            "notify:x",
        ] {
            let e = bad.parse::<ReadySource>().unwrap_err();
            assert!(e.starts_with("--ready"), "{bad}: {e}");
        }
    }
}
