//! Per-series thresholds kept with the code: the smallest change that raises an alert for the
//! series whose benchmark and metric match a rule's globs, read from `.tare/thresholds.toml`
//! in the repository (or the file `--thresholds` names). The one place that file is read;
//! `tare history show`, `check` and `report` apply what it says to detection's `min_effect`
//! per series. Not for: detection itself (`detect.rs`), or the server (`tare serve` does not
//! read it).
//!
//! ```toml
//! [[threshold]]
//! benchmark = "parse *"   # glob on the benchmark's name, or its name with parameters
//! metric = "wall_time"    # glob on the metric (default: every metric)
//! min_effect = "5%"
//! ```
//!
//! The first rule that matches a series gives its threshold; a series no rule matches keeps
//! `--min-effect`.

use super::query::Series;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where the thresholds are, below the repository's top directory.
pub const FILE: &str = ".tare/thresholds.toml";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDef {
    #[serde(default)]
    threshold: Vec<RuleDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDef {
    benchmark: Option<String>,
    metric: Option<String>,
    min_effect: String,
}

/// One rule: the series it matches and their smallest change that alerts.
#[derive(Debug, Clone)]
pub struct Rule {
    pub benchmark: glob::Pattern,
    pub metric: glob::Pattern,
    /// |ratio − 1| at least this raises an alert (0.05 = 5%).
    pub min_effect: f64,
}

/// The rules of one file, in its order.
#[derive(Debug, Clone)]
pub struct Thresholds {
    pub path: PathBuf,
    pub rules: Vec<Rule>,
}

impl Thresholds {
    /// The rules of `text` (the file at `path`); one line saying what to fix when wrong.
    pub fn parse(path: &Path, text: &str) -> Result<Thresholds, String> {
        let at = path.display();
        let def: FileDef = toml::from_str(text).map_err(|e| {
            format!(
                "{at}: {}: write [[threshold]] tables with benchmark, metric and min_effect (docs/store.md)",
                e.message()
            )
        })?;
        let pattern = |what: &str, v: Option<&str>| {
            glob::Pattern::new(v.unwrap_or("*"))
                .map_err(|e| format!("{at}: {what} = {:?}: {e}", v.unwrap_or("*")))
        };
        let mut rules = Vec::new();
        for (i, r) in def.threshold.iter().enumerate() {
            let min_effect = crate::units::parse_fraction(&r.min_effect).map_err(|e| {
                format!(
                    "{at}: threshold {}: min_effect = {:?}: {e}",
                    i + 1,
                    r.min_effect
                )
            })?;
            rules.push(Rule {
                benchmark: pattern("benchmark", r.benchmark.as_deref())?,
                metric: pattern("metric", r.metric.as_deref())?,
                min_effect,
            });
        }
        Ok(Thresholds {
            path: path.to_path_buf(),
            rules,
        })
    }

    /// The thresholds of the file at `path`.
    pub fn load(path: &Path) -> Result<Thresholds, String> {
        // Read as every input file is (`results::input`): a FIFO or a device is not waited on.
        let bytes =
            crate::results::input::read(path, "thresholds").map_err(|e| format!("{e:#}"))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            format!(
                "thresholds {}: not UTF-8 text; give a TOML file",
                path.display()
            )
        })?;
        Thresholds::parse(path, &text)
    }

    /// The first rule matching series `s` (its benchmark's name, or name with parameters,
    /// and its metric).
    pub fn for_series(&self, s: &Series) -> Option<&Rule> {
        let label = s.label();
        self.rules.iter().find(|r| {
            (r.benchmark.matches(&s.benchmark) || r.benchmark.matches(&label))
                && r.metric.matches(&s.metric)
        })
    }
}

/// [`FILE`] in the repository holding `cwd`, when it is there.
pub fn default_path(cwd: &Path) -> Option<PathBuf> {
    super::git::toplevel(cwd)
        .map(|top| top.join(FILE))
        .filter(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(benchmark: &str, parameters: &str, metric: &str) -> Series {
        Series {
            benchmark_id: 1,
            metric_id: 1,
            machine_id: 1,
            benchmark: benchmark.into(),
            parameters: parameters.into(),
            command: String::new(),
            metric: metric.into(),
            unit: "s".into(),
            direction: "lower".into(),
            fingerprint: String::new(),
            hostname: String::new(),
        }
    }

    #[test]
    fn the_first_matching_rule_gives_the_threshold() {
        let t = Thresholds::parse(
            Path::new("t.toml"),
            r#"
[[threshold]]
benchmark = "sort (n=1*)"
min_effect = "10%"
[[threshold]]
benchmark = "sort*"
metric = "cpu_*"
min_effect = "5%"
[[threshold]]
min_effect = "2%"
"#,
        )
        .unwrap();
        let at = |b, p, m| t.for_series(&series(b, p, m)).map(|r| r.min_effect);
        assert_eq!(at("sort", r#"{"n":"100"}"#, "wall_time"), Some(0.10));
        assert_eq!(at("sort", r#"{"n":"5"}"#, "cpu_time"), Some(0.05));
        assert_eq!(at("sort", "{}", "wall_time"), Some(0.02));
        let none = Thresholds::parse(Path::new("t.toml"), "").unwrap();
        assert!(none.for_series(&series("x", "{}", "wall_time")).is_none());
    }

    #[test]
    fn a_wrong_file_says_what_to_fix_in_one_line() {
        for (text, words) in [
            (
                "[[threshold]]\nmin_effect = \"lots\"\n",
                "threshold 1: min_effect",
            ),
            ("[[threshold]]\nbenchmark = \"a\"\n", "min_effect"),
            (
                "[[threshold]]\nbench = \"a\"\nmin_effect = \"1%\"\n",
                "bench",
            ),
            (
                "[[threshold]]\nbenchmark = \"[\"\nmin_effect = \"1%\"\n",
                "benchmark",
            ),
        ] {
            let e = Thresholds::parse(Path::new("t.toml"), text).unwrap_err();
            assert!(
                e.starts_with("t.toml: ") && e.contains(words) && !e.contains('\n'),
                "{e}"
            );
        }
    }
}
