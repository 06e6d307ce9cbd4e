//! A run's captured output (a suite run's log), bounded while the run writes it: the command's
//! standard output and error go into a pipe that a thread of tare drains into the log file,
//! keeping at most `limit` bytes — the first part as it came, then a line saying how much was
//! left out, then the last part — so a command that writes without end (`yes`) cannot fill the
//! disk. The command is never slowed on purpose nor stopped for writing: what is over the limit
//! is read and dropped.
//!
//! The pipe's write end is handed to the run as `/proc/self/fd/N` (a [`super::Sink::File`],
//! opened for each run like any output path); tare's own copy is closed by [`Capture::finish`],
//! which then waits for the reader to see the end of the output — at most [`DRAIN_WAIT`], for a
//! process that left the run and still holds the pipe.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long [`Capture::finish`] waits for the end of the output once the run is over.
pub const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// The tail kept of an output over the limit: a quarter of the limit, at most 1 MiB.
fn tail_len(limit: u64) -> usize {
    (limit / 4).min(1 << 20) as usize
}

/// What a capture kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Captured {
    /// Bytes the run wrote.
    pub written: u64,
    /// Bytes in the log (at most the limit).
    pub kept: u64,
}

impl Captured {
    /// Whether output was left out.
    pub fn cut(&self) -> bool {
        self.written > self.kept
    }
}

/// A capture in progress.
pub struct Capture {
    writer: Option<OwnedFd>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<std::io::Result<Captured>>>,
    sink: PathBuf,
    log: PathBuf,
}

impl Capture {
    /// Creates `log` (a new file: what is there is removed first) and the pipe whose write end
    /// the run's output goes to ([`Capture::sink`]); at most `limit` bytes are kept.
    pub fn start(log: &Path, limit: u64) -> std::io::Result<Capture> {
        let _ = std::fs::remove_file(log);
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(log)?
        };
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let stop = Arc::new(AtomicBool::new(false));
        let sink = PathBuf::from(format!("/proc/self/fd/{}", write.as_raw_fd()));
        let reader = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("tare-capture".into())
                .spawn(move || drain(File::from(read), file, limit, &stop))?
        };
        Ok(Capture {
            writer: Some(write),
            stop,
            reader: Some(reader),
            sink,
            log: log.to_path_buf(),
        })
    }

    /// The path the run's standard output and error are opened at.
    pub fn sink(&self) -> &Path {
        &self.sink
    }

    /// Closes tare's write end, waits for the end of the output (at most [`DRAIN_WAIT`]) and
    /// says what was kept.
    pub fn finish(mut self) -> std::io::Result<Captured> {
        self.writer = None;
        let deadline = Instant::now() + DRAIN_WAIT;
        let reader = self.reader.take().expect("finished once");
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stop.store(true, Ordering::Relaxed);
        reader
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the capture thread panicked")))
            .map_err(|e| {
                std::io::Error::other(format!("cannot write log {}: {e}", self.log.display()))
            })
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads `pipe` to its end (or until `stop`, checked every 100 ms) into `log`: the first
/// `limit - tail - note` bytes, then, when the output was longer than `limit`, a note and the
/// last `tail` bytes.
fn drain(
    mut pipe: File,
    mut log: File,
    limit: u64,
    stop: &AtomicBool,
) -> std::io::Result<Captured> {
    let tail_cap = tail_len(limit);
    // Room for the note (its numbers are at most 20 digits each).
    let note_room = note(u64::MAX, u64::MAX, limit).len() as u64;
    let head_cap = limit.saturating_sub(tail_cap as u64 + note_room);
    // Written through while the output fits the limit; the last `tail_cap` bytes are kept
    // aside in case it does not.
    let mut in_log = 0u64;
    let mut written = 0u64;
    let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut fds = [libc::pollfd {
        fd: pipe.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: `fds` is one valid pollfd for a descriptor `pipe` keeps open.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 1, 100) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            continue;
        }
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        written += n as u64;
        let room = (limit - in_log).min(n as u64) as usize;
        if room > 0 {
            log.write_all(&buf[..room])?;
            in_log += room as u64;
        }
        tail.extend(&buf[..n]);
        let over = tail.len().saturating_sub(tail_cap);
        tail.drain(..over);
    }
    if written <= limit {
        return Ok(Captured {
            written,
            kept: in_log,
        });
    }
    // Over the limit: the first `head_cap` bytes, the note, the last `tail_cap` bytes.
    use std::io::Seek;
    log.set_len(head_cap)?;
    log.seek(std::io::SeekFrom::End(0))?;
    let (a, b) = tail.as_slices();
    let left_out = written - head_cap - tail.len() as u64;
    log.write_all(note(left_out, written, limit).as_bytes())?;
    log.write_all(a)?;
    log.write_all(b)?;
    let kept = log.metadata()?.len();
    Ok(Captured { written, kept })
}

fn note(left_out: u64, written: u64, limit: u64) -> String {
    format!(
        "\n[tare: {left_out} bytes of output left out here: the run wrote {written} bytes, over the output limit of {limit}; raise [limits] output or --output-limit]\n"
    )
}

/// How many characters of one line [`last_lines`] keeps.
const LINE_CHARS: usize = 200;
/// How much of a file's end [`last_lines_of_file`] reads.
const FILE_TAIL: u64 = 4096;

/// The last `n` non-empty lines of some output, for a one-line error ("what did it say before it
/// failed"): each trimmed and cut to 200 characters, joined with " / "; empty when there are
/// none. Bytes that are not UTF-8 are replaced, not refused.
pub fn last_lines(output: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(output);
    let mut tail: Vec<String> = text
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(n)
        .map(|l| l.chars().take(LINE_CHARS).collect())
        .collect();
    tail.reverse();
    tail.join(" / ")
}

/// [`last_lines`] of a file's last 4 KiB (the file may be large, or still growing: only its end
/// is read); `None` when it cannot be read or is not a regular file.
pub fn last_lines_of_file(path: &Path, n: usize) -> Option<String> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    f.seek(SeekFrom::Start(meta.len().saturating_sub(FILE_TAIL)))
        .ok()?;
    let mut buf = Vec::new();
    f.take(FILE_TAIL).read_to_end(&mut buf).ok()?;
    Some(last_lines(&buf, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(limit: u64, script: &str) -> (Captured, Vec<u8>) {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("run.log");
        let c = Capture::start(&log, limit).unwrap();
        let out = std::fs::OpenOptions::new()
            .write(true)
            .open(c.sink())
            .unwrap();
        let status = std::process::Command::new("sh")
            .args(["-c", script])
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .status()
            .unwrap();
        assert!(status.success());
        let got = c.finish().unwrap();
        (got, std::fs::read(&log).unwrap())
    }

    #[test]
    fn output_under_the_limit_is_kept_whole() {
        let (c, log) = capture(1 << 20, "echo out; echo err >&2");
        assert_eq!(log, b"out\nerr\n");
        assert_eq!(
            c,
            Captured {
                written: 8,
                kept: 8
            }
        );
        assert!(!c.cut());
    }

    #[test]
    fn output_over_the_limit_keeps_head_note_and_tail_within_the_limit() {
        // 4 MB of numbered lines through a 64 KiB limit.
        let (c, log) = capture(64 << 10, "seq 1 600000; echo LAST");
        assert!(c.cut());
        assert!(c.written > 3 << 20, "{c:?}");
        assert_eq!(c.kept, log.len() as u64);
        assert!(log.len() as u64 <= 64 << 10, "{}", log.len());
        let text = String::from_utf8_lossy(&log);
        assert!(text.starts_with("1\n2\n3\n"), "{}", &text[..20]);
        assert!(
            text.ends_with("600000\nLAST\n"),
            "{}",
            &text[text.len() - 20..]
        );
        assert!(text.contains("bytes of output left out here"), "no note");
        assert!(text.contains(&format!("the run wrote {} bytes", c.written)));
    }

    #[test]
    fn last_lines_keeps_the_last_non_empty_lines_in_order() {
        let out = b"first\n\n  second  \nthird\n\n   \n";
        assert_eq!(last_lines(out, 2), "second / third");
        assert_eq!(last_lines(out, 1), "third");
        assert_eq!(last_lines(out, 9), "first / second / third");
        assert_eq!(last_lines(out, 0), "");
        assert_eq!(last_lines(b"", 3), "");
        assert_eq!(last_lines(b"\n \n\t\n", 3), "");
        // CRLF and no final newline.
        assert_eq!(last_lines(b"a\r\nb", 2), "a / b");
    }

    #[test]
    fn last_lines_cuts_long_lines_and_replaces_bad_bytes() {
        let long = "é".repeat(300);
        let got = last_lines(format!("x\n{long}\n").as_bytes(), 1);
        assert_eq!(got.chars().count(), 200);
        assert!(got.chars().all(|c| c == 'é'));
        assert_eq!(
            last_lines(b"ok\n\xff\xfeend\n", 2),
            "ok / \u{fffd}\u{fffd}end"
        );
    }

    #[test]
    fn last_lines_of_file_reads_only_the_end() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.log");
        let mut text = String::from("EARLY\n");
        for i in 0..10_000 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("Error: the cause\n\n");
        std::fs::write(&p, &text).unwrap();
        assert_eq!(
            last_lines_of_file(&p, 3).as_deref(),
            Some("line 9998 / line 9999 / Error: the cause")
        );
        // Only the last 4 KiB is read: the first line is out of reach.
        assert!(!last_lines_of_file(&p, 10_000).unwrap().contains("EARLY"));
        std::fs::write(&p, "").unwrap();
        assert_eq!(last_lines_of_file(&p, 3).as_deref(), Some(""));
        assert_eq!(last_lines_of_file(&d.path().join("none"), 3), None);
        assert_eq!(last_lines_of_file(d.path(), 3), None);
    }
}
