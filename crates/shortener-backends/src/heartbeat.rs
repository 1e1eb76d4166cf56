//! The node heartbeat on the limiter's Redis: each node records itself every second, so
//! that every node knows how many share the quota while Redis is out of reach, and the
//! breaker learns that Redis answers again even without traffic.

use std::time::Duration;

use shortener_core::LimiterError;
use shortener_core::limiter::fallback::Fallback;
use shortener_core::limiter::refusals::RefusalCache;
use shortener_memory::MemoryRateLimiter;
use shortener_redis::RedisRateLimiter;

/// How long a node counts in the heartbeat after its last beat.
pub const HEARTBEAT_WINDOW: Duration = Duration::from_secs(5);

/// How often a node beats.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);

/// A random id for this process in the node heartbeat.
pub fn node_id() -> String {
    let mut bytes = [0u8; 8];
    // Without randomness the pid and the time still tell nodes apart in practice.
    let _ = getrandom::fill(&mut bytes);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    format!("{}-{}-{nanos}", hex::encode(bytes), std::process::id())
}

/// Beats every [`HEARTBEAT_INTERVAL`] until `stop`: records this node in Redis, sets the
/// fallback's node count from the reply, and tells the breaker how Redis is doing, so
/// that `/readyz` is true and Redis is back in use within a beat even without traffic.
pub async fn heartbeat_forever(
    limiter: &RefusalCache<Fallback<RedisRateLimiter, MemoryRateLimiter>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let fallback = limiter.inner();
    let node = node_id();
    let mut ticks = tokio::time::interval(HEARTBEAT_INTERVAL);
    let mut last_error: Option<String> = None;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.changed() => return,
        }
        match fallback.primary().heartbeat(&node, HEARTBEAT_WINDOW).await {
            Ok(nodes) => {
                fallback.set_nodes(nodes);
                fallback.primary_answered();
                if last_error.take().is_some() {
                    tracing::info!(nodes, "Redis answers again");
                }
            }
            Err(error) => {
                let message = error.to_string();
                if last_error.as_deref() != Some(message.as_str()) {
                    if matches!(error, LimiterError::Misconfigured(_)) {
                        tracing::error!(%error, "the Redis limiter is misconfigured");
                    } else {
                        tracing::warn!(%error, "the Redis limiter does not answer");
                    }
                }
                last_error = Some(message);
                fallback.primary_failed(error);
            }
        }
    }
}
