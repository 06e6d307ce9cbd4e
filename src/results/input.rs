//! Bounded reads of what users and tools hand tare: results files, imports, plans, journals,
//! protocol lines. A file is read up to a size limit and refused in one line naming it when it
//! is larger, so that `tare compare /dev/zero x.json` or an endless FIFO stops at once instead
//! of eating memory and hanging. The limit is [`DEFAULT_LIMIT`] unless `TARE_INPUT_LIMIT`
//! (a size: `4GiB`, `500MB`) says otherwise.

use std::io::{BufRead, Read};
use std::path::Path;

/// Largest input file read by default: 1 GiB (an import of 1.7 million pytest-benchmark
/// rounds is 830 MB).
pub const DEFAULT_LIMIT: u64 = 1 << 30;

/// The environment variable that sets the limit.
pub const LIMIT_VAR: &str = "TARE_INPUT_LIMIT";

/// The size limit for input files: `TARE_INPUT_LIMIT` when set and valid, else
/// [`DEFAULT_LIMIT`]. An invalid value is an error naming the variable.
pub fn limit() -> anyhow::Result<u64> {
    match std::env::var(LIMIT_VAR) {
        Ok(v) if !v.trim().is_empty() => crate::units::parse_bytes(&v)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                crate::error::usage(format!(
                    "{LIMIT_VAR}='{v}' is not a size; give bytes with a unit, e.g. {LIMIT_VAR}=4GiB"
                ))
            }),
        _ => Ok(DEFAULT_LIMIT),
    }
}

fn too_large(path: &Path, what: &str, limit: u64) -> anyhow::Error {
    crate::error::usage(format!(
        "{what} {} is larger than {}, the limit for input files (an endless device or FIFO?); give the right file, or raise the limit with {LIMIT_VAR}=SIZE",
        path.display(),
        crate::units::format_bytes(limit as f64, None)
    ))
}

/// How much of an input is looked at before the rest is read: what every input must look like
/// there (text, and for a JSON document, a document) is checked first, so that `/dev/zero`, a
/// sparse file or a gigabyte of `[0,0,…` is refused within this many bytes, not after a
/// gigabyte is held in memory.
pub const HEAD: usize = 64 << 10;

/// Reads all of `reader` up to `limit` bytes; more is an error naming `path` (`what` says
/// what the file is: "results file", "import"). Every input tare reads is text: a NUL byte in
/// the first [`HEAD`] bytes is refused before the rest is read.
pub fn read_all(reader: impl Read, path: &Path, what: &str, limit: u64) -> anyhow::Result<Vec<u8>> {
    read_all_checked(reader, path, what, limit, |_| Ok(()))
}

/// [`read_all`] with `check` applied to the first [`HEAD`] bytes (or all, when shorter) before
/// the rest is read, and before the NUL check, so that a reader with words of its own for what
/// the head shows (a gzip header, an array of numbers) says them; its error is returned as is.
pub fn read_all_checked(
    reader: impl Read,
    path: &Path,
    what: &str,
    limit: u64,
    check: impl Fn(&[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<u8>> {
    let cannot = |e: std::io::Error| {
        crate::error::usage(format!("cannot read {what} {}: {e}", path.display()))
    };
    let mut reader = reader.take(limit.saturating_add(1));
    let mut bytes = Vec::new();
    (&mut reader)
        .take(HEAD as u64)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    check(&bytes)?;
    if let Some(why) = binary_head(&bytes) {
        return Err(crate::error::usage(format!(
            "{what} {} is {why}: give the right file",
            path.display()
        )));
    }
    // A JSON document's shape is checked as it is read (see [`JsonShape`]).
    let json = bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF))
        .is_some_and(|b| matches!(b, b'{' | b'['));
    let mut shape = json.then(JsonShape::default);
    let refuse = |why: String| {
        crate::error::usage(format!(
            "{what} {} {NOT_A_DOCUMENT}{why}; give the right file",
            path.display()
        ))
    };
    if let Some(s) = shape.as_mut() {
        s.feed(&bytes).map_err(refuse)?;
    }
    let mut chunk = vec![0u8; HEAD];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(cannot(e)),
        };
        if let Some(s) = shape.as_mut() {
            s.feed(&chunk[..n]).map_err(refuse)?;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    if bytes.len() as u64 > limit {
        return Err(too_large(path, what, limit));
    }
    Ok(bytes)
}

/// What a head with a NUL byte is, in words ("binary data, not text (a NUL byte at offset 3)"),
/// or None for a head without one.
pub fn binary_head(head: &[u8]) -> Option<String> {
    let at = head.iter().position(|&b| b == 0)?;
    Some(format!("binary data, not text (a NUL byte at offset {at})"))
}

/// What is wrong with the head of a JSON document tare reads whole (a results file, a JSON
/// import), or None: it is no JSON array of values (numbers, strings, arrays). Such an array
/// is no document tare reads, and parsing a gigabyte of one would take many gigabytes; an
/// array of objects (JMH's results) or an empty one passes.
pub fn json_document_head(head: &[u8]) -> Option<String> {
    let mut rest = head
        .iter()
        .skip_while(|b| b.is_ascii_whitespace() || **b == 0xEF || **b == 0xBB || **b == 0xBF);
    match rest.next() {
        Some(b'[') => match rest.find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') | Some(b']') | None => None,
            Some(_) => Some("a JSON array of values, not of records".into()),
        },
        _ => None,
    }
}

/// The words of a refusal by [`JsonShape`] (after "WHAT PATH "), for a caller that says it in
/// its own words.
pub const NOT_A_DOCUMENT: &str = "is not a document tare reads: ";

/// Keys whose arrays hold records (JSON objects) in every JSON document tare reads: a results
/// file's benchmarks and runs, an upload's sessions, hyperfine's results, the benchmarks and
/// runs of Google Benchmark, pytest-benchmark and pyperf.
pub const RECORD_ARRAYS: &[&str] = &["benchmarks", "runs", "sessions", "results"];

/// A streaming check of a JSON document's shape, fed in pieces as they are read, holding a
/// few bytes per open bracket: an array under one of the [`RECORD_ARRAYS`] keys that holds
/// anything but objects (`{"benchmarks":[0,0,0,…` a gigabyte long) is refused at its first
/// such element, before the rest is read or parsed. It judges nothing else: what it passes, the
/// parser still checks. Several documents in a row (JSON Lines) are fine.
#[derive(Debug, Default)]
pub struct JsonShape {
    /// Open containers: for an array, whether it holds records and whether a value is due.
    stack: Vec<Frame>,
    in_string: bool,
    escape: bool,
    /// The string being read (its first bytes), then the last one read: a key before `:`.
    string: Vec<u8>,
    /// The record key the next value belongs to, if any.
    records_next: Option<&'static str>,
    offset: u64,
}

#[derive(Debug)]
enum Frame {
    Object,
    Array {
        records: bool,
        due: bool,
        key: &'static str,
    },
}

impl JsonShape {
    /// Checks the next piece; the error says where and what was found.
    pub fn feed(&mut self, piece: &[u8]) -> Result<(), String> {
        for &c in piece {
            self.offset += 1;
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    if self.string.len() < 16 {
                        // Kept as it is written: `b\"enchmarks` is no record key.
                        self.string.push(c);
                    }
                } else if c == b'\\' {
                    self.escape = true;
                } else if c == b'"' {
                    self.in_string = false;
                } else if self.string.len() < 16 {
                    self.string.push(c);
                }
                continue;
            }
            if c.is_ascii_whitespace() {
                continue;
            }
            match c {
                b':' => {
                    let key = std::mem::take(&mut self.string);
                    // Record arrays are keys of the document's top object or of a record:
                    // `extra.scaling[0].benchmarks` (indices) is no record array.
                    let of_a_record = match self.stack.len() {
                        0 | 1 => true,
                        n => matches!(self.stack[n - 2], Frame::Array { records: true, .. }),
                    };
                    self.records_next = RECORD_ARRAYS
                        .iter()
                        .find(|k| of_a_record && k.as_bytes() == key)
                        .copied();
                    continue;
                }
                b',' => {
                    if let Some(Frame::Array { due, .. }) = self.stack.last_mut() {
                        *due = true;
                    }
                    continue;
                }
                b']' | b'}' => {
                    self.stack.pop();
                    self.records_next = None;
                    continue;
                }
                _ => {}
            }
            // The start of a value (or of a key, in an object).
            if let Some(Frame::Array { records, due, key }) = self.stack.last_mut() {
                if *due {
                    *due = false;
                    if *records && c != b'{' {
                        return Err(format!(
                            "its \"{key}\" holds {} where records (objects) belong (byte {})",
                            match c {
                                b'[' => "an array",
                                b'"' => "a string",
                                b'-' | b'0'..=b'9' => "a number",
                                _ => "a value",
                            },
                            self.offset
                        ));
                    }
                }
            }
            let records = std::mem::take(&mut self.records_next);
            match c {
                b'"' => {
                    self.in_string = true;
                    self.string.clear();
                }
                b'{' => self.stack.push(Frame::Object),
                b'[' => self.stack.push(Frame::Array {
                    records: records.is_some(),
                    due: true,
                    key: records.unwrap_or(""),
                }),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Opens `path` for reading without blocking in `open` (a FIFO nobody writes to would hold
/// tare there forever), then reads it blocking as usual.
pub fn open(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
    // SAFETY: fcntl reads and sets the flags of a descriptor `f` keeps open for both calls.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) >= 0
    };
    if ok {
        Ok(f)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Reads the file at `path` up to [`limit`] bytes (see [`read_all`]). A regular file larger
/// than the limit is refused before a byte is read.
pub fn read(path: &Path, what: &str) -> anyhow::Result<Vec<u8>> {
    read_checked(path, what, |_| Ok(()))
}

/// [`read`] with a check of the first [`HEAD`] bytes (see [`read_all_checked`]).
pub fn read_checked(
    path: &Path,
    what: &str,
    check: impl Fn(&[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<u8>> {
    let limit = limit()?;
    let file = open(path).map_err(|e| {
        crate::error::usage(format!(
            "cannot read {what} {}: {e}; check the path",
            path.display()
        ))
    })?;
    if let Ok(m) = file.metadata() {
        if m.is_file() && m.len() > limit {
            return Err(too_large(path, what, limit));
        }
    }
    read_all_checked(file, path, what, limit, check)
}

/// [`read`] as UTF-8 text; bytes that are not UTF-8 are an error naming the file.
pub fn read_text(path: &Path, what: &str) -> anyhow::Result<String> {
    String::from_utf8(read(path, what)?).map_err(|_| {
        crate::error::usage(format!(
            "{what} {} is not UTF-8 text; give the right file",
            path.display()
        ))
    })
}

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line, without its newline (the last line may have none).
    Line(String),
    /// The end of the input.
    End,
    /// A line longer than the bound: its first `max` bytes were read, the rest is unread.
    TooLong,
}

/// Reads one line of at most `max` bytes (newline excluded) without holding more than that:
/// a peer that sends an endless line is stopped at `max`. Bytes that are not UTF-8 are
/// replaced.
pub fn read_line(reader: &mut impl BufRead, max: usize) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let n = reader.take(max as u64 + 1).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > max {
        return Ok(Line::TooLong);
    }
    Ok(Line::Line(String::from_utf8_lossy(&buf).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_reader_stops_at_the_limit_with_one_line_naming_the_file() {
        let e = read_all(
            std::io::repeat(b' '),
            Path::new("/x/spaces"),
            "results file",
            1000,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("results file /x/spaces is larger than"), "{e}");
        assert!(!e.contains('\n'));
        assert_eq!(
            read_all(&b"abc"[..], Path::new("f"), "f", 3).unwrap(),
            b"abc"
        );
    }

    /// /dev/zero, a sparse file, a gigabyte of `[0,0,…`: refused from the first block, with
    /// the rest never read (an endless reader would otherwise run to the limit).
    #[test]
    fn garbage_is_refused_from_its_head() {
        let e = read_all(std::io::repeat(0), Path::new("/x/zero"), "import", u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("import /x/zero is binary data, not text (a NUL byte at offset 0)"),
            "{e}"
        );
        let zeros = std::io::Read::chain(&b"[0"[..], std::io::repeat(b',').take(u64::MAX));
        let e = read_all_checked(zeros, Path::new("z.json"), "import", u64::MAX, |h| {
            match json_document_head(h) {
                Some(why) => Err(anyhow::anyhow!("z.json is {why}")),
                None => Ok(()),
            }
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("is a JSON array of values"), "{e}");
        for ok in [
            &b"{\"a\": 1}"[..],
            b"  [ {\"b\": 2} ]",
            b"[]",
            b"\xEF\xBB\xBF{}",
            b"x",
        ] {
            assert!(json_document_head(ok).is_none(), "{ok:?}");
        }
        assert!(json_document_head(b"[[1]]").is_some());
    }

    #[test]
    fn record_arrays_hold_records() {
        let check = |doc: &str| {
            let mut s = JsonShape::default();
            // Fed byte by byte: pieces may end anywhere.
            doc.as_bytes()
                .chunks(1)
                .try_for_each(|p| s.feed(p))
                .map(|_| ())
        };
        for ok in [
            r#"{"benchmarks": [{"name": "a", "runs": [{"wall_time": 1}]}], "x": [0, 1]}"#,
            r#"{"results": [], "sessions": [ {"benchmarks": []} ]}"#,
            r#"{"b\"enchmarks": [0], "runs": {"a": [1]}}"#,
            r#"{"a": "benchmarks", "b": [0]}"#,
            "{\"runs\": [{}]}\n{\"runs\": [{}]}",
            // Keys below a record's own keys are not record arrays: a scan's indices.
            r#"{"benchmarks": [{}], "extra": {"scaling": [{"benchmarks": [0, 1, 2]}]}}"#,
            r#"{"extra": {"runs": [1, 2]}}"#,
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for bad in [
            r#"{"benchmarks": [0, 0, 0]}"#,
            r#"{"benchmarks": [{"name": "a"}, 0]}"#,
            r#"{"benchmarks": [{"runs": [{}, [1]]}]}"#,
            r#"{"sessions": ["x"]}"#,
        ] {
            let e = check(bad).unwrap_err();
            assert!(e.contains("where records (objects) belong"), "{bad}: {e}");
        }
        let e = check(r#"{"a": 1, "benchmarks": [{"name": "a"}, 0]}"#).unwrap_err();
        assert!(
            e.contains("\"benchmarks\" holds a number") && e.contains("byte 40"),
            "{e}"
        );
    }

    #[test]
    fn lines_are_bounded() {
        let mut r = std::io::BufReader::new(&b"short\nmuch too long a line\nend"[..]);
        assert_eq!(read_line(&mut r, 8).unwrap(), Line::Line("short".into()));
        assert_eq!(read_line(&mut r, 8).unwrap(), Line::TooLong);
        let mut endless = std::io::BufReader::new(std::io::repeat(b'x'));
        assert_eq!(read_line(&mut endless, 1 << 16).unwrap(), Line::TooLong);
        let mut r = std::io::BufReader::new(&b"last"[..]);
        assert_eq!(read_line(&mut r, 8).unwrap(), Line::Line("last".into()));
        assert_eq!(read_line(&mut r, 8).unwrap(), Line::End);
    }

    #[test]
    fn a_fifo_nobody_writes_to_does_not_hold_tare() {
        // `mkfifo f; tare compare f x.json` blocked in open(2) forever.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(read(&p, "results file").map(|b| b.len()));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(30));
        assert!(matches!(got, Ok(Ok(0))), "{got:?}");
    }
}
