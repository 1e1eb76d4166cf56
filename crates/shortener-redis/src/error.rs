//! Redis and pool errors mapped onto the port's [`LimiterError`]:
//! - a refused connection is `Unreachable` (nothing listens there);
//! - a wrong password, a missing permission, or a failed TLS set-up (a certificate that does
//!   not verify, a server that does not speak TLS, an unreadable CA store) is
//!   `Misconfigured`;
//! - the network, a timeout, and every error reply that passes (OOM under `noeviction`,
//!   BUSY with a long script, LOADING, MASTERDOWN, READONLY, TRYAGAIN, CLUSTERDOWN) are
//!   `Unavailable`;
//! - anything else (a script bug, a reply of the wrong type) is `Unexpected`.
//!
//! The fallback answers all of them as `on_error` says; the variants decide how fast the
//! circuit opens and how loudly the server logs.

use std::time::Duration;

use deadpool_redis::PoolError;
use redis::{ErrorKind, RedisError, ServerErrorKind};
use shortener_core::{Cause, LimiterError};

/// Error replies that a server gives while it cannot serve for a while.
const PASSING_REPLIES: [&str; 8] = [
    "OOM",
    "BUSY",
    "LOADING",
    "MASTERDOWN",
    "READONLY",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "NOREPLICAS",
];

/// Error replies that only a configuration change mends.
const MISCONFIGURED_REPLIES: [&str; 3] = ["NOPERM", "WRONGPASS", "NOAUTH"];

pub(crate) fn from_redis(error: &RedisError) -> LimiterError {
    let message = Cause::with_native(format!("redis: {error}"), error.clone());
    let code = error.code().unwrap_or_default();
    if error.is_connection_refusal() {
        LimiterError::Unreachable(message)
    } else if error.kind() == ErrorKind::AuthenticationFailed
        || error.kind() == ErrorKind::Server(ServerErrorKind::NoPerm)
        || MISCONFIGURED_REPLIES.contains(&code)
        || crate::tls::is_tls_failure(error)
    {
        LimiterError::Misconfigured(message)
    } else if is_transient(error) || PASSING_REPLIES.contains(&code) {
        LimiterError::Unavailable(message)
    } else {
        LimiterError::Unexpected(message)
    }
}

pub(crate) fn from_pool(error: &PoolError) -> LimiterError {
    match error {
        PoolError::Backend(error) => from_redis(error),
        PoolError::Timeout(_) => {
            LimiterError::Unavailable("no redis connection within the timeout".to_owned().into())
        }
        PoolError::Closed => {
            LimiterError::Unavailable("the redis pool is closed".to_owned().into())
        }
        other => LimiterError::Unexpected(format!("redis pool: {other}").into()),
    }
}

pub(crate) fn timed_out(timeout: Duration) -> LimiterError {
    LimiterError::Unavailable(
        format!("redis did not answer within {} ms", timeout.as_millis()).into(),
    )
}

fn is_transient(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_cluster_error()
        || matches!(
            error.kind(),
            ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::ReadOnly
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                )
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(text: &str) -> RedisError {
        let value = redis::parse_redis_value(format!("-{text}\r\n").as_bytes()).unwrap();
        redis::Value::extract_error(value).unwrap_err()
    }

    #[test]
    fn error_replies_fall_into_the_port_variants() {
        for text in [
            "OOM command not allowed when used memory > 'maxmemory'.",
            "BUSY Redis is busy running a script.",
            "LOADING Redis is loading the dataset in memory",
            "READONLY You can't write against a read only replica.",
            "CLUSTERDOWN The cluster is down",
        ] {
            assert!(
                matches!(from_redis(&reply(text)), LimiterError::Unavailable(_)),
                "{text}"
            );
        }
        for text in [
            "NOPERM User default has no permissions to run the 'evalsha' command",
            "WRONGPASS invalid username-password pair or user is disabled.",
            "NOAUTH Authentication required.",
        ] {
            assert!(
                matches!(from_redis(&reply(text)), LimiterError::Misconfigured(_)),
                "{text}"
            );
        }
        assert!(matches!(
            from_redis(&reply("ERR Error running script")),
            LimiterError::Unexpected(_)
        ));
    }

    #[test]
    fn the_redis_error_is_kept_as_the_native_error() {
        let error = from_redis(&reply("BUSY Redis is busy running a script."));
        let native = error.cause().native();
        let redis = native.and_then(|native| native.downcast_ref::<RedisError>());
        assert_eq!(redis.and_then(RedisError::code), Some("BUSY"), "{error:?}");
    }
}
