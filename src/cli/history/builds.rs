//! `tare history confirm` and `tare bisect`: commits built in git work trees, measured
//! interleaved in `tare run` sessions (in this process), judged with `conclude::commits` (the one
//! model of `conclude::levels`), and the outcome printed and mapped to an exit code.
//!
//! Not here: the arguments (`super`), the model (`conclude::commits`), git (`store::git`).

use super::{open, BisectArgs, BuildRunArgs, ConfirmArgs};
use crate::conclude::commits::{self, Pool, Side};
use crate::conclude::levels::{Comparison, Outcome};
use crate::error::{exit, usage, UserError};
use crate::results::model::Session;
use crate::store;
use crate::store::detect;
use crate::store::git::{self, Worktree};
use anyhow::Result;
use std::path::{Path, PathBuf};

struct Builds {
    repo: PathBuf,
    tmp: tempfile::TempDir,
}

impl Builds {
    fn new() -> Result<Builds> {
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
    fn tree(&self, name: &str, rev: &str, build: &str) -> Result<Worktree> {
        let hash = git::resolve(&self.repo, rev).map_err(|e| usage(format!("{e:#}")))?;
        let wt = Worktree::add(&self.repo, &self.tmp.path().join(name), &hash)?;
        build_in(&wt, &hash, build)?;
        Ok(wt)
    }
}

fn build_in(wt: &Worktree, hash: &str, build: &str) -> Result<()> {
    eprintln!(
        "building {} in {}",
        &hash[..10.min(hash.len())],
        wt.path.display()
    );
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(build)
        .current_dir(&wt.path)
        .output()
        .map_err(|e| usage(format!("--build: cannot start /bin/sh: {e}")))?;
    if !out.status.success() {
        return Err(UserError::run_failed(format!(
            "--build '{build}' failed for commit {} ({}): {}",
            &hash[..10.min(hash.len())],
            out.status,
            crate::exec::capture::last_lines(&out.stderr, 3)
        ))
        .into());
    }
    Ok(())
}

fn command_in(template: &str, dir: &Path) -> String {
    let d = dir.to_string_lossy();
    if template.contains("{dir}") {
        template.replace("{dir}", &d)
    } else {
        format!("cd {} && {template}", shell_words::quote(&d))
    }
}

/// Measures `a` then `b` (names `na`, `nb`) interleaved in one `tare run` session, in this
/// process; returns the session.
fn measure(spec: &BuildRunArgs, a: (&str, &Path), b: (&str, &Path), out: &Path) -> Result<Session> {
    let mut argv: Vec<String> = vec![
        "tare".into(),
        "run".into(),
        "--style".into(),
        "basic".into(),
        "--shell".into(),
        "--runs".into(),
        spec.runs.to_string(),
        "--warmup".into(),
        spec.warmup.to_string(),
        "--export-json".into(),
        out.to_string_lossy().into_owned(),
    ];
    for (name, dir) in [a, b] {
        argv.push("-n".into());
        argv.push(name.into());
        argv.push(command_in(&spec.run_cmd, dir));
    }
    let code = crate::cli::run_in_process(argv)?;
    if code != exit::OK {
        return Err(UserError {
            code,
            message: "measuring the two commits failed (see above)".into(),
        }
        .into());
    }
    crate::results::read::load_session(out)
}

/// `git bisect …` in `dir`: (success, stdout and stderr).
fn bisect_git(dir: &Path, args: &[&str]) -> Result<(bool, String)> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .arg("bisect")
        .args(args)
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run git ({e}): install git"))?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

fn check_metric(m: &str) -> Result<()> {
    if commits::METRICS.contains(&m) {
        Ok(())
    } else {
        Err(usage(format!("--metric {m}: give wall_time or cpu_time")))
    }
}

/// The runs of every session so far, the new build against the old, judged under the one
/// model (`conclude::commits`).
fn judge(pool: &Pool, spec: &BuildRunArgs) -> Result<Comparison> {
    let (alpha, noise) = (spec.level.alpha()?, spec.level.noise()?);
    pool.compare(alpha, noise)
        .ok_or_else(|| UserError::run_failed("no counted runs to compare").into())
}

/// Adds a session to the pool, as a run failure when it does not hold the two builds.
fn pool_add(pool: &mut Pool, s: &Session, metric: &str) -> Result<()> {
    pool.add(s, metric)
        .map_err(|e| UserError::run_failed(e).into())
}

/// "1.234× (95% CI 1.200–1.270; N processes a side in K sessions)".
fn ratio_words(c: &Comparison, pool: &Pool) -> String {
    let (low, high) = commits::interval(c);
    format!(
        "{:.3}× (95% CI {low:.3}–{high:.3}; {})",
        c.ratio,
        pool.words()
    )
}

pub(super) fn confirm(spec: &str, a: ConfirmArgs) -> Result<i32> {
    check_metric(&a.spec.metric)?;
    let builds = Builds::new()?;
    let before = builds.tree("before", &a.before, &a.spec.build)?;
    let after = builds.tree("after", &a.after, &a.spec.build)?;
    let out = a
        .spec
        .export_json
        .clone()
        .unwrap_or_else(|| builds.tmp.path().join("confirm.json"));
    let s = measure(
        &a.spec,
        (&format!("before {}", a.before), &before.path),
        (&format!("after {}", a.after), &after.path),
        &out,
    )?;
    let mut pool = Pool::default();
    pool_add(&mut pool, &s, &a.spec.metric)?;
    let c = judge(&pool, &a.spec)?;
    println!("{} → {}: {} {}", a.before, a.after, a.spec.metric, c.words);
    if let Some(id) = a.alert {
        let mut st = open(spec)?;
        let words = format!(
            "{} {} measured interleaved",
            a.spec.metric,
            ratio_words(&c, &pool)
        );
        let (status, note) = if commits::slower(&c) {
            ("acknowledged", format!("confirmed: {words}"))
        } else {
            ("dismissed", format!("not reproduced: {words}"))
        };
        if !detect::set_status(&mut st.db, id, status, Some(&note), &store::now())? {
            return Err(usage(format!("there is no alert #{id} in {}", st.location)));
        }
        println!("alert #{id} is {status}");
    }
    Ok(exit::OK)
}

/// `tare bisect GOOD BAD --build … --run …`. Exit 0 with the first slow commit (and its ratio
/// to its parent, measured interleaved); [`exit::INCONCLUSIVE`] when the data cannot tell (BAD
/// not measurably slower than GOOD, commits that stay on both sides of the threshold, or a
/// named commit not measurably slower than its parent).
pub fn bisect(a: BisectArgs) -> Result<i32> {
    check_metric(&a.spec.metric)?;
    let metric = a.spec.metric.as_str();
    let builds = Builds::new()?;
    let good = builds.tree("good", &a.good, &a.spec.build)?;
    let bad_hash = git::resolve(&builds.repo, &a.bad).map_err(|e| usage(format!("{e:#}")))?;
    let cand = builds.tree("candidate", &bad_hash, &a.spec.build)?;
    let mut step_n = 0;
    let mut json = || {
        step_n += 1;
        builds.tmp.path().join(format!("step{step_n}.json"))
    };
    // Measured until the model decides, adding --runs each time up to 4× --runs.
    let max_sessions = 4;
    let mut pool = Pool::default();
    let c = loop {
        let s = measure(&a.spec, ("good", &good.path), ("bad", &cand.path), &json())?;
        pool_add(&mut pool, &s, metric)?;
        let c = judge(&pool, &a.spec)?;
        if commits::slower(&c) || c.ratio <= 1.0 || pool.sessions() >= max_sessions {
            break c;
        }
        println!("bad/good = {}: measuring again", ratio_words(&c, &pool));
    };
    if !commits::slower(&c) {
        println!(
            "inconclusive: {} is not measurably slower than {} in {metric}: {}: nothing to bisect",
            a.bad, a.good, c.words
        );
        return Ok(exit::INCONCLUSIVE);
    }
    // A commit is slow when it is closer to BAD's time than to GOOD's, on a log scale.
    let threshold = c.ratio.sqrt();
    println!(
        "bad/good = {}; a commit counts as slow above {threshold:.3}×",
        ratio_words(&c, &pool)
    );
    let good_hash = git::resolve(&builds.repo, &a.good)?;
    git::run(&cand.path, &["bisect", "start", &bad_hash, &good_hash])?;
    // Ok(Some(first)) or Ok(None) when only undecided commits are left.
    let result = (|| -> Result<Option<String>> {
        for step in 1..=64 {
            let head = git::run(&cand.path, &["rev-parse", "HEAD"])?;
            git::run(&cand.path, &["clean", "-fdxq"])?;
            build_in(&cand, &head, &a.spec.build)?;
            // Every session of this commit pooled; undecided after 4 is skipped.
            let mut pool = Pool::default();
            let (c, verdict) = loop {
                let s = measure(
                    &a.spec,
                    ("good", &good.path),
                    ("candidate", &cand.path),
                    &json(),
                )?;
                pool_add(&mut pool, &s, metric)?;
                let c = judge(&pool, &a.spec)?;
                let v = commits::side(&c, threshold);
                if v != Side::Undecided || pool.sessions() >= max_sessions {
                    break (c, v);
                }
                println!(
                    "step {step}: {} is {} good, on both sides of {threshold:.3}×: measuring again",
                    &head[..10],
                    ratio_words(&c, &pool)
                );
            };
            let word = match verdict {
                Side::Slow => "bad",
                Side::Fast => "good",
                Side::Undecided => "skip",
            };
            println!(
                "step {step}: {} is {} good → {}",
                &head[..10],
                ratio_words(&c, &pool),
                if verdict == Side::Undecided {
                    "undecided, skipped"
                } else {
                    word
                }
            );
            let (_, out) = bisect_git(&cand.path, &[word])?;
            if let Some(line) = out.lines().find(|l| l.contains("is the first bad commit")) {
                return Ok(Some(
                    line.split_whitespace().next().unwrap_or("").to_string(),
                ));
            }
            if out.contains("only 'skip'ped commits left") {
                let list: Vec<&str> = out
                    .lines()
                    .skip_while(|l| !l.contains("could be any of"))
                    .skip(1)
                    .filter_map(|l| l.split_whitespace().next())
                    .filter(|w| w.len() >= 7 && w.chars().all(|c| c.is_ascii_hexdigit()))
                    .collect();
                println!(
                    "inconclusive: the first slow commit is one of {}",
                    list.iter()
                        .map(|h| &h[..10.min(h.len())])
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                return Ok(None);
            }
        }
        Err(UserError::run_failed("git bisect did not finish in 64 steps").into())
    })();
    let _ = git::run(&cand.path, &["bisect", "reset"]);
    let Some(first) = result? else {
        return Ok(exit::INCONCLUSIVE);
    };
    let info = git::commit_info(&builds.repo, Some(&first))?;
    // The named commit against its parent, interleaved: the step is there, or the data
    // cannot tell (a slow commit named one off).
    let parent = git::run(&builds.repo, &["rev-parse", &format!("{first}^")])?;
    let before = builds.tree("parent", &parent, &a.spec.build)?;
    let after = builds.tree("first", &first, &a.spec.build)?;
    let mut pool = Pool::default();
    let c = loop {
        let s = measure(
            &a.spec,
            ("parent", &before.path),
            ("first", &after.path),
            &json(),
        )?;
        pool_add(&mut pool, &s, metric)?;
        let c = judge(&pool, &a.spec)?;
        let decided = !matches!(c.outcome, Outcome::NoSignificantDifference);
        if decided || pool.sessions() >= max_sessions {
            break c;
        }
    };
    let words = format!(
        "{} its parent {} in {metric}",
        ratio_words(&c, &pool),
        &parent[..10.min(parent.len())],
    );
    if commits::slower(&c) {
        println!(
            "first slow commit: {} {} — {words}",
            info.hash,
            info.subject.unwrap_or_default()
        );
        Ok(exit::OK)
    } else {
        println!(
            "inconclusive: bisect named {} {}, but it is {words}: {}",
            info.hash,
            info.subject.unwrap_or_default(),
            c.words
        );
        Ok(exit::INCONCLUSIVE)
    }
}
