//! Turns a [`Setup`] into what a run is given: the environment with `TARE_PAD` (and `PWD`),
//! a working directory reached through a chain of directories ending in a symlink to the real
//! one, the program reached through a symlink of chosen path length (argv[0] is that path),
//! and the ASLR flag. Everything lives in one temporary directory, removed when the
//! [`Workspace`] is dropped.
//!
//! The kernel resolves symlinks when it changes directory, so `getcwd()` in the run returns
//! the real directory; the longer path reaches the program through `PWD` (which shells and
//! many runtimes read) and through the strings it is built from. argv[0] and the executable
//! path the kernel copies onto the new stack (`AT_EXECFN`) are the long path itself.

use super::{Setup, PAD_VARIABLE};
use serde_json::json;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What a run gets from its setup.
#[derive(Debug, Clone)]
pub struct Realized {
    pub argv: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub cwd: Option<PathBuf>,
    pub aslr_off: bool,
    /// The setup's values and the paths made for it, for `Run.extra["setup"]`.
    pub record: serde_json::Value,
}

/// The temporary directory that holds the symlinks of a session's setups.
#[derive(Debug)]
pub struct Workspace {
    base: PathBuf,
}

impl Workspace {
    /// A fresh directory under the system's temporary directory, with a name of fixed length
    /// (so path lengths derived from it are the same from one session to the next).
    pub fn create() -> io::Result<Workspace> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let base = std::env::temp_dir().join(format!(
            "tare-setup-{:010}-{:08x}",
            std::process::id(),
            nanos
        ));
        std::fs::create_dir_all(&base).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create the setup directory {}: {e}; set TMPDIR to a writable directory",
                    base.display()
                ),
            )
        })?;
        Ok(Workspace { base })
    }

    pub fn path(&self) -> &Path {
        &self.base
    }

    /// The run's argv, environment, working directory and ASLR flag under `setup`. `argv[0]`
    /// is found like execvp would (relative to `cwd` when it has a slash); `env` is the
    /// environment without the setup, `cwd` the real working directory.
    pub fn realize(
        &self,
        setup: &Setup,
        argv: &[String],
        env: &[(OsString, OsString)],
        cwd: &Path,
    ) -> io::Result<Realized> {
        let dir = self.base.join(format!("s{:016x}", setup.seed));
        let mut env: Vec<(OsString, OsString)> = env
            .iter()
            .filter(|(k, _)| k != PAD_VARIABLE && (setup.cwd_depth.is_none() || k != "PWD"))
            .cloned()
            .collect();
        let mut record = serde_json::to_value(setup).unwrap_or_else(|_| json!({}));
        if let Some(n) = setup.env_pad {
            env.push((PAD_VARIABLE.into(), "x".repeat(n).into()));
        }
        let mut run_cwd = None;
        if let (Some(depth), Some(length)) = (setup.cwd_depth, setup.cwd_length) {
            let real = cwd
                .canonicalize()
                .map_err(|e| context(e, "resolving the working directory", cwd))?;
            let mut p = dir.join("c");
            for n in split_length(length, depth) {
                p.push("d".repeat(n));
            }
            // Every directory above the link, however deep the drawn path is (depth 1 too).
            if let Some(parent) = p.parent() {
                create_dirs(parent, "the --randomize cwd path")?;
            }
            make_symlink(&real, &p, "the --randomize cwd link")?;
            env.push(("PWD".into(), p.clone().into_os_string()));
            record["cwd"] = json!(p.to_string_lossy());
            record["cwd_path_length"] = json!(p.as_os_str().len());
            run_cwd = Some(p);
        }
        let mut run_argv: Vec<OsString> = argv.iter().map(Into::into).collect();
        if let (Some(length), Some(program)) = (setup.argv0_length, argv.first()) {
            let resolved = resolve_program(program, cwd, &env)?;
            let name = Path::new(program)
                .file_name()
                .map(|n| n.to_os_string())
                .unwrap_or_else(|| "program".into());
            let mut p = dir.join(format!("a{:016x}", fnv1a(resolved.as_os_str().as_bytes())));
            if length > 0 {
                // At most 255 characters per component (a file name's limit).
                for n in split_length(length, 1) {
                    p.push("p".repeat(n));
                }
            }
            create_dirs(&p, "the --randomize argv0 path")?;
            p.push(name);
            make_symlink(&resolved, &p, "the --randomize argv0 link")?;
            record["argv0"] = json!(p.to_string_lossy());
            record["argv0_path_length"] = json!(p.as_os_str().len());
            run_argv[0] = p.into_os_string();
        }
        Ok(Realized {
            argv: run_argv,
            env,
            cwd: run_cwd,
            aslr_off: setup.aslr_off(),
            record,
        })
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        // remove_dir_all removes symlinks without following them.
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// `length` characters split into `depth` non-empty parts of nearly equal size, each at most
/// 255 characters (a file name's limit); more parts are added when needed.
pub fn split_length(length: usize, depth: usize) -> Vec<usize> {
    let depth = depth.max(1).max(length.div_ceil(255));
    let length = length.max(depth);
    (0..depth)
        .map(|i| length / depth + usize::from(i < length % depth))
        .collect()
}

/// `e` with what tare was doing and the path it was doing it to, in one line.
fn context(e: io::Error, doing: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{doing} {}: {e}", path.display()))
}

/// Like [`context`], for files tare makes under the temporary directory.
fn temp_context(e: io::Error, doing: &str, path: &Path) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "{doing} {}: {e}; check that the temporary directory {} is writable (or set TMPDIR)",
            path.display(),
            std::env::temp_dir().display()
        ),
    )
}

fn create_dirs(path: &Path, what: &str) -> io::Result<()> {
    std::fs::create_dir_all(path)
        .map_err(|e| temp_context(e, &format!("creating the directory of {what}"), path))
}

fn make_symlink(target: &Path, link: &Path, what: &str) -> io::Result<()> {
    match std::fs::read_link(link) {
        Ok(t) if t == target => return Ok(()),
        Ok(_) => std::fs::remove_file(link)
            .map_err(|e| temp_context(e, &format!("replacing {what}"), link))?,
        Err(_) => {}
    }
    std::os::unix::fs::symlink(target, link)
        .map_err(|e| temp_context(e, &format!("creating {what}"), link))
}

/// The program's absolute path, found like execvp would.
fn resolve_program(program: &str, cwd: &Path, env: &[(OsString, OsString)]) -> io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let p = cwd.join(program);
        return p
            .canonicalize()
            .map_err(|e| context(e, "resolving the program for --randomize argv0", &p));
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| cwd.join(d).join(program))
        .find(|p| executable(p))
        .and_then(|p| p.canonicalize().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("cannot find '{program}' in PATH to link it for --randomize argv0"),
            )
        })
}

/// FNV-1a, for short stable directory names.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_split_evenly() {
        assert_eq!(split_length(10, 3), vec![4, 3, 3]);
        assert_eq!(split_length(2, 3), vec![1, 1, 1]);
        assert_eq!(split_length(600, 1), vec![200, 200, 200]);
        assert_eq!(split_length(600, 1).iter().sum::<usize>(), 600);
    }

    /// Every factor, hundreds of draws: each realizes, the working directory is the real one
    /// reached through a path of the drawn depth and length, argv[0] reaches the program.
    #[test]
    fn every_draw_realizes() {
        let ws = Workspace::create().unwrap();
        let config = crate::setup::Config::new(crate::setup::Factor::ALL.to_vec());
        let cwd = std::env::current_dir().unwrap();
        let real = cwd.canonicalize().unwrap();
        let env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let mut depths = std::collections::BTreeSet::new();
        for seed in 0..400 {
            let setup = Setup::draw(seed, &config);
            let r = ws
                .realize(&setup, &["true".to_string()], &env, &cwd)
                .unwrap_or_else(|e| panic!("seed {seed} ({}): {e}", setup.describe()));
            let c = r.cwd.unwrap();
            assert_eq!(c.canonicalize().unwrap(), real, "seed {seed}");
            let rel = c
                .strip_prefix(ws.path().join(format!("s{seed:016x}/c")))
                .unwrap();
            let depth = setup.cwd_depth.unwrap();
            assert_eq!(rel.components().count(), depth, "seed {seed}");
            assert_eq!(
                rel.as_os_str().len(),
                setup.cwd_length.unwrap() + depth - 1,
                "seed {seed}"
            );
            depths.insert(depth);
            let a = PathBuf::from(&r.argv[0]);
            assert!(a.canonicalize().unwrap().ends_with("true"), "seed {seed}");
            assert_eq!(r.aslr_off, setup.aslr == Some(false));
            let pad = r.env.iter().find(|(k, _)| k == PAD_VARIABLE).unwrap();
            assert_eq!(pad.1.len(), setup.env_pad.unwrap());
        }
        // The draws covered depth 1 (the case that once failed) and the deepest paths.
        assert!(depths.contains(&1) && depths.contains(&8), "{depths:?}");
        // The ends of the ranges, whatever the draws hit: one long component each.
        for (depth, length, argv0) in [(1, 1, 0), (1, 256, 256), (8, 8, 255), (1, 600, 600)] {
            let setup = Setup {
                seed: 1_000_000 + length as u64,
                cwd_depth: Some(depth),
                cwd_length: Some(length),
                argv0_length: Some(argv0),
                ..Setup::default()
            };
            let r = ws
                .realize(&setup, &["true".to_string()], &env, &cwd)
                .unwrap_or_else(|e| panic!("{}: {e}", setup.describe()));
            assert_eq!(r.cwd.unwrap().canonicalize().unwrap(), real);
        }
    }

    #[test]
    fn errors_name_the_path_and_the_action() {
        let ws = Workspace::create().unwrap();
        let setup = Setup {
            seed: 1,
            cwd_depth: Some(1),
            cwd_length: Some(4),
            ..Setup::default()
        };
        let missing = ws.path().join("no-such-dir");
        let e = ws
            .realize(&setup, &["true".to_string()], &[], &missing)
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("working directory"), "{text}");
        assert!(text.contains(&*missing.to_string_lossy()), "{text}");
        // A file where the setup's directory must go.
        std::fs::write(ws.path().join("s0000000000000001"), "").unwrap();
        let cwd = std::env::current_dir().unwrap();
        let e = ws
            .realize(&setup, &["true".to_string()], &[], &cwd)
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("--randomize cwd"), "{text}");
        assert!(text.contains("s0000000000000001"), "{text}");
    }

    #[test]
    fn realizes_paths_and_padding() {
        let ws = Workspace::create().unwrap();
        let setup = Setup {
            seed: 3,
            env_pad: Some(100),
            aslr: Some(false),
            cwd_depth: Some(3),
            cwd_length: Some(30),
            argv0_length: Some(20),
            build: None,
        };
        let cwd = std::env::current_dir().unwrap();
        let env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let r = ws
            .realize(&setup, &["true".to_string()], &env, &cwd)
            .unwrap();
        assert!(r.aslr_off);
        let pad = r.env.iter().find(|(k, _)| k == PAD_VARIABLE).unwrap();
        assert_eq!(pad.1.len(), 100);
        let c = r.cwd.clone().unwrap();
        assert_eq!(c.canonicalize().unwrap(), cwd.canonicalize().unwrap());
        let rel = c
            .strip_prefix(ws.path().join("s0000000000000003/c"))
            .unwrap();
        assert_eq!(rel.components().count(), 3);
        assert_eq!(rel.as_os_str().len(), 30 + 2);
        let a = PathBuf::from(&r.argv[0]);
        assert_eq!(a.file_name().unwrap(), "true");
        assert!(a.canonicalize().unwrap().ends_with("true"));
        // Realizing again reuses the same links.
        let again = ws
            .realize(&setup, &["true".to_string()], &env, &cwd)
            .unwrap();
        assert_eq!(again.argv, r.argv);
        let base = ws.path().to_path_buf();
        drop(ws);
        assert!(!base.exists());
        assert!(cwd.exists());
    }
}
