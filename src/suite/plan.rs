//! Expands a definition into the list of runs: tool × configuration × input × repetition, with
//! each run's argv, expected result and stable key (used by `--resume` and by tables).
//!
//! Not for: running (see [`super::runner`]) or classifying (see [`super::classify`]).

use super::classify::Classifier;
use super::def::{Scoring, SuiteDef, TaskDef};
use crate::error::usage;
use crate::exec::isolate::Isolation;
use crate::exec::Limits;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One input of the suite.
#[derive(Debug, Clone, PartialEq)]
pub struct InputFile {
    /// Name of its input set.
    pub set: String,
    /// The input as shown in tables: its path relative to the suite file's directory.
    pub id: String,
    /// Absolute path given to the tool.
    pub path: PathBuf,
    pub expected: Option<String>,
}

/// One run to do.
#[derive(Debug, Clone)]
pub struct Job {
    /// `tool/config/set/input#rep`: unique and stable across invocations.
    pub key: String,
    pub tool: String,
    pub config: String,
    pub input: Arc<InputFile>,
    pub rep: usize,
    pub argv: Vec<String>,
    /// Index into [`SuitePlan::classifiers`].
    pub tool_index: usize,
}

/// A definition made concrete.
#[derive(Debug)]
pub struct SuitePlan {
    pub name: String,
    /// Directory of the definition file (relative paths start here; runs without isolation
    /// start here too).
    pub dir: PathBuf,
    pub jobs: Vec<Job>,
    pub limits: Limits,
    /// Bytes of result files, and of log, kept per run (`[limits] output`).
    pub output_limit: u64,
    pub cores_per_run: usize,
    pub isolation: Option<Isolation>,
    /// One per tool, in definition order.
    pub classifiers: Vec<Classifier>,
    pub scoring: Scoring,
}

/// Expands `def` (read from `file`). Globs that match nothing and task files that cannot be
/// read are errors (exit 2) naming the set and what to fix.
pub fn expand(def: &SuiteDef, file: &Path) -> anyhow::Result<SuitePlan> {
    let file_abs = file
        .canonicalize()
        .map_err(|e| usage(format!("suite file {}: {e}", file.display())))?;
    let dir = file_abs
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut inputs: Vec<Arc<InputFile>> = Vec::new();
    for set in &def.inputs {
        let name_re = match &set.expected_from_name {
            Some(r) => Some(regex::Regex::new(r).map_err(|e| {
                usage(format!(
                    "input set '{}': invalid expected_from_name regex: {}",
                    set.name,
                    e.to_string().replace('\n', " ")
                ))
            })?),
            None => None,
        };
        let mut found: BTreeMap<PathBuf, Option<String>> = BTreeMap::new();
        for g in &set.files {
            for p in glob_files(&dir, g, &set.name)? {
                let expected = set.expected.clone().or_else(|| {
                    let re = name_re.as_ref()?;
                    let fname = p.file_name()?.to_string_lossy().into_owned();
                    Some(re.captures(&fname)?.get(1)?.as_str().to_string())
                });
                found.insert(p, expected);
            }
        }
        for g in &set.tasks {
            for t in glob_files(&dir, g, &set.name)? {
                let text = crate::results::input::read_text(&t, "task file")?;
                let task: TaskDef = toml::from_str(&text).map_err(|e| {
                    usage(format!(
                        "task file {}: {}; write input = \"file\" and expected = \"result\"",
                        t.display(),
                        e.message().replace('\n', " ")
                    ))
                })?;
                let base = t.parent().unwrap_or(&dir);
                let p = base.join(&task.input);
                let p = p.canonicalize().map_err(|e| {
                    usage(format!(
                        "task file {}: input {}: {e}",
                        t.display(),
                        p.display()
                    ))
                })?;
                found.insert(p, task.expected.or_else(|| set.expected.clone()));
            }
        }
        for (path, expected) in found {
            let id = path
                .strip_prefix(&dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            inputs.push(Arc::new(InputFile {
                set: set.name.clone(),
                id,
                path,
                expected,
            }));
        }
    }
    let mut classifiers = Vec::new();
    let mut variants: Vec<(usize, String, String, Vec<String>)> = Vec::new();
    for (ti, tool) in def.tools.iter().enumerate() {
        classifiers.push(Classifier::new(&tool.classify, &def.classify)?);
        let words = shell_words::split(&tool.command)
            .map_err(|e| usage(format!("tool '{}': command: {e}", tool.name)))?;
        let configs = if tool.configs.is_empty() {
            vec![super::def::ConfigDef {
                name: "default".into(),
                options: Vec::new(),
                params: BTreeMap::new(),
            }]
        } else {
            tool.configs.clone()
        };
        for c in configs {
            let mut params = tool.params.clone();
            params.extend(c.params.clone());
            params.insert("options".into(), shell_words::join(&c.options));
            params.insert("tool".into(), tool.name.clone());
            params.insert("config".into(), c.name.clone());
            params.insert("suite_dir".into(), dir.to_string_lossy().into_owned());
            let mut argv_template = Vec::new();
            for w in &words {
                if w == "{options}" {
                    argv_template.extend(c.options.iter().cloned());
                } else {
                    argv_template.push(substitute(w, &params));
                }
            }
            variants.push((ti, tool.name.clone(), c.name.clone(), argv_template));
        }
    }
    let mut jobs = Vec::new();
    for rep in 0..def.repetitions {
        for input in &inputs {
            for (ti, tool, config, template) in &variants {
                let path = input.path.to_string_lossy();
                let argv = template
                    .iter()
                    .map(|w| w.replace("{input}", &path))
                    .collect();
                jobs.push(Job {
                    key: format!("{tool}/{config}/{}/{}#{rep}", input.set, input.id),
                    tool: tool.clone(),
                    config: config.clone(),
                    input: Arc::clone(input),
                    rep,
                    argv,
                    tool_index: *ti,
                });
            }
        }
    }
    let parse_d = |s: &Option<String>| s.as_deref().map(crate::units::parse_duration);
    let limits = Limits {
        cpu: parse_d(&def.limits.cpu).transpose().map_err(usage)?,
        wall: parse_d(&def.limits.wall).transpose().map_err(usage)?,
        memory: def
            .limits
            .memory
            .as_deref()
            .map(crate::units::parse_bytes)
            .transpose()
            .map_err(usage)?,
        pids: def.limits.pids,
    };
    let output_limit = match def.limits.output.as_deref() {
        Some(s) => {
            crate::units::parse_bytes(s).map_err(|e| usage(format!("[limits] output: {e}")))?
        }
        None => crate::exec::isolate::collect::DEFAULT_OUTPUT_LIMIT,
    };
    let iso = &def.isolation;
    // The suite's directory and its inputs stay visible even when they lie below a private
    // directory such as /tmp (parents first, so nested ones are dropped).
    let mut readable: Vec<PathBuf> = iso.readable.iter().map(|r| dir.join(r)).collect();
    readable.push(dir.clone());
    readable.extend(
        inputs
            .iter()
            .filter_map(|i| i.path.parent().map(Path::to_path_buf)),
    );
    readable.sort();
    readable.dedup();
    let mut tops: Vec<PathBuf> = Vec::new();
    for r in readable {
        if !tops.iter().any(|t| r.starts_with(t)) {
            tops.push(r);
        }
    }
    let isolation = iso.enabled.then(|| Isolation {
        network: iso.network,
        writable: iso.writable.iter().map(|w| dir.join(w)).collect(),
        readable: tops,
        hide_home: iso.hide_home,
        result_files: iso.result_files.clone(),
        workdir: None,
        memory_nodes: None,
    });
    Ok(SuitePlan {
        name: def.name.clone().unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .filter(|n| super::def::check_name("suite", n).is_ok())
                .unwrap_or_else(|| "suite".into())
        }),
        dir,
        jobs,
        limits,
        output_limit,
        cores_per_run: def.resources.cores,
        isolation,
        classifiers,
        scoring: def.scoring,
    })
}

/// Replaces `{key}` by each parameter's value (`{input}` is left for later).
fn substitute(word: &str, params: &BTreeMap<String, String>) -> String {
    let mut out = word.to_string();
    for (k, v) in params {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// Regular files matching `pattern` relative to `dir`, sorted; none is an error.
fn glob_files(dir: &Path, pattern: &str, set: &str) -> anyhow::Result<Vec<PathBuf>> {
    let full = if Path::new(pattern).is_absolute() {
        pattern.to_string()
    } else {
        format!(
            "{}/{pattern}",
            glob::Pattern::escape(&dir.to_string_lossy())
        )
    };
    let paths = glob::glob(&full)
        .map_err(|e| usage(format!("input set '{set}': invalid glob '{pattern}': {e}")))?;
    let mut out: Vec<PathBuf> = paths
        .flatten()
        .filter(|p| p.is_file())
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(usage(format!(
            "input set '{set}': '{pattern}' matches no file below {}; check the glob or create the inputs",
            dir.display()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_tools_configs_inputs_and_repetitions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a_sat.cnf"), "").unwrap();
        std::fs::write(dir.path().join("b_unsat.cnf"), "").unwrap();
        std::fs::create_dir(dir.path().join("tasks")).unwrap();
        std::fs::write(dir.path().join("c.cnf"), "").unwrap();
        std::fs::write(
            dir.path().join("tasks/c.toml"),
            "input = \"../c.cnf\"\nexpected = \"sat\"\n",
        )
        .unwrap();
        let text = r#"
repetitions = 2
[[tool]]
name = "solver"
command = "solve --seed {seed} {options} {input}"
params = { seed = "1" }
[[tool.config]]
name = "a"
options = ["-x", "-y"]
[[tool.config]]
name = "b"
params = { seed = "2" }
[[inputs]]
name = "gen"
files = ["*.cnf"]
expected_from_name = "_(sat|unsat)\\.cnf$"
[[inputs]]
name = "tasks"
tasks = ["tasks/*.toml"]
"#;
        let file = dir.path().join("s.toml");
        std::fs::write(&file, text).unwrap();
        let def = super::super::def::load(&file).unwrap();
        let plan = expand(&def, &file).unwrap();
        // 2 configs × (3 + 1 inputs) × 2 repetitions
        assert_eq!(plan.jobs.len(), 16);
        let j = &plan.jobs[0];
        assert_eq!(j.argv[..5], ["solve", "--seed", "1", "-x", "-y"]);
        assert!(j.argv[5].ends_with("a_sat.cnf"));
        assert_eq!(j.input.expected.as_deref(), Some("sat"));
        assert_eq!(j.key, "solver/a/gen/a_sat.cnf#0");
        let b = plan.jobs.iter().find(|j| j.config == "b").unwrap();
        assert_eq!(b.argv[2], "2");
        let c = plan.jobs.iter().find(|j| j.input.set == "tasks").unwrap();
        assert_eq!(c.input.expected.as_deref(), Some("sat"));
        assert_eq!(c.input.id, "c.cnf");
        let none = plan
            .jobs
            .iter()
            .find(|j| j.input.id == "c.cnf" && j.input.set == "gen")
            .unwrap();
        assert_eq!(none.input.expected, None);
        assert!(plan.isolation.is_some());
    }
}
