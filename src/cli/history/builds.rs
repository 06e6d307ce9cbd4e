//! `tare history confirm` and `tare bisect`, presented: the arguments checked, the algorithm
//! (`store::bisect`) given a [`Bench`] that measures two builds in a `tare run` session built
//! in code (`cli::run::interleaved`: the same plan, progress and results file as the command
//! line), its events and outcome printed and mapped to an exit code.
//!
//! Not here: the arguments (`super`), the algorithm (`store::bisect`), the model
//! (`conclude::commits`), git (`store::git`).

use super::{open, BisectArgs, BuildRunArgs, ConfirmArgs};
use crate::conclude::commits::{self, Pool, Side};
use crate::conclude::levels::Comparison;
use crate::error::{exit, usage, UserError};
use crate::results::model::Session;
use crate::store;
use crate::store::bisect::{self, short, Bisected, Event};
use crate::store::detect;
use anyhow::Result;
use std::path::{Path, PathBuf};

fn command_in(template: &str, dir: &Path) -> String {
    let d = dir.to_string_lossy();
    if template.contains("{dir}") {
        template.replace("{dir}", &d)
    } else {
        format!("cd {} && {template}", shell_words::quote(&d))
    }
}

/// Two builds measured in `tare run` sessions, each written to a results file (`--export-json`
/// for confirm, a temporary file per step otherwise); events printed.
struct Runs<'a> {
    spec: &'a BuildRunArgs,
    /// Where the one session goes (confirm's --export-json), if given.
    out: Option<PathBuf>,
    tmp: tempfile::TempDir,
    n: usize,
}

impl<'a> Runs<'a> {
    fn new(spec: &'a BuildRunArgs) -> Result<Runs<'a>> {
        Ok(Runs {
            spec,
            out: spec.export_json.clone(),
            tmp: tempfile::Builder::new()
                .prefix("tare-sessions-")
                .tempdir()?,
            n: 0,
        })
    }
}

impl bisect::Bench for Runs<'_> {
    fn measure(&mut self, a: (&str, &Path), b: (&str, &Path)) -> Result<Session> {
        self.n += 1;
        let out = match &self.out {
            Some(p) => p.clone(),
            None => self.tmp.path().join(format!("step{}.json", self.n)),
        };
        let commands = [a, b]
            .iter()
            .map(|(name, dir)| (name.to_string(), command_in(&self.spec.run_cmd, dir)))
            .collect();
        let code = crate::cli::run::interleaved(crate::cli::run::Interleaved {
            commands,
            runs: self.spec.runs,
            warmup: self.spec.warmup,
            export_json: out.clone(),
        })?;
        if code != exit::OK {
            return Err(UserError {
                code,
                message: "measuring the two commits failed (see above)".into(),
            }
            .into());
        }
        crate::results::read::load_session(&out)
    }

    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::Building { hash, dir } => {
                eprintln!("building {} in {}", short(hash), dir.display())
            }
            Event::Again { c, pool } => {
                println!("bad/good = {}: measuring again", ratio_words(c, pool))
            }
            Event::Threshold { c, pool, threshold } => println!(
                "bad/good = {}; a commit counts as slow above {threshold:.3}×",
                ratio_words(c, pool)
            ),
            Event::StepAgain {
                step,
                head,
                c,
                pool,
                threshold,
            } => println!(
                "step {step}: {} is {} good, on both sides of {threshold:.3}×: measuring again",
                short(head),
                ratio_words(c, pool)
            ),
            Event::Step {
                step,
                head,
                c,
                pool,
                side,
            } => println!(
                "step {step}: {} is {} good → {}",
                short(head),
                ratio_words(c, pool),
                match side {
                    Side::Slow => "bad",
                    Side::Fast => "good",
                    Side::Undecided => "undecided, skipped",
                }
            ),
        }
    }
}

fn check_metric(m: &str) -> Result<()> {
    if commits::METRICS.contains(&m) {
        Ok(())
    } else {
        Err(usage(format!("--metric {m}: give wall_time or cpu_time")))
    }
}

fn spec_of(a: &BuildRunArgs) -> Result<bisect::Spec<'_>> {
    check_metric(&a.metric)?;
    Ok(bisect::Spec {
        build: &a.build,
        metric: &a.metric,
        alpha: a.level.alpha()?,
        noise: a.level.noise()?,
    })
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
    let s = spec_of(&a.spec)?;
    let mut runs = Runs::new(&a.spec)?;
    let (c, pool) = bisect::confirm(
        &s,
        &mut runs,
        (&format!("before {}", a.before), &a.before),
        (&format!("after {}", a.after), &a.after),
    )?;
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
    let s = spec_of(&a.spec)?;
    let metric = a.spec.metric.as_str();
    // Bisect's sessions go to temporary files (--export-json is confirm's).
    let mut runs = Runs::new(&a.spec)?;
    runs.out = None;
    match bisect::bisect(&s, &mut runs, &a.good, &a.bad)? {
        Bisected::NotSlower(c) => {
            println!(
                "inconclusive: {} is not measurably slower than {} in {metric}: {}: nothing to bisect",
                a.bad, a.good, c.words
            );
            Ok(exit::INCONCLUSIVE)
        }
        Bisected::OneOf(list) => {
            println!(
                "inconclusive: the first slow commit is one of {}",
                list.iter().map(|h| short(h)).collect::<Vec<_>>().join(", ")
            );
            Ok(exit::INCONCLUSIVE)
        }
        Bisected::Named(named) => {
            let bisect::Named {
                info,
                parent,
                c,
                pool,
                slower,
            } = *named;
            let words = format!(
                "{} its parent {} in {metric}",
                ratio_words(&c, &pool),
                short(&parent),
            );
            if slower {
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
    }
}
