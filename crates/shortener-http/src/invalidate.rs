//! Edits and deletes reach every node's cache: the task that listens to the Redis channel
//! of link invalidations (set up by the server from the limiter's Redis).

use shortener_core::{LimiterError, LinkKey};
use shortener_redis::LinkInvalidations;

use shortener_backends::{HEARTBEAT_INTERVAL, Repository};

/// Listens for other nodes' edits and deletes until `stop`, dropping each changed link
/// from the cache; after any gap in the subscription (Redis down), drops the whole cache,
/// since messages sent meanwhile are lost.
pub async fn invalidate_forever(
    repository: &Repository,
    invalidations: &LinkInvalidations,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut first = true;
    loop {
        // Every subscription but that of the first attempt follows a gap, even when the
        // first attempt failed: links cached meanwhile may have been edited unheard.
        let after_gap = !std::mem::take(&mut first);
        let listen = async {
            let mut subscription = invalidations.subscribe().await?;
            if after_gap {
                repository.forget_all();
            }
            // A message names the link as its key shows (`code`, or `host/code`).
            while let Some(message) = subscription.next().await {
                if let Ok(key) = LinkKey::parse(&message) {
                    repository.forget(&key);
                }
            }
            Ok::<(), LimiterError>(())
        };
        tokio::select! {
            result = listen => {
                if let Err(error) = result {
                    tracing::debug!(%error, "link invalidations interrupted, resubscribing");
                }
            }
            _ = stop.changed() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(HEARTBEAT_INTERVAL) => {}
            _ = stop.changed() => return,
        }
    }
}
