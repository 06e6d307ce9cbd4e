//! `tare compare OLD.json NEW.json`: the same comparison statistics and wording as `tare run`,
//! for saved results. Benchmarks are matched by name and parameters; `--fail-if-slower PCT`
//! exits 1 on a significant regression larger than PCT, for CI pipelines.

use crate::conclude::analysis::{self, CompareSettings, Test};
use crate::error::{exit, usage};
use crate::results::{Benchmark, Session};
use crate::units;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 no regression beyond the threshold (or none asked for); 1 a significant \
                        regression larger than --fail-if-slower; 2 bad input."
)]
pub struct CompareArgs {
    /// Results of the old version (the reference).
    old: PathBuf,
    /// Results of the new version (the candidate).
    new: PathBuf,
    /// Exit 1 when a benchmark is significantly slower by more than this (e.g. 5%).
    #[arg(long, value_name = "PCT")]
    fail_if_slower: Option<String>,
    /// Significance level (Holm-corrected across benchmarks).
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// A difference whose whole 95% CI lies within ± this is "equal within noise".
    #[arg(long, value_name = "PCT", default_value = "1%")]
    noise_threshold: String,
    /// Test behind the p-values (as in `tare run --test`).
    #[arg(long, value_enum, default_value_t = TestArg::MannWhitney)]
    test: TestArg,
    /// Same as --test welch (kept for old scripts).
    #[arg(long, hide = true)]
    welch: bool,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TestArg {
    MannWhitney,
    Welch,
}

/// Reads a results file; errors name the file, what it is and what to do.
pub fn load(path: &Path) -> anyhow::Result<Session> {
    crate::results::read::load_session(path)
}

fn key(b: &Benchmark) -> (String, Vec<(String, String)>) {
    (
        b.name.clone(),
        b.parameters
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

pub fn compare(a: CompareArgs) -> anyhow::Result<i32> {
    let old = load(&a.old)?;
    let new = load(&a.new)?;
    let threshold = a
        .fail_if_slower
        .as_deref()
        .map(|s| units::parse_fraction(s).map_err(|e| usage(format!("--fail-if-slower: {e}"))))
        .transpose()?;
    let noise = units::parse_fraction(&a.noise_threshold)
        .map_err(|e| usage(format!("--noise-threshold: {e}")))?;
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return Err(usage(format!(
            "--alpha {} must be between 0 and 1",
            a.alpha
        )));
    }
    let mut pairs = Vec::new();
    let mut unmatched = Vec::new();
    for (i, ob) in old.benchmarks.iter().enumerate() {
        match new.benchmarks.iter().position(|nb| key(nb) == key(ob)) {
            Some(j) => pairs.push((i, j)),
            None => unmatched.push(ob.name.clone()),
        }
    }
    if pairs.is_empty() {
        return Err(usage(format!(
            "no benchmark of {} matches one of {} by name and parameters; name them alike with --name",
            a.old.display(),
            a.new.display()
        )));
    }
    let settings = CompareSettings {
        reference: 0,
        test: if a.welch || a.test == TestArg::Welch {
            Test::Welch
        } else {
            Test::MannWhitney
        },
        alpha: a.alpha,
        noise,
        paired: false,
        resamples: 10_000,
        seed: a.seed,
    };
    let records = analysis::compare_pairs(&old.benchmarks, &new.benchmarks, &pairs, &settings);
    println!(
        "{:<32} {:>12} {:>12} {:>9} {:>17} {:>9}  verdict",
        "benchmark", "old median", "new median", "change", "95% CI", "p (Holm)"
    );
    let mut regression = false;
    for c in &records {
        let om = analysis::walls(&old.benchmarks[c.reference]);
        let nm = analysis::walls(&new.benchmarks[c.candidate]);
        let med = |xs: &[f64]| crate::stats::describe(xs).map_or(f64::NAN, |d| d.median);
        let marker = match c.verdict.as_str() {
            "slower" => {
                if threshold.is_some_and(|t| c.ratio - 1.0 > t) {
                    regression = true;
                    "!! slower"
                } else {
                    "slower"
                }
            }
            "faster" => "faster",
            "equal-within-noise" => "=",
            _ => "~",
        };
        println!(
            "{:<32} {:>12} {:>12} {:>+8.2}% {:>+7.2}%…{:>+7.2}% {:>9}  {marker}: {}",
            c.candidate_name,
            units::format_time(med(&om), None),
            units::format_time(med(&nm), None),
            (c.ratio - 1.0) * 100.0,
            (c.ratio_ci_low - 1.0) * 100.0,
            (c.ratio_ci_high - 1.0) * 100.0,
            units::format_p(c.p_adjusted),
            c.words
        );
    }
    for name in unmatched {
        eprintln!("tare: note: '{name}' is only in {}", a.old.display());
    }
    if regression {
        eprintln!(
            "tare: regression: at least one benchmark is significantly slower by more than {}",
            units::format_percent(threshold.unwrap_or(0.0))
        );
        return Ok(exit::VERDICT);
    }
    Ok(exit::OK)
}
