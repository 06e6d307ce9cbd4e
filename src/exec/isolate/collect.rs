//! The result-file collector: copies the files an isolated tool left in its work directory
//! out to tare's results, as root, without letting the tool choose what root reads or writes.
//!
//! For: [`collect`] (globs → copies + what was withheld) and [`invoking_user`]. Not for:
//! creating or removing the work directory (see [`super::files`]).
//!
//! Guarantees (threat model: the tool is hostile and ran as root in its namespace; see
//! docs/isolation.md):
//! - Nothing outside the work directory is read: every path component is opened relative to
//!   its parent's descriptor with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_XDEV)` and `O_NOFOLLOW`; a symbolic link is never followed, whether it names a
//!   file or a folder, and is recorded as withheld. (A hard link to a host file cannot be made
//!   there: the work directory is a separate mount in the tool's namespace, so `link` fails
//!   with EXDEV, and `fs.protected_hardlinks` refuses others' files.)
//! - Only regular files are copied, decided on the opened descriptor (`fstat`), so a file
//!   swapped for a FIFO or device between listing and opening is not copied either (opened
//!   non-blocking: a FIFO cannot stall tare). Devices, FIFOs and sockets are withheld.
//! - Copies are new files (`O_CREAT | O_EXCL | O_NOFOLLOW`) with mode 0644, plus the owner's
//!   execute bit when the original had it: never set-user-ID, set-group-ID or sticky, never
//!   writable by others. They belong to the invoking user (`SUDO_UID`/`SUDO_GID` when tare
//!   runs as root through sudo), else to tare's user.
//! - Holes stay holes: only the data segments (`SEEK_DATA`/`SEEK_HOLE`) are copied and the
//!   length is set at the end, so a 1 GiB sparse file costs what its data costs.
//! - A cap on the data copied per run (`limit`, default [`DEFAULT_OUTPUT_LIMIT`]) and on the
//!   number of files ([`MAX_FILES`]): a file that would pass it is withheld whole (a truncated
//!   result file would look like a real one), and recorded with the reason.

use rustix::fs::{self as rfs, FileType, Mode, OFlags, ResolveFlags, SeekFrom};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Result files and log kept per run unless configured (`[limits] output`, `--output-limit`).
pub const DEFAULT_OUTPUT_LIMIT: u64 = 64 << 20;

/// Result files kept per run at most.
pub const MAX_FILES: usize = 10_000;

/// Folder levels below the work directory that `**` descends at most.
const MAX_DEPTH: usize = 64;

/// A file the collector did not copy (or, for a log, cut), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Withheld {
    /// Relative to the work directory (a log: relative to the output directory).
    pub file: String,
    pub reason: String,
}

/// What [`collect`] copied and withheld.
#[derive(Debug, Default)]
pub struct Collected {
    /// Copied files, relative to the work directory and to `dest`, sorted.
    pub files: Vec<PathBuf>,
    pub withheld: Vec<Withheld>,
    /// Data bytes copied (holes not counted).
    pub bytes: u64,
}

/// The user and group result files are given to: `SUDO_UID`/`SUDO_GID` when tare runs as
/// root through sudo, else none (the files stay tare's own).
pub fn invoking_user() -> Option<(u32, u32)> {
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let id = |k: &str| std::env::var(k).ok()?.trim().parse::<u32>().ok();
    let uid = id("SUDO_UID")?;
    Some((uid, id("SUDO_GID").unwrap_or(uid)))
}

/// Mode of a copied file: 0644, plus the owner's execute bit of `src_mode`.
pub fn copy_mode(src_mode: u32) -> u32 {
    0o644 | (src_mode & 0o100)
}

/// One component of a glob.
enum Part {
    /// A plain name (no wildcard): looked up directly.
    Name(Vec<u8>),
    Pattern(glob::Pattern),
    /// `**`: this folder and every folder below.
    Any,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn parse_glob(g: &str) -> io::Result<Vec<Part>> {
    if Path::new(g).is_absolute() || g.split('/').any(|c| c == "..") || g.is_empty() {
        return Err(invalid(format!(
            "result-file glob '{g}' must be relative to the work directory, without '..'"
        )));
    }
    g.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(|c| {
            if c == "**" {
                Ok(Part::Any)
            } else if c.contains(['*', '?', '[']) {
                glob::Pattern::new(c)
                    .map(Part::Pattern)
                    .map_err(|e| invalid(format!("invalid result-file glob '{g}': {e}")))
            } else {
                Ok(Part::Name(c.as_bytes().to_vec()))
            }
        })
        .collect()
}

fn beneath() -> ResolveFlags {
    ResolveFlags::BENEATH
        | ResolveFlags::NO_SYMLINKS
        | ResolveFlags::NO_XDEV
        | ResolveFlags::NO_MAGICLINKS
}

fn open_dir_beneath(dir: impl AsFd, name: &OsStr) -> io::Result<OwnedFd> {
    Ok(rfs::openat2(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        beneath(),
    )?)
}

fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::Symlink => "symbolic link (not followed)",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::Directory => "directory",
        _ => "not a regular file",
    }
}

struct Collector<'a> {
    dest: &'a Path,
    owner: Option<(u32, u32)>,
    limit: u64,
    out: Collected,
    seen: BTreeSet<PathBuf>,
    /// Paths already reported as withheld (a file matched by two globs is reported once).
    refused: BTreeSet<PathBuf>,
}

/// Copies the regular files below `src` matching `globs` (relative, `*`, `?`, `[..]` within a
/// name, `**` for any folders) to `dest`, keeping relative paths, under the guarantees of the
/// module doc. An invalid glob or a failure to write `dest` is an error; what the tool left
/// that may not be copied is not (it is in [`Collected::withheld`]).
pub fn collect(
    src: &Path,
    globs: &[String],
    dest: &Path,
    owner: Option<(u32, u32)>,
    limit: u64,
) -> io::Result<Collected> {
    let parsed = globs
        .iter()
        .map(|g| parse_glob(g))
        .collect::<io::Result<Vec<_>>>()?;
    let root = rfs::open(
        src,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io::Error::other(format!("cannot open work directory {}: {e}", src.display())))?;
    let mut c = Collector {
        dest,
        owner,
        limit,
        out: Collected::default(),
        seen: BTreeSet::new(),
        refused: BTreeSet::new(),
    };
    for parts in &parsed {
        c.walk(&root, Path::new(""), parts, 0)?;
    }
    c.out.files.sort();
    Ok(c.out)
}

impl Collector<'_> {
    fn withhold(&mut self, rel: &Path, reason: String) {
        if self.refused.insert(rel.to_path_buf()) {
            self.out.withheld.push(Withheld {
                file: rel.to_string_lossy().into_owned(),
                reason,
            });
        }
    }

    /// Names in `dir`, sorted (so what a cap withholds does not depend on directory order).
    fn names(dir: &OwnedFd) -> io::Result<Vec<Vec<u8>>> {
        let mut names = Vec::new();
        for e in rfs::Dir::read_from(dir)? {
            let e = e?;
            let n = e.file_name().to_bytes();
            if n != b"." && n != b".." {
                names.push(n.to_vec());
            }
        }
        names.sort();
        Ok(names)
    }

    fn walk(&mut self, dir: &OwnedFd, rel: &Path, parts: &[Part], depth: usize) -> io::Result<()> {
        let Some((first, rest)) = parts.split_first() else {
            return Ok(());
        };
        match first {
            Part::Name(n) => self.entry(dir, rel, OsStr::from_bytes(n), rest, depth),
            Part::Pattern(p) => {
                for n in Self::names(dir)? {
                    let name = OsStr::from_bytes(&n);
                    if p.matches(&name.to_string_lossy()) {
                        self.entry(dir, rel, name, rest, depth)?;
                    }
                }
                Ok(())
            }
            Part::Any => {
                // Zero folders, then each folder below (never through a symbolic link).
                self.walk(dir, rel, rest, depth)?;
                if depth >= MAX_DEPTH {
                    return Ok(());
                }
                for n in Self::names(dir)? {
                    let name = OsStr::from_bytes(&n);
                    let Ok(st) = rfs::statat(dir, name, rfs::AtFlags::SYMLINK_NOFOLLOW) else {
                        continue;
                    };
                    if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                        if let Ok(sub) = open_dir_beneath(dir, name) {
                            self.walk(&sub, &rel.join(name), parts, depth + 1)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// `name` in `dir` matched a glob component; `rest` are the components after it.
    fn entry(
        &mut self,
        dir: &OwnedFd,
        rel: &Path,
        name: &OsStr,
        rest: &[Part],
        depth: usize,
    ) -> io::Result<()> {
        let path = rel.join(name);
        let st = match rfs::statat(dir, name, rfs::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => {
                self.withhold(&path, format!("cannot be read: {e}"));
                return Ok(());
            }
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if !rest.is_empty() {
            match kind {
                FileType::Directory => match open_dir_beneath(dir, name) {
                    Ok(sub) => self.walk(&sub, &path, rest, depth + 1)?,
                    Err(e) => self.withhold(&path, format!("folder cannot be opened: {e}")),
                },
                FileType::Symlink => {
                    self.withhold(&path, "symbolic link to a folder (not followed)".into())
                }
                _ => {}
            }
            return Ok(());
        }
        match kind {
            FileType::RegularFile => self.file(dir, name, &path),
            FileType::Directory => Ok(()),
            other => {
                self.withhold(&path, kind_name(other).into());
                Ok(())
            }
        }
    }

    fn file(&mut self, dir: &OwnedFd, name: &OsStr, rel: &Path) -> io::Result<()> {
        if self.seen.contains(rel) {
            return Ok(());
        }
        let src = match rfs::openat2(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
            beneath(),
        ) {
            Ok(fd) => fd,
            Err(e) => {
                self.withhold(rel, format!("cannot be opened: {e}"));
                return Ok(());
            }
        };
        let st = rfs::fstat(&src)?;
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind != FileType::RegularFile {
            self.withhold(rel, kind_name(kind).into());
            return Ok(());
        }
        if self.out.files.len() >= MAX_FILES {
            self.withhold(
                rel,
                format!("over the limit of {MAX_FILES} result files per run"),
            );
            return Ok(());
        }
        let size = st.st_size as u64;
        let segments = data_segments(&src, size)?;
        let data: u64 = segments.iter().map(|s| s.1).sum();
        if self.out.bytes + data > self.limit {
            self.withhold(
                rel,
                format!(
                    "over the output limit: {data} bytes of data, {} of {} bytes per run already used (raise [limits] output or --output-limit)",
                    self.out.bytes, self.limit
                ),
            );
            return Ok(());
        }
        let parent = self.dest_dir(rel.parent().unwrap_or(Path::new("")))?;
        let fname = rel.file_name().unwrap_or(name);
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let out = match rfs::openat(&parent, fname, flags, Mode::from_raw_mode(0o600)) {
            Err(rustix::io::Errno::EXIST) => {
                // Left by an earlier, cut-off attempt of this run: replace it.
                rfs::unlinkat(&parent, fname, rfs::AtFlags::empty())?;
                rfs::openat(&parent, fname, flags, Mode::from_raw_mode(0o600))
            }
            r => r,
        }
        .map_err(|e| {
            io::Error::other(format!(
                "cannot create result file {}: {e}",
                self.dest.join(rel).display()
            ))
        })?;
        for &(off, len) in &segments {
            copy_range(&src, &out, off, len)?;
        }
        rfs::ftruncate(&out, size)?;
        if let Some((uid, gid)) = self.owner {
            rfs::fchown(
                &out,
                Some(rfs::Uid::from_raw(uid)),
                Some(rfs::Gid::from_raw(gid)),
            )?;
        }
        // After chown, which may clear bits: the mode is set last and never has set-ID bits.
        rfs::fchmod(&out, Mode::from_raw_mode(copy_mode(st.st_mode)))?;
        self.out.bytes += data;
        self.seen.insert(rel.to_path_buf());
        self.out.files.push(rel.to_path_buf());
        Ok(())
    }

    /// Opens (creating as needed) `rel` below `dest`, one component at a time without
    /// following symbolic links; created folders go to the owner.
    fn dest_dir(&self, rel: &Path) -> io::Result<OwnedFd> {
        std::fs::create_dir_all(self.dest).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create {}: {e}", self.dest.display()),
            )
        })?;
        let mut fd = rfs::open(
            self.dest,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        for c in rel.components() {
            let name = c.as_os_str();
            match rfs::mkdirat(&fd, name, Mode::from_raw_mode(0o755)) {
                Ok(()) => {
                    let sub = open_dir_beneath(&fd, name)?;
                    if let Some((uid, gid)) = self.owner {
                        rfs::fchown(
                            &sub,
                            Some(rfs::Uid::from_raw(uid)),
                            Some(rfs::Gid::from_raw(gid)),
                        )?;
                    }
                    fd = sub;
                }
                Err(rustix::io::Errno::EXIST) => fd = open_dir_beneath(&fd, name)?,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(fd)
    }
}

/// The data segments `(offset, length)` of a file of `size` bytes; the whole file when the
/// file system cannot say.
fn data_segments(fd: &OwnedFd, size: u64) -> io::Result<Vec<(u64, u64)>> {
    let mut v = Vec::new();
    let mut pos = 0;
    while pos < size {
        let start = match rfs::seek(fd, SeekFrom::Data(pos)) {
            Ok(s) => s,
            Err(rustix::io::Errno::NXIO) => break, // only a hole after pos
            Err(_) => return Ok(vec![(0, size)]),
        };
        if start >= size {
            break;
        }
        let end = match rfs::seek(fd, SeekFrom::Hole(start)) {
            Ok(e) => e.min(size),
            Err(_) => size,
        };
        if end <= start {
            // A file system that answers a hole where it said data (a broken FUSE or network
            // one): copy the whole file rather than loop.
            return Ok(vec![(0, size)]);
        }
        v.push((start, end - start));
        pos = end;
    }
    Ok(v)
}

/// Copies `len` bytes at `off` of `src` to the same offset of `dst` (in-kernel where the file
/// systems allow, else through a buffer); stops early if `src` is shorter.
fn copy_range(src: &OwnedFd, dst: &OwnedFd, off: u64, len: u64) -> io::Result<()> {
    let (mut i, mut o, end) = (off, off, off + len);
    while i < end {
        let want = (end - i).min(1 << 30) as usize;
        match rfs::copy_file_range(src, Some(&mut i), dst, Some(&mut o), want) {
            Ok(0) => return Ok(()),
            Ok(_) => continue,
            Err(rustix::io::Errno::XDEV | rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
                break
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut buf = vec![0u8; 1 << 16];
    while i < end {
        let want = ((end - i) as usize).min(buf.len());
        let n = rustix::io::pread(src, &mut buf[..want], i)?;
        if n == 0 {
            return Ok(());
        }
        let mut done = 0;
        while done < n {
            done += rustix::io::pwrite(dst, &buf[done..n], o + done as u64)?;
        }
        i += n as u64;
        o += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("work");
        let dest = t.path().join("dest");
        std::fs::create_dir(&src).unwrap();
        (t, src, dest)
    }

    #[test]
    fn globs_match_names_folders_and_any_depth() {
        let (_t, src, dest) = setup();
        std::fs::create_dir_all(src.join("a/b")).unwrap();
        std::fs::write(src.join("x.out"), "x").unwrap();
        std::fs::write(src.join("a/y.out"), "y").unwrap();
        std::fs::write(src.join("a/b/z.out"), "z").unwrap();
        std::fs::write(src.join("a/b/z.log"), "z").unwrap();
        let c = collect(
            &src,
            &["**/*.out".into(), "x.out".into()],
            &dest,
            None,
            1 << 20,
        )
        .unwrap();
        assert_eq!(
            c.files,
            vec![
                PathBuf::from("a/b/z.out"),
                PathBuf::from("a/y.out"),
                PathBuf::from("x.out")
            ]
        );
        assert_eq!(c.bytes, 3);
        assert_eq!(std::fs::read(dest.join("a/b/z.out")).unwrap(), b"z");
        assert!(collect(&src, &["../x".into()], &dest, None, 1).is_err());
        assert!(collect(&src, &["/etc/*".into()], &dest, None, 1).is_err());
    }

    #[test]
    fn symlinks_and_fifos_are_withheld_and_modes_are_plain() {
        let (t, src, dest) = setup();
        let secret = t.path().join("secret");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(secret.join("key"), "SECRET").unwrap();
        std::os::unix::fs::symlink(&secret, src.join("dir")).unwrap();
        std::os::unix::fs::symlink(secret.join("key"), src.join("key.out")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            src.join("p.out").as_path(),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        std::fs::write(src.join("run.out"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(src.join("run.out"), std::fs::Permissions::from_mode(0o6777))
            .unwrap();
        let c = collect(&src, &["*/*".into(), "*.out".into()], &dest, None, 1 << 20).unwrap();
        assert_eq!(c.files, vec![PathBuf::from("run.out")]);
        let reasons: Vec<_> = c.withheld.iter().map(|w| w.file.as_str()).collect();
        assert_eq!(reasons, vec!["dir", "key.out", "p.out"], "{:?}", c.withheld);
        assert_eq!(
            std::fs::metadata(dest.join("run.out")).unwrap().mode() & 0o7777,
            0o744
        );
        assert!(!dest.join("dir").exists());
    }

    #[test]
    fn holes_stay_holes_and_the_cap_withholds_whole_files() {
        let (_t, src, dest) = setup();
        let f = std::fs::File::create(src.join("sparse.out")).unwrap();
        f.set_len(1 << 30).unwrap();
        std::fs::write(src.join("big.out"), vec![7u8; 3000]).unwrap();
        std::fs::write(src.join("small.out"), vec![7u8; 1000]).unwrap();
        let c = collect(&src, &["*.out".into()], &dest, None, 2000).unwrap();
        assert_eq!(
            c.files,
            vec![PathBuf::from("small.out"), PathBuf::from("sparse.out")]
        );
        assert_eq!(c.withheld.len(), 1);
        assert_eq!(c.withheld[0].file, "big.out");
        assert!(c.withheld[0].reason.contains("output limit"));
        let m = std::fs::metadata(dest.join("sparse.out")).unwrap();
        assert_eq!(m.len(), 1 << 30);
        assert!(m.blocks() * 512 < 1 << 20, "{} blocks", m.blocks());
    }
}
