//! `tare completions SHELL` and `tare man`: shell completion scripts (clap_complete) and
//! manual pages (clap_mangen), generated from the same definitions that parse the arguments.

use crate::error::{exit, usage};
use clap::{Args, CommandFactory, ValueEnum};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tare completions bash > ~/.local/share/bash-completion/completions/tare\n  \
                  tare completions zsh > ~/.zfunc/_tare\n  tare completions fish > ~/.config/fish/completions/tare.fish"
)]
pub struct CompletionsArgs {
    /// The shell to write a completion script for.
    #[arg(value_enum)]
    shell: ShellArg,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ShellArg {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tare man | man -l -\n  tare man --dir /usr/local/share/man/man1"
)]
pub struct ManArgs {
    /// Write tare.1 and one page per subcommand (tare-run.1, …) into this directory instead
    /// of printing tare.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `tare completions SHELL`: the script on standard output.
pub fn completions(a: CompletionsArgs) -> anyhow::Result<i32> {
    use clap_complete::Shell;
    let shell = match a.shell {
        ShellArg::Bash => Shell::Bash,
        ShellArg::Zsh => Shell::Zsh,
        ShellArg::Fish => Shell::Fish,
        ShellArg::Powershell => Shell::PowerShell,
        ShellArg::Elvish => Shell::Elvish,
    };
    let mut cmd = super::Cli::command();
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut cmd, "tare", &mut bytes);
    print_all(&bytes)
}

/// Writes to standard output; a reader that stops early (`| head`) is not an error.
fn print_all(bytes: &[u8]) -> anyhow::Result<i32> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write to standard output: {e}"))
        }
        _ => Ok(exit::OK),
    }
}

/// `tare man`: the manual page(s) in roff.
pub fn man(a: ManArgs) -> anyhow::Result<i32> {
    let cmd = super::Cli::command();
    let Some(dir) = a.dir else {
        let mut bytes = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut bytes)?;
        return print_all(&bytes);
    };
    if !dir.is_dir() {
        return Err(usage(format!(
            "--dir {}: not a directory; create it first (mkdir -p {})",
            dir.display(),
            dir.display()
        )));
    }
    let write = |name: String, page: clap::Command| -> anyhow::Result<()> {
        let path = dir.join(name);
        let mut bytes = Vec::new();
        clap_mangen::Man::new(page).render(&mut bytes)?;
        std::fs::write(&path, bytes).map_err(|e| {
            usage(format!(
                "cannot write the manual page {}: {e}",
                path.display()
            ))
        })
    };
    write("tare.1".into(), cmd.clone())?;
    for sub in cmd.get_subcommands() {
        let name = format!("tare-{}", sub.get_name());
        // Each page's footer says which tare it documents, as tare.1's does.
        let mut page = sub.clone().name(name.clone());
        if let Some(v) = cmd.get_version() {
            page = page.version(v.to_string());
        }
        write(format!("{name}.1"), page)?;
    }
    Ok(exit::OK)
}
