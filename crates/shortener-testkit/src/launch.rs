//! The one way a `shortener` process is started, by the tests, the benchmarks and
//! `cargo xtask up` alike: `shortener SUBCOMMAND --config FILE` in a directory of its
//! own, with none of the shell's `SHORTENER_*` variables (only the config file and what
//! the caller sets speak), guarded, and, if asked, awaited until it says where it listens;
//! or a one-shot command ([`Launch::one_shot`]) with the same environment rule.

use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use crate::process::Guard;

/// A `shortener` process about to start.
#[derive(Debug)]
pub struct Launch {
    name: String,
    subcommand: String,
    command: Command,
}

impl Launch {
    /// `binary SUBCOMMAND --config CONFIG` run in `dir` (a relative `config` is read from
    /// there), logging at `warn`, stdin closed, stdout and stderr inherited.
    pub fn new(binary: &Path, subcommand: &str, dir: &Path, config: &Path) -> Self {
        let mut command = Command::new(binary);
        command
            .arg(subcommand)
            .arg("--config")
            .arg(config)
            .current_dir(dir)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null());
        clear_shortener_variables(&mut command, std::env::vars_os().map(|(key, _)| key));
        let name = if subcommand == "serve" {
            "shortener".to_owned()
        } else {
            format!("shortener {subcommand}")
        };
        Self {
            name,
            subcommand: subcommand.to_owned(),
            command,
        }
    }

    /// A one-shot `shortener` command (`keys new`, `config check`, `--version`...) run in
    /// `dir` with stdin closed and none of the shell's `SHORTENER_*` variables: the caller
    /// adds its arguments and runs it, bounded in time (`output_within`).
    pub fn one_shot(binary: &Path, dir: &Path) -> Command {
        let mut command = Command::new(binary);
        command.current_dir(dir).stdin(Stdio::null());
        clear_shortener_variables(&mut command, std::env::vars_os().map(|(key, _)| key));
        command
    }

    /// How errors and the guard call the process (`shortener` by default).
    #[must_use]
    pub fn name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }

    /// Sets one variable of its environment (a `SHORTENER_...` override, `RUST_LOG`).
    #[must_use]
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.command.env(key, value);
        self
    }

    /// Leaves `key` out of its environment (`RUST_LOG`, so that the config file's
    /// `log.level` speaks).
    #[must_use]
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.command.env_remove(key);
        self
    }

    /// Where its stderr goes (inherited by default: a test's failure shows it).
    #[must_use]
    pub fn stderr(mut self, stderr: impl Into<Stdio>) -> Self {
        self.command.stderr(stderr);
        self
    }

    /// Where its stdout goes; only for [`Launch::spawn`] ([`Launch::listening`] reads it).
    #[must_use]
    pub fn stdout(mut self, stdout: impl Into<Stdio>) -> Self {
        self.command.stdout(stdout);
        self
    }

    /// Starts it and returns at once.
    ///
    /// # Errors
    /// As [`Guard::spawn`].
    pub fn spawn(mut self) -> io::Result<Guard> {
        Guard::spawn(&self.name, &mut self.command)
    }

    /// Starts it and returns once it prints `shortener[ SUBCOMMAND] listening on ADDRESS`
    /// (plain, or as a JSON log line under `log.format = "json"`), with `ADDRESS`
    /// (`http://127.0.0.1:PORT`; two addresses for `ratelimit-server`).
    ///
    /// # Errors
    /// As [`spawn_listening`].
    pub fn listening(mut self, timeout: Duration) -> io::Result<(Guard, String)> {
        let prefix = self.listening_prefix();
        spawn_listening(&self.name, &mut self.command, &prefix, timeout)
    }

    /// What the line that says where it listens starts with: `shortener listening on `, or
    /// `shortener SUBCOMMAND listening on `.
    pub fn listening_prefix(&self) -> String {
        if self.subcommand == "serve" {
            "shortener listening on ".to_owned()
        } else {
            format!("shortener {} listening on ", self.subcommand)
        }
    }
}

/// The `ADDRESS` of a `line` that says where a server listens, `<prefix>ADDRESS`: plain,
/// or a JSON log line whose `fields.message` is that (`log.format = "json"`).
pub fn listening_address(line: &str, prefix: &str) -> Option<String> {
    let said = match line.strip_prefix(prefix) {
        Some(address) => address.to_owned(),
        None => {
            let event: serde_json::Value = serde_json::from_str(line).ok()?;
            let message = event.get("fields")?.get("message")?.as_str()?;
            message.strip_prefix(prefix)?.to_owned()
        }
    };
    Some(said.trim().to_owned())
}

/// Starts `command` with its stdout piped and returns once it prints a line
/// `<prefix>ADDRESS` (`shortener listening on http://127.0.0.1:PORT`; plain or JSON, as
/// [`listening_address`] reads it), with the process
/// guarded and `ADDRESS`: the one way a server of ours (the app, a benchmark's) is known
/// to listen. The rest of its stdout is read and dropped, so that it never blocks on a
/// full pipe.
///
/// # Errors
/// As [`Guard::spawn`], or [`io::ErrorKind::TimedOut`] when no such line came in `timeout`.
pub fn spawn_listening(
    name: &str,
    command: &mut Command,
    prefix: &str,
    timeout: Duration,
) -> io::Result<(Guard, String)> {
    let mut guard = Guard::spawn(name, command.stdin(Stdio::null()).stdout(Stdio::piped()))?;
    let stdout = guard.child().stdout.take().expect("stdout is piped");
    let (sender, receiver) = std::sync::mpsc::channel();
    let prefix = prefix.to_owned();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(base) = listening_address(&line, &prefix) {
                let _ = sender.send(base);
            }
        }
    });
    // A server that exits (a config error) closes its stdout, which ends the reader and
    // disconnects the channel: that is noticed at once, not after `timeout`.
    match receiver.recv_timeout(timeout) {
        Ok(base) => Ok((guard, base)),
        Err(RecvTimeoutError::Disconnected) => {
            let status = guard
                .child()
                .wait()
                .map(|status| status.to_string())
                .unwrap_or_default();
            Err(io::Error::other(format!(
                "{name} exited before listening ({status})"
            )))
        }
        Err(RecvTimeoutError::Timeout) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{name} did not start within {timeout:?}"),
        )),
    }
}

/// Removes from `command`'s environment every `SHORTENER_*` variable among `variables`.
fn clear_shortener_variables(
    command: &mut Command,
    variables: impl IntoIterator<Item = std::ffi::OsString>,
) {
    for key in variables {
        if key.to_string_lossy().starts_with("SHORTENER_") {
            command.env_remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The address is found in the plain line and in the JSON log line alike, and in no
    /// other line.
    #[test]
    fn the_address_is_read_from_a_plain_or_a_json_line() {
        let prefix = "shortener listening on ";
        let plain = "shortener listening on http://127.0.0.1:8080";
        let json = r#"{"timestamp":"2026-01-01T00:00:00Z","level":"INFO","fields":{"message":"shortener listening on http://127.0.0.1:8080"},"target":"shortener::listening"}"#;
        for line in [plain, json] {
            assert_eq!(
                listening_address(line, prefix).as_deref(),
                Some("http://127.0.0.1:8080"),
                "{line}"
            );
        }
        for line in [
            "shortener ops listening on http://127.0.0.1:9090",
            r#"{"fields":{"message":"storage closed"}}"#,
            "{not json",
        ] {
            assert_eq!(listening_address(line, prefix), None, "{line}");
        }
    }

    /// A variable of the shell never reaches the process; one the caller sets does.
    #[test]
    fn the_shell_s_shortener_variables_do_not_leak_in() {
        let mut command = Command::new("true");
        command.env("SHORTENER_STORAGE__KIND", "given");
        clear_shortener_variables(
            &mut command,
            ["SHORTENER_SERVER__BIND".into(), "PATH".into()],
        );
        let envs: Vec<_> = command.get_envs().collect();
        assert!(envs.contains(&(OsStr::new("SHORTENER_SERVER__BIND"), None)));
        assert!(envs.contains(&(
            OsStr::new("SHORTENER_STORAGE__KIND"),
            Some(OsStr::new("given"))
        )));
        assert!(!envs.iter().any(|(key, _)| *key == "PATH"));
    }
}
