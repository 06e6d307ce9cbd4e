//! One root for every /sys, /proc and /etc file the machine layer reads or writes.
//!
//! For: turning a kernel path such as `/sys/devices/system/cpu/online` into a real path under a
//! root (by default `/`), reading it as a string or number, listing directories, writing a value
//! (for `tare machine tune`). Errors carry the real path and what was being done.
//!
//! Not for: interpreting what the files mean (see [`super::topology`], [`super::inventory`], ...),
//! nor for files outside the kernel's interfaces (results, journals).
//!
//! The root can be overridden with the environment variable `TARE_SYSROOT`. That is meant for
//! testing: point it at a synthetic tree shaped like a real kernel's (see
//! `tests/fixtures/sysfs/`) to see what tare would say on a machine with cpufreq, thermal zones
//! or a big.LITTLE topology.

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Environment variable that overrides the root of /sys and /proc (for testing).
pub const SYSROOT_ENV: &str = "TARE_SYSROOT";

/// An I/O or parse failure on one kernel file, with its real path.
#[derive(Debug)]
pub struct SysError {
    /// Real path (root included).
    pub path: PathBuf,
    /// What was being done: "read", "write", "list", "parse".
    pub op: &'static str,
    pub source: io::Error,
}

impl SysError {
    /// The file or directory does not exist.
    pub fn is_missing(&self) -> bool {
        self.source.kind() == io::ErrorKind::NotFound
    }
    /// The kernel (or file mode) refused access.
    pub fn is_permission(&self) -> bool {
        self.source.kind() == io::ErrorKind::PermissionDenied
            || self.source.raw_os_error() == Some(libc::EPERM)
    }
}

impl fmt::Display for SysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot {} {}: {}",
            self.op,
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for SysError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

pub type SysResult<T> = Result<T, SysError>;

/// The root under which kernel paths are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    root: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        SysRoot::host()
    }
}

impl SysRoot {
    /// Files under `root` (a synthetic tree in tests).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SysRoot { root: root.into() }
    }

    /// The running machine: `/`.
    pub fn host() -> Self {
        SysRoot::new("/")
    }

    /// `$TARE_SYSROOT` if set and non-empty, else `/`. The override is for testing.
    pub fn from_env() -> Self {
        match std::env::var_os(SYSROOT_ENV) {
            Some(v) if !v.is_empty() => SysRoot::new(v),
            _ => SysRoot::host(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this is the real machine's root (`/`).
    pub fn is_host(&self) -> bool {
        self.root == Path::new("/")
    }

    /// Real path of a kernel path such as `/proc/stat` (leading `/` optional).
    pub fn path(&self, kernel_path: &str) -> PathBuf {
        self.root.join(kernel_path.trim_start_matches('/'))
    }

    pub fn exists(&self, kernel_path: &str) -> bool {
        self.path(kernel_path).exists()
    }

    fn err(&self, kernel_path: &str, op: &'static str, source: io::Error) -> SysError {
        SysError {
            path: self.path(kernel_path),
            op,
            source,
        }
    }

    /// The exact bytes of a file, as a string (invalid UTF-8 replaced). Used to save values that
    /// must later be restored byte for byte.
    /// Like [`SysRoot::read_raw`], but the host's answer is read once per process and then
    /// copied: for files whose content does not change while tare runs and that are costly
    /// to produce (`/proc/cpuinfo` queries every CPU). Synthetic roots are read every time.
    pub fn read_static(&self, kernel_path: &str) -> SysResult<String> {
        use std::collections::HashMap;
        use std::sync::{Mutex, OnceLock};
        static HOST: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
        if !self.is_host() {
            return self.read_raw(kernel_path);
        }
        let cache = HOST.get_or_init(Default::default);
        if let Some(s) = cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(kernel_path)
        {
            return Ok(s.clone());
        }
        let s = self.read_raw(kernel_path)?;
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(kernel_path.to_string(), s.clone());
        Ok(s)
    }

    pub fn read_raw(&self, kernel_path: &str) -> SysResult<String> {
        let mut buf = String::new();
        self.read_into(kernel_path, &mut buf)?;
        Ok(buf)
    }

    /// Reads a file into `buf` (cleared first), reusing its allocation. For probes read per run.
    pub fn read_into(&self, kernel_path: &str, buf: &mut String) -> SysResult<()> {
        buf.clear();
        let p = self.path(kernel_path);
        read_path_into(&p, buf).map_err(|e| SysError {
            path: p,
            op: "read",
            source: e,
        })
    }

    /// A file's content with surrounding whitespace removed.
    pub fn read_string(&self, kernel_path: &str) -> SysResult<String> {
        Ok(self.read_raw(kernel_path)?.trim().to_string())
    }

    /// A file holding one unsigned integer.
    pub fn read_u64(&self, kernel_path: &str) -> SysResult<u64> {
        let s = self.read_string(kernel_path)?;
        s.parse::<u64>().map_err(|_| {
            self.err(
                kernel_path,
                "parse",
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("not an unsigned integer: {s:?}"),
                ),
            )
        })
    }

    /// A file holding one signed integer (e.g. `physical_package_id`, which can be -1).
    pub fn read_i64(&self, kernel_path: &str) -> SysResult<i64> {
        let s = self.read_string(kernel_path)?;
        s.parse::<i64>().map_err(|_| {
            self.err(
                kernel_path,
                "parse",
                io::Error::new(io::ErrorKind::InvalidData, format!("not an integer: {s:?}")),
            )
        })
    }

    /// [`read_string`](Self::read_string), `None` on any failure.
    pub fn opt_string(&self, kernel_path: &str) -> Option<String> {
        self.read_string(kernel_path).ok()
    }

    /// [`read_u64`](Self::read_u64), `None` on any failure.
    pub fn opt_u64(&self, kernel_path: &str) -> Option<u64> {
        self.read_u64(kernel_path).ok()
    }

    /// [`read_i64`](Self::read_i64), `None` on any failure.
    pub fn opt_i64(&self, kernel_path: &str) -> Option<i64> {
        self.read_i64(kernel_path).ok()
    }

    /// Names of the entries of a directory, sorted naturally (`cpu2` before `cpu10`).
    pub fn list_dir(&self, kernel_path: &str) -> SysResult<Vec<String>> {
        let p = self.path(kernel_path);
        let rd = fs::read_dir(&p).map_err(|e| SysError {
            path: p.clone(),
            op: "list",
            source: e,
        })?;
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_by(|a, b| natural_cmp(a, b));
        Ok(names)
    }

    /// Entries named `<prefix><number>` (e.g. `cpu3`, `policy0`, `thermal_zone1`), as
    /// `(number, name)` sorted by number. Missing directory gives an empty list.
    pub fn list_numbered(&self, kernel_path: &str, prefix: &str) -> Vec<(usize, String)> {
        let mut v: Vec<(usize, String)> = self
            .list_dir(kernel_path)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|name| {
                let n = name.strip_prefix(prefix)?.parse::<usize>().ok()?;
                Some((n, name))
            })
            .collect();
        v.sort();
        v
    }

    /// Writes `value` to a kernel file, as `echo value > file` would (no truncation semantics
    /// beyond what the kernel does; regular files in synthetic trees are replaced).
    pub fn write(&self, kernel_path: &str, value: &str) -> SysResult<()> {
        let p = self.path(kernel_path);
        // Do not create files: a missing sysfs attribute means the feature is absent.
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&p)
            .map_err(|e| SysError {
                path: p.clone(),
                op: "write",
                source: e,
            })?;
        use std::io::Write;
        f.write_all(value.as_bytes()).map_err(|e| SysError {
            path: p.clone(),
            op: "write",
            source: e,
        })
    }
}

/// A kernel file kept open and re-read from offset 0 each time, for values read once per run:
/// procfs and sysfs regenerate a file's content on every read from offset 0, so this saves the
/// open and close of [`SysRoot::read_into`]. A file *replaced* by rename (only happens in
/// synthetic trees) would keep showing the old content; files rewritten in place are fine.
#[derive(Debug)]
pub struct KernelFile {
    path: PathBuf,
    file: Option<fs::File>,
    bytes: Vec<u8>,
}

impl KernelFile {
    /// Opens lazily, on the first read.
    pub fn new(root: &SysRoot, kernel_path: &str) -> KernelFile {
        KernelFile {
            path: root.path(kernel_path),
            file: None,
            bytes: Vec::with_capacity(4096),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn pread_all(&mut self) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        if self.file.is_none() {
            self.file = Some(fs::File::open(&self.path)?);
        }
        let f = self.file.as_ref().expect("opened above");
        self.bytes.clear();
        loop {
            if self.bytes.capacity() - self.bytes.len() < 1024 {
                self.bytes.reserve(self.bytes.capacity().max(4096));
            }
            let len = self.bytes.len();
            let cap = self.bytes.capacity();
            self.bytes.resize(cap, 0);
            match f.read_at(&mut self.bytes[len..], len as u64) {
                Ok(0) => {
                    self.bytes.truncate(len);
                    return Ok(());
                }
                // A short read is the end: procfs and sysfs files here are generated whole
                // (single_open seq_files, one-page attributes) and copied as far as the
                // buffer allows, so asking again would only regenerate them (for /proc/stat,
                // a walk over every CPU and interrupt) to read 0 bytes.
                Ok(n) if len + n < cap => {
                    self.bytes.truncate(len + n);
                    return Ok(());
                }
                Ok(n) => self.bytes.truncate(len + n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.bytes.truncate(len),
                Err(e) => {
                    self.bytes.truncate(len);
                    return Err(e);
                }
            }
        }
    }

    /// Reads the whole file into `buf` (cleared first). On an error the file is reopened once.
    pub fn read_into(&mut self, buf: &mut String) -> SysResult<()> {
        buf.clear();
        if self.pread_all().is_err() {
            self.file = None;
            self.pread_all().map_err(|e| SysError {
                path: self.path.clone(),
                op: "read",
                source: e,
            })?;
        }
        match std::str::from_utf8(&self.bytes) {
            Ok(s) => buf.push_str(s),
            Err(_) => buf.push_str(&String::from_utf8_lossy(&self.bytes)),
        }
        Ok(())
    }
}

fn read_path_into(p: &Path, buf: &mut String) -> io::Result<()> {
    let mut f = fs::File::open(p)?;
    match f.read_to_string(buf) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            // Not UTF-8: keep what can be read, replacing the invalid bytes.
            buf.clear();
            let bytes = fs::read(p)?;
            buf.push_str(&String::from_utf8_lossy(&bytes));
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Orders names so that embedded numbers compare numerically: `cpu2` < `cpu10`.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn split(s: &str) -> (&str, Option<u64>) {
        let i = s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        (&s[..i], s[i..].parse().ok())
    }
    let (pa, na) = split(a);
    let (pb, nb) = split(b);
    pa.cmp(pb).then(na.cmp(&nb)).then(a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_under_root() {
        let r = SysRoot::new("/tmp/x");
        assert_eq!(r.path("/proc/stat"), PathBuf::from("/tmp/x/proc/stat"));
        assert_eq!(
            SysRoot::host().path("/proc/stat"),
            PathBuf::from("/proc/stat")
        );
    }

    #[test]
    fn errors_carry_path() {
        let d = tempfile::tempdir().unwrap();
        let r = SysRoot::new(d.path());
        let e = r.read_u64("/sys/nope").unwrap_err();
        assert!(e.is_missing());
        assert!(e.to_string().contains("/sys/nope"), "{e}");
        std::fs::create_dir_all(d.path().join("sys")).unwrap();
        std::fs::write(d.path().join("sys/x"), "abc\n").unwrap();
        let e = r.read_u64("/sys/x").unwrap_err();
        assert!(e.to_string().contains("not an unsigned integer"), "{e}");
        assert_eq!(r.read_raw("/sys/x").unwrap(), "abc\n");
        std::fs::write(d.path().join("sys/bin"), b"a\xffb\n").unwrap();
        assert_eq!(r.read_string("/sys/bin").unwrap(), "a\u{fffd}b");
        assert!(r.write("/sys/absent", "1").unwrap_err().is_missing());
    }

    #[test]
    fn kernel_file_rereads_from_start() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "first\n").unwrap();
        let r = SysRoot::new(d.path());
        let mut f = KernelFile::new(&r, "/f");
        let mut buf = String::new();
        f.read_into(&mut buf).unwrap();
        assert_eq!(buf, "first\n");
        let long = "x".repeat(10_000);
        std::fs::write(&p, &long).unwrap(); // in place, like the kernel
        f.read_into(&mut buf).unwrap();
        assert_eq!(buf, long);
        let mut missing = KernelFile::new(&r, "/nope");
        assert!(missing.read_into(&mut buf).unwrap_err().is_missing());
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["cpu10", "cpu2", "cpufreq", "cpu1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["cpu1", "cpu2", "cpu10", "cpufreq"]);
    }
}
