//! How to reach Redis; its URLs are [`RedactedUrl`]s, so a `Debug` never prints a password.

use std::path::PathBuf;
use std::time::Duration;

use shortener_core::{Algorithm, RedactedUrl};

/// Where the limiter's Redis is and how it is used.
///
/// A non-empty `cluster_nodes` selects Redis Cluster (seed node URLs; `url` is then
/// ignored); otherwise `url` names one standalone server.
///
/// `rediss://` URLs connect over TLS (rustls) and check the server's certificate and name
/// against the CAs of `tls_ca_file`, or else the system's store (which the `SSL_CERT_FILE`
/// and `SSL_CERT_DIR` environment variables replace).
#[derive(Debug, Clone)]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port[/db]` of a standalone server.
    pub url: RedactedUrl,
    /// Seed node URLs of a Redis Cluster; non-empty selects cluster mode.
    pub cluster_nodes: Vec<RedactedUrl>,
    /// The longest any limiter call waits, connecting and pool waits included.
    pub timeout: Duration,
    /// Prepended to every key, e.g. `rl:`.
    pub key_prefix: String,
    /// Which script decides.
    pub algorithm: Algorithm,
    /// Connections in the standalone pool (each one multiplexed); at least 1.
    pub pool_size: usize,
    /// A PEM file of the CAs that `rediss://` servers must chain to, instead of the
    /// system's store. Only for `rediss://` URLs.
    pub tls_ca_file: Option<PathBuf>,
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self {
            url: RedactedUrl::new("redis://127.0.0.1:6379"),
            cluster_nodes: Vec::new(),
            timeout: Duration::from_millis(50),
            key_prefix: "rl:".to_owned(),
            algorithm: Algorithm::TokenBucket,
            pool_size: 4,
            tls_ca_file: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_passwords() {
        let config = RedisConfig {
            url: "redis://:hunter2@10.0.0.1:6379/0".into(),
            cluster_nodes: vec![
                "redis://admin:s3cret@10.0.0.2:7000".into(),
                "redis://10.0.0.3:7000".into(),
                "not a url hunter2".into(),
            ],
            ..RedisConfig::default()
        };
        let printed = format!("{config:?}");
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(!printed.contains("s3cret"), "{printed}");
        assert!(
            printed.contains("redis://:***@10.0.0.1:6379/0"),
            "{printed}"
        );
        assert!(
            printed.contains("redis://admin:***@10.0.0.2:7000"),
            "{printed}"
        );
        assert!(printed.contains("redis://10.0.0.3:7000"), "{printed}");
    }
}
