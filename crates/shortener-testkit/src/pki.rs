//! [`TestPki`]: a CA and a server certificate made with the `openssl` CLI, for the TLS
//! tests of Redis and PostgreSQL.

use std::io;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::TempDir;
use crate::process::{output_within, require_binary};

/// A throwaway public key infrastructure in a temp dir, removed on drop: a CA
/// (`ca.pem`), a server certificate it signed for `localhost` and `127.0.0.1`
/// (`server.pem`, key `server.key`), and a second CA that signed nothing here
/// (`other-ca.pem`), for clients that must refuse the server. Keys are P-256, valid 2 days.
#[derive(Debug)]
pub struct TestPki {
    dir: TempDir,
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
            dir: TempDir::with_prefix("pki")?,
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
            pki.dir.path().join("server.ext"),
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
        self.dir.path().join("ca.pem")
    }

    /// A CA that signed nothing the servers present.
    pub fn other_ca_file(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    /// The server certificate (PEM), for `localhost` and `127.0.0.1`.
    pub fn cert_file(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The server certificate's private key (PEM, unencrypted).
    pub fn key_file(&self) -> PathBuf {
        self.dir.path().join("server.key")
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
        let output = output_within(
            Command::new("openssl")
                .args(args)
                .current_dir(self.dir.path()),
            Duration::from_secs(60),
        )?;
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
