//! The page-cache state as a controlled factor (`--cache cold|warm`): before each run, drop
//! the cache (cold) or read the named files (warm), then record how many bytes of the named
//! files are resident (mincore) as the proof. Not a meter of the run itself: this happens
//! before the clock starts.
//!
//! Cold, as root: `sync` then `echo 3 > /proc/sys/vm/drop_caches` — the whole machine's clean
//! page cache, dentries and inodes, as the thesis's measurements did (it costs every other
//! program on the machine its cache, too). Cold, not root: `posix_fadvise(DONTNEED)` on each
//! named file after `fdatasync` — only those files, and only their clean pages. cgroup v2's
//! `memory.reclaim` would drop the run group's own cache without touching others'; tare does
//! not use it yet (this machine has no cgroup v2 memory controller to test it on).
//! Warm: each named file read to its end, untimed.
//!
//! [`SetCache`] is the built-in action (`method::stages`) that does it: a unit's own action at
//! before-invocation in `tare run` (right before the clock), at before-repetition in
//! `tare kernels` (before each sample), its reading the residency it found.

use crate::plan::meters::{CachePlan, CacheState};
use crate::results::RunCache;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The files whose cache state a command's runs depend on, as far as tare can tell: the
/// program (resolved in PATH) and the shared libraries `ldd` lists for it. Best effort: a
/// program `ldd` does not understand contributes itself only.
pub fn files_of(argv: &[String]) -> Vec<PathBuf> {
    let Some(first) = argv.first() else {
        return Vec::new();
    };
    let Ok(program) = crate::exec::spawn::resolve(std::ffi::OsStr::new(first), &env_vars(), None)
    else {
        return Vec::new();
    };
    let mut files = vec![program.clone()];
    // A script's interpreter (`#!/usr/bin/env python3` → python3 in PATH) is loaded too.
    let mut binaries = vec![program.clone()];
    if let Some(words) = shebang(&program) {
        let interp = match words.as_slice() {
            [env, name, ..] if env.ends_with("/env") => {
                crate::exec::spawn::resolve(std::ffi::OsStr::new(name), &env_vars(), None).ok()
            }
            [interp, ..] => Some(PathBuf::from(interp)),
            [] => None,
        };
        if let Some(i) = interp.filter(|p| p.is_file()) {
            files.push(i.clone());
            binaries.push(i);
        }
    }
    for b in binaries {
        if let Ok(out) = std::process::Command::new("ldd")
            .arg(&b)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
        {
            files.extend(parse_ldd(&String::from_utf8_lossy(&out.stdout)));
        }
    }
    files.sort();
    files.dedup();
    files
}

fn env_vars() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os().collect()
}

/// The words of a script's `#!` line (`None` when the file is not a script).
fn shebang(path: &Path) -> Option<Vec<String>> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    parse_shebang(&head[..n])
}

/// `#!/usr/bin/env python3 -u\n...` → `["/usr/bin/env", "python3", "-u"]`.
pub fn parse_shebang(head: &[u8]) -> Option<Vec<String>> {
    let rest = head.strip_prefix(b"#!")?;
    let line = rest.split(|b| *b == b'\n').next()?;
    let words: Vec<String> = String::from_utf8_lossy(line)
        .split_whitespace()
        .map(String::from)
        .collect();
    (!words.is_empty()).then_some(words)
}

/// The absolute paths in `ldd` output (`libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x..)`,
/// `/lib64/ld-linux-x86-64.so.2 (0x..)`).
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, right)) => right.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// Puts the page cache in `plan`'s state and returns the record, the named files' resident
/// bytes measured right after.
pub fn prepare(plan: &CachePlan) -> anyhow::Result<RunCache> {
    prepare_as(plan, crate::sys::euid() == 0)
}

/// [`prepare`], choosing the machine-wide drop (`as_root`) or the per-file one; the
/// per-file way works for root too (tests use it to check the unprivileged path).
pub fn prepare_as(plan: &CachePlan, as_root: bool) -> anyhow::Result<RunCache> {
    let how = match plan.state {
        CacheState::Cold => drop_cold(&plan.files, as_root)?,
        CacheState::Warm => {
            for f in &plan.files {
                read_through(f)?;
            }
            "read"
        }
    };
    let (resident, total) = residency(&plan.files);
    Ok(RunCache {
        state: plan.state.as_str().into(),
        how: how.into(),
        resident_bytes: resident,
        file_bytes: total,
    })
}

fn drop_cold(files: &[PathBuf], as_root: bool) -> anyhow::Result<&'static str> {
    if as_root {
        // SAFETY: sync has no preconditions and cannot fail.
        unsafe { libc::sync() };
        if std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok() {
            return Ok("drop_caches");
        }
    }
    for f in files {
        let file = std::fs::File::open(f)
            .map_err(|e| anyhow::anyhow!("--cache cold: cannot open {}: {e}", f.display()))?;
        // Dirty pages are not dropped: write them first.
        let _ = file.sync_data();
        // SAFETY: the descriptor is open for the call; offset 0 and length 0 mean the whole
        // file; the advice is only a hint and touches no memory of ours.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            anyhow::bail!(
                "--cache cold: posix_fadvise on {} failed: {}",
                f.display(),
                std::io::Error::from_raw_os_error(rc)
            );
        }
    }
    Ok("fadvise")
}

fn read_through(f: &Path) -> anyhow::Result<()> {
    let mut file = std::fs::File::open(f)
        .map_err(|e| anyhow::anyhow!("--cache warm: cannot read {}: {e}", f.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => anyhow::bail!("--cache warm: cannot read {}: {e}", f.display()),
        }
    }
}

/// The name of [`SetCache`]'s reading: a run's `meters.cache`, an invocation's `cache.…`.
pub const NAME: &str = "cache";

/// `--cache` as an action of the one action system: puts the page cache in the plan's state
/// each time it runs, and keeps the weakest proof since its reading was last taken (for cold
/// the most bytes found resident, for warm the fewest) and how many times it ran.
pub struct SetCache {
    pub plan: CachePlan,
    got: Option<(RunCache, u64)>,
}

impl SetCache {
    pub fn new(plan: CachePlan) -> SetCache {
        SetCache { plan, got: None }
    }
}

impl crate::method::stages::Action for SetCache {
    fn describe(&self) -> String {
        format!("--cache {}", self.plan.state.as_str())
    }
    fn run(&mut self, _: &crate::method::stages::StageContext) -> anyhow::Result<()> {
        let now = prepare(&self.plan)?;
        let cold = self.plan.state == CacheState::Cold;
        let weaker = |old: &RunCache| {
            if cold {
                now.resident_bytes > old.resident_bytes
            } else {
                now.resident_bytes < old.resident_bytes
            }
        };
        self.got = Some(match self.got.take() {
            Some((old, n)) if !weaker(&old) => (old, n + 1),
            Some((_, n)) => (now, n + 1),
            None => (now, 1),
        });
        Ok(())
    }
    fn reading(&mut self) -> Option<(String, crate::method::stages::Reading)> {
        let (c, n) = self.got.take()?;
        let values = [
            (format!("{NAME}.resident_bytes"), c.resident_bytes as f64),
            (format!("{NAME}.file_bytes"), c.file_bytes as f64),
            (format!("{NAME}.times_set"), n as f64),
        ]
        .into_iter()
        .collect();
        Some((
            NAME.to_string(),
            crate::method::stages::Reading {
                values,
                record: serde_json::to_value(&c).ok(),
            },
        ))
    }
}

/// (resident bytes, total bytes) of `files`; a file that cannot be opened or mapped counts
/// as neither.
pub fn residency(files: &[PathBuf]) -> (u64, u64) {
    let mut resident = 0u64;
    let mut total = 0u64;
    for f in files {
        if let Some((r, t)) = resident_bytes(f) {
            resident += r;
            total += t;
        }
    }
    (resident, total)
}

/// Bytes of `path` in the page cache now (mincore over a read-only shared mapping, which
/// does not fault anything in), and its size.
pub fn resident_bytes(path: &Path) -> Option<(u64, u64)> {
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    if len == 0 {
        return Some((0, 0));
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let pages = len.div_ceil(page) as usize;
    // SAFETY: a fresh read-only shared mapping of an open file, length > 0; the result is
    // checked for MAP_FAILED and unmapped below; nothing reads through it.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` is page aligned and maps `len` bytes; `vec` has one byte per page of
    // that range, as mincore requires.
    let rc = unsafe { libc::mincore(addr, len as usize, vec.as_mut_ptr()) };
    // SAFETY: unmaps exactly the mapping made above.
    unsafe { libc::munmap(addr, len as usize) };
    if rc != 0 {
        return None;
    }
    let n = vec.iter().filter(|b| *b & 1 == 1).count() as u64;
    Some(((n * page).min(len), len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_lines() {
        assert_eq!(
            parse_shebang(b"#!/usr/bin/env python3 -u\nprint(1)\n"),
            Some(vec!["/usr/bin/env".into(), "python3".into(), "-u".into()])
        );
        assert_eq!(parse_shebang(b"#! /bin/sh\n"), Some(vec!["/bin/sh".into()]));
        assert_eq!(parse_shebang(b"\x7fELF"), None);
        assert_eq!(parse_shebang(b"#!\n"), None);
    }

    #[test]
    fn ldd_lines() {
        let t = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                 \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                 \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n\
                 \tlibfoo.so => not found\n";
        assert_eq!(
            parse_ldd(t),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
    }

    #[test]
    fn a_file_just_read_is_resident() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &vec![7u8; 1 << 20]).unwrap();
        read_through(f.path()).unwrap();
        let (r, t) = resident_bytes(f.path()).unwrap();
        assert_eq!(t, 1 << 20);
        assert_eq!(r, 1 << 20);
    }
}
