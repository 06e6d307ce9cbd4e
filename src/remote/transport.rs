//! How a command reaches another machine. [`Transport`] is the whole interface a remote
//! session needs: a `Command` that runs argv over there with stdin/stdout/stderr connected
//! here, and a name for messages. [`Ssh`] is the one implementation: the system `ssh` client
//! in batch mode (keys or an agent, never a password prompt), so the user's ssh config,
//! jump hosts and known hosts apply. An `adb shell` transport for Android devices would be
//! another implementation of the same trait; it is not written or verified here (no device).
//!
//! Not for: what runs over there (see [`super::host`]).

use std::process::Command;

/// A way to run a command on another machine.
pub trait Transport {
    /// A command that runs `argv` (words, quoted for the other side's shell here) there.
    fn command(&self, argv: &[String]) -> Command;
    /// The other machine, for messages (`user@host`).
    fn name(&self) -> &str;
}

/// The system ssh client, BatchMode.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// `[user@]host`.
    pub destination: String,
    /// More `ssh` arguments, as given (`-p 2222`, `-i KEY`, `-o Option=value`).
    pub options: Vec<String>,
}

impl Transport for Ssh {
    fn command(&self, argv: &[String]) -> Command {
        let mut c = Command::new("ssh");
        c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=15"])
            .args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"])
            .args(&self.options)
            .arg("--")
            .arg(&self.destination);
        // ssh joins its arguments with spaces for the remote shell: quote each word.
        c.arg(
            argv.iter()
                .map(|w| shell_words::quote(w).into_owned())
                .collect::<Vec<_>>()
                .join(" "),
        );
        c
    }

    fn name(&self) -> &str {
        &self.destination
    }
}
