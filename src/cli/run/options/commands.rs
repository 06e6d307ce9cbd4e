//! `tare run`'s commands: the programs found in PATH, every command × parameter combination
//! made a benchmark, and the shell that runs them (`--shell`, `-S`, `-N`), with the shell
//! syntax that no shell would see.
//!
//! For: [`benchmarks`], [`check_program`], [`chosen_shell`], [`shell_syntax`]. Not for: how
//! the commands are measured (`measure.rs`, `countermeasures.rs`) or spawned (`exec::spawn`).

use crate::cli::run::args::*;
use crate::error::usage;
use crate::exec;
use crate::plan::command::{self, Parameter};
use crate::plan::BenchmarkPlan;
use std::path::Path;

/// Finds `program` like execvp would; errors are one line with what to do.
pub(crate) fn check_program(program: &str, cwd: Option<&Path>) -> anyhow::Result<()> {
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    let Err(e) = exec::spawn::resolve(std::ffi::OsStr::new(program), &env, cwd) else {
        return Ok(());
    };
    let denied = e.kind() == std::io::ErrorKind::PermissionDenied;
    Err(usage(match (program.contains('/'), denied) {
        (true, false) => format!("cannot run '{program}': no such file; check the path"),
        (true, true) => {
            format!("cannot run '{program}': not an executable file; check its permissions (chmod +x)")
        }
        (false, false) => format!(
            "cannot run '{program}': program not found in PATH; check the name, or use --shell for shell syntax"
        ),
        (false, true) => {
            format!("cannot run '{program}': found in PATH but not executable; check its permissions (chmod +x)")
        }
    }))
}

/// The benchmarks: every command × every parameter combination.
pub(super) fn benchmarks(
    a: &RunArgs,
    params: &[Parameter],
    shell: Option<&str>,
) -> anyhow::Result<Vec<BenchmarkPlan>> {
    let templates: Vec<String> = if !a.argv.is_empty() {
        if !a.commands.is_empty() {
            return Err(usage(
                "give commands as strings or one command after `--`, not both",
            ));
        }
        vec![shell_words::join(&a.argv)]
    } else {
        a.commands.clone()
    };
    if templates.is_empty() {
        if let Some(s) = a.shell_short.as_deref().filter(|s| s.contains(' ')) {
            return Err(usage(format!(
                "no command to benchmark: -S takes the shell, and '{s}' was read as one; write -S sh '{s}'"
            )));
        }
        return Err(usage(
            "no command to benchmark: give one, e.g. tare run 'sleep 0.1'",
        ));
    }
    if a.shell.as_deref() == Some("/bin/sh")
        && templates.len() > 1
        && looks_like_shell(&templates[0])
    {
        return Err(usage(format!(
            "--shell takes its shell after '=': write --shell={0} (or -S {0}); '{0}' was read as a command to benchmark",
            templates[0]
        )));
    }
    if a.names.len() > templates.len() {
        return Err(usage(format!(
            "{} names for {} commands: give at most one --name per command",
            a.names.len(),
            templates.len()
        )));
    }
    for p in params {
        let token = format!("{{{}}}", p.name);
        if !templates.iter().any(|t| t.contains(&token)) {
            return Err(usage(format!(
                "parameter '{}' is not used: write {token} in a command",
                p.name
            )));
        }
    }
    let combos = command::combinations(params);
    let mut out = Vec::new();
    for (ci, template) in templates.iter().enumerate() {
        for combo in &combos {
            let text = command::substitute(template, combo);
            let argv = if let Some(shell) = shell {
                vec![shell.to_string(), "-c".to_string(), text.clone()]
            } else if !a.argv.is_empty() {
                a.argv
                    .iter()
                    .map(|w| command::substitute(w, combo))
                    .collect()
            } else {
                command::split_words(&text).map_err(usage)?
            };
            let name = a
                .names
                .get(ci)
                .map(|n| command::substitute(n, combo))
                .unwrap_or_else(|| text.clone());
            out.push(BenchmarkPlan {
                name,
                command: text,
                argv,
                parameters: combo.clone(),
                setup: a.setup.clone(),
                cleanup: a.cleanup.clone(),
                prepare: a.prepare.clone(),
                conclude: a.conclude.clone(),
                fixed_setup: None,
            });
        }
    }
    // Two benchmarks of one name (`tare run true true`) are told apart: `true (2)`.
    let items: Vec<(&str, &std::collections::BTreeMap<String, String>)> = out
        .iter()
        .map(|b| (b.name.as_str(), &b.parameters))
        .collect();
    let names = crate::results::names::names_apart(&items);
    for (b, name) in out.iter_mut().zip(names) {
        b.name = name;
    }
    Ok(out)
}

/// Whether `word` names a shell (`bash`, `/bin/zsh`, …), to catch `--shell bash 'cmd'`.
fn looks_like_shell(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    [
        "sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "csh", "tcsh", "ash", "none",
    ]
    .contains(&base)
}

/// The shell that runs the commands, if any: `-S SHELL`, `--shell[=SHELL]`; `none` and `-N`
/// mean none.
pub(super) fn chosen_shell(a: &RunArgs) -> Option<String> {
    if a.no_shell {
        return None;
    }
    a.shell
        .clone()
        .or_else(|| a.shell_short.clone())
        .filter(|s| s != "none")
}

/// The first piece of shell syntax in `text` outside quotes (`|`, `>`, `<`, `&&`, `;`, `*`,
/// `?`, `$`, a backquote), which no shell will interpret when tare splits the words itself.
pub(crate) fn shell_syntax(text: &str) -> Option<&'static str> {
    let mut chars = text.chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\\' if !single => {
                chars.next();
            }
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ if single || double => {}
            '|' => return Some("|"),
            '>' => return Some(">"),
            '<' => return Some("<"),
            ';' => return Some(";"),
            '*' => return Some("*"),
            '?' => return Some("?"),
            '$' => return Some("$"),
            '`' => return Some("`"),
            '&' if chars.peek() == Some(&'&') => return Some("&&"),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_syntax_outside_quotes() {
        assert_eq!(shell_syntax("echo hi | wc -c"), Some("|"));
        assert_eq!(shell_syntax("a && b"), Some("&&"));
        assert_eq!(shell_syntax("grep 'a|b' f"), None);
        assert_eq!(shell_syntax("echo \"$HOME\""), None);
        assert_eq!(shell_syntax("echo \\$HOME"), None);
        assert_eq!(shell_syntax("sleep 1 &"), None);
        assert_eq!(shell_syntax("ls *.c"), Some("*"));
    }
}
