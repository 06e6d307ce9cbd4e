//! `tare table` over shards: a suite output directory that holds `shard-I-of-N/`
//! directories (a sharded or Slurm run), or shard directories given one by one, become one
//! source of the table, as if one run had made them — but only when every shard was measured
//! on the same kind of machine (same fingerprint, see [`super::machine`]). Otherwise tare
//! refuses in one line naming the shards and fingerprints, or, with `--per-machine`, makes
//! one source per machine.
//!
//! The merged source is a temporary `results.jsonl` (the shards' lines, streamed), so the
//! table code reads it like any other. Not for: building tables (see `crate::table`).

use super::machine::MachineRecord;
use super::shard::Shard;
use crate::error::usage;
use crate::suite::record::RESULTS_FILE;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The paths to give the table, and the temporary directory that holds merged sources.
pub struct Prepared {
    pub paths: Vec<PathBuf>,
    pub warnings: Vec<String>,
    _tmp: Option<tempfile::TempDir>,
}

/// One shard directory and what its `suite.json` says.
#[derive(Debug, Clone)]
struct Member {
    dir: PathBuf,
    suite: String,
    shard: Shard,
    machine: Option<MachineRecord>,
    /// The runs the shard was planned to make (`suite.json`'s `runs`).
    runs: Option<usize>,
}

enum Source {
    Plain(PathBuf),
    Group { label: String, members: Vec<Member> },
}

/// The shard a suite output directory holds, from its `suite.json`.
fn read_member(dir: &Path) -> Option<Member> {
    let text = std::fs::read(dir.join("suite.json")).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let shard = v.get("shard")?;
    let shard = Shard {
        index: shard.get("index")?.as_u64()? as usize,
        count: shard.get("count")?.as_u64()? as usize,
    };
    Some(Member {
        dir: dir.to_path_buf(),
        suite: v.get("suite")?.as_str()?.to_string(),
        shard,
        machine: v
            .get("machine")
            .and_then(|m| serde_json::from_value(m.clone()).ok()),
        runs: v.get("runs").and_then(|r| r.as_u64()).map(|r| r as usize),
    })
}

/// Records (non-empty lines) in a shard's results file; None when it cannot be read.
fn records(file: &Path) -> Option<usize> {
    use std::io::BufRead;
    let f = std::fs::File::open(file).ok()?;
    let mut n = 0;
    for line in std::io::BufReader::new(f).split(b'\n') {
        if !line.ok()?.iter().all(u8::is_ascii_whitespace) {
            n += 1;
        }
    }
    Some(n)
}

/// A warning for a shard whose results hold fewer or more records than its planned runs.
fn fill_warning(label: &str, m: &Member) -> Option<String> {
    let planned = m.runs?;
    let have = records(&m.dir.join(RESULTS_FILE)).unwrap_or(0);
    if have < planned {
        Some(format!(
            "'{label}': shard {} is incomplete: {have} of its {planned} runs in {} (it stopped early or is still running; `tare suite run --shard {} --resume` finishes it)",
            m.shard,
            m.dir.display(),
            m.shard
        ))
    } else if have > planned {
        Some(format!(
            "'{label}': shard {} is over-full: {have} records for its {planned} runs in {} (two writers, or a resume that measured runs again); check it before trusting the table",
            m.shard,
            m.dir.display()
        ))
    } else {
        None
    }
}

/// The shard directories below `dir` (`shard-I-of-N/`), by index.
fn shard_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(usize, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let s = Shard::from_dir_name(&e.file_name().to_string_lossy())?;
            e.path().is_dir().then(|| (s.index, e.path()))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

/// Expands shard layouts among `paths` and merges each set of shards into one source.
pub fn prepare(paths: &[PathBuf], per_machine: bool) -> anyhow::Result<Prepared> {
    let mut sources: Vec<Source> = Vec::new();
    let mut warnings = Vec::new();
    for p in paths {
        if p.is_dir() && !p.join(RESULTS_FILE).exists() {
            let dirs = shard_dirs(p);
            if !dirs.is_empty() {
                let mut members: Vec<Member> = Vec::new();
                for d in &dirs {
                    match read_member(d) {
                        Some(m) => members.push(m),
                        // A task that died before it began measuring.
                        None => warnings.push(format!(
                            "{} has no suite.json naming its shard (it did not start measuring); left out",
                            d.display()
                        )),
                    }
                }
                if members.is_empty() {
                    return Err(usage(format!(
                        "the shard directories below {} hold no suite.json naming their shard; they are not the output of `tare suite run --shard`",
                        p.display()
                    )));
                }
                let label = p
                    .canonicalize()
                    .ok()
                    .and_then(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| members[0].suite.clone());
                sources.push(Source::Group { label, members });
                continue;
            }
        }
        let dir = if p.is_dir() {
            Some(p.clone())
        } else if p.file_name().is_some_and(|n| n == RESULTS_FILE) {
            p.parent().map(Path::to_path_buf)
        } else {
            None
        };
        match dir.as_deref().and_then(read_member) {
            Some(m) => {
                // Shards given one by one: grouped by suite and shard count.
                let found = sources.iter_mut().find_map(|s| match s {
                    Source::Group { members, .. }
                        if members[0].suite == m.suite
                            && members[0].shard.count == m.shard.count
                            && !members.iter().any(|x| x.shard == m.shard) =>
                    {
                        Some(members)
                    }
                    _ => None,
                });
                match found {
                    Some(members) => members.push(m),
                    None => sources.push(Source::Group {
                        label: m.suite.clone(),
                        members: vec![m],
                    }),
                }
            }
            None => sources.push(Source::Plain(p.clone())),
        }
    }
    if !sources.iter().any(|s| matches!(s, Source::Group { .. })) {
        return Ok(Prepared {
            paths: paths.to_vec(),
            warnings,
            _tmp: None,
        });
    }
    let tmp = tempfile::Builder::new().prefix("tare-table-").tempdir()?;
    let mut out = Vec::new();
    let mut used = std::collections::HashSet::new();
    for s in sources {
        let (label, members) = match s {
            Source::Plain(p) => {
                out.push(p);
                continue;
            }
            Source::Group { label, members } => (label, members),
        };
        let count = members[0].shard.count;
        let mixed = members.iter().any(|m| m.shard.count != count);
        let missing: Vec<String> = (1..=count)
            .filter(|i| !members.iter().any(|m| m.shard.index == *i))
            .map(|i| format!("{i}/{count}"))
            .collect();
        if mixed {
            let mut counts: Vec<usize> = members.iter().map(|m| m.shard.count).collect();
            counts.sort();
            counts.dedup();
            warnings.push(format!(
                "'{label}': shards of {} parts are merged (a --resume with another shard count); each run is counted once",
                counts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" and ")
            ));
        } else {
            if !missing.is_empty() {
                warnings.push(format!(
                    "'{label}': shard {} missing; the table shows the other shards only",
                    missing.join(", ")
                ));
            }
            warnings.extend(members.iter().filter_map(|m| fill_warning(&label, m)));
        }
        let fp = |m: &Member| {
            m.machine
                .as_ref()
                .map_or_else(|| "unknown".to_string(), |r| r.fingerprint.clone())
        };
        // Machines in the order their first shard comes.
        let mut by_fp: Vec<(String, Vec<&Member>)> = Vec::new();
        for m in &members {
            let f = fp(m);
            match by_fp.iter_mut().find(|(x, _)| *x == f) {
                Some((_, v)) => v.push(m),
                None => by_fp.push((f, vec![m])),
            }
        }
        if by_fp.len() > 1 && !per_machine {
            let list: Vec<String> = members
                .iter()
                .map(|m| {
                    format!(
                        "{} on {}",
                        m.dir.display(),
                        m.machine.as_ref().map_or_else(
                            || "an unrecorded machine (fingerprint unknown)".into(),
                            super::machine::describe
                        )
                    )
                })
                .collect();
            return Err(usage(format!(
                "the shards of '{label}' were measured on {} different machines, so their times do not belong in one column: {}; give --per-machine to show one column set per machine, or rerun the shards on one kind of machine",
                by_fp.len(),
                list.join("; ")
            )));
        }
        for (f, group) in &by_fp {
            let name = if by_fp.len() == 1 {
                label.clone()
            } else {
                let host = group[0]
                    .machine
                    .as_ref()
                    .map_or("unknown", |r| r.info.hostname.as_str());
                format!("{label}@{host}-{}", &f[..f.len().min(8)])
            };
            let mut name = sanitize(&name);
            while !used.insert(name.clone()) {
                name.push('_');
            }
            let dir = tmp.path().join(&name);
            std::fs::create_dir_all(&dir)?;
            let mut w = std::io::BufWriter::new(std::fs::File::create(dir.join(RESULTS_FILE))?);
            for m in group {
                let file = m.dir.join(RESULTS_FILE);
                let Ok(data) = std::fs::read(&file) else {
                    warnings.push(format!(
                        "'{label}': shard {} has no {RESULTS_FILE} yet ({}); the table shows the other shards",
                        m.shard,
                        m.dir.display()
                    ));
                    continue;
                };
                w.write_all(&data)?;
                if !data.is_empty() && !data.ends_with(b"\n") {
                    w.write_all(b"\n")?;
                }
            }
            w.flush()?;
            // suite.json of the first shard, so the merged source reads like one run.
            let _ = std::fs::copy(group[0].dir.join("suite.json"), dir.join("suite.json"));
            out.push(dir);
        }
    }
    Ok(Prepared {
        paths: out,
        warnings,
        _tmp: Some(tmp),
    })
}

/// A label usable as a directory name.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c == '/' || c == '\0' { '_' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(base: &Path, i: usize, n: usize, fp: &str, host: &str, lines: &str) -> PathBuf {
        let d = Shard { index: i, count: n }.dir(base);
        std::fs::create_dir_all(&d).unwrap();
        let meta = serde_json::json!({
            "suite": "s", "shard": {"index": i, "count": n},
            "machine": {"fingerprint": fp, "hostname": host, "cpu_model": "c", "logical_cpus": 2,
                        "physical_cores": 2, "memory_bytes": 1, "kernel": "k", "os": "o",
                        "virtualization": null},
        });
        std::fs::write(d.join("suite.json"), meta.to_string()).unwrap();
        std::fs::write(d.join(RESULTS_FILE), lines).unwrap();
        d
    }

    #[test]
    fn merges_groups_and_refuses() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("out");
        shard(&base, 1, 3, "aaaa", "n1", "one\n");
        shard(&base, 3, 3, "aaaa", "n2", "three"); // no final newline
                                                   // A task that died before suite.json: left out with a warning.
        std::fs::create_dir_all(Shard { index: 2, count: 3 }.dir(&base)).unwrap();
        let p = prepare(std::slice::from_ref(&base), false).unwrap();
        assert_eq!(p.paths.len(), 1);
        assert!(p.paths[0].ends_with("out"), "{:?}", p.paths);
        let merged = std::fs::read_to_string(p.paths[0].join(RESULTS_FILE)).unwrap();
        assert_eq!(merged, "one\nthree\n");
        assert!(p.warnings.iter().any(|w| w.contains("no suite.json")));
        assert!(p.warnings.iter().any(|w| w.contains("shard 2/3 missing")));

        // Another machine: refused, or one source per machine.
        shard(&base, 2, 3, "bbbb", "n3", "two\n");
        let e = prepare(std::slice::from_ref(&base), false)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("aaaa") && e.contains("bbbb") && e.contains("--per-machine"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let p = prepare(std::slice::from_ref(&base), true).unwrap();
        let names: Vec<String> = p
            .paths
            .iter()
            .map(|x| x.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["out@n1-aaaa", "out@n3-bbbb"]);

        // Plain results pass through untouched.
        let plain = t.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::write(plain.join(RESULTS_FILE), "x\n").unwrap();
        let p = prepare(std::slice::from_ref(&plain), false).unwrap();
        assert_eq!(p.paths, vec![plain]);
    }
}
