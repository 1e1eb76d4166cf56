//! The processes a benchmark starts, on the test kit's [`Guard`] (killed when dropped, on
//! an error or a panic too, and by a watchdog if xtask itself dies first), free ports and
//! temp dirs; here only what is the benchmarks' own: starting a server that says where it
//! listens, and a tiny HTTP client.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
pub use shortener_testkit::{Guard, MissingBinary, TempDir};

/// Fails with [`MissingBinary`] (one line naming the Debian package) when `binary` is not
/// on PATH: the benchmark is skipped, not failed.
pub fn require(binary: &str) -> anyhow::Result<()> {
    shortener_testkit::require_binary(binary)?;
    Ok(())
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
