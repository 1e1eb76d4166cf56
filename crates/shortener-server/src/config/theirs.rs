//! Every environment variable of envoyproxy/ratelimit's settings, and what this service
//! does with it, so that none is taken without a word: honoured (read into our keys by
//! `rls::their_environment`), refused at start when it asks for what is not served here
//! (naming it and what to use instead), or, for knobs that change no decision (logging
//! sinks, connection pools, statistics), accepted with a one-line warning.

use super::ConfigError;

/// What happens to one of their variables.
enum Treatment {
    /// Read into our keys (see `rls::their_environment`).
    Honoured,
    /// Refused when its value asks for `what`, with `instead` said in the error.
    RefusedWhen(fn(&str) -> bool, &'static str),
    /// Taken, with a warning that it changes nothing here, and why.
    Ignored(&'static str),
}

fn is_true(value: &str) -> bool {
    matches!(value.to_ascii_lowercase().as_str(), "1" | "t" | "true")
}

fn is_set(value: &str) -> bool {
    !value.is_empty()
}

/// How each of their variables is treated. Variables not named here are not theirs.
fn treatment(name: &str) -> Option<Treatment> {
    use Treatment::{Honoured, Ignored, RefusedWhen};
    const STATS: &str = "metrics are Prometheus text on /metrics of rls.http_bind";
    const POOLS: &str = "the Redis connections are limiter.redis_pool_size, multiplexed";
    Some(match name {
        "HOST"
        | "PORT"
        | "GRPC_HOST"
        | "GRPC_PORT"
        | "REDIS_URL"
        | "REDIS_TYPE"
        | "REDIS_AUTH"
        | "REDIS_TLS"
        | "REDIS_TLS_CACERT"
        | "REDIS_POOL_SIZE"
        | "BACKEND_TYPE"
        | "RUNTIME_ROOT"
        | "RUNTIME_SUBDIRECTORY"
        | "RUNTIME_APPDIRECTORY"
        | "SHADOW_MODE"
        | "QUOTA_MODE"
        | "LIMIT_RESPONSE_HEADERS_ENABLED"
        | "LIMIT_LIMIT_HEADER"
        | "LIMIT_REMAINING_HEADER"
        | "LIMIT_RESET_HEADER"
        | "MERGE_DOMAIN_CONFIG"
        | "NEAR_LIMIT_RATIO"
        | "CACHE_KEY_PREFIX"
        | "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT"
        | "EXPIRATION_JITTER_MAX_SECONDS"
        | "LOG_LEVEL"
        | "LOG_FORMAT"
        | "RESPONSE_DYNAMIC_METADATA" => Honoured,
        "CONFIG_TYPE" => RefusedWhen(
            |value| !value.eq_ignore_ascii_case("FILE"),
            "limits come from files only (RUNTIME_ROOT); xDS is not served",
        ),
        "REDIS_PERSECOND" => RefusedWhen(
            is_true,
            "one Redis decides every limit; a second one for per-second limits is not used",
        ),
        "GRPC_SERVER_USE_TLS" => RefusedWhen(is_true, "put TLS in front (Envoy, a mesh)"),
        "GRPC_UDS" => RefusedWhen(is_set, "a Unix socket is not served; use GRPC_HOST/PORT"),
        "REDIS_TLS_CLIENT_CERT" | "REDIS_TLS_CLIENT_KEY" => {
            RefusedWhen(is_set, "Redis client certificates are not supported")
        }
        "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION" => {
            RefusedWhen(is_true, "the Redis certificate's host is always verified")
        }
        "REDIS_SENTINEL_AUTH" | "REDIS_PERSECOND_SENTINEL_AUTH" => {
            RefusedWhen(is_set, "Sentinel is not supported")
        }
        "RUNTIME_IGNOREDOTFILES" => RefusedWhen(
            |value| !is_true(value),
            "names that start with a dot are always skipped (a ConfigMap's ..data): set it true or leave it out",
        ),
        "RUNTIME_WATCH_ROOT" => Ignored(
            "the limits files are the *.yaml and *.yml under the app directory, reloaded within a second",
        ),
        "FORCE_START_WITHOUT_INITIAL_CONFIG" | "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED" => {
            Ignored("the service starts with the files it can load, and says which it cannot")
        }
        "DEBUG_HOST" | "DEBUG_PORT" => Ignored("there is no debug listener"),
        "GRPC_MAX_CONNECTION_AGE" | "GRPC_MAX_CONNECTION_AGE_GRACE" => {
            Ignored("gRPC connections are kept until the client closes them")
        }
        "GRPC_SERVER_TLS_CERT"
        | "GRPC_SERVER_TLS_KEY"
        | "GRPC_CLIENT_TLS_CACERT"
        | "GRPC_CLIENT_TLS_SAN" => Ignored("the gRPC port serves no TLS"),
        "LOCAL_CACHE_SIZE_IN_BYTES" => Ignored(
            "a key over its limit is counted on Redis at each call (their cache only spares those calls)",
        ),
        "REDIS_TIMEOUT" => Ignored("a limiter call's deadline is limiter.timeout_ms"),
        "REDIS_SOCKET_TYPE"
        | "REDIS_PIPELINE_WINDOW"
        | "REDIS_PIPELINE_LIMIT"
        | "REDIS_CLUSTER_PIPELINE_PARALLELISM"
        | "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION"
        | "REDIS_POOL_ON_EMPTY_BEHAVIOR"
        | "REDIS_STARTUP_INITIAL_INTERVAL"
        | "REDIS_STARTUP_MAX_INTERVAL"
        | "REDIS_STARTUP_MAX_ELAPSED_TIME" => Ignored(POOLS),
        "USE_DOG_STATSD"
        | "USE_DOG_STATSD_MOGRIFIERS"
        | "USE_STATSD"
        | "STATSD_HOST"
        | "STATSD_PORT"
        | "EXTRA_TAGS"
        | "STATS_FLUSH_INTERVAL"
        | "DISABLE_STATS"
        | "USE_PROMETHEUS"
        | "PROMETHEUS_ADDR"
        | "PROMETHEUS_PATH"
        | "PROMETHEUS_MAPPER_YAML"
        | "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS" => Ignored(STATS),
        "TRACING_ENABLED"
        | "TRACING_SERVICE_NAME"
        | "TRACING_SERVICE_NAMESPACE"
        | "TRACING_SERVICE_INSTANCE_ID"
        | "TRACING_EXPORTER_PROTOCOL"
        | "TRACING_SAMPLING_RATE" => {
            Ignored("no traces are exported; logs are on stderr (log.format)")
        }
        name if name.starts_with("CONFIG_GRPC_XDS_") || name.starts_with("XDS_CLIENT_") => {
            Ignored("limits come from files only (CONFIG_TYPE=FILE)")
        }
        name if name.starts_with("REDIS_PERSECOND_") => {
            Ignored("one Redis decides every limit (REDIS_PERSECOND)")
        }
        name if name.starts_with("MEMCACHE_") => Ignored("the backend is Redis (BACKEND_TYPE)"),
        _ => return None,
    })
}

/// The warnings for their variables that change nothing here, in name order.
///
/// # Errors
/// The first (by name) that asks for what is not served, named with what to do instead.
pub(super) fn check<'a>(
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<String>, ConfigError> {
    let mut set: Vec<(&str, &str)> = vars.into_iter().collect();
    set.sort_unstable();
    let mut warnings = Vec::new();
    for (name, value) in set {
        match treatment(name) {
            None | Some(Treatment::Honoured) => {}
            Some(Treatment::RefusedWhen(refused, instead)) => {
                if refused(value) {
                    return Err(ConfigError(format!(
                        "environment variable {name}={value}: {instead}"
                    )));
                }
            }
            Some(Treatment::Ignored(why)) => {
                warnings.push(format!(
                    "environment variable {name} has no effect here: {why}"
                ));
            }
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_of_their_variables_is_honoured_refused_or_warned_about() {
        let warnings = check([
            ("USE_STATSD", "true"),
            ("LOG_LEVEL", "debug"),
            ("REDIS_PIPELINE_WINDOW", "150us"),
            ("CONFIG_TYPE", "FILE"),
            ("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"),
            ("PATH", "/usr/bin"),
        ])
        .unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("environment variable REDIS_PIPELINE_WINDOW"));
        assert!(warnings[1].starts_with("environment variable USE_STATSD"));
        for (name, value) in [
            ("CONFIG_TYPE", "GRPC_XDS_SOTW"),
            ("REDIS_PERSECOND", "true"),
            ("GRPC_SERVER_USE_TLS", "true"),
            ("REDIS_TLS_CLIENT_CERT", "/etc/cert.pem"),
            ("RUNTIME_IGNOREDOTFILES", "false"),
        ] {
            let error = check([(name, value)]).unwrap_err().to_string();
            assert!(error.contains(name), "{name}: {error}");
        }
        // Their defaults, written out, are taken.
        assert!(
            check([
                ("RESPONSE_DYNAMIC_METADATA", "false"),
                ("QUOTA_MODE", "false"),
                ("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "false"),
                ("EXPIRATION_JITTER_MAX_SECONDS", "300")
            ])
            .is_ok()
        );
    }

    /// Every name their settings read is classified here: the list is theirs as of the
    /// version whose example configuration this service is checked against.
    #[test]
    fn no_variable_of_theirs_is_unclassified() {
        const THEIRS: &str = "HOST PORT DEBUG_HOST DEBUG_PORT GRPC_UDS GRPC_HOST GRPC_PORT \
            GRPC_MAX_CONNECTION_AGE GRPC_MAX_CONNECTION_AGE_GRACE GRPC_SERVER_USE_TLS \
            GRPC_SERVER_TLS_CERT GRPC_SERVER_TLS_KEY GRPC_CLIENT_TLS_CACERT GRPC_CLIENT_TLS_SAN \
            LOG_LEVEL LOG_FORMAT CONFIG_TYPE FORCE_START_WITHOUT_INITIAL_CONFIG \
            CONFIG_GRPC_XDS_NODE_ID CONFIG_GRPC_XDS_SERVER_URL XDS_CLIENT_BACKOFF_JITTER \
            USE_DOG_STATSD USE_DOG_STATSD_MOGRIFIERS USE_STATSD STATSD_HOST STATSD_PORT \
            EXTRA_TAGS STATS_FLUSH_INTERVAL DISABLE_STATS USE_PROMETHEUS PROMETHEUS_ADDR \
            PROMETHEUS_PATH PROMETHEUS_MAPPER_YAML PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS \
            RUNTIME_ROOT RUNTIME_SUBDIRECTORY RUNTIME_APPDIRECTORY RUNTIME_IGNOREDOTFILES \
            RUNTIME_WATCH_ROOT EXPIRATION_JITTER_MAX_SECONDS LOCAL_CACHE_SIZE_IN_BYTES \
            NEAR_LIMIT_RATIO CACHE_KEY_PREFIX BACKEND_TYPE STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT \
            LIMIT_RESPONSE_HEADERS_ENABLED LIMIT_LIMIT_HEADER LIMIT_REMAINING_HEADER \
            LIMIT_RESET_HEADER HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED REDIS_SOCKET_TYPE \
            REDIS_TYPE REDIS_URL REDIS_POOL_SIZE REDIS_AUTH REDIS_TLS REDIS_TLS_CLIENT_CERT \
            REDIS_TLS_CLIENT_KEY REDIS_TLS_CACERT REDIS_TLS_SKIP_HOSTNAME_VERIFICATION \
            REDIS_PIPELINE_WINDOW REDIS_PIPELINE_LIMIT REDIS_CLUSTER_PIPELINE_PARALLELISM \
            REDIS_PERSECOND REDIS_PERSECOND_URL REDIS_SENTINEL_AUTH \
            REDIS_HEALTH_CHECK_ACTIVE_CONNECTION REDIS_TIMEOUT REDIS_POOL_ON_EMPTY_BEHAVIOR \
            REDIS_STARTUP_INITIAL_INTERVAL REDIS_STARTUP_MAX_INTERVAL \
            REDIS_STARTUP_MAX_ELAPSED_TIME MEMCACHE_HOST_PORT SHADOW_MODE QUOTA_MODE \
            RESPONSE_DYNAMIC_METADATA MERGE_DOMAIN_CONFIG TRACING_ENABLED TRACING_SAMPLING_RATE";
        for name in THEIRS.split_whitespace() {
            assert!(treatment(name).is_some(), "{name} is not classified");
        }
    }
}
