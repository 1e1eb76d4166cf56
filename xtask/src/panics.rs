//! The panic messages of failing tests, told again at the end of a run.
//!
//! A failing test's message is printed in the middle of its captured output, which a
//! backtrace and the logs of the processes it started can push thousands of lines up:
//! the last lines of a long run, all that a CI summary keeps, then name the test but not
//! why it failed. `cargo test`'s stdout is echoed as it comes and each panic's message
//! (the line that says where, and the lines of the message itself) is kept to be printed
//! last.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

/// How many lines of one panic's message are kept.
const MESSAGE_LINES: usize = 12;

/// As `crate::run`, and on a failure, the panic messages again before the error.
pub fn run(command: &mut Command) -> anyhow::Result<()> {
    let described = crate::describe(command);
    eprintln!("$ {described}");
    let mut child = command
        .current_dir(crate::root())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {described}"))?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut panics = Panics::default();
    let mut out = std::io::stdout().lock();
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading the tests' output")?;
        // A closed stdout (a pager quit) must not stop the tests.
        let _ = writeln!(out, "{line}");
        panics.read(&line);
    }
    drop(out);
    let status = child.wait().context("waiting for the tests")?;
    if !status.success() {
        if !panics.messages.is_empty() {
            eprintln!("xtask: why the failing tests failed:");
            for message in &panics.messages {
                eprintln!("{message}\n");
            }
        }
        bail!("`{described}` failed ({status})");
    }
    Ok(())
}

/// The panic messages seen so far in a test run's output.
#[derive(Debug, Default)]
struct Panics {
    messages: Vec<String>,
    /// The message being read, and how many of its lines are kept yet.
    current: Option<(String, usize)>,
}

impl Panics {
    fn read(&mut self, line: &str) {
        // `thread 'name' panicked at`, or with the thread's id: `thread 'name' (42) panicked at`.
        if line.starts_with("thread '") && line.contains(" panicked at ") {
            self.finish();
            self.current = Some((line.to_owned(), 1));
            return;
        }
        let Some((message, lines)) = &mut self.current else {
            return;
        };
        let ends = line.is_empty()
            || line.starts_with("stack backtrace:")
            || line.starts_with("note: ")
            || line.starts_with("----")
            || line.starts_with("test ");
        if ends {
            self.finish();
        } else if *lines < MESSAGE_LINES {
            message.push('\n');
            message.push_str(line);
            *lines += 1;
        }
    }

    fn finish(&mut self) {
        if let Some((message, _)) = self.current.take() {
            self.messages.push(message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Panics;

    #[test]
    fn a_panic_message_is_kept_without_its_backtrace() {
        let mut panics = Panics::default();
        let output = "\
running 2 tests
---- compose::three_nodes stdout ----
2026-12-07 a log line
thread 'compose::three_nodes' (26997) panicked at it/compose.rs:239:13:
node2 never came back
second line
stack backtrace:
   0: rust_begin_unwind
test compose::three_nodes ... FAILED
thread 'other' panicked at it/other.rs:1:1:
assertion failed
";
        for line in output.lines() {
            panics.read(line);
        }
        panics.finish();
        assert_eq!(
            panics.messages,
            [
                "thread 'compose::three_nodes' (26997) panicked at it/compose.rs:239:13:\n\
                 node2 never came back\nsecond line",
                "thread 'other' panicked at it/other.rs:1:1:\nassertion failed",
            ]
        );
    }
}
