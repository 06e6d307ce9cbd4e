//! Command-line interface: parses arguments into a plan, runs it, prints, and maps every
//! error to one line and an exit code (see `crate::error::exit`).

mod bias;
mod compare;
mod docs;
mod history;
mod import;
mod kernels;
mod kernels_pairs;
mod kernels_pairs_results;
mod kernels_record;
mod kernels_summary;
mod machine;
mod meters;
mod native;
mod opts;
mod plan_cmd;
mod remote;
mod report;
mod run;
mod serve;
mod suite;
mod table;

use crate::error::{exit, exit_code_of};
use clap::{Parser, Subcommand};

/// tare — benchmarks whose numbers can be trusted.
#[derive(Parser, Debug)]
#[command(name = "tare", version, about, long_about = None, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Measure commands: repeated runs, kernel-accounted CPU time and peak memory, statistics.
    Run(Box<run::RunArgs>),
    /// Measure kernels inside programs (any language, via a tare client library), head to head.
    Kernels(Box<kernels::KernelsArgs>),
    /// A worker for a native harness without a client library (see KIND), run by tare kernels.
    #[command(hide = true)]
    NativeWorker(native::NativeArgs),
    /// Show what the machine is doing (frequency, turbo, thermal, load, steal, ...); tune or reset it.
    Machine(machine::MachineArgs),
    /// Compare saved results (old vs new): ratios, CIs, tests; --fail-if-slower for CI.
    Compare(compare::CompareArgs),
    /// Sweep one setup factor (env size, cwd or argv[0] path length, ASLR) and test whether it changes the result.
    Bias(Box<bias::BiasArgs>),
    /// Plan setups × runs per setup from a pilot (Kalibera & Jones): the least costly design that reaches a CI width.
    Plan(plan_cmd::PlanArgs),
    /// Rebuild results from the journal of a session that crashed.
    Recover(run::RecoverArgs),
    /// Benchmark suites: tools × configurations × inputs, isolated, in parallel, classified.
    Suite(suite::SuiteArgs),
    /// Tables of suite results: HTML (with plots), CSV, regression counts for CI.
    Table(table::TableArgs),
    /// Import other harnesses' results (hyperfine, Google Benchmark, JMH, go test, Criterion, pytest-benchmark, pyperf) as tare results.
    Import(import::ImportArgs),
    /// Report stored results: an HTML page with SVG plots, SVG files, or text plots.
    Report(report::ReportArgs),
    /// History of results by commit (SQLite or PostgreSQL): add, show, check for change points, report, confirm.
    History(Box<history::HistoryArgs>),
    /// Serve a history store to a team: dashboard, JSON upload API with tokens, alerts, comparisons.
    Serve(Box<serve::ServeArgs>),
    /// Find the commit that made a program slower: git bisect with a measured comparison at each step (exit 4: inconclusive).
    Bisect(Box<history::BisectArgs>),
    /// Print a shell completion script: bash, zsh, fish, powershell or elvish.
    Completions(docs::CompletionsArgs),
    /// Print the manual page (roff), or write one per subcommand with --dir.
    Man(docs::ManArgs),
}

/// Runs tare with the process's arguments; returns the exit code. A panic prints one line and
/// exits [`exit::INTERNAL`] (`error::install_panic_hook`).
pub fn main() -> i32 {
    crate::error::install_panic_hook();
    std::panic::catch_unwind(run_main).unwrap_or(exit::INTERNAL)
}

fn run_main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(mut e) => {
            suggest_subcommand(&mut e, std::env::args().skip(1));
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return code;
        }
    };
    let result = forced_internal_error().and_then(|()| dispatch(cli.command));
    match result {
        Ok(code) => code,
        Err(e) if crate::error::is_internal(&e) => {
            eprintln!("{}", crate::error::internal_line(&one_line(&e)));
            exit::INTERNAL
        }
        Err(e) => {
            eprintln!("tare: error: {}", one_line(&e));
            exit_code_of(&e)
        }
    }
}

/// The subcommand run.
fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Run(args) => run::run(*args),
        Command::Compare(args) => compare::compare(args),
        Command::Kernels(args) => kernels::kernels(*args),
        Command::NativeWorker(args) => native::native(args),
        Command::Machine(args) => machine::machine(args),
        Command::Recover(args) => run::recover(args),
        Command::Suite(args) => suite::run(args),
        Command::Table(args) => table::run(args),
        Command::Report(args) => report::report(args),
        Command::Import(args) => import::run(args),
        Command::Bias(args) => bias::bias(*args),
        Command::Plan(args) => plan_cmd::plan(args),
        Command::History(args) => history::history(*args),
        Command::Serve(args) => serve::serve(*args),
        Command::Bisect(args) => history::bisect(*args),
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    }
}

/// `TARE_FORCE_INTERNAL_ERROR=panic` panics and `=error` fails with an internal error, before
/// the command runs: no input reaches a broken invariant (that is what makes it one), so this is
/// how `tests/robust_exits.rs` checks that a bug in tare exits 70 with one line. Undocumented.
fn forced_internal_error() -> anyhow::Result<()> {
    match std::env::var("TARE_FORCE_INTERNAL_ERROR").as_deref() {
        Ok("panic") => panic!("forced by TARE_FORCE_INTERNAL_ERROR"),
        Ok("error") => Err(crate::error::internal(
            "forced by TARE_FORCE_INTERNAL_ERROR",
        )),
        _ => Ok(()),
    }
}

/// Adds "a similar subcommand exists" where clap found none: clap's similarity (Jaro above
/// 0.7) misses short names with swapped letters, such as `rnu` for `run`. Compared with the
/// visible subcommands of the command the mistyped word was given to.
fn suggest_subcommand(e: &mut clap::Error, args: impl Iterator<Item = String>) {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use clap::CommandFactory;
    if e.kind() != ErrorKind::InvalidSubcommand {
        return;
    }
    if matches!(e.get(ContextKind::SuggestedSubcommand), Some(ContextValue::Strings(v)) if !v.is_empty())
    {
        return;
    }
    let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidSubcommand) else {
        return;
    };
    let typed = typed.clone();
    let root = Cli::command();
    let mut cur = &root;
    for arg in args {
        if arg == typed {
            break;
        }
        if let Some(sub) = cur.find_subcommand(&arg) {
            cur = sub;
        }
    }
    let names: Vec<&str> = cur
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name())
        .collect();
    let near = similar(&typed, &names);
    if !near.is_empty() {
        e.insert(
            ContextKind::SuggestedSubcommand,
            ContextValue::Strings(near),
        );
    }
}

/// The names within a small edit distance of `typed` (a swap of neighbours counts as one
/// edit): at most one edit for names up to 5 letters, two beyond; the nearest only.
fn similar(typed: &str, names: &[&str]) -> Vec<String> {
    let limit = if typed.chars().count() <= 5 { 1 } else { 2 };
    let scored: Vec<(usize, &str)> = names
        .iter()
        .map(|n| (edit_distance(typed, n), *n))
        .filter(|(d, _)| *d <= limit)
        .collect();
    let best = scored.iter().map(|(d, _)| *d).min();
    scored
        .into_iter()
        .filter(|(d, _)| Some(*d) == best)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// neighbouring letters, each one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn near_names_are_suggested() {
        use super::similar;
        let names = ["run", "kernels", "machine", "compare", "history", "report"];
        assert_eq!(similar("rnu", &names), vec!["run"]);
        assert_eq!(similar("ru", &names), vec!["run"]);
        assert_eq!(similar("kernles", &names), vec!["kernels"]);
        assert_eq!(similar("compaer", &names), vec!["compare"]);
        assert!(similar("xyz", &names).is_empty());
        assert!(similar("bench", &names).is_empty());
    }

    /// Every option and positional of every subcommand has a description in --help.
    #[test]
    fn every_option_is_described() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_name() != "help" {
                    missing.push(format!("{path} {} (no about)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "tare", &mut missing);
        assert!(missing.is_empty(), "undescribed: {missing:?}");
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
