//! envoyproxy/ratelimit's metric names, through the `metrics` facade (the server installs
//! the Prometheus exporter): `ratelimit_service_rate_limit_{total_hits,over_limit,
//! near_limit,within_limit,shadow_mode}` with `domain`, `key1`, `key2`, ... labels (their
//! statsd exporter mapping). The keys are the limit's configured keys (as many as the files have), or the request's own entries only
//! where a file asks for `detailed_metric` or `value_to_metric`.

use shortener_core::Decision;

use crate::limits::Matched;

/// Counts one descriptor's decision of `hits`.
pub(crate) fn record(
    domain: &str,
    matched: &Matched,
    hits: u64,
    decision: &Decision,
    near_ratio: f64,
) {
    let mut labels = vec![("domain".to_owned(), domain.to_owned())];
    for (level, part) in matched.metric_key.iter().enumerate() {
        labels.push((format!("key{}", level + 1), part.clone()));
    }
    metrics::counter!("ratelimit_service_rate_limit_total_hits", &labels).increment(hits);
    if decision.allowed {
        metrics::counter!("ratelimit_service_rate_limit_within_limit", &labels).increment(hits);
        let limit = u64::from(matched.limit.requests_per_unit);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let near = (limit as f64 * near_ratio).floor() as u64;
        if limit.saturating_sub(decision.remaining) > near {
            metrics::counter!("ratelimit_service_rate_limit_near_limit", &labels).increment(hits);
        }
    } else {
        metrics::counter!("ratelimit_service_rate_limit_over_limit", &labels).increment(hits);
        if matched.limit.shadow_mode {
            metrics::counter!("ratelimit_service_rate_limit_shadow_mode", &labels).increment(hits);
        }
    }
}

/// Counts a load of the limits files, as theirs does.
pub(crate) fn config_loaded(ok: bool) {
    if ok {
        metrics::counter!("ratelimit_service_config_load_success").increment(1);
    } else {
        metrics::counter!("ratelimit_service_config_load_error").increment(1);
    }
}
