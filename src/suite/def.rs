//! The benchmark definition file (TOML): tools, configurations, input sets, limits, resources,
//! repetitions, isolation, classification rules and scoring — parsed and checked.
//!
//! Not for: expanding the file into runs (see [`super::plan`]) or running anything. Every
//! error names the file and the field and says what to write instead.
//!
//! ```toml
//! name = "compressors"
//! repetitions = 3
//! [limits]            # per run, whole process tree
//! cpu = "10s"
//! wall = "30s"
//! memory = "256MB"    # also the memory reserved per run for the allocation check
//! pids = 64
//! output = "64MB"    # result files kept per run, and the log (default 64 MiB)
//! [resources]
//! cores = 1           # logical CPUs per run (whole physical cores are reserved)
//! [isolation]         # see exec::isolate; enabled by default
//! enabled = true
//! network = false
//! writable = []                    # relative to this file
//! readable = []                    # kept visible below a private /tmp or hidden home
//! hide_home = false
//! result_files = ["*.out"]
//! [[tool]]
//! name = "gzip"
//! command = "sh -c 'gzip {options} -c {input} | gzip -dc | cmp -s - {input} && echo ROUNDTRIP OK'"
//! params = { suffix = "gz" }           # {suffix} in the command
//! [[tool.config]]
//! name = "fast"
//! options = ["-1"]
//! [[inputs]]
//! name = "text"
//! files = ["inputs/*.txt"]             # globs relative to this file
//! expected = "ok"                      # expected result of every input of the set
//! expected_from_name = "_(sat|unsat)\\.cnf$"   # or: first capture group of the file name
//! tasks = ["tasks/*.toml"]             # or task files: input = "...", expected = "..."
//! [[classify]]                         # first matching rule wins (tool rules first)
//! result = "ok"
//! exit = [0]
//! output = "ROUNDTRIP OK"              # regex over the run's output (stdout and stderr)
//! polarity = "true"                    # for scoring: "true" or "false"
//! [scoring]                            # SV-COMP-like default shown
//! correct_true = 2
//! correct_false = 1
//! wrong_true = -32
//! wrong_false = -16
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A whole definition file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteDef {
    pub name: Option<String>,
    #[serde(default = "one")]
    pub repetitions: usize,
    #[serde(default)]
    pub limits: LimitsDef,
    #[serde(default)]
    pub resources: ResourcesDef,
    #[serde(default)]
    pub isolation: IsolationDef,
    #[serde(rename = "tool")]
    pub tools: Vec<ToolDef>,
    pub inputs: Vec<InputSetDef>,
    #[serde(default)]
    pub classify: Vec<RuleDef>,
    #[serde(default)]
    pub scoring: Scoring,
}

fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}

/// Limits as written ("10s", "256MB").
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsDef {
    pub cpu: Option<String>,
    pub wall: Option<String>,
    pub memory: Option<String>,
    pub pids: Option<u64>,
    /// Result files and log kept per run ("64MB"; see `exec::isolate::collect`).
    pub output: Option<String>,
}

/// Resources reserved per run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourcesDef {
    #[serde(default = "one")]
    pub cores: usize,
}

impl Default for ResourcesDef {
    fn default() -> Self {
        ResourcesDef { cores: 1 }
    }
}

/// Isolation as written: [`crate::exec::isolate::Isolation`] plus an on/off switch.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolationDef {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub network: bool,
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// Kept visible read-only below private directories (the suite's own directory and its
    /// inputs always are).
    #[serde(default)]
    pub readable: Vec<PathBuf>,
    #[serde(default)]
    pub hide_home: bool,
    #[serde(default)]
    pub result_files: Vec<String>,
}

impl Default for IsolationDef {
    fn default() -> Self {
        IsolationDef {
            enabled: true,
            network: false,
            writable: Vec::new(),
            readable: Vec::new(),
            hide_home: false,
            result_files: Vec::new(),
        }
    }
}

/// One tool: a command template and its configurations.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    pub name: String,
    /// Split like a shell would (shell-words); `{input}` (absolute path), `{options}`,
    /// `{suite_dir}`, `{tool}`, `{config}` and every parameter `{key}` are substituted; a word that is exactly `{options}` becomes one word
    /// per option.
    pub command: String,
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    #[serde(default, rename = "config")]
    pub configs: Vec<ConfigDef>,
    /// Rules tried before the suite's own.
    #[serde(default)]
    pub classify: Vec<RuleDef>,
}

/// One configuration of a tool: options and parameter overrides.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigDef {
    pub name: String,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub params: BTreeMap<String, String>,
}

/// One set of inputs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSetDef {
    pub name: String,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub tasks: Vec<String>,
    pub expected: Option<String>,
    pub expected_from_name: Option<String>,
}

/// A task file: one input and its expected result.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDef {
    pub input: String,
    pub expected: Option<String>,
}

/// A classification rule: when every given condition holds, the run's result is `result`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    pub result: String,
    /// Exit codes that match (any when absent).
    pub exit: Option<Vec<i32>>,
    /// A regex that must match somewhere in the output.
    pub output: Option<String>,
    /// "true" or "false": which kind of answer this is, for scoring. Default: "false" for the
    /// result "false", else "true".
    pub polarity: Option<String>,
}

/// Points per category and polarity (seed 003 §7.4). Everything else scores 0.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scoring {
    pub correct_true: f64,
    pub correct_false: f64,
    pub wrong_true: f64,
    pub wrong_false: f64,
}

impl Default for Scoring {
    fn default() -> Self {
        Scoring {
            correct_true: 2.0,
            correct_false: 1.0,
            wrong_true: -32.0,
            wrong_false: -16.0,
        }
    }
}

/// Reads and parses a definition file; errors are one line naming the file.
pub fn load(path: &Path) -> anyhow::Result<SuiteDef> {
    // Bounded (TARE_INPUT_LIMIT) and never blocking on a FIFO: `tare suite run /dev/zero`
    // read without end.
    let bytes = crate::results::input::read(path, "suite file")?;
    let text = String::from_utf8(bytes).map_err(|_| {
        crate::error::usage(format!(
            "suite file {} is not text (not UTF-8); give a suite definition in TOML (see `tare suite --help`)",
            path.display()
        ))
    })?;
    parse(&text, path)
}

/// Parses definition text; `path` is only for messages.
pub fn parse(text: &str, path: &Path) -> anyhow::Result<SuiteDef> {
    let def: SuiteDef = toml::from_str(text).map_err(|e| {
        let msg = e.message().replace('\n', " ");
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!(" (line {line})")
            })
            .unwrap_or_default();
        crate::error::usage(format!(
            "suite file {}{at}: {msg}; see `tare suite --help` for the format",
            path.display()
        ))
    })?;
    check(&def, path)?;
    Ok(def)
}

/// A name that becomes part of a path (the suite's `results/NAME`, file names of runs): not
/// empty, no path separator, not `.` or `..` nor containing `..`, no control character.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let why = if name.trim().is_empty() {
        Some("is empty")
    } else if name.contains('/') || name.contains('\\') {
        Some("contains a path separator")
    } else if name.contains("..") || name == "." {
        Some("contains '..' or is '.'")
    } else if name.chars().any(|c| c.is_control()) {
        Some("contains a control character")
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(format!(
            "{what} name '{}' {why}; use letters, digits, '-', '_' and '.'",
            name.escape_debug()
        )),
    }
}

fn check(def: &SuiteDef, path: &Path) -> anyhow::Result<()> {
    let bad = |m: String| crate::error::usage(format!("suite file {}: {m}", path.display()));
    if def.tools.is_empty() {
        return Err(bad("no [[tool]]; add at least one tool".into()));
    }
    if def.inputs.is_empty() {
        return Err(bad("no [[inputs]]; add at least one input set".into()));
    }
    if def.repetitions == 0 || def.repetitions > 100_000 {
        return Err(bad(format!(
            "repetitions = {} must be between 1 and 100000",
            def.repetitions
        )));
    }
    if def.resources.cores == 0 {
        return Err(bad("resources.cores must be at least 1".into()));
    }
    if let Some(n) = &def.name {
        check_name("suite", n).map_err(&bad)?;
    }
    let mut names = std::collections::BTreeSet::new();
    for t in &def.tools {
        if !names.insert(&t.name) {
            return Err(bad(format!(
                "tool '{}' is defined twice; rename one",
                t.name
            )));
        }
        check_name("tool", &t.name).map_err(&bad)?;
        for c in &t.configs {
            check_name(&format!("tool '{}': configuration", t.name), &c.name).map_err(&bad)?;
        }
        if shell_words::split(&t.command).map_or(true, |w| w.is_empty()) {
            return Err(bad(format!(
                "tool '{}': command is empty or has unbalanced quotes",
                t.name
            )));
        }
    }
    for s in &def.inputs {
        if s.files.is_empty() && s.tasks.is_empty() {
            return Err(bad(format!(
                "input set '{}' has neither files nor tasks; add files = [\"glob\"]",
                s.name
            )));
        }
        check_name("input set", &s.name).map_err(&bad)?;
    }
    for r in def
        .classify
        .iter()
        .chain(def.tools.iter().flat_map(|t| &t.classify))
    {
        if let Some(p) = &r.polarity {
            if p != "true" && p != "false" {
                return Err(bad(format!(
                    "rule for result '{}': polarity must be \"true\" or \"false\", not \"{p}\"",
                    r.result
                )));
            }
        }
        if let Some(re) = &r.output {
            regex::Regex::new(re).map_err(|e| {
                bad(format!(
                    "rule for result '{}': invalid regex: {}",
                    r.result,
                    e.to_string().replace('\n', " ")
                ))
            })?;
        }
    }
    if let Some(c) = &def.limits.cpu {
        crate::units::parse_duration(c).map_err(|e| bad(format!("limits.cpu: {e}")))?;
    }
    if let Some(c) = &def.limits.wall {
        crate::units::parse_duration(c).map_err(|e| bad(format!("limits.wall: {e}")))?;
    }
    if let Some(c) = &def.limits.memory {
        crate::units::parse_size_limit(c).map_err(|e| bad(format!("limits.memory: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
repetitions = 2
[limits]
cpu = "2s"
memory = "100MB"
[[tool]]
name = "cat"
command = "cat {options} {input}"
[[tool.config]]
name = "plain"
[[inputs]]
name = "set"
files = ["*.txt"]
expected = "ok"
[[classify]]
result = "ok"
output = "^hello"
"#;

    #[test]
    fn parses_a_good_file() {
        let d = parse(GOOD, Path::new("s.toml")).unwrap();
        assert_eq!(d.repetitions, 2);
        assert_eq!(d.tools[0].configs[0].name, "plain");
        assert!(d.isolation.enabled);
        assert_eq!(d.scoring, Scoring::default());
    }

    #[test]
    fn errors_are_one_line_with_file_and_fix() {
        let e = parse(
            &GOOD.replace("cpu = \"2s\"", "cpu = \"soon\""),
            Path::new("s.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("s.toml") && e.contains("limits.cpu"), "{e}");
        let e = parse(
            &GOOD.replace("name = \"set\"", "nme = \"set\""),
            Path::new("s.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line") && !e.contains('\n'), "{e}");
        let e = parse(&GOOD.replace("^hello", "(unclosed"), Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid regex") && !e.contains('\n'), "{e}");
    }
}
