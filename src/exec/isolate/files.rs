//! A run's work directory and the collection of its result files.
//!
//! For: creating a fresh per-run directory that the isolated run may write to (and usually
//! runs in), copying the files matching `--result-files` globs out of it after the run, and
//! removing it. Not for: anything that happens inside the run.

use std::io;
use std::path::{Path, PathBuf};

/// A fresh directory for one run, removed by [`Workdir::remove`] (or on drop).
#[derive(Debug)]
pub struct Workdir {
    path: PathBuf,
}

impl Workdir {
    /// Creates `parent/name`, which must not exist yet (an existing one is emptied first: it
    /// is left over from a run that was cut off).
    pub fn create(parent: &Path, name: &str) -> io::Result<Workdir> {
        let path = parent.join(name);
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        std::fs::create_dir_all(&path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create work directory {}: {e}", path.display()),
            )
        })?;
        Ok(Workdir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Copies every regular file matching one of `globs` (relative to the work directory) to
    /// `dest`, keeping relative paths; returns those paths, sorted. An invalid glob is an
    /// error; a glob that matches nothing is not.
    pub fn collect(&self, globs: &[String], dest: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        let base = self.path.canonicalize()?;
        for g in globs {
            if Path::new(g).is_absolute() || g.split('/').any(|c| c == "..") {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("result-file glob '{g}' must be relative to the work directory, without '..'"),
                ));
            }
            let pattern = format!("{}/{g}", glob::Pattern::escape(&base.to_string_lossy()));
            let paths = glob::glob(&pattern).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("invalid result-file glob '{g}': {e}"),
                )
            })?;
            for p in paths.flatten() {
                let meta = std::fs::symlink_metadata(&p)?;
                if !meta.is_file() {
                    continue;
                }
                let Ok(rel) = p.strip_prefix(&base) else {
                    continue;
                };
                if out.iter().any(|r: &PathBuf| r == rel) {
                    continue;
                }
                let target = dest.join(rel);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::copy(&p, &target).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "cannot copy result file {} to {}: {e}",
                            p.display(),
                            target.display()
                        ),
                    )
                })?;
                out.push(rel.to_path_buf());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Removes the directory and everything in it.
    pub fn remove(mut self) -> io::Result<()> {
        let path = std::mem::take(&mut self.path);
        std::fs::remove_dir_all(&path)
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_matching_files_only() {
        let root = tempfile::tempdir().unwrap();
        let wd = Workdir::create(root.path(), "run").unwrap();
        std::fs::create_dir(wd.path().join("sub")).unwrap();
        std::fs::write(wd.path().join("a.out"), "a").unwrap();
        std::fs::write(wd.path().join("sub/b.out"), "b").unwrap();
        std::fs::write(wd.path().join("c.log"), "c").unwrap();
        let dest = root.path().join("dest");
        let got = wd
            .collect(&["*.out".into(), "sub/*.out".into()], &dest)
            .unwrap();
        assert_eq!(
            got,
            vec![PathBuf::from("a.out"), PathBuf::from("sub/b.out")]
        );
        assert!(dest.join("sub/b.out").is_file());
        assert!(!dest.join("c.log").exists());
        assert!(wd.collect(&["../x".into()], &dest).is_err());
        let p = wd.path().to_path_buf();
        wd.remove().unwrap();
        assert!(!p.exists());
    }
}
