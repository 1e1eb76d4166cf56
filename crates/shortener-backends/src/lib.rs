//! The choice of backends: what the configuration resolved ([`Storage`], [`RedisLimiter`])
//! turned into the driven adapters behind one enum per port, so that a user swaps a
//! backend by editing a config file and the hot path stays a `match`.
//!
//! - [`AnyRepository`] over the memory, SQLite and PostgreSQL repositories, and the stack
//!   the server runs on, [`Repository`]: the link cache in front of it;
//! - [`AnyLimiter`] over the memory limiter and the Redis one, which always comes inside
//!   core's `Fallback` (`limiter.on_error`) and refusal cache;
//! - [`repository`] and [`limiter`] open them from the resolved settings (`open.rs`);
//! - [`AnyRepository::open`] opens a database by its URL alone, without the configuration (`database.rs`).
//!   `shortener migrate` uses it, with [`AnyRepository::migrate`] running core's one runner.
//!   [`AnyRepository::open_current`] also refuses a pending migration, for `shortener export` (and `import` with `storage.migrate = false`);
//!   [`AnyRepository::open_migrated`] applies them first, for `shortener import`, as the server does at start.
//! - [`heartbeat_forever`]: each node's beat on the limiter's Redis.
//!   It sets the fallback's node count, and tells the breaker that Redis answers even without traffic.
//!
//! Not here: reading and checking the configuration (figment, which key belongs to which
//! kind), which is the server's; any domain rule, which is core's; any storage or limiter
//! logic, which is the adapters'.

mod any;
mod database;
mod heartbeat;
mod open;
mod settings;

pub use any::{AnyLimiter, AnyRepository, Repository};
pub use database::DatabaseError;
pub use heartbeat::{HEARTBEAT_INTERVAL, HEARTBEAT_WINDOW, heartbeat_forever, node_id};
pub use open::{OpenError, RefusedStart, limiter, repository};
pub use settings::{RedisLimiter, Storage};
