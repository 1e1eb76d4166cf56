//! TLS for the test servers: [`TestPki`], a CA and a server certificate made with the
//! `openssl` CLI, and [`TlsRedisServer`], a `redis-server` that only speaks TLS.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Process, free_port, require_binary, temp_dir};

/// A throwaway public key infrastructure in a temp dir, removed on drop: a CA
/// (`ca.pem`), a server certificate it signed for `localhost` and `127.0.0.1`
/// (`server.pem`, key `server.key`), and a second CA that signed nothing here
/// (`other-ca.pem`), for clients that must refuse the server. Keys are P-256, valid 2 days.
#[derive(Debug)]
pub struct TestPki {
    dir: PathBuf,
}

impl TestPki {
    /// # Panics
    /// With one clear line when `openssl` is missing or fails.
    pub fn generate() -> Self {
        Self::try_generate().unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`TestPki::generate`].
    ///
    /// # Errors
    /// When `openssl` is missing or one of its steps fails.
    pub fn try_generate() -> io::Result<Self> {
        require_binary("openssl")?;
        let pki = Self {
            dir: temp_dir("pki")?,
        };
        pki.make_ca("ca", "shortener test CA")?;
        pki.make_ca("other-ca", "shortener unrelated CA")?;
        pki.openssl(&[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ])?;
        // rustls (webpki) checks the names in subjectAltName only, and wants a leaf that
        // is not a CA. clientAuth too: on a TLS cluster bus each node presents this
        // certificate as a client, and the accepting node always verifies it (whatever
        // `tls-auth-clients` says); without it the nodes never meet.
        std::fs::write(
            pki.dir.join("server.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n\
             basicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature,keyEncipherment\n\
             extendedKeyUsage=serverAuth,clientAuth\n",
        )?;
        let serial = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |elapsed| elapsed.as_nanos());
        pki.openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            &serial.to_string(),
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ])?;
        Ok(pki)
    }

    /// The CA that signed the server certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A CA that signed nothing the servers present.
    pub fn other_ca_file(&self) -> PathBuf {
        self.dir.join("other-ca.pem")
    }

    /// The server certificate (PEM), for `localhost` and `127.0.0.1`.
    pub fn cert_file(&self) -> PathBuf {
        self.dir.join("server.pem")
    }

    /// The server certificate's private key (PEM, unencrypted).
    pub fn key_file(&self) -> PathBuf {
        self.dir.join("server.key")
    }

    fn make_ca(&self, name: &str, common_name: &str) -> io::Result<()> {
        self.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-days",
            "2",
            "-subj",
            &format!("/CN={common_name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ])
    }

    fn openssl(&self, args: &[&str]) -> io::Result<()> {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()?;
        if output.status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "openssl {} failed: {}",
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&output.stderr).trim()
            )))
        }
    }
}

impl Drop for TestPki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `redis-server` arguments that make it speak TLS only, on `port`, with the
/// certificate of `pki` and no client certificates.
pub(super) fn server_args(pki: &TestPki, port: u16) -> Vec<String> {
    let path = |file: PathBuf| file.to_string_lossy().into_owned();
    vec![
        "--port".into(),
        "0".into(),
        "--tls-port".into(),
        port.to_string(),
        "--tls-cert-file".into(),
        path(pki.cert_file()),
        "--tls-key-file".into(),
        path(pki.key_file()),
        "--tls-ca-cert-file".into(),
        path(pki.ca_file()),
        "--tls-auth-clients".into(),
        "no".into(),
    ]
}

/// `redis-cli` over TLS, trusting the CA of `pki`.
pub(super) fn redis_cli(pki: &TestPki) -> Command {
    let mut command = Command::new("redis-cli");
    command
        .arg("--tls")
        .arg("--cacert")
        .arg(pki.ca_file())
        .stdin(Stdio::null());
    command
}

/// PING over TLS with `redis-cli`, for servers that refuse plain connections.
pub(super) fn tls_ping(pki: &TestPki, port: u16) -> io::Result<()> {
    let output = redis_cli(pki)
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "PING"])
        .output()?;
    if output.status.success() && output.stdout.starts_with(b"PONG") {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "TLS PING answered {:?}",
            String::from_utf8_lossy(&output.stdout).trim()
        )))
    }
}

/// A standalone `redis-server` on a free loopback port that accepts TLS connections only
/// (`rediss://127.0.0.1:<port>`), with the server certificate of a [`TestPki`]; killed on
/// drop.
#[derive(Debug)]
pub struct TlsRedisServer {
    port: u16,
    dir: PathBuf,
    process: Option<Process>,
}

impl TlsRedisServer {
    /// # Panics
    /// With one clear line when `redis-server` or `redis-cli` is missing or the server
    /// does not start.
    pub fn start(pki: &TestPki) -> Self {
        Self::try_start(pki).unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`TlsRedisServer::start`].
    ///
    /// # Errors
    /// When a binary is missing or the server does not answer a TLS PING in time.
    pub fn try_start(pki: &TestPki) -> io::Result<Self> {
        require_binary("redis-cli")?;
        let port = free_port()?;
        let dir = temp_dir("redis-tls")?;
        let args = server_args(pki, port);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let process = Process::spawn_checked(port, &dir, &args, |port| tls_ping(pki, port))?;
        Ok(Self {
            port,
            dir,
            process: Some(process),
        })
    }

    /// `rediss://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TlsRedisServer {
    fn drop(&mut self) {
        self.process = None;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
