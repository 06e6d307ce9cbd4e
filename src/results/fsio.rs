//! Output files: every export, report and results file tare writes goes through here, so that a
//! path on the command line is treated as a shell's `>` would and never destroys what it names.
//!
//! - `-` is standard output.
//! - An absent path or a regular file is written to a temporary file in the same directory and
//!   renamed into place: a reader never sees half a file.
//! - A character device or a FIFO (`/dev/null`, `/dev/full`, a pipe to another program) is
//!   written in place: opened for writing without creating or truncating, never replaced. A
//!   FIFO nobody reads from is waited for at most [`FIFO_WAIT`].
//! - A symbolic link is followed only when every link on its way is owned by the user tare runs
//!   as or by root (`/dev/stdout`, a user's own `latest.json`), and the file it leads to is then
//!   written in place like a shell's `>` (the link stays a link). A link owned by anyone else is
//!   refused: one planted in a shared directory could otherwise point root's export at any file.
//! - A block device, a socket and a directory are refused.
//!
//! [`check`] applies the same rules before the first run, so that a path that cannot be written
//! stops a session before it measures anything; [`distinct`] refuses two outputs of one session
//! that name the same file, and [`claim`] two running sessions that write the same file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a write waits for a reader to open a FIFO it was given.
pub const FIFO_WAIT: Duration = Duration::from_secs(30);

/// What a path names, as far as writing it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `-`: standard output.
    Stdout,
    /// Absent or a regular file (not a link): replaced atomically.
    Replace,
    /// A character device or a FIFO: written in place.
    InPlace,
    /// A symbolic link that may be followed: the file it leads to is written in place.
    Link,
}

fn euid() -> u32 {
    crate::sys::euid()
}

fn refuse(path: &Path, why: &str, what: &str) -> anyhow::Error {
    crate::error::usage(format!("cannot write {}: {why}; {what}", path.display()))
}

/// Refuses a link (or a link on the way to the final file) owned by someone other than the
/// user tare runs as or root. Follows at most 40 links, as the kernel does.
fn check_links(path: &Path) -> anyhow::Result<()> {
    let me = euid();
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            return Ok(()); // dangling, or a kernel-made name (pipe:[…]): nothing more to own
        };
        if !meta.file_type().is_symlink() {
            return Ok(());
        }
        if meta.uid() != me && meta.uid() != 0 {
            return Err(refuse(
                path,
                &format!(
                    "{} is a symbolic link owned by uid {}, not by you or root, and tare does not follow it",
                    at.display(),
                    meta.uid()
                ),
                "remove the link or give the path of the file it should lead to",
            ));
        }
        let Ok(next) = std::fs::read_link(&at) else {
            return Ok(());
        };
        at = match at.parent() {
            Some(dir) if next.is_relative() => dir.join(next),
            _ => next,
        };
    }
    Err(refuse(
        path,
        "too many levels of symbolic links",
        "give the path of the file itself",
    ))
}

/// What `path` names, or a one-line error for what tare will not write (a block device, a
/// socket, a directory, another user's link).
pub fn classify(path: &Path) -> anyhow::Result<Target> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Replace),
        Err(e) => return Err(refuse(path, &e.to_string(), "choose a writable path")),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        check_links(path)?;
        return match std::fs::metadata(path) {
            Ok(m) => final_kind(path, &m.file_type()).map(|_| Target::Link),
            Err(_) => Ok(Target::Link), // dangling: created through the link, like `>`
        };
    }
    final_kind(path, &ft)
}

fn final_kind(path: &Path, ft: &std::fs::FileType) -> anyhow::Result<Target> {
    if ft.is_file() {
        Ok(Target::Replace)
    } else if ft.is_char_device() || ft.is_fifo() {
        Ok(Target::InPlace)
    } else if ft.is_dir() {
        Err(refuse(path, "it is a directory", "give a file name"))
    } else if ft.is_block_device() {
        Err(refuse(
            path,
            "it is a block device and tare does not write results onto a disk",
            "give a file name",
        ))
    } else if ft.is_socket() {
        Err(refuse(
            path,
            "it is a socket, which cannot be opened for writing",
            "give a file name or a FIFO",
        ))
    } else {
        Err(refuse(path, "it is not a file", "give a file name"))
    }
}

/// The directory a file at `path` is created in.
fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Fails now, before any run, when `path` cannot be written; creates nothing that stays and
/// changes nothing that is there (a device is opened and closed, a FIFO is not opened).
pub fn check(path: &Path) -> anyhow::Result<()> {
    let denied = |e: std::io::Error| refuse(path, &e.to_string(), "choose a writable path");
    match classify(path)? {
        Target::Stdout => Ok(()),
        Target::Replace => {
            // The temporary file of the real write: proves the directory takes new files.
            let tmp = temp_name(path);
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)
                .map_err(denied)?;
            drop(f);
            let _ = std::fs::remove_file(&tmp);
            if path.exists() {
                OpenOptions::new().append(true).open(path).map_err(denied)?;
            }
            Ok(())
        }
        Target::InPlace | Target::Link => {
            let is_fifo = std::fs::metadata(path)
                .map(|m| m.file_type().is_fifo())
                .unwrap_or(false);
            if is_fifo {
                return Ok(());
            }
            if path.exists() {
                OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
                    .open(path)
                    .map_err(denied)?;
            } else {
                // A dangling link: its target's directory must take a new file.
                let meta = std::fs::metadata(dir_of(path)).map_err(denied)?;
                if !meta.is_dir() {
                    return Err(refuse(
                        path,
                        "its directory does not exist",
                        "create it first",
                    ));
                }
            }
            Ok(())
        }
    }
}

fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    dir_of(path).join(format!(".{name}.tmp-{}", std::process::id()))
}

/// Opens a FIFO for writing, waiting at most [`FIFO_WAIT`] for a reader, then makes the
/// descriptor blocking again.
fn open_fifo(path: &Path, follow: bool) -> std::io::Result<File> {
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    let deadline = Instant::now() + FIFO_WAIT;
    loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | nofollow)
            .open(path)
        {
            Ok(f) => {
                same_kind(&f, path, |t| t.is_fifo())?;
                set_blocking(&f)?;
                return Ok(f);
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                return Err(std::io::Error::other(format!(
                    "no program opened the FIFO for reading within {} s",
                    FIFO_WAIT.as_secs()
                )))
            }
            Err(e) => return Err(e),
        }
    }
}

fn set_blocking(f: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: fcntl reads and sets the flags of a descriptor `f` keeps open for both calls.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Opens what `path` names for writing in place: a device or FIFO without creating or
/// truncating it, the file a link leads to as a shell's `>` does (magic links such as
/// `/dev/stdout` included; `classify` checked who owns each link of the chain). A device or
/// FIFO is opened without following a link and its kind checked on the open file, so one
/// swapped for a link after [`classify`] is refused rather than followed.
fn open_in_place(path: &Path, link: bool) -> std::io::Result<File> {
    if link {
        return match std::fs::metadata(path).map(|m| m.file_type()) {
            Ok(ft) if ft.is_fifo() => open_fifo(path, true),
            Ok(ft) if ft.is_char_device() => OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOCTTY)
                .open(path),
            _ => OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(libc::O_NOCTTY)
                .open(path),
        };
    }
    let meta = std::fs::symlink_metadata(path).ok();
    match meta.map(|m| m.file_type()) {
        Some(ft) if ft.is_fifo() => open_fifo(path, false),
        Some(ft) if ft.is_char_device() => {
            let f = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOCTTY | libc::O_NOFOLLOW)
                .open(path)?;
            same_kind(&f, path, |t| t.is_char_device())?;
            Ok(f)
        }
        _ => Err(std::io::Error::other(
            "it changed while tare ran (no longer the device or FIFO it was at the start)",
        )),
    }
}

/// Checks that the open file `f` is still the kind `path` was classified as.
fn same_kind(
    f: &File,
    path: &Path,
    kind: impl Fn(&std::fs::FileType) -> bool,
) -> std::io::Result<()> {
    if kind(&f.metadata()?.file_type()) {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "{} changed while tare ran",
            path.display()
        )))
    }
}

/// Writes what `fill` produces to `path` by the rules of this module. Errors name `path` and
/// say what to do; a temporary file is never left behind.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let fail = |e: &dyn std::fmt::Display| {
        crate::error::usage(format!(
            "cannot write {}: {e}; free space or choose another path",
            path.display()
        ))
    };
    match classify(path)? {
        Target::Stdout => {
            let out = std::io::stdout();
            let mut w = std::io::BufWriter::new(out.lock());
            fill(&mut w)
                .and_then(|()| w.flush().map_err(Into::into))
                .map_err(|e| fail(&format!("{e:#}")))
        }
        t @ (Target::InPlace | Target::Link) => {
            let f = open_in_place(path, t == Target::Link).map_err(|e| fail(&e))?;
            let mut w = std::io::BufWriter::new(f);
            fill(&mut w)
                .and_then(|()| w.flush().map_err(Into::into))
                .map_err(|e| fail(&format!("{e:#}")))
        }
        Target::Replace => {
            let tmp = temp_name(path);
            let result = (|| -> anyhow::Result<()> {
                let f = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&tmp)?;
                let mut w = std::io::BufWriter::new(f);
                fill(&mut w)?;
                let f = w.into_inner().map_err(|e| e.into_error())?;
                f.sync_all()?;
                std::fs::rename(&tmp, path)?;
                Ok(())
            })();
            if let Err(e) = result {
                let _ = std::fs::remove_file(&tmp);
                return Err(fail(&format!("{e:#}")));
            }
            Ok(())
        }
    }
}

/// Opens `path` to append a command's output to (`--output FILE` of `run` and `kernels`, a
/// suite run's log), by the rules tare keeps for every file it writes as root:
///
/// - absent or a regular file: opened without following a symbolic link (`O_NOFOLLOW`),
///   created if absent, never truncated; a file owned by another user (made in a shared
///   directory to have root write into it) or one with other hard links (a victim's name
///   under the output's) is refused before a byte is written, as a journal is;
/// - a character device or a FIFO: written in place, never created, truncated or replaced; a
///   FIFO nobody reads from is waited for at most [`FIFO_WAIT`];
/// - a symbolic link: followed only when every link on its way is owned by the euid or root
///   (`/proc/self/fd/N`, `/dev/stdout`, a user's own link), and what it leads to is then held
///   to the rules above;
/// - a directory, a block device, a socket: refused.
///
/// The path is looked at again on every open, so a link or hard link put there between two
/// runs is refused too. Errors are one line naming the path and saying what to do.
pub fn open_append(path: &Path) -> std::io::Result<File> {
    let fail = |why: &dyn std::fmt::Display, what: &str| {
        std::io::Error::other(format!(
            "cannot write output file {}: {why}; {what}",
            path.display()
        ))
    };
    let link = std::fs::symlink_metadata(path)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    if link {
        check_links(path).map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    let fifo = std::fs::metadata(path)
        .map(|m| m.file_type().is_fifo())
        .unwrap_or(false);
    let f = if fifo {
        open_fifo(path, link).map_err(|e| fail(&e, "start its reader first, or give a file"))?
    } else {
        let nofollow = if link { 0 } else { libc::O_NOFOLLOW };
        OpenOptions::new()
            .append(true)
            .create(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK | nofollow)
            .open(path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    fail(
                        &"it became a symbolic link, which tare does not follow there",
                        "remove the link or choose another path",
                    )
                } else {
                    fail(&e, "choose a writable path")
                }
            })?
    };
    let meta = f.metadata().map_err(|e| fail(&e, "choose another path"))?;
    let ft = meta.file_type();
    if ft.is_file() {
        let me = euid();
        if meta.uid() != me {
            return Err(fail(
                &format!("it belongs to uid {}, not to you (uid {me}), and tare writes only files of its own", meta.uid()),
                "remove it or choose another path",
            ));
        }
        if meta.nlink() > 1 {
            return Err(fail(
                &format!(
                    "it has {} hard links (other names for the same file)",
                    meta.nlink()
                ),
                "remove it or choose another path",
            ));
        }
    } else if !(ft.is_char_device() || ft.is_fifo()) {
        return Err(fail(
            &"it is not a file, a character device or a FIFO",
            "give a file name",
        ));
    }
    set_blocking(&f).map_err(|e| fail(&e, "choose another path"))?;
    Ok(f)
}

/// [`open_append`]'s rules checked before the first run, without creating the file or opening
/// a FIFO: a path tare would refuse stops the session before it measures anything.
pub fn check_append(path: &Path) -> anyhow::Result<()> {
    let usage = |e: std::io::Error| crate::error::usage(e.to_string());
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_fifo() => {
            if std::fs::symlink_metadata(path).is_ok_and(|l| l.file_type().is_symlink()) {
                check_links(path)?;
            }
            Ok(())
        }
        Ok(_) => open_append(path).map(drop).map_err(usage),
        Err(_) => {
            if std::fs::symlink_metadata(path).is_ok() {
                // A dangling link: held to the link rules; its target is made by the first run.
                check_links(path)?;
            }
            check(path)
        }
    }
}

/// Writes `bytes` to `path` (see [`write_with`]).
pub fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_with(path, |w| Ok(w.write_all(bytes)?))
}

/// Whether a session can keep a journal beside `path`: only beside a file it replaces (not
/// standard output, a device, a FIFO or a link).
pub fn journals(path: &Path) -> bool {
    matches!(classify(path), Ok(Target::Replace))
}

/// One key per file: `-`, the device and inode of what exists, else the absolute path.
fn identity(path: &Path) -> String {
    if path.as_os_str() == "-" {
        return "-".into();
    }
    if let Ok(m) = std::fs::metadata(path) {
        return format!("{}:{}", m.dev(), m.ino());
    }
    identity_path(path)
}

/// Refuses two outputs of one session that name the same file (the second would overwrite the
/// first): `outputs` are (option, path) pairs, e.g. ("--export-csv", "r.csv").
pub fn distinct(outputs: &[(&str, &Path)]) -> anyhow::Result<()> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for &(option, path) in outputs {
        let id = identity(path);
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == id) {
            return Err(crate::error::usage(format!(
                "{first} and {option} both write {}; give each output its own file",
                path.display()
            )));
        }
        seen.push((id, option));
    }
    Ok(())
}

/// Held for as long as a session may write its outputs: the locks of [`claim`].
pub struct Claims(#[allow(dead_code)] Vec<File>);

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Takes an exclusive lock (flock, in `lock::runtime_dir()/outputs/`) for each output path
/// that is a file tare replaces, so that a second running session writing the same file
/// refuses at once instead of one session's results silently replacing the other's. Devices,
/// FIFOs, links and `-` are not locked (two sessions may share `/dev/null`). Where the lock
/// directory cannot be made, nothing is locked.
pub fn claim(outputs: &[(&str, &Path)]) -> anyhow::Result<Claims> {
    let Some(dir) = crate::lock::runtime_dir().map(|d| d.join("outputs")) else {
        return Ok(Claims(Vec::new()));
    };
    if std::fs::create_dir_all(&dir).is_err() {
        return Ok(Claims(Vec::new()));
    }
    let mut held = Vec::new();
    for &(option, path) in outputs {
        if !matches!(classify(path), Ok(Target::Replace)) {
            continue;
        }
        let key = identity_path(path);
        let lock = dir.join(format!("{:016x}.lock", fnv1a(key.as_bytes())));
        let Ok(f) = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&lock)
        else {
            continue;
        };
        if !crate::lock::try_lock_exclusive(&f).unwrap_or(true) {
            return Err(crate::error::usage(format!(
                "{option} {} is an output of another running tare session; wait for it to finish or choose another path",
                path.display()
            )));
        }
        held.push(f);
    }
    Ok(Claims(held))
}

/// The absolute path a file will have (its directory resolved), as a key.
fn identity_path(path: &Path) -> String {
    let dir = std::fs::canonicalize(dir_of(path)).unwrap_or_else(|_| dir_of(path).to_path_buf());
    match path.file_name() {
        Some(n) => dir.join(n).display().to_string(),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_regular_file_is_replaced_and_no_temporary_is_left() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        std::fs::write(&p, "old old old").unwrap();
        write(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_fifo_is_written_in_place_and_stays_a_fifo() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pipe");
        mkfifo(&p);
        check(&p).unwrap();
        let reader = {
            let p = p.clone();
            std::thread::spawn(move || std::fs::read(&p).unwrap())
        };
        write(&p, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
        assert!(std::fs::symlink_metadata(&p).unwrap().file_type().is_fifo());
    }

    #[test]
    fn a_link_of_ours_is_written_through_and_stays_a_link() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("real.json");
        let link = d.path().join("latest.json");
        std::fs::write(&target, "old").unwrap();
        symlink(&target, &link).unwrap();
        check(&link).unwrap();
        write(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // A dangling link of ours creates its target, as `>` does.
        let gone = d.path().join("later.json");
        let l2 = d.path().join("l2");
        symlink(&gone, &l2).unwrap();
        write(&l2, b"x").unwrap();
        assert_eq!(std::fs::read(&gone).unwrap(), b"x");
    }

    #[test]
    fn directories_and_sockets_are_refused_in_one_line() {
        let d = tempfile::tempdir().unwrap();
        let e = check(d.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory") && !e.contains('\n'), "{e}");
        let s = d.path().join("sock");
        let _l = std::os::unix::net::UnixListener::bind(&s).unwrap();
        let e = write(&s, b"x").unwrap_err().to_string();
        assert!(e.contains("socket"), "{e}");
        assert!(std::fs::symlink_metadata(&s)
            .unwrap()
            .file_type()
            .is_socket());
    }

    #[test]
    fn two_outputs_naming_one_file_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("r.csv");
        let same = d.path().join(".").join("r.csv");
        let e = distinct(&[("--export-json", &a), ("--export-csv", &same)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--export-json and --export-csv both write"),
            "{e}"
        );
        std::fs::write(&a, "").unwrap();
        let link = d.path().join("l");
        symlink(&a, &link).unwrap();
        assert!(distinct(&[("--export-csv", &a), ("--export-markdown", &link)]).is_err());
        assert!(distinct(&[
            ("--export-json", Path::new("-")),
            ("--export-csv", Path::new("-"))
        ])
        .is_err());
        assert!(distinct(&[("--export-json", &a), ("--export-csv", Path::new("-"))]).is_ok());
    }

    #[test]
    fn a_fifo_swapped_for_a_link_after_classify_is_not_followed() {
        // The review's race: classified as a FIFO (in place), then replaced by a link to a
        // file tare must not write (here one in the same temporary directory).
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let p = d.path().join("r.json");
        mkfifo(&p);
        assert_eq!(classify(&p).unwrap(), Target::InPlace);
        std::fs::remove_file(&p).unwrap();
        symlink(&victim, &p).unwrap();
        assert!(open_in_place(&p, false).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }
}
