//! TLS for `rediss://`: the redis crate connects with rustls; this module supplies the
//! crypto provider and the trusted CAs, and tells TLS failures apart from network ones.
//!
//! - rustls needs a process-wide crypto provider; ring's is installed once, before the
//!   first TLS connection, unless the process installed one already.
//! - The trusted CAs are `RedisConfig::tls_ca_file`, given to the redis client of this
//!   limiter only; without it, the system's store (`SSL_CERT_FILE` or `SSL_CERT_DIR`
//!   replace it), read by the redis crate at each connection.

use std::error::Error;
use std::io;
use std::path::Path;
use std::sync::{Arc, Once};

use redis::{RedisError, TlsCertificates};
use shortener_core::LimiterError;

/// Whether `url` asks for TLS (`rediss://`, or `valkeys://`, which the redis crate also reads).
pub(crate) fn is_tls_url(url: &str) -> bool {
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    scheme.eq_ignore_ascii_case("rediss") || scheme.eq_ignore_ascii_case("valkeys")
}

/// Installs ring as rustls's process-wide provider, unless one is installed already.
pub(crate) fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means another provider was installed first, which rustls then uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The CAs of `ca_file` as the redis crate takes them, read now so that a missing or
/// unreadable file fails the start, not every connection.
pub(crate) fn certificates(ca_file: &Path) -> Result<TlsCertificates, LimiterError> {
    let pem = std::fs::read(ca_file).map_err(|error| {
        LimiterError::Misconfigured(
            format!("cannot read the TLS CA file {}: {error}", ca_file.display()).into(),
        )
    })?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|window| window == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(LimiterError::Misconfigured(
            format!(
                "the TLS CA file {} holds no PEM certificate",
                ca_file.display()
            )
            .into(),
        ));
    }
    Ok(TlsCertificates {
        client_tls: None,
        root_cert: Some(pem),
    })
}

/// Whether `error` is a failed TLS set-up rather than a network fault: a certificate that
/// does not verify (unknown CA, wrong name, expired), a peer that does not speak TLS, or a
/// CA store that cannot be read. Only a change of configuration or certificates mends it.
pub(crate) fn is_tls_failure(error: &RedisError) -> bool {
    let Some(cause) = error.source() else {
        return false;
    };
    // The redis crate keeps its cause behind an `Arc<dyn Error>`, which is the source.
    let cause: &(dyn Error + 'static) = match cause.downcast_ref::<Arc<dyn Error + Send + Sync>>() {
        Some(shared) => &**shared,
        None => cause,
    };
    cause.is::<rustls::Error>()
        || cause.is::<rustls_native_certs::Error>()
        // tokio-rustls reports a failed handshake as an IO error wrapping rustls's.
        || cause
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
            .is_some_and(|inner| inner.is::<rustls::Error>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_urls_are_told_apart() {
        assert!(is_tls_url("rediss://127.0.0.1:6380"));
        assert!(is_tls_url("REDISS://cache:6380/0"));
        assert!(is_tls_url("valkeys://cache:6380"));
        assert!(!is_tls_url("redis://127.0.0.1:6379"));
        assert!(!is_tls_url("redis+unix:///run/redis.sock"));
        assert!(!is_tls_url("not a url"));
    }

    #[test]
    fn handshake_failures_are_told_apart_from_network_faults() {
        let untrusted = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert!(is_tls_failure(&RedisError::from(untrusted)));
        assert!(is_tls_failure(&RedisError::from(
            rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
        )));
        let reset = io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer");
        assert!(!is_tls_failure(&RedisError::from(reset)));
        let other = io::Error::new(io::ErrorKind::InvalidData, "not tls");
        assert!(!is_tls_failure(&RedisError::from(other)));
    }

    #[test]
    fn a_ca_file_must_be_readable_and_hold_a_certificate() {
        let missing = certificates(Path::new("/nonexistent/ca.pem"));
        assert!(
            matches!(&missing, Err(LimiterError::Misconfigured(m)) if m.contains("/nonexistent/ca.pem")),
            "{missing:?}"
        );
    }
}
