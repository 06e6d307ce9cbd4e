//! From a finished run to a verdict: the tool's result (by the file's rules over exit code and
//! output), its category against the expected result, and its score (seed 003 §7.4).
//!
//! Not for: reading the output (the runner does) or presenting counts (see `crate::table`).

use super::def::{RuleDef, Scoring};
use crate::error::usage;
use crate::results::Termination;
use serde::{Deserialize, Serialize};

/// How a result compares with the expected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    Correct,
    Wrong,
    /// The tool gave no answer ("unknown"), or its answer matched no rule with exit code 0.
    Unknown,
    Timeout,
    OutOfMemory,
    /// Crashed, killed by a signal, non-zero exit without a matching rule, or not started.
    Error,
    /// A definite answer for an input with no expected result.
    Missing,
}

impl Category {
    pub const ALL: [Category; 7] = [
        Category::Correct,
        Category::Wrong,
        Category::Unknown,
        Category::Timeout,
        Category::OutOfMemory,
        Category::Error,
        Category::Missing,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Correct => "correct",
            Category::Wrong => "wrong",
            Category::Unknown => "unknown",
            Category::Timeout => "timeout",
            Category::OutOfMemory => "out-of-memory",
            Category::Error => "error",
            Category::Missing => "missing",
        }
    }

    pub fn parse(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// One rule, compiled.
#[derive(Debug, Clone)]
struct Rule {
    result: String,
    exit: Option<Vec<i32>>,
    output: Option<regex::Regex>,
    positive: bool,
}

/// The rules for one tool: its own first, then the suite's.
#[derive(Debug, Clone)]
pub struct Classifier {
    rules: Vec<Rule>,
}

/// What a run's outcome was.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The tool's result ("true", "sat", ...), or "timeout", "out of memory", "unknown",
    /// "error (exit 3)", "error (signal 11)".
    pub status: String,
    pub category: Category,
    pub score: f64,
}

/// How the run ended, as far as classification needs.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub termination: Termination,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
}

impl Classifier {
    pub fn new(tool_rules: &[RuleDef], suite_rules: &[RuleDef]) -> anyhow::Result<Classifier> {
        let mut rules = Vec::new();
        for r in tool_rules.iter().chain(suite_rules) {
            let output = match &r.output {
                Some(re) => Some(
                    regex::RegexBuilder::new(re)
                        .multi_line(true)
                        .build()
                        .map_err(|e| {
                            usage(format!(
                                "rule for result '{}': invalid regex: {}",
                                r.result,
                                e.to_string().replace('\n', " ")
                            ))
                        })?,
                ),
                None => None,
            };
            let positive = match r.polarity.as_deref() {
                Some(p) => p == "true",
                None => r.result != "false",
            };
            rules.push(Rule {
                result: r.result.clone(),
                exit: r.exit.clone(),
                output,
                positive,
            });
        }
        Ok(Classifier { rules })
    }

    /// The verdict of a run that ended with `outcome` and printed `output`.
    pub fn classify(
        &self,
        outcome: Outcome,
        output: &str,
        expected: Option<&str>,
        scoring: &Scoring,
    ) -> Verdict {
        let fixed = |status: String, category| Verdict {
            status,
            category,
            score: 0.0,
        };
        match outcome.termination {
            Termination::Cpu | Termination::Wall => {
                return fixed("timeout".into(), Category::Timeout)
            }
            Termination::Memory => return fixed("out of memory".into(), Category::OutOfMemory),
            Termination::Signal => {
                return fixed(
                    format!("error (signal {})", outcome.signal.unwrap_or(0)),
                    Category::Error,
                )
            }
            Termination::Pids => {
                return fixed("error (task limit)".into(), Category::Error);
            }
            Termination::Failed => return fixed("error (not run)".into(), Category::Error),
            Termination::Exit => {}
        }
        let code = outcome.exit_code.unwrap_or(-1);
        let hit = self.rules.iter().find(|r| {
            r.exit.as_ref().is_none_or(|e| e.contains(&code))
                && r.output.as_ref().is_none_or(|re| re.is_match(output))
        });
        let Some(rule) = hit else {
            return if code == 0 {
                fixed("unknown".into(), Category::Unknown)
            } else {
                fixed(format!("error (exit {code})"), Category::Error)
            };
        };
        if rule.result == "unknown" {
            return fixed("unknown".into(), Category::Unknown);
        }
        let (category, score) = match expected {
            None => (Category::Missing, 0.0),
            Some(e) if e == rule.result => (
                Category::Correct,
                if rule.positive {
                    scoring.correct_true
                } else {
                    scoring.correct_false
                },
            ),
            Some(_) => (
                Category::Wrong,
                if rule.positive {
                    scoring.wrong_true
                } else {
                    scoring.wrong_false
                },
            ),
        };
        Verdict {
            status: rule.result.clone(),
            category,
            score,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(
        result: &str,
        exit: Option<Vec<i32>>,
        output: Option<&str>,
        pol: Option<&str>,
    ) -> RuleDef {
        RuleDef {
            result: result.into(),
            exit,
            output: output.map(Into::into),
            polarity: pol.map(Into::into),
        }
    }

    fn exit(code: i32) -> Outcome {
        Outcome {
            termination: Termination::Exit,
            exit_code: Some(code),
            signal: None,
        }
    }

    #[test]
    fn sat_solver_rules_and_sv_comp_scores() {
        let c = Classifier::new(
            &[],
            &[
                rule(
                    "unsat",
                    Some(vec![20]),
                    Some("^s UNSATISFIABLE"),
                    Some("true"),
                ),
                rule("sat", Some(vec![10]), Some("^s SATISFIABLE"), Some("false")),
            ],
        )
        .unwrap();
        let s = Scoring::default();
        let v = c.classify(exit(20), "c x\ns UNSATISFIABLE\n", Some("unsat"), &s);
        assert_eq!((v.category, v.score), (Category::Correct, 2.0));
        let v = c.classify(exit(10), "s SATISFIABLE\n", Some("sat"), &s);
        assert_eq!((v.category, v.score), (Category::Correct, 1.0));
        let v = c.classify(exit(10), "s SATISFIABLE\n", Some("unsat"), &s);
        assert_eq!((v.category, v.score), (Category::Wrong, -16.0));
        let v = c.classify(exit(20), "s UNSATISFIABLE\n", Some("sat"), &s);
        assert_eq!((v.category, v.score), (Category::Wrong, -32.0));
        let v = c.classify(exit(0), "s UNKNOWN\n", Some("sat"), &s);
        assert_eq!(
            (v.status.as_str(), v.category),
            ("unknown", Category::Unknown)
        );
        let v = c.classify(exit(3), "boom", Some("sat"), &s);
        assert_eq!(
            (v.status.as_str(), v.category),
            ("error (exit 3)", Category::Error)
        );
        let v = c.classify(exit(10), "s SATISFIABLE\n", None, &s);
        assert_eq!(v.category, Category::Missing);
        let to = Outcome {
            termination: Termination::Cpu,
            exit_code: None,
            signal: Some(9),
        };
        assert_eq!(
            c.classify(to, "", Some("sat"), &s).category,
            Category::Timeout
        );
    }

    #[test]
    fn tool_rules_come_first() {
        let c = Classifier::new(
            &[rule("false", None, Some("FAIL"), None)],
            &[rule("true", None, None, None)],
        )
        .unwrap();
        let s = Scoring::default();
        let v = c.classify(exit(0), "FAIL", Some("true"), &s);
        assert_eq!((v.status.as_str(), v.score), ("false", -16.0));
        let v = c.classify(exit(0), "fine", Some("true"), &s);
        assert_eq!((v.status.as_str(), v.score), ("true", 2.0));
    }
}
