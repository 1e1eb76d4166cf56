//! What the configuration resolves the backends to: the storage of `storage.kind` and
//! the Redis limiter of `limiter.kind = "redis"`, each with the settings of its own kind
//! only. The configuration's checks (which key belongs to which kind) are the server's.

use shortener_core::RedactedUrl;
use shortener_core::limiter::fallback::OnError;
use shortener_postgres::PoolSettings;
use shortener_redis::RedisConfig;
use shortener_sqlite::SqliteSettings;

/// The storage backend of `storage.kind`, with the keys of that kind.
#[derive(Debug, Clone)]
pub enum Storage {
    /// Links in this process only, lost at exit; takes no other key.
    Memory,
    /// `url`, `max_connections`, `migrate` and the `sqlite_*` keys.
    Sqlite {
        url: RedactedUrl,
        settings: SqliteSettings,
    },
    /// `url`, `max_connections`, `migrate` and `statement_timeout_ms`.
    Postgres {
        url: RedactedUrl,
        pool: PoolSettings,
        migrate: bool,
    },
}

/// `limiter.kind = "redis"`: the Redis connection and the fallback's behaviour.
#[derive(Debug, Clone)]
pub struct RedisLimiter {
    pub redis: RedisConfig,
    pub on_error: OnError,
    pub breaker_failures: u32,
    /// Nodes sharing the quota until the heartbeat counts them.
    pub nodes: u64,
}
