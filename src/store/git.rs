//! What the store needs from git: a commit's hash, parents, branch, time and subject, whether
//! the work tree is dirty, and (for `tare history confirm` and `tare bisect`) detached work
//! trees of other commits, and the ancestry a CI check's baseline is read from (the baseline
//! branch, its merge base with the commit checked, that merge base's ancestors). Runs the
//! `git` program; not for anything that measures.

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The commit a session measured, as stored (`Session.extra["git"]` in results files).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommitInfo {
    pub hash: String,
    #[serde(default)]
    pub parents: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Committer time, seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Whether tracked files differed from the commit when the session ran.
    #[serde(default)]
    pub dirty: bool,
}

/// Longest commit hash (or revision name given in its place) the store takes.
pub const MAX_REV: usize = 200;

/// Whether `v` can be stored as a commit hash or branch (`what` names it in the error): one
/// to [`MAX_REV`] characters, no space or control character. The one check of every commit
/// the store takes: `?commit=` of an upload, a session's `extra.git`, `history add --commit`.
pub fn check_rev(what: &str, v: &str) -> std::result::Result<(), String> {
    if v.is_empty()
        || v.chars().count() > MAX_REV
        || v.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "{what} '{}': give a commit hash (no spaces, at most {MAX_REV} characters)",
            v.chars()
                .take(60)
                .flat_map(char::escape_default)
                .collect::<String>()
        ));
    }
    Ok(())
}

/// [`check_rev`] of a commit's hash, parents and branch.
pub fn check_commit(c: &CommitInfo) -> std::result::Result<(), String> {
    check_rev("commit", &c.hash)?;
    for p in &c.parents {
        check_rev("parent commit", p)?;
    }
    if let Some(b) = &c.branch {
        check_rev("branch", b)?;
    }
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| {
            anyhow!("cannot run git ({e}): install git or give the commit with --commit")
        })?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// The top directory of the repository holding `dir`, if any.
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    git(dir, &["rev-parse", "--show-toplevel"])
        .ok()
        .map(PathBuf::from)
}

/// The commit `rev` (default HEAD) of the repository at `dir`, with the branch and dirty flag
/// of the work tree when `rev` is HEAD.
pub fn commit_info(dir: &Path, rev: Option<&str>) -> Result<CommitInfo> {
    let r = rev.unwrap_or("HEAD");
    let line = git(
        dir,
        &["log", "-1", "--format=%H%x1f%P%x1f%ct%x1f%s", r, "--"],
    )
    .with_context(|| format!("cannot read commit {r}"))?;
    let f: Vec<&str> = line.split('\x1f').collect();
    if f.len() < 4 {
        bail!("cannot read commit {r}: git printed {line:?}");
    }
    let head = rev.is_none() || git(dir, &["rev-parse", "HEAD"]).ok().as_deref() == Some(f[0]);
    let branch = if head {
        git(dir, &["rev-parse", "--abbrev-ref", "HEAD"])
            .ok()
            .filter(|b| b != "HEAD")
    } else {
        None
    };
    let dirty = head
        && !git(dir, &["status", "--porcelain", "--untracked-files=no"])
            .unwrap_or_default()
            .is_empty();
    Ok(CommitInfo {
        hash: f[0].to_string(),
        parents: f[1].split_whitespace().map(String::from).collect(),
        branch,
        time: f[2].parse().ok(),
        subject: Some(f[3].to_string()),
        dirty,
    })
}

/// Resolves a revision to its full hash.
pub fn resolve(dir: &Path, rev: &str) -> Result<String> {
    git(
        dir,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )
    .map_err(|_| {
        anyhow!(
            "'{rev}' is not a commit of the repository at {}",
            dir.display()
        )
    })
}

/// A detached work tree of `rev` at `path`, removed (with `git worktree remove`) on drop.
pub struct Worktree {
    repo: PathBuf,
    pub path: PathBuf,
}

impl Worktree {
    pub fn add(repo: &Path, path: &Path, rev: &str) -> Result<Worktree> {
        git(
            repo,
            &[
                "worktree",
                "add",
                "--detach",
                "--force",
                &path.to_string_lossy(),
                rev,
            ],
        )?;
        Ok(Worktree {
            repo: repo.to_path_buf(),
            path: path.to_path_buf(),
        })
    }

    /// Moves the work tree to another commit (clean checkout).
    pub fn checkout(&self, rev: &str) -> Result<()> {
        git(
            &self.path,
            &["checkout", "--detach", "--force", "--quiet", rev],
        )?;
        git(&self.path, &["clean", "-fdxq"])?;
        Ok(())
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let _ = git(
            &self.repo,
            &[
                "worktree",
                "remove",
                "--force",
                &self.path.to_string_lossy(),
            ],
        );
        let _ = git(&self.repo, &["worktree", "prune"]);
    }
}

/// The baseline branch when none is named: the remote's default branch (`origin/HEAD`, set by
/// a clone), else `main`.
pub fn default_branch(dir: &Path) -> String {
    git(
        dir,
        &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
    )
    .ok()
    .and_then(|b| b.strip_prefix("origin/").map(String::from))
    .filter(|b| !b.is_empty())
    .unwrap_or_else(|| "main".into())
}

/// The commit at the tip of branch `name`: the local branch, else `origin/NAME` (a CI
/// checkout has the remote's branches only). None when neither is here.
pub fn branch_tip(dir: &Path, name: &str) -> Option<String> {
    [name.to_string(), format!("origin/{name}")]
        .iter()
        .find_map(|r| resolve(dir, r).ok())
}

/// The best common ancestor of two commits, if they have one here.
pub fn merge_base(dir: &Path, a: &str, b: &str) -> Option<String> {
    git(dir, &["merge-base", a, b])
        .ok()
        .filter(|h| !h.is_empty())
}

/// `rev` and its ancestors here, newest first, at most `max` (a shallow clone has only those
/// it fetched).
pub fn ancestors(dir: &Path, rev: &str, max: usize) -> Result<Vec<String>> {
    Ok(git(dir, &["rev-list", &format!("--max-count={max}"), rev])?
        .lines()
        .map(String::from)
        .collect())
}

/// Whether the repository at `dir` is a shallow clone (its history cut).
pub fn is_shallow(dir: &Path) -> bool {
    git(dir, &["rev-parse", "--is-shallow-repository"]).is_ok_and(|s| s == "true")
}

/// Runs `git` with arguments in `dir` (for `git bisect`), returning its output.
pub fn run(dir: &Path, args: &[&str]) -> Result<String> {
    git(dir, args)
}
