//! The one way a `shortener` process is started, by the tests, the benchmarks and
//! `cargo xtask up` alike: `shortener SUBCOMMAND --config FILE` in a directory of its
//! own, with none of the shell's `SHORTENER_*` variables (only the config file and what
//! the caller sets speak), guarded, and, if asked, awaited until it says where it listens.

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

    /// Starts it and returns once it prints `shortener[ SUBCOMMAND] listening on ADDRESS`,
    /// with `ADDRESS` (`http://127.0.0.1:PORT`; two addresses for `ratelimit-server`).
    ///
    /// # Errors
    /// As [`spawn_listening`].
    pub fn listening(mut self, timeout: Duration) -> io::Result<(Guard, String)> {
        let prefix = if self.subcommand == "serve" {
            "shortener listening on ".to_owned()
        } else {
            format!("shortener {} listening on ", self.subcommand)
        };
        spawn_listening(&self.name, &mut self.command, &prefix, timeout)
    }
}

/// Starts `command` with its stdout piped and returns once it prints a line
/// `<prefix>ADDRESS` (`shortener listening on http://127.0.0.1:PORT`), with the process
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
            if let Some(base) = line.strip_prefix(&prefix) {
                let _ = sender.send(base.trim().to_owned());
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
