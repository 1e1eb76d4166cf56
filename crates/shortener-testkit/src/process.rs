//! Child processes that cannot outlive the test: a [`Guard`] kills its child on drop, a
//! [`Watchdog`] runs a clean-up once this process is gone (however it went: a panic, an
//! abort, Ctrl-C, SIGKILL), and [`output_within`] bounds a command in time. Also the small
//! tools around them: [`which`], and [`require_binary`], whose error is one line naming the
//! Debian package to install.

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// `binary` on PATH, if it is there.
pub fn which(binary: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(binary))
        .find(|candidate| candidate.is_file())
}

/// `binary` on PATH, or one line naming the Debian package that provides it.
///
/// # Errors
/// [`MissingBinary`] when it is not on PATH.
pub fn require_binary(binary: &str) -> Result<PathBuf, MissingBinary> {
    which(binary).ok_or_else(|| MissingBinary::new(binary))
}

/// A binary a test, benchmark or task needs is not installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingBinary {
    binary: String,
}

impl MissingBinary {
    pub fn new(binary: &str) -> Self {
        Self {
            binary: binary.to_owned(),
        }
    }

    /// The Debian package that installs the binary.
    pub fn package(&self) -> &str {
        match self.binary.as_str() {
            // redis-cli and redis-benchmark come with redis-tools, which redis-server needs.
            "redis-cli" | "redis-benchmark" => "redis-tools",
            "psql" => "postgresql-client",
            "initdb" | "pg_ctl" => "postgresql",
            "chromedriver" => "chromium-driver",
            other => other,
        }
    }
}

impl fmt::Display for MissingBinary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` not found on PATH: install the Debian package {}",
            self.binary,
            self.package()
        )
    }
}

impl std::error::Error for MissingBinary {}

impl From<MissingBinary> for io::Error {
    fn from(missing: MissingBinary) -> Self {
        io::Error::new(io::ErrorKind::NotFound, missing)
    }
}

/// A shell script that runs once this process has exited, however it exited: its stdin is
/// a pipe whose only writer is this process, so end of file means this process is gone. It
/// runs in a process group of its own, which a Ctrl-C sent to the test run does not reach.
/// Dropping the watchdog disarms it.
#[derive(Debug)]
pub struct Watchdog {
    shell: Child,
    /// Closed by the kernel when this process exits; never written.
    _pipe: Option<ChildStdin>,
}

impl Watchdog {
    /// Arms `script` (`sh -c`, with `args` as `$1`, `$2`, ...).
    ///
    /// # Errors
    /// When `sh` cannot be started.
    pub fn after_exit(script: &str, args: &[&OsStr]) -> io::Result<Self> {
        let mut shell = Command::new("sh")
            .arg("-c")
            .arg(format!("read -r _; {script}"))
            .arg("watchdog")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let pipe = shell.stdin.take();
        Ok(Self { shell, _pipe: pipe })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Killed before the pipe closes (fields drop after this), so the script never runs.
        let _ = self.shell.kill();
        let _ = self.shell.wait();
    }
}

/// A child process, killed (SIGKILL, which also ends a stopped one) and reaped on drop, and
/// killed by a [`Watchdog`] if this process dies without dropping it (a guard in a
/// `static` is never dropped).
#[derive(Debug)]
pub struct Guard {
    name: String,
    child: Child,
    _watchdog: Option<Watchdog>,
}

impl Guard {
    /// Spawns `command`; `name` is how errors call it.
    ///
    /// # Errors
    /// [`MissingBinary`] (as [`io::ErrorKind::NotFound`]) when the program is not
    /// installed, else the spawn error with `name` in it.
    pub fn spawn(name: &str, command: &mut Command) -> io::Result<Self> {
        let child = spawn(name, command)?;
        let pid = child.id().to_string();
        let watchdog = Watchdog::after_exit(r#"kill -9 "$1" 2>/dev/null"#, &[pid.as_ref()]);
        Ok(Self {
            name: name.to_owned(),
            child,
            _watchdog: watchdog.ok(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`STOP`, `CONT`, `TERM`, ...) with `kill`.
    ///
    /// # Panics
    /// When `kill` fails.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.id().to_string())
            .status();
        assert!(
            status.is_ok_and(|status| status.success()),
            "kill -{signal} {} ({}) failed",
            self.id(),
            self.name
        );
    }

    /// Waits for the child to exit and collects what it wrote to its piped stdout and
    /// stderr (empty when they were not piped).
    ///
    /// # Errors
    /// When its status cannot be read.
    pub fn wait_with_output(mut self) -> io::Result<Output> {
        let stdout = Captured::read(self.child.stdout.take());
        let stderr = Captured::read(self.child.stderr.take());
        let status = self.child.wait()?;
        Ok(Output {
            status,
            stdout: stdout.join(),
            stderr: stderr.join(),
        })
    }

    /// Waits at most `timeout` for the child to exit; `None` if it still runs.
    ///
    /// # Errors
    /// When its status cannot be read.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command` to its end, stdin closed and outputs captured, unless it takes longer
/// than `timeout`: then it is killed and the error says so. No tool a test runs may hang it.
///
/// # Errors
/// As [`Guard::spawn`], or [`io::ErrorKind::TimedOut`].
pub fn output_within(command: &mut Command, timeout: Duration) -> io::Result<Output> {
    let name = Path::new(command.get_program())
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a timeout stops what it started too (a tool that
        // runs `podman` would otherwise leave it holding the pipes and the work).
        .process_group(0);
    // Short-lived: no watchdog, the timeout bounds it.
    let mut child = spawn(&name, command)?;
    let stdout = Captured::read(child.stdout.take());
    let stderr = Captured::read(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
            // What it had written says where it stopped.
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{name} did not finish within {timeout:?}; its output so far:\n{}{}",
                    stdout.so_far(),
                    stderr.so_far()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok(Output {
        status,
        stdout: stdout.join(),
        stderr: stderr.join(),
    })
}

/// A child's stream, read to its end by a thread of its own into a buffer that can be
/// looked at before the end (when the child is killed for taking too long).
struct Captured {
    bytes: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: std::thread::JoinHandle<()>,
}

impl Captured {
    fn read(stream: Option<impl Read + Send + 'static>) -> Self {
        let bytes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let filled = std::sync::Arc::clone(&bytes);
        let reader = std::thread::spawn(move || {
            let Some(mut stream) = stream else { return };
            let mut chunk = [0_u8; 8192];
            while let Ok(read @ 1..) = stream.read(&mut chunk) {
                filled
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend_from_slice(&chunk[..read]);
            }
        });
        Self { bytes, reader }
    }

    fn so_far(&self) -> String {
        String::from_utf8_lossy(
            &self
                .bytes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_owned()
    }

    fn join(self) -> Vec<u8> {
        let _ = self.reader.join();
        std::mem::take(
            &mut *self
                .bytes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

fn spawn(name: &str, command: &mut Command) -> io::Result<Child> {
    command.spawn().map_err(|error| {
        if error.kind() == io::ErrorKind::NotFound {
            let program = Path::new(command.get_program())
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            MissingBinary::new(&program).into()
        } else {
            io::Error::new(error.kind(), format!("cannot start {name}: {error}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_is_one_clear_line() {
        let error = require_binary("redis-server-gone").unwrap_err();
        assert_eq!(
            error.to_string(),
            "`redis-server-gone` not found on PATH: install the Debian package redis-server-gone"
        );
        let error = Guard::spawn("x", &mut Command::new("redis-cli-gone")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn each_binary_names_its_debian_package() {
        for (binary, package) in [
            ("redis-server", "redis-server"),
            ("redis-cli", "redis-tools"),
            ("redis-benchmark", "redis-tools"),
            ("openssl", "openssl"),
            ("psql", "postgresql-client"),
            ("initdb", "postgresql"),
            ("wrk", "wrk"),
        ] {
            assert_eq!(MissingBinary::new(binary).package(), package);
        }
    }

    #[test]
    fn a_command_over_its_time_is_killed() {
        let started = Instant::now();
        let error =
            output_within(Command::new("sleep").arg("30"), Duration::from_millis(200)).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(20));
        let output =
            output_within(Command::new("echo").arg("hi"), Duration::from_secs(20)).unwrap();
        assert_eq!(output.stdout, b"hi\n");
    }

    #[test]
    fn a_guard_kills_its_child_on_drop() {
        let guard = Guard::spawn("sleep", Command::new("sleep").arg("30")).unwrap();
        let pid = guard.id().to_string();
        drop(guard);
        assert!(!alive(&pid), "the child is gone");
    }

    /// Whether `pid` runs (a zombie, killed but not yet reaped by its new parent, does not).
    fn alive(pid: &str) -> bool {
        let output = Command::new("ps")
            .args(["-o", "stat=", "-p", pid])
            .output()
            .unwrap();
        let state = String::from_utf8_lossy(&output.stdout);
        !state.trim().is_empty() && !state.trim().starts_with('Z')
    }

    /// The watchdog's promise, seen from outside: a child of a process that dies without
    /// dropping its guard is killed once that process is gone.
    #[test]
    fn the_watchdog_kills_the_child_of_a_process_that_died() {
        const CHILD: &str = "SHORTENER_TESTKIT_ORPHAN";
        if std::env::var_os(CHILD).is_some() {
            let guard = Guard::spawn("sleep", Command::new("sleep").arg("60")).unwrap();
            println!("pid {}", guard.id());
            std::mem::forget(guard);
            std::process::exit(0);
        }
        let output = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "process::tests::the_watchdog_kills_the_child_of_a_process_that_died",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let pid = stdout
            .lines()
            .find_map(|line| line.strip_prefix("pid "))
            .expect("the child process prints its child's pid")
            .trim()
            .to_owned();
        let deadline = Instant::now() + Duration::from_secs(20);
        while alive(&pid) {
            assert!(Instant::now() < deadline, "the orphan {pid} still runs");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
