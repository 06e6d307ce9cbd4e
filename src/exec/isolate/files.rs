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
    /// is left over from a run that was cut off). The directory itself is made with mode 0700
    /// and never through an existing name, so nobody else can reach what the run leaves in it
    /// before it is collected (a set-ID file made by a tool running as root inside the
    /// isolation is a host-root file until the collector has copied it without the bit).
    pub fn create(parent: &Path, name: &str) -> io::Result<Workdir> {
        use std::os::unix::fs::DirBuilderExt;
        let path = parent.join(name);
        let err = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("cannot create work directory {}: {e}", path.display()),
            )
        };
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path).map_err(err)?,
            Ok(_) => std::fs::remove_file(&path).map_err(err)?,
            Err(_) => {}
        }
        std::fs::create_dir_all(parent).map_err(err)?;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(err)?;
        Ok(Workdir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Copies the regular files matching `globs` (relative to the work directory) to `dest`,
    /// keeping relative paths, at most `limit` bytes of data, under the guarantees of
    /// [`super::collect`] (no symbolic link followed, no set-ID bit, owned by the invoking
    /// user). An invalid glob is an error; a glob that matches nothing is not.
    pub fn collect(
        &self,
        globs: &[String],
        dest: &Path,
        limit: u64,
    ) -> io::Result<super::collect::Collected> {
        super::collect::collect(
            &self.path,
            globs,
            dest,
            super::collect::invoking_user(),
            limit,
        )
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
            .collect(&["*.out".into(), "sub/*.out".into()], &dest, 1 << 20)
            .unwrap()
            .files;
        assert_eq!(
            got,
            vec![PathBuf::from("a.out"), PathBuf::from("sub/b.out")]
        );
        assert!(dest.join("sub/b.out").is_file());
        assert!(!dest.join("c.log").exists());
        assert!(wd.collect(&["../x".into()], &dest, 1).is_err());
        let p = wd.path().to_path_buf();
        wd.remove().unwrap();
        assert!(!p.exists());
    }
}
