//! The algorithm of `tare history confirm` and `tare bisect`: commits built in git work trees,
//! two builds at a time measured interleaved, pooled and judged with `conclude::commits` (the
//! one model of `conclude::levels`), and `git bisect` driven by those verdicts: BAD confirmed
//! slower than GOOD first, each step's commit measured until it is on one side of the
//! threshold (or skipped), and the commit bisect names confirmed against its parent.
//!
//! Not here: how two builds are measured and what the user is told — the caller's [`Bench`]
//! (`cli/history/builds.rs` runs a `tare run` plan and prints the [`Event`]s); the model
//! (`conclude::commits`); git's plumbing (`store::git`).

use crate::conclude::commits::{self, Pool, Side};
use crate::conclude::levels::{Comparison, Outcome};
use crate::error::{usage, UserError};
use crate::results::model::Session;
use crate::store::git::{self, CommitInfo, Worktree};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// Sessions pooled at most per pair of builds before the model's answer is taken as it is.
pub const MAX_SESSIONS: usize = 4;

/// What bisect and confirm need from their caller.
pub trait Bench {
    /// Measures `a` then `b` (name, work tree) interleaved in one session.
    fn measure(&mut self, a: (&str, &Path), b: (&str, &Path)) -> Result<Session>;
    /// Something the user is to be told.
    fn event(&mut self, e: Event<'_>);
}

/// What happens on the way, for the caller to present.
pub enum Event<'a> {
    /// A commit is being built in this work tree.
    Building { hash: &'a str, dir: &'a Path },
    /// BAD against GOOD is not decided yet: measured again.
    Again { c: &'a Comparison, pool: &'a Pool },
    /// BAD is measurably slower than GOOD: a commit is slow above `threshold`.
    Threshold {
        c: &'a Comparison,
        pool: &'a Pool,
        threshold: f64,
    },
    /// A step's commit is on both sides of the threshold: measured again.
    StepAgain {
        step: usize,
        head: &'a str,
        c: &'a Comparison,
        pool: &'a Pool,
        threshold: f64,
    },
    /// A step's commit judged.
    Step {
        step: usize,
        head: &'a str,
        c: &'a Comparison,
        pool: &'a Pool,
        side: Side,
    },
}

/// How commits are built and judged.
pub struct Spec<'a> {
    /// The shell command that builds a commit in its work tree.
    pub build: &'a str,
    /// `wall_time` or `cpu_time` (`commits::METRICS`).
    pub metric: &'a str,
    pub alpha: f64,
    pub noise: f64,
}

/// Work trees of a repository's commits, built, below one temporary directory.
pub struct Builds {
    pub repo: PathBuf,
    pub tmp: tempfile::TempDir,
}

impl Builds {
    /// For the repository holding the current directory.
    pub fn new() -> Result<Builds> {
        let cwd = std::env::current_dir()?;
        let repo = git::toplevel(&cwd).ok_or_else(|| {
            usage("confirm and bisect need a git repository: run them inside one")
        })?;
        Ok(Builds {
            repo,
            tmp: tempfile::Builder::new().prefix("tare-builds-").tempdir()?,
        })
    }

    /// A work tree of `rev`, built.
    pub fn tree(
        &self,
        name: &str,
        rev: &str,
        build: &str,
        bench: &mut dyn Bench,
    ) -> Result<Worktree> {
        let hash = self.resolve(rev)?;
        let wt = Worktree::add(&self.repo, &self.tmp.path().join(name), &hash)?;
        build_in(&wt, &hash, build, bench)?;
        Ok(wt)
    }

    /// `rev`'s hash; a revision git does not know is the user's error.
    pub fn resolve(&self, rev: &str) -> Result<String> {
        git::resolve(&self.repo, rev).map_err(|e| usage(format!("{e:#}")))
    }
}

fn build_in(wt: &Worktree, hash: &str, build: &str, bench: &mut dyn Bench) -> Result<()> {
    bench.event(Event::Building {
        hash,
        dir: &wt.path,
    });
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(build)
        .current_dir(&wt.path)
        .output()
        .map_err(|e| usage(format!("--build: cannot start /bin/sh: {e}")))?;
    if !out.status.success() {
        return Err(UserError::run_failed(format!(
            "--build '{build}' failed for commit {} ({}): {}",
            short(hash),
            out.status,
            crate::exec::capture::last_lines(&out.stderr, 3)
        ))
        .into());
    }
    Ok(())
}

/// A hash's first ten characters.
pub fn short(hash: &str) -> &str {
    &hash[..10.min(hash.len())]
}

/// `git bisect …` in `dir`: (success, stdout and stderr).
fn bisect_git(dir: &Path, args: &[&str]) -> Result<(bool, String)> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .arg("bisect")
        .args(args)
        .output()
        .map_err(|e| usage(format!("cannot run git ({e}): install git")))?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

/// One more session of `a` against `b` in the pool, judged: the new build against the old.
fn measure_into(
    pool: &mut Pool,
    bench: &mut dyn Bench,
    spec: &Spec,
    a: (&str, &Path),
    b: (&str, &Path),
) -> Result<Comparison> {
    let s = bench.measure(a, b)?;
    pool.add(&s, spec.metric).map_err(UserError::run_failed)?;
    pool.compare(spec.alpha, spec.noise)
        .ok_or_else(|| UserError::run_failed("no counted runs to compare").into())
}

/// `tare history confirm`: `before` and `after` built and measured interleaved in one session.
pub fn confirm(
    spec: &Spec,
    bench: &mut dyn Bench,
    before: (&str, &str),
    after: (&str, &str),
) -> Result<(Comparison, Pool)> {
    let builds = Builds::new()?;
    let b = builds.tree("before", before.1, spec.build, bench)?;
    let a = builds.tree("after", after.1, spec.build, bench)?;
    let mut pool = Pool::default();
    let c = measure_into(
        &mut pool,
        bench,
        spec,
        (before.0, &b.path),
        (after.0, &a.path),
    )?;
    Ok((c, pool))
}

/// What bisect found.
pub enum Bisected {
    /// BAD is not measurably slower than GOOD: nothing to bisect.
    NotSlower(Box<Comparison>),
    /// Only commits undecided between both sides are left: the first slow one is one of these.
    OneOf(Vec<String>),
    /// The commit bisect named, against its parent.
    Named(Box<Named>),
}

/// The commit bisect named, measured against its parent.
pub struct Named {
    pub info: CommitInfo,
    pub parent: String,
    pub c: Comparison,
    pub pool: Pool,
    /// Measurably slower than its parent.
    pub slower: bool,
}

/// `tare bisect GOOD BAD`: measured until the model decides, adding a session each time up to
/// [`MAX_SESSIONS`].
pub fn bisect(spec: &Spec, bench: &mut dyn Bench, good: &str, bad: &str) -> Result<Bisected> {
    let builds = Builds::new()?;
    let good_wt = builds.tree("good", good, spec.build, bench)?;
    let bad_hash = builds.resolve(bad)?;
    let cand = builds.tree("candidate", &bad_hash, spec.build, bench)?;
    let good_side = ("good", good_wt.path.as_path());
    let mut pool = Pool::default();
    let c = loop {
        let c = measure_into(&mut pool, bench, spec, good_side, ("bad", &cand.path))?;
        if commits::slower(&c) || c.ratio <= 1.0 || pool.sessions() >= MAX_SESSIONS {
            break c;
        }
        bench.event(Event::Again { c: &c, pool: &pool });
    };
    if !commits::slower(&c) {
        return Ok(Bisected::NotSlower(Box::new(c)));
    }
    // A commit is slow when it is closer to BAD's time than to GOOD's, on a log scale.
    let threshold = c.ratio.sqrt();
    bench.event(Event::Threshold {
        c: &c,
        pool: &pool,
        threshold,
    });
    let good_hash = git::resolve(&builds.repo, good)?;
    git::run(&cand.path, &["bisect", "start", &bad_hash, &good_hash])?;
    let result = steps(spec, bench, good_side, &cand, threshold);
    let _ = git::run(&cand.path, &["bisect", "reset"]);
    let first = match result? {
        Ok(first) => first,
        Err(list) => return Ok(Bisected::OneOf(list)),
    };
    let info = git::commit_info(&builds.repo, Some(&first))?;
    // The named commit against its parent, interleaved: the step is there, or the data
    // cannot tell (a slow commit named one off).
    let parent = git::run(&builds.repo, &["rev-parse", &format!("{first}^")])?;
    let before = builds.tree("parent", &parent, spec.build, bench)?;
    let after = builds.tree("first", &first, spec.build, bench)?;
    let mut pool = Pool::default();
    let c = loop {
        let c = measure_into(
            &mut pool,
            bench,
            spec,
            ("parent", &before.path),
            ("first", &after.path),
        )?;
        let decided = !matches!(c.outcome, Outcome::NoSignificantDifference);
        if decided || pool.sessions() >= MAX_SESSIONS {
            break c;
        }
    };
    Ok(Bisected::Named(Box::new(Named {
        info,
        parent,
        slower: commits::slower(&c),
        c,
        pool,
    })))
}

/// The `git bisect` steps in `cand`'s work tree: Ok(first bad commit), or Err(the commits
/// left when only skipped ones remain).
fn steps(
    spec: &Spec,
    bench: &mut dyn Bench,
    good: (&str, &Path),
    cand: &Worktree,
    threshold: f64,
) -> Result<std::result::Result<String, Vec<String>>> {
    for step in 1..=64 {
        let head = git::run(&cand.path, &["rev-parse", "HEAD"])?;
        git::run(&cand.path, &["clean", "-fdxq"])?;
        build_in(cand, &head, spec.build, bench)?;
        // Every session of this commit pooled; undecided after MAX_SESSIONS is skipped.
        let mut pool = Pool::default();
        let (c, side) = loop {
            let c = measure_into(&mut pool, bench, spec, good, ("candidate", &cand.path))?;
            let side = commits::side(&c, threshold);
            if side != Side::Undecided || pool.sessions() >= MAX_SESSIONS {
                break (c, side);
            }
            bench.event(Event::StepAgain {
                step,
                head: &head,
                c: &c,
                pool: &pool,
                threshold,
            });
        };
        bench.event(Event::Step {
            step,
            head: &head,
            c: &c,
            pool: &pool,
            side,
        });
        let word = match side {
            Side::Slow => "bad",
            Side::Fast => "good",
            Side::Undecided => "skip",
        };
        let (_, out) = bisect_git(&cand.path, &[word])?;
        if let Some(line) = out.lines().find(|l| l.contains("is the first bad commit")) {
            return Ok(Ok(line.split_whitespace().next().unwrap_or("").to_string()));
        }
        if out.contains("only 'skip'ped commits left") {
            return Ok(Err(out
                .lines()
                .skip_while(|l| !l.contains("could be any of"))
                .skip(1)
                .filter_map(|l| l.split_whitespace().next())
                .filter(|w| w.len() >= 7 && w.chars().all(|c| c.is_ascii_hexdigit()))
                .map(String::from)
                .collect()));
        }
    }
    Err(UserError::run_failed("git bisect did not finish in 64 steps").into())
}
