//! The one test kit of the workspace: everything a test, a benchmark or xtask needs to
//! start, reach and stop real things, and nothing else.
//!
//! - [`process`]: the child-process [`Guard`] (killed on drop, and by a [`Watchdog`] if this
//!   process dies first), commands bounded in time, PATH lookup, and a
//!   missing binary as one line naming its Debian package.
//! - [`ports`]: [`free_port`], a loopback port for a server about to start.
//! - [`TempDir`]: temporary directories (the `tempfile` crate) that are removed on drop,
//!   and after exit too.
//! - [`redis`]: throwaway `redis-server` processes, standalone, cluster and TLS, and the
//!   [`TestPki`] that signs their certificates.
//! - [`postgres`]: throwaway databases on a shared server ([`TestDatabase`]) and
//!   throwaway clusters ([`PostgresCluster`], with TLS if asked).
//! - [`launch`]: [`Launch`], the one way a `shortener` process is started (by the tests,
//!   the benchmarks and `cargo xtask up`), without the shell's `SHORTENER_*` variables;
//!   [`spawn_listening`] starts any server of ours and waits until it says where it listens.
//! - [`api`]: [`Api`], the service's HTTP API typed (create, get, patch, delete, list,
//!   visits, keys...), with or without a key; its paths are written there once.
//! - `config` (feature `config`): `TestConfig`, a node's configuration as the server's own
//!   `Config`, typed: a test starts from its default (port 0, SQLite in the node's
//!   directory) and sets fields in Rust; both kinds of app below read it as one TOML file.
//! - [`app`]: `spawn_app` (feature `config`), a real `shortener` process with a `TestConfig`
//!   of the test's own, and [`TestApp::start_with_file_text`] for the tests of the file's
//!   text itself.
//!   [`Served`] is what helpers take for either kind of app, a process or one in this process.
//! - [`cargo`]: the workspace's root, its target directory, and [`cargo_command`], a nested `cargo` that does
//!   not rebuild what the outer one built.
//! - [`rls`]: [`TestRls`], a real `shortener ratelimit-server` process, and
//!   `InProcessRls` (feature `in-process`), the same service on a thread of this process.
//! - [`pip`]: Python tools from PyPI, each pinned and installed once into a virtualenv under `target/`.
//! - [`envoy`]: a real [`Envoy`] (from PATH, or the PyPI wheel installed under `target/`)
//!   and the repository's `deploy/envoy.yaml` with a run's ports.
//! - [`container`]: podman, the repository's `Dockerfile` built into an image (its base image
//!   made on the machine when no registry has it), and [`container::Container`]s removed on drop.
//! - [`mmdb`]: a small country database in the MaxMind DB format, for tests of `visits.geoip_db`.
//! - [`at_once`]: run N calls at the same time.
//! - `browser` (feature `browser`): a real headless Chromium over WebDriver.
//! - `in_process` (feature `in-process`): `spawn_in_process`, the service's own
//!   `app::serve` on a thread of this process, with a `TestConfig` and metrics of its own
//!   (`shortener_http::metrics::NodeRecorder`): the default for a test.
//!
//! What it is not: a test double. Nothing here fakes the server, Redis or PostgreSQL; the
//! in-process fakes live next to the code they stand in for (`shortener-memory`, the
//! `ManualClock`). It is a dev-only crate: no library of the product depends on it.
//! Test support lives here and nowhere else; tidy checks in `xtask/src/tidy.rs` hold both rules.

pub mod api;
pub mod app;
pub mod at_once;
#[cfg(feature = "browser")]
pub mod browser;
pub mod cargo;
#[cfg(feature = "config")]
pub mod config;
pub mod container;
pub mod envoy;
#[cfg(feature = "in-process")]
pub mod in_process;
pub mod launch;
pub mod mmdb;
pub mod npm;
pub mod pip;
pub mod pki;
pub mod ports;
pub mod postgres;
pub mod process;
pub mod redis;
pub mod rls;
mod temp;

pub use self::redis::{RedisCluster, RedisServer, TlsRedisCluster, TlsRedisServer};
pub use api::{Answer, Api};
#[cfg(feature = "config")]
pub use app::spawn_app;
pub use app::{Served, TestApp, answers_ok, binary, check_config, client, metric, scrape};
pub use at_once::{concurrently, in_parallel};
pub use cargo::{cargo_command, workspace};
#[cfg(feature = "config")]
pub use config::{Store, TestConfig};
pub use envoy::{Envoy, Gateway, render_gateway};
#[cfg(feature = "in-process")]
pub use in_process::{InProcessApp, spawn_in_process};
pub use launch::{Launch, listening_address, spawn_listening};
pub use pki::TestPki;
pub use ports::free_port;
pub use postgres::{PostgresCluster, TableLock, TestDatabase};
pub use process::{Guard, MissingBinary, Watchdog, output_within, require_binary};
#[cfg(feature = "in-process")]
pub use rls::InProcessRls;
pub use rls::TestRls;
pub use temp::TempDir;
