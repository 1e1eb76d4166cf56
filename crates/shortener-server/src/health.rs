//! `shortener health`: asks the service that this configuration describes whether it is
//! up, as a container's `HEALTHCHECK` does (the image has no shell and no HTTP client).
//! The HTTP server is asked `GET /healthz` on `server.ops_bind`, else `server.bind`; the
//! rate limit service (`--ratelimit-server`) `GET /healthcheck` on `rls.http_bind`.
//! A listener on every address (`0.0.0.0`, `::`) is asked on loopback.
//!
//! It is not a client of the API: one request, plain HTTP/1.1, answered 200 or not.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

use crate::config::Settings;

/// How long the check may take in all: well under a `HEALTHCHECK`'s usual timeout.
const TIMEOUT: Duration = Duration::from_secs(2);

/// Why the service is not healthy.
#[derive(Debug, thiserror::Error)]
pub enum Unhealthy {
    #[error("nothing answers on {address}: {source}")]
    Unreachable {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("GET {path} on {address} answered `{status_line}`")]
    Status {
        address: SocketAddr,
        path: &'static str,
        status_line: String,
    },
}

/// Where the health of the service of `settings` is asked, and at which path.
#[must_use]
pub fn endpoint(settings: &Settings, ratelimit_server: bool) -> (SocketAddr, &'static str) {
    let config = &settings.config;
    if ratelimit_server {
        (loopback(config.rls.http_bind), "/healthcheck")
    } else {
        let bind = config.server.ops_bind.unwrap_or(config.server.bind);
        (loopback(bind), "/healthz")
    }
}

/// Asks `GET path` of `address`; `Ok` on a 200.
///
/// # Errors
/// [`Unhealthy::Unreachable`] when no answer comes in time, [`Unhealthy::Status`] on any
/// other status.
pub fn check(address: SocketAddr, path: &'static str) -> Result<(), Unhealthy> {
    let unreachable = |source| Unhealthy::Unreachable { address, source };
    let mut stream = TcpStream::connect_timeout(&address, TIMEOUT).map_err(unreachable)?;
    stream
        .set_read_timeout(Some(TIMEOUT))
        .map_err(unreachable)?;
    stream
        .set_write_timeout(Some(TIMEOUT))
        .map_err(unreachable)?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(unreachable)?;
    // The status line is all that is read: a body is not needed to tell.
    let mut head = [0_u8; 64];
    let mut read = 0;
    while read < head.len() && !head[..read].contains(&b'\n') {
        match stream.read(&mut head[read..]).map_err(unreachable)? {
            0 => break,
            n => read += n,
        }
    }
    let status_line = String::from_utf8_lossy(&head[..read]);
    let status_line = status_line.lines().next().unwrap_or_default().trim();
    if status_line.split(' ').nth(1) == Some("200") {
        Ok(())
    } else {
        Err(Unhealthy::Status {
            address,
            path,
            status_line: status_line.to_owned(),
        })
    }
}

/// A listener on every address is reached on loopback, of the same family.
fn loopback(bind: SocketAddr) -> SocketAddr {
    match bind.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), bind.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), bind.port())
        }
        _ => bind,
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead as _, BufReader};
    use std::net::TcpListener;

    use super::*;

    /// A server that answers one request with `answer`, on a free loopback port.
    fn answering(answer: &'static str) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
                line.clear();
            }
            let _ = (&stream).write_all(answer.as_bytes());
        });
        address
    }

    #[test]
    fn only_a_200_is_healthy() {
        let ok = answering("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        check(ok, "/healthz").unwrap();
        let draining = answering("HTTP/1.1 503 Service Unavailable\r\n\r\n");
        let error = check(draining, "/healthz").unwrap_err().to_string();
        assert!(error.contains("503 Service Unavailable"), "{error}");
        let silent = answering("");
        assert!(check(silent, "/healthz").is_err());
    }

    #[test]
    fn a_closed_port_is_unreachable_and_named() {
        let address = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let error = check(address, "/healthz").unwrap_err();
        assert!(matches!(error, Unhealthy::Unreachable { .. }), "{error}");
        assert!(error.to_string().contains(&address.to_string()));
    }

    #[test]
    fn every_address_is_asked_on_loopback() {
        let v4: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(loopback(v4).to_string(), "127.0.0.1:8080");
        let v6: SocketAddr = "[::]:8080".parse().unwrap();
        assert_eq!(loopback(v6).to_string(), "[::1]:8080");
        let one: SocketAddr = "10.0.0.5:9090".parse().unwrap();
        assert_eq!(loopback(one), one);
    }
}
