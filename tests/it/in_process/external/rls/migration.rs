//! A fleet moved pod by pod from envoyproxy/ratelimit to ours, on one Redis: a fixed
//! window is kept in their cache key (`CACHE_KEY_PREFIX`, the domain, each entry's key
//! and value, the window's start), raised by `INCRBY` with `EXPIRE` of the unit plus
//! jitter, so one limit is counted once whichever side answers.
//!
//! `TheirCounting` is a stand-in of their `fixed_cache_impl.go` (their default mode):
//! per request, a pipeline of `INCRBY key hits` and `EXPIRE key unit+jitter`, over the
//! limit when the count after the increment passes it; the window from the pod's clock.

use redis::aio::MultiplexedConnection;
use shortener_rls::proto::rate_limit_response::Code;
use shortener_tests::{InProcessRls, RedisServer, concurrently};

use super::{ask, clear_of_the_minute_end, limits_dir, rand_suffix, request};

const PREFIX: &str = "ratelimit_";

/// Their counting of one descriptor `window=value` of the domain `exact`: 10 a minute.
struct TheirCounting {
    connection: MultiplexedConnection,
}

impl TheirCounting {
    fn key(value: &str) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        format!("{PREFIX}exact_window_{value}_{}", now / 60 * 60)
    }

    /// Whether their service admits one hit.
    async fn admits(&self, value: &str) -> bool {
        let (after,): (u64,) = redis::pipe()
            .cmd("INCRBY")
            .arg(Self::key(value))
            .arg(1)
            .cmd("EXPIRE")
            .arg(Self::key(value))
            .arg(60 + 7)
            .ignore()
            .query_async(&mut self.connection.clone())
            .await
            .unwrap();
        after <= 10
    }
}

fn start(dir: &std::path::Path, redis: &RedisServer) -> InProcessRls {
    InProcessRls::start(
        dir,
        &format!(
            "[limiter]\nkind = \"redis\"\ntimeout_ms = 500\nredis_url = \"{}\"\n",
            redis.url()
        ),
        &format!("cache_key_prefix = \"{PREFIX}\"\nexpiration_jitter_max_secs = 10\n"),
    )
}

/// Our writes are theirs: the key, the count, and an expiry of the unit plus jitter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_window_is_kept_in_their_key_and_count() {
    let redis = RedisServer::start_private();
    let dir = limits_dir();
    let ours = start(dir.path(), &redis);
    let mut connection = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    clear_of_the_minute_end();
    let value = rand_suffix();
    for remaining in [9, 8, 7] {
        let answer = ask(&ours.grpc, request(&[&[("window", &value)]]))
            .await
            .unwrap();
        assert_eq!(answer.overall_code(), Code::Ok);
        assert_eq!(answer.statuses[0].limit_remaining, remaining);
    }
    let key = TheirCounting::key(&value);
    let (count, ttl): (Option<u64>, i64) = redis::pipe()
        .cmd("GET")
        .arg(&key)
        .cmd("TTL")
        .arg(&key)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(count, Some(3), "{key} holds their count");
    assert!(
        (50..=70).contains(&ttl),
        "{key} expires after the unit plus jitter: {ttl}"
    );
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*window*")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(keys, [key], "no other key for the window");
}

/// Their pods and ours answering one descriptor at once, as during a rolling migration:
/// 40 requests, half through each, admit the limit once (10), not once per side.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn their_pods_and_ours_count_one_limit_once() {
    let redis = RedisServer::start_private();
    let dir = limits_dir();
    let ours = start(dir.path(), &redis);
    let theirs = TheirCounting {
        connection: redis::Client::open(redis.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap(),
    };
    clear_of_the_minute_end();
    let value = rand_suffix();
    let admitted = concurrently(40, |index| {
        let (theirs, grpc, value) = (&theirs, ours.grpc.clone(), value.clone());
        async move {
            if index % 2 == 0 {
                theirs.admits(&value).await
            } else {
                let answer = ask(&grpc, request(&[&[("window", &value)]])).await;
                answer.unwrap().overall_code() == Code::Ok
            }
        }
    })
    .await;
    let total = admitted.iter().filter(|&&admitted| admitted).count();
    assert_eq!(total, 10, "one limit of 10 a minute across both services");
}
