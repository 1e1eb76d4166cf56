//! Telling every node that a link changed, over Redis pub/sub, so that each drops its
//! cached copy within moments of an edit or delete rather than at the cache's TTL.
//!
//! Messages name the changed link (`code` on the default domain, `host/code` on another),
//! published on one channel. In a Redis Cluster a
//! `PUBLISH` reaches the subscribers of every node over the cluster bus, so publisher and
//! subscriber each talk to one seed node (the next one after a failure). Pub/sub delivers at
//! most once: a subscriber that was disconnected has missed messages, so its caller must
//! drop its whole cache whenever it subscribes again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use redis::aio::{MultiplexedConnection, PubSubStream};
use redis::{Client, ConnectionInfo};
use shortener_core::LimiterError;
use tokio::sync::Mutex;

use crate::backend::standalone_connection_info;
use crate::config::RedisConfig;
use crate::error::{from_redis, timed_out};

/// The messages of a subscription.
pub struct Subscription(PubSubStream);

impl Subscription {
    /// The name of the next changed link; `None` once the connection ended.
    pub async fn next(&mut self) -> Option<String> {
        loop {
            let message = self.0.next().await?;
            if let Ok(link) = message.get_payload::<String>() {
                return Some(link);
            }
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscription")
    }
}

/// Publishes and receives link invalidations on `{key_prefix}invalidate`.
#[derive(Debug)]
pub struct LinkInvalidations {
    nodes: Vec<ConnectionInfo>,
    channel: String,
    timeout: Duration,
    /// The node to use next, round robin after failures.
    next_node: AtomicUsize,
    publisher: Mutex<Option<MultiplexedConnection>>,
}

impl LinkInvalidations {
    /// Prepares the connections of `config` (connecting happens on first use).
    ///
    /// # Errors
    /// `LimiterError::Unexpected` or `Misconfigured` for a URL or CA file that cannot be used.
    pub fn new(config: &RedisConfig) -> Result<Self, LimiterError> {
        let urls = if config.cluster_nodes.is_empty() {
            std::slice::from_ref(&config.url)
        } else {
            config.cluster_nodes.as_slice()
        };
        let nodes = urls
            .iter()
            .map(|url| {
                standalone_connection_info(&RedisConfig {
                    url: url.clone(),
                    ..config.clone()
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            nodes,
            channel: format!("{}invalidate", config.key_prefix),
            timeout: config.timeout,
            next_node: AtomicUsize::new(0),
            publisher: Mutex::new(None),
        })
    }

    /// Tells every subscribed node that the link named `link` changed.
    ///
    /// # Errors
    /// `LimiterError::Unavailable` when Redis does not answer within the timeout.
    pub async fn publish(&self, link: &str) -> Result<(), LimiterError> {
        let mut publisher = self.publisher.lock().await;
        let mut connection = match publisher.take() {
            Some(connection) => connection,
            None => self.connect().await?,
        };
        let mut command = redis::cmd("PUBLISH");
        command.arg(&self.channel).arg(link);
        let publish = command.query_async::<u64>(&mut connection);
        match tokio::time::timeout(self.timeout, publish).await {
            Ok(Ok(_receivers)) => {
                *publisher = Some(connection);
                Ok(())
            }
            Ok(Err(error)) => {
                self.skip_node();
                Err(from_redis(&error))
            }
            Err(_) => {
                self.skip_node();
                Err(timed_out(self.timeout))
            }
        }
    }

    /// Subscribes; the subscription yields the name of each changed link until its
    /// connection ends.
    ///
    /// # Errors
    /// `LimiterError::Unavailable` when Redis does not answer in time.
    pub async fn subscribe(&self) -> Result<Subscription, LimiterError> {
        let client = self.client()?;
        let subscribe = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&self.channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        // Subscribing takes a connection and a round trip: a second at least, even when the
        // limiter's own calls are bounded tighter.
        let timeout = self.timeout.max(Duration::from_secs(1));
        match tokio::time::timeout(timeout, subscribe).await {
            Ok(Ok(pubsub)) => Ok(Subscription(pubsub.into_on_message())),
            Ok(Err(error)) => {
                self.skip_node();
                Err(from_redis(&error))
            }
            Err(_) => {
                self.skip_node();
                Err(timed_out(timeout))
            }
        }
    }

    fn client(&self) -> Result<Client, LimiterError> {
        let node = self.next_node.load(Ordering::Relaxed) % self.nodes.len();
        Client::open(self.nodes[node].clone())
            .map_err(|error| LimiterError::Unexpected(error.to_string().into()))
    }

    async fn connect(&self) -> Result<MultiplexedConnection, LimiterError> {
        let client = self.client()?;
        match tokio::time::timeout(self.timeout, client.get_multiplexed_async_connection()).await {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(error)) => {
                self.skip_node();
                Err(from_redis(&error))
            }
            Err(_) => {
                self.skip_node();
                Err(timed_out(self.timeout))
            }
        }
    }

    fn skip_node(&self) {
        self.next_node.fetch_add(1, Ordering::Relaxed);
    }
}
