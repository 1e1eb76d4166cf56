//! The processes a benchmark starts: killed when dropped, on an error or a panic too, and by
//! a watchdog if xtask itself dies first (Ctrl-C, a kill). Also the few tools around them:
//! free ports, temp dirs, a missing binary as one line, a tiny HTTP client.

use std::fmt;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};

/// A tool a benchmark needs is not installed: the benchmark is skipped, not failed.
#[derive(Debug)]
pub struct MissingTool(pub String);

impl fmt::Display for MissingTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MissingTool {}

/// Fails with [`MissingTool`] (one line naming the Debian package) when `binary` is not on PATH.
pub fn require(binary: &str, package: &str) -> anyhow::Result<()> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|dir| dir.join(binary).is_file()) {
        return Ok(());
    }
    Err(MissingTool(format!(
        "`{binary}` not found on PATH: install the Debian package {package}"
    ))
    .into())
}

/// A child process, killed (SIGKILL) and reaped on drop. A watchdog in its own process
/// group, which Ctrl-C does not reach, kills it too once xtask is gone.
#[derive(Debug)]
pub struct Guard {
    child: Child,
    watchdog: Option<Child>,
}

impl Guard {
    pub fn spawn(name: &str, command: &mut Command) -> anyhow::Result<Self> {
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        let watchdog = after_exit(&format!("kill -9 {} 2>/dev/null", child.id())).ok();
        Ok(Self { child, watchdog })
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(watchdog) = &mut self.watchdog {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }
}

/// Runs the shell `command` once this process has exited, however it exits, from a shell
/// in its own process group (so that Ctrl-C, sent to ours, leaves it running).
pub fn after_exit(command: &str) -> std::io::Result<Child> {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "while kill -0 {} 2>/dev/null; do sleep 1; done; {command}",
            std::process::id()
        ))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// Starts a server that prints `<prefix>http://ADDRESS` on stdout once it listens (as
/// `shortener` and `ceiling` do), and returns it with `http://ADDRESS`. Its stderr goes to
/// `log`, whose tail is shown when it does not start.
pub fn spawn_server(
    name: &str,
    command: &mut Command,
    prefix: &str,
    log: &Path,
) -> anyhow::Result<(Guard, String)> {
    let log_file =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file);
    let mut guard = Guard::spawn(name, command)?;
    let stdout = guard.child().stdout.take().context("no stdout")?;
    let (sender, receiver) = std::sync::mpsc::channel();
    let prefix = prefix.to_owned();
    // Reads stdout to its end, so that the server never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(base) = line.strip_prefix(&prefix) {
                let _ = sender.send(base.trim().to_owned());
            }
        }
    });
    match receiver.recv_timeout(Duration::from_secs(60)) {
        Ok(base) => Ok((guard, base)),
        Err(_) => {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(5).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!("{name} did not start within 60 s: {}", tail.join(" | "))
        }
    }
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A fresh directory, removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A directory under `shortener-bench-<pid>` in the system temp dir, which a watchdog
    /// removes once xtask has exited, however it exited.
    pub fn new(kind: &str) -> anyhow::Result<Self> {
        static ROOT: OnceLock<PathBuf> = OnceLock::new();
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let root = ROOT.get_or_init(|| {
            let root = std::env::temp_dir().join(format!("shortener-bench-{}", std::process::id()));
            let _ = after_exit(&format!("rm -rf '{}'", root.display()));
            root
        });
        let dir = root.join(format!(
            "{kind}-{}",
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Self(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One HTTP/1.1 request with `Connection: close`: (status, body). Enough to create a link or
/// scrape `/metrics`; the load itself comes from wrk.
pub fn http(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> anyhow::Result<(u16, String)> {
    let address = base
        .strip_prefix("http://")
        .with_context(|| format!("not an http URL: {base}"))?;
    let mut stream =
        TcpStream::connect(address).with_context(|| format!("cannot connect to {base}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .with_context(|| format!("{method} {base}{path}: no complete answer"))?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("{method} {base}{path}: not an HTTP answer"))?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}
