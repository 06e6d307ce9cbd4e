//! Shards: `--shard I/N` runs a deterministic part of a suite. Inputs are dealt round-robin
//! in the suite's input order (input sets in definition order, files sorted), and every
//! configuration and repetition of an input goes with it, so per-input comparisons never mix
//! machines. The same definition and inputs always give the same parts; adding or removing
//! an input can move others to another shard.
//!
//! A shard's results go to `OUTPUT/shard-I-of-N/` (an ordinary suite output directory whose
//! `suite.json` says which shard it is), so shards run one after another, side by side or on
//! different machines write to different places, and `tare table OUTPUT` merges them.
//!
//! Not for: running (see `crate::suite::runner`) or merging (see [`super::merge`]).

use crate::suite::plan::Job;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Part `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard '{s}': give I/N with 1 <= I <= N, e.g. 1/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The shard's directory below a suite's output directory.
    pub fn dir(&self, output: &Path) -> PathBuf {
        output.join(self.dir_name())
    }

    /// `shard-I-of-N`.
    pub fn dir_name(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }

    /// Parses a directory name made by [`Shard::dir_name`].
    pub fn from_dir_name(name: &str) -> Option<Shard> {
        let rest = name.strip_prefix("shard-")?;
        let (i, n) = rest.split_once("-of-")?;
        format!("{i}/{n}").parse().ok()
    }

    /// Shard directories below `output` of another shard count (`shard-*-of-K`, K ≠ this
    /// count), sorted: what an earlier `--resume` with another `--tasks` or N wrote. Their runs
    /// count as done, so nothing is measured or counted twice.
    pub fn other_counts(&self, output: &Path) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(output) else {
            return Vec::new();
        };
        let mut v: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| {
                Shard::from_dir_name(&e.file_name().to_string_lossy())
                    .is_some_and(|s| s.count != self.count)
                    && e.path().is_dir()
            })
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    }

    /// Keeps the jobs of this shard, in their order.
    pub fn select(&self, jobs: &mut Vec<Job>) {
        let of = input_shards(jobs, self.count);
        jobs.retain(|j| of[&(j.input.set.clone(), j.input.id.clone())] == self.index);
    }

    /// The shard (1-based) of each input, by its first appearance in `jobs`.
    pub fn of_inputs(jobs: &[Job], count: usize) -> HashMap<(String, String), usize> {
        input_shards(jobs, count)
    }
}

fn input_shards(jobs: &[Job], count: usize) -> HashMap<(String, String), usize> {
    let mut of = HashMap::new();
    for j in jobs {
        let k = (j.input.set.clone(), j.input.id.clone());
        let next = of.len();
        of.entry(k).or_insert(next % count + 1);
    }
    of
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::plan::InputFile;
    use std::sync::Arc;

    fn jobs() -> Vec<Job> {
        let mut v = Vec::new();
        for rep in 0..2 {
            for input in ["a", "b", "c", "d", "e"] {
                let inp = Arc::new(InputFile {
                    set: "s".into(),
                    id: input.into(),
                    path: input.into(),
                    expected: None,
                });
                for cfg in ["x", "y", "z"] {
                    v.push(Job {
                        key: format!("t/{cfg}/s/{input}#{rep}"),
                        tool: "t".into(),
                        config: cfg.into(),
                        input: Arc::clone(&inp),
                        rep,
                        argv: vec![],
                        tool_index: 0,
                    });
                }
            }
        }
        v
    }

    #[test]
    fn parses_and_refuses() {
        assert_eq!(
            "2/3".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 3 }
        );
        for bad in ["0/3", "4/3", "1", "a/b", "1/0", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let s = Shard { index: 2, count: 3 };
        assert_eq!(Shard::from_dir_name(&s.dir_name()), Some(s));
        assert_eq!(Shard::from_dir_name("shard-x"), None);
    }

    #[test]
    fn shards_partition_the_jobs_and_keep_each_input_whole() {
        let all = jobs();
        for n in 1..=7 {
            let mut seen = Vec::new();
            for i in 1..=n {
                let mut part = all.clone();
                Shard { index: i, count: n }.select(&mut part);
                // Every configuration and repetition of an input is in the same part.
                let inputs: std::collections::BTreeSet<_> =
                    part.iter().map(|j| j.input.id.clone()).collect();
                assert_eq!(part.len(), inputs.len() * 6, "n={n} i={i}");
                // Balanced: sizes differ by at most one input.
                assert!(inputs.len() >= 5 / n && inputs.len() <= 5_usize.div_ceil(n));
                seen.extend(part.into_iter().map(|j| j.key));
            }
            let mut want: Vec<_> = all.iter().map(|j| j.key.clone()).collect();
            want.sort();
            seen.sort();
            assert_eq!(seen, want, "n={n}: every job in exactly one shard");
        }
    }
}
