//! `rediss://`: the limiter decides over TLS against a `redis-server` and a Redis Cluster
//! that speak only TLS, and refuses, promptly and as `Misconfigured`, servers whose
//! certificate it cannot trust or that do not speak TLS.

use std::time::{Duration, Instant};

use shortener_core::{LimiterError, Policy, RateLimiter};
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_testkit::{RedisServer, TestPki, TlsRedisCluster, TlsRedisServer};

use crate::support::unique;

/// Generous: a TLS handshake on a loaded machine, not a measure of anything.
const TIMEOUT: Duration = Duration::from_secs(2);

fn config(url: String, ca_file: std::path::PathBuf) -> RedisConfig {
    RedisConfig {
        url: url.into(),
        timeout: TIMEOUT,
        tls_ca_file: Some(ca_file),
        ..RedisConfig::default()
    }
}

fn cluster_config(nodes: Vec<String>, ca_file: std::path::PathBuf) -> RedisConfig {
    RedisConfig {
        cluster_nodes: nodes.into_iter().map(Into::into).collect(),
        ..config(String::new(), ca_file)
    }
}

#[tokio::test]
async fn decides_over_tls_with_the_ca_of_the_config() {
    let pki = TestPki::generate();
    let server = TlsRedisServer::start(&pki);
    let limiter = RedisRateLimiter::connect(config(server.url(), pki.ca_file()))
        .await
        .expect("connect over TLS");
    let policy = Policy::new("create", 2, 0.001).unwrap();
    let identity = unique("tls");
    let mut allowed = 0;
    for _ in 0..3 {
        if limiter
            .acquire(&identity, &policy, 1)
            .await
            .unwrap()
            .allowed
        {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 2, "the bucket of capacity 2 admits 2 of 3");
    limiter.health().await.expect("PING over TLS");
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused() {
    let pki = TestPki::generate();
    let server = TlsRedisServer::start(&pki);
    let started = Instant::now();
    let result = RedisRateLimiter::connect(config(server.url(), pki.other_ca_file())).await;
    // Refused by the handshake itself, not by the timeout.
    assert!(started.elapsed() < TIMEOUT, "refused before the timeout");
    match result {
        Err(LimiterError::Misconfigured(message)) => {
            assert!(
                message.contains("certificate"),
                "names the cause: {message}"
            );
        }
        other => panic!("expected Misconfigured, got {other:?}"),
    }
}

/// A plain server reads the TLS hello as the start of an inline command and waits for its
/// end: the handshake is never answered, and the call ends at the limiter's timeout.
#[tokio::test]
async fn a_server_without_tls_fails_within_the_timeout() {
    let pki = TestPki::generate();
    let server = RedisServer::start_private();
    let url = server.url().replacen("redis://", "rediss://", 1);
    let result = RedisRateLimiter::connect(RedisConfig {
        timeout: Duration::from_millis(300),
        ..config(url, pki.ca_file())
    })
    .await;
    assert!(
        matches!(result, Err(LimiterError::Unavailable(_))),
        "{result:?}"
    );
}

/// A TLS server resets a connection that does not start with a TLS hello, which looks like
/// any dropped connection.
#[tokio::test]
async fn a_plain_client_is_refused_by_a_tls_server() {
    let pki = TestPki::generate();
    let server = TlsRedisServer::start(&pki);
    let url = server.url().replacen("rediss://", "redis://", 1);
    let result = RedisRateLimiter::connect(RedisConfig {
        url: url.into(),
        timeout: TIMEOUT,
        ..RedisConfig::default()
    })
    .await;
    assert!(
        matches!(result, Err(LimiterError::Unavailable(_))),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_ca_file_needs_rediss_urls() {
    let pki = TestPki::generate();
    let result =
        RedisRateLimiter::connect(config("redis://127.0.0.1:1".to_owned(), pki.ca_file())).await;
    assert!(
        matches!(&result, Err(LimiterError::Unexpected(message)) if message.contains("rediss://")),
        "{result:?}"
    );
}

/// Identities whose keys hash to slots all over the cluster: the client follows the slot
/// map to every master over TLS (the nodes announce their TLS ports), and each bucket keeps
/// its own exact count.
#[tokio::test]
async fn a_cluster_decides_over_tls_on_every_master() {
    let pki = TestPki::generate();
    let cluster = TlsRedisCluster::start(&pki);
    let limiter = RedisRateLimiter::connect(cluster_config(cluster.urls(), pki.ca_file()))
        .await
        .expect("connect to the cluster over TLS");
    let policy = Policy::new("create", 2, 0.001).unwrap();
    // 30 random hash tags miss one of three equal slot ranges with odds of about 1 in 60000.
    for _ in 0..30 {
        let identity = unique("tls-cluster");
        let mut allowed = 0;
        for _ in 0..3 {
            if limiter
                .acquire(&identity, &policy, 1)
                .await
                .unwrap()
                .allowed
            {
                allowed += 1;
            }
        }
        assert_eq!(
            allowed, 2,
            "{identity}: the bucket of capacity 2 admits 2 of 3"
        );
    }
    let key_counts = cluster.key_counts(&pki);
    assert!(
        key_counts.iter().all(|&keys| keys > 0),
        "every master holds buckets: {key_counts:?}"
    );
    limiter.health().await.expect("PING every master over TLS");
}

#[tokio::test]
async fn a_cluster_with_a_certificate_from_another_ca_is_refused() {
    let pki = TestPki::generate();
    let cluster = TlsRedisCluster::start(&pki);
    let started = Instant::now();
    let result =
        RedisRateLimiter::connect(cluster_config(cluster.urls(), pki.other_ca_file())).await;
    // Refused by the handshakes themselves, not by the timeout.
    assert!(started.elapsed() < TIMEOUT, "refused before the timeout");
    match result {
        Err(LimiterError::Misconfigured(message)) => {
            assert!(
                message.contains("certificate"),
                "names the cause: {message}"
            );
        }
        other => panic!("expected Misconfigured, got {other:?}"),
    }
}
