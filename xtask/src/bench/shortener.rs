//! `shortener` nodes for the HTTP benchmarks, each in its own directory with its own
//! config file, and a throwaway PostgreSQL database for them.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, ensure};

use shortener_testkit::TestDatabase;

use super::process::{Guard, TempDir, http, require, spawn_server};
use crate::services::Postgres;

/// The target of every link the benchmarks create (the ceiling redirects there too).
pub const TARGET: &str = "https://example.com/bench";
/// The API key of the `quota` tier (`printf %s bench-quota-key | sha256sum`).
pub const QUOTA_KEY: &str = "bench-quota-key";
const QUOTA_KEY_SHA256: &str = "7d7644a98b0dc289e9637e6b51f17675241236d69ca5c67ef7ade62cace97a8f";
/// A quota that a benchmark never exhausts: the largest rate a policy accepts, and a burst
/// of a billion.
pub const UNLIMITED: Quota = Quota {
    capacity: 1_000_000_000,
    refill_per_sec: 50_000.0,
};

/// A policy: `capacity` tokens of burst, refilled at `refill_per_sec`.
#[derive(Debug, Clone, Copy)]
pub struct Quota {
    pub capacity: u64,
    pub refill_per_sec: f64,
}

#[derive(Debug, Clone)]
pub enum Storage {
    Sqlite,
    Postgres(String),
    Memory,
}

/// What a node runs with; everything else is the built-in default.
#[derive(Debug, Clone)]
pub struct Setup {
    pub storage: Storage,
    pub cache: bool,
    /// `None`: the memory limiter; `Some(url)`: the Redis limiter.
    pub redis: Option<String>,
    /// `None`: the default `create` policy.
    pub create: Option<Quota>,
    pub redirect: Option<Quota>,
    /// The `quota` tier's `create` policy, for requests with [`QUOTA_KEY`].
    pub quota_tier: Option<Quota>,
    /// `(storage.sqlite_synchronous, storage.sqlite_group_commit)`; `None`: the defaults.
    pub sqlite: Option<(&'static str, bool)>,
}

impl Setup {
    /// The embedded default: SQLite, the cache, the memory limiter, the default policies.
    pub fn embedded() -> Self {
        Self {
            storage: Storage::Sqlite,
            cache: true,
            redis: None,
            create: None,
            redirect: None,
            quota_tier: None,
            sqlite: None,
        }
    }

    fn toml(&self) -> String {
        let mut toml = String::from("[server]\nbind = \"127.0.0.1:0\"\n\n[storage]\n");
        let _ = match &self.storage {
            Storage::Sqlite => writeln!(toml, "kind = \"sqlite\"\nurl = \"sqlite://shortener.db\""),
            Storage::Postgres(url) => writeln!(toml, "kind = \"postgres\"\nurl = \"{url}\""),
            Storage::Memory => writeln!(toml, "kind = \"memory\""),
        };
        if let Some((synchronous, group_commit)) = self.sqlite {
            let _ = writeln!(
                toml,
                "sqlite_synchronous = \"{synchronous}\"\nsqlite_group_commit = {group_commit}"
            );
        }
        if !self.cache {
            toml.push_str("\n[cache]\ncapacity = 0\n");
        }
        toml.push_str("\n[limiter]\n");
        if let Some(url) = &self.redis {
            let _ = writeln!(toml, "kind = \"redis\"\nredis_url = \"{url}\"");
        }
        let policy = |toml: &mut String, section: &str, quota: &Quota| {
            let _ = writeln!(
                toml,
                "\n[{section}]\ncapacity = {}\nrefill_per_sec = {:?}",
                quota.capacity, quota.refill_per_sec
            );
        };
        if let Some(quota) = &self.create {
            policy(&mut toml, "limiter.policies.create", quota);
        }
        if let Some(quota) = &self.redirect {
            policy(&mut toml, "limiter.policies.redirect", quota);
        }
        if let Some(quota) = &self.quota_tier {
            policy(&mut toml, "limiter.tiers.quota.create", quota);
            let _ = writeln!(
                toml,
                "\n[[api_keys]]\nname = \"bench\"\nsha256 = \"{QUOTA_KEY_SHA256}\"\ntier = \"quota\""
            );
        }
        toml
    }
}

/// A running `shortener` (release build) in its own directory; stopped on drop.
#[derive(Debug)]
pub struct Node {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    // Declared before `dir`: the process stops before its directory is removed.
    _process: Guard,
    _dir: TempDir,
}

impl Node {
    pub fn start(binary: &Path, name: &str, setup: &Setup) -> anyhow::Result<Self> {
        let dir = TempDir::with_prefix(name)?;
        std::fs::write(dir.path().join("shortener.toml"), setup.toml())?;
        let mut command = Command::new(binary);
        command
            .args(["serve", "--config", "shortener.toml"])
            .current_dir(dir.path())
            .env("RUST_LOG", "warn");
        // Only the config file speaks: no SHORTENER_* variable of this shell leaks in.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("SHORTENER_") {
                command.env_remove(key);
            }
        }
        let (process, base) = spawn_server(
            name,
            &mut command,
            "shortener listening on ",
            &dir.path().join("stderr.log"),
        )
        .with_context(|| format!("config:\n{}", setup.toml()))?;
        Ok(Self {
            base,
            _process: process,
            _dir: dir,
        })
    }

    /// Creates a link to [`TARGET`] and returns its path, `/CODE`.
    pub fn create_link(&self) -> anyhow::Result<String> {
        let body = format!("{{\"url\":\"{TARGET}\"}}");
        let (status, answer) = http(
            &self.base,
            "POST",
            "/api/v1/links",
            &[("Content-Type", "application/json")],
            &body,
        )?;
        ensure!(status == 201, "creating a link answered {status}: {answer}");
        let code = answer
            .split_once("\"code\":\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(code, _)| code.to_owned())
            .with_context(|| format!("no code in {answer}"))?;
        let (status, _) = http(&self.base, "GET", &format!("/{code}"), &[], "")?;
        ensure!(status == 302, "the new link answered {status}, not 302");
        Ok(format!("/{code}"))
    }

    /// The value of one counter of `/metrics` (summed over its label sets that contain
    /// every one of `labels`), 0 when absent.
    pub fn counter(&self, name: &str, labels: &[&str]) -> anyhow::Result<f64> {
        let (status, text) = http(&self.base, "GET", "/metrics", &[], "")?;
        ensure!(status == 200, "/metrics answered {status}");
        Ok(text
            .lines()
            .filter(|line| {
                line.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with([' ', '{']))
            })
            .filter(|line| labels.iter().all(|label| line.contains(label)))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }
}

/// A database of the test kit's on the PostgreSQL of `cargo xtask test`
/// (`SHORTENER_TEST_PG_URL`, else 127.0.0.1:5432, else a throwaway cluster), dropped on
/// drop, or by a watchdog if xtask dies first.
#[derive(Debug)]
pub struct Database {
    database: TestDatabase,
    // Last: a throwaway cluster outlives the database.
    _server: Postgres,
}

impl Database {
    pub fn create() -> anyhow::Result<Self> {
        require("psql")?;
        let server = Postgres::provide()?;
        let database = TestDatabase::create_on(server.url())
            .context("cannot create the benchmark database")?;
        Ok(Self {
            database,
            _server: server,
        })
    }

    pub fn url(&self) -> &str {
        self.database.url()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setups_write_the_keys_the_server_knows() {
        let setup = Setup {
            redis: Some("redis://127.0.0.1:1".into()),
            quota_tier: Some(UNLIMITED),
            cache: false,
            ..Setup::embedded()
        };
        let toml = setup.toml();
        assert!(toml.contains("[cache]\ncapacity = 0"), "{toml}");
        assert!(toml.contains("kind = \"redis\""), "{toml}");
        assert!(
            toml.contains(
                "[limiter.tiers.quota.create]\ncapacity = 1000000000\nrefill_per_sec = 50000.0"
            ),
            "{toml}"
        );
    }
}
