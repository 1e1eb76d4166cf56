//! [`TestConfig`]: a node's configuration in a test, the server's own [`Config`] typed, as
//! zero2prod's `spawn_app` starts from `get_configuration()` and changes fields in Rust.
//! A test starts from [`TestConfig::default`] (port 0, SQLite in the node's directory) and
//! sets what it needs, field by field (`config.links.forward_query = true`, through
//! `Deref`) or with the few builders that many tests repeat (a Redis limiter, a policy,
//! PostgreSQL, an API key).
//!
//! A node in this process and a `shortener` process read it as one TOML text,
//! [`TestConfig::file_text`]: only the keys whose values differ from the server's defaults.
//! A whole `Config` would not do: the server refuses the keys of another backend kind
//! (`storage.statement_timeout_ms` under SQLite, `limiter.redis_url` under the memory
//! limiter), and those carry their defaults in every `Config`.
//! The text is read back before any node gets it, so a config the file cannot say (a
//! default policy removed) panics in the test rather than starting another node.

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Format as _, Serialized, Toml};
use shortener_server::config::StorageConfig;
// The server's config types a test names, so that a test needs no other crate for them.
pub use shortener_server::config::{
    AlgorithmConfig, ApiKeyConfig, ClientIpHeader, Config, DomainConfig, LimiterKind, LogFormat,
    OnErrorConfig, PolicyConfig, StorageKind, SynchronousConfig,
};

/// Where a node keeps its links: `storage.kind` and `storage.url`, which a [`TestConfig`]
/// takes from here and not from `config.storage` (the rest of `[storage]` is the config's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Store {
    /// SQLite in the node's directory (`sqlite://<dir>/shortener.db`), where a process
    /// started there keeps it: nodes started in one directory share it.
    #[default]
    NodeSqlite,
    /// A SQLite file elsewhere (a small disk of the test's own).
    Sqlite(PathBuf),
    /// A PostgreSQL database at this URL.
    Postgres(String),
    /// In memory: gone with the node.
    Memory,
}

/// A node's configuration: the server's [`Config`] (read and changed through `Deref`),
/// and where the node keeps its links.
#[derive(Debug, Clone)]
pub struct TestConfig {
    config: Config,
    /// Where the node keeps its links (SQLite in its directory by default).
    pub store: Store,
}

impl Default for TestConfig {
    /// The server's defaults, on a port the kernel picks (`127.0.0.1:0`; the node says
    /// where it listens), with SQLite in the node's directory.
    fn default() -> Self {
        let mut config = Config::default();
        config.server.bind = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        Self {
            config,
            store: Store::NodeSqlite,
        }
    }
}

impl Deref for TestConfig {
    type Target = Config;

    fn deref(&self) -> &Config {
        &self.config
    }
}

impl DerefMut for TestConfig {
    fn deref_mut(&mut self) -> &mut Config {
        &mut self.config
    }
}

impl TestConfig {
    /// Changes the config in place, for a builder chain (`.with(|c| c.cache.capacity = 0)`).
    #[must_use]
    pub fn with(mut self, change: impl FnOnce(&mut Config)) -> Self {
        change(&mut self.config);
        self
    }

    /// Links in memory instead of SQLite.
    #[must_use]
    pub fn in_memory(mut self) -> Self {
        self.store = Store::Memory;
        self
    }

    /// Links in the PostgreSQL database at `url`.
    #[must_use]
    pub fn postgres(mut self, url: &str) -> Self {
        self.store = Store::Postgres(url.to_owned());
        self
    }

    /// The Redis limiter on the standalone Redis at `url`, doing `on_error` when Redis fails.
    #[must_use]
    pub fn redis_limiter(mut self, url: &str, on_error: OnErrorConfig) -> Self {
        let limiter = &mut self.config.limiter;
        limiter.kind = LimiterKind::Redis;
        limiter.redis_url = url.into();
        limiter.on_error = on_error;
        self
    }

    /// The default policy `name` (`create`, `redirect`, ...): `capacity` tokens, refilled
    /// at `refill_per_sec`, without a lease.
    #[must_use]
    pub fn policy(mut self, name: &str, capacity: u64, refill_per_sec: f64) -> Self {
        (self.config.limiter.policies)
            .insert(name.into(), PolicyConfig::new(capacity, refill_per_sec));
        self
    }

    /// An API key `name` whose secret has the hex SHA-256 `sha256`, with `scopes` (`None`:
    /// every scope but `admin`).
    #[must_use]
    pub fn api_key(mut self, name: &str, sha256: &str, scopes: Option<&[&str]>) -> Self {
        self.config.api_keys.push(ApiKeyConfig {
            name: name.to_owned(),
            sha256: sha256.to_owned(),
            tier: None,
            scopes: scopes.map(|scopes| scopes.iter().map(|&scope| scope.to_owned()).collect()),
        });
        self
    }

    /// The server's config of a node in `dir`: the store resolved into `[storage]`.
    ///
    /// # Panics
    /// When `storage.kind` or `storage.url` were set on the config rather than through
    /// [`TestConfig::store`].
    pub fn server_config(&self, dir: &Path) -> Config {
        let mut config = self.config.clone();
        let default = StorageConfig::default();
        assert!(
            config.storage.kind == default.kind && config.storage.url == default.url,
            "set TestConfig::store, not storage.kind or storage.url"
        );
        (config.storage.kind, config.storage.url) = match &self.store {
            Store::NodeSqlite => (
                StorageKind::Sqlite,
                format!("sqlite://{}/shortener.db", dir.display()).into(),
            ),
            Store::Sqlite(path) => (
                StorageKind::Sqlite,
                format!("sqlite://{}", path.display()).into(),
            ),
            Store::Postgres(url) => (StorageKind::Postgres, url.as_str().into()),
            Store::Memory => (StorageKind::Memory, default.url),
        };
        config
    }

    /// The config file of a node in `dir`: the keys of [`TestConfig::server_config`] whose
    /// values differ from the server's defaults, as TOML.
    ///
    /// # Panics
    /// When the server would read another config from the text (see the module's
    /// documentation).
    pub fn file_text(&self, dir: &Path) -> String {
        let wanted = as_table(&self.server_config(dir));
        let text = toml::to_string(&differing(&wanted, &as_table(&Config::default())))
            .expect("a config table is TOML");
        let read: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(&text))
            .extract()
            .unwrap_or_else(|error| panic!("the server cannot read its file: {error}\n{text}"));
        assert!(
            as_table(&read) == wanted,
            "the file says another config than the TestConfig (a default removed?):\n{text}"
        );
        text
    }
}

fn as_table(config: &Config) -> toml::Table {
    toml::Table::try_from(config).expect("a Config is a TOML table")
}

/// The keys of `wanted` whose values are not those of `default`, table by table (a
/// table's other keys come from the defaults, as figment merges them); arrays whole.
fn differing(wanted: &toml::Table, default: &toml::Table) -> toml::Table {
    let mut differ = toml::Table::new();
    for (key, value) in wanted {
        match (value, default.get(key)) {
            (toml::Value::Table(wanted), Some(toml::Value::Table(default))) => {
                let inner = differing(wanted, default);
                if !inner.is_empty() {
                    differ.insert(key.clone(), toml::Value::Table(inner));
                }
            }
            (value, Some(default)) if value == default => {}
            (value, _) => {
                differ.insert(key.clone(), value.clone());
            }
        }
    }
    differ
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults say only where the node listens and keeps its links; the kind-specific
    /// keys every `Config` carries are left out, so the server takes the text.
    #[test]
    fn the_default_file_names_the_port_and_the_node_s_sqlite_only() {
        let text = TestConfig::default().file_text(Path::new("/nodes/a"));
        assert_eq!(
            text,
            "[server]\nbind = \"127.0.0.1:0\"\n\n[storage]\nurl = \"sqlite:///nodes/a/shortener.db\"\n"
        );
        Config::from_figment(Figment::from(Toml::string(&text))).expect("the server takes it");
    }

    /// What the builders and field changes set is what the server reads back.
    #[test]
    fn typed_changes_reach_the_server_s_config() {
        let mut config = TestConfig::default()
            .in_memory()
            .redis_limiter("redis://127.0.0.1:1", OnErrorConfig::FailClosed)
            .policy("create", 3, 0.5)
            .api_key("ops", &"ab".repeat(32), Some(&["admin"]));
        config.links.forward_query = true;
        let text = config.file_text(Path::new("/nodes/a"));
        let settings = Config::from_figment(Figment::from(Toml::string(&text)))
            .unwrap_or_else(|error| panic!("{error}\n{text}"));
        assert_eq!(settings.config.storage.kind, StorageKind::Memory);
        assert_eq!(
            settings.config.limiter.redis_url.expose(),
            "redis://127.0.0.1:1"
        );
        assert_eq!(settings.config.limiter.on_error, OnErrorConfig::FailClosed);
        assert_eq!(settings.config.limiter.policies["create"].capacity, 3);
        assert_eq!(
            settings.config.api_keys[0].scopes,
            Some(vec!["admin".to_owned()])
        );
        assert!(settings.config.links.forward_query);
    }

    /// A default policy removed cannot be said in a file that figment merges over the
    /// defaults: the test learns it rather than running with the policy.
    #[test]
    #[should_panic(expected = "another config")]
    fn a_removed_default_is_refused() {
        let mut config = TestConfig::default();
        config.limiter.policies.remove("lookup");
        let _ = config.file_text(Path::new("/nodes/a"));
    }
}
