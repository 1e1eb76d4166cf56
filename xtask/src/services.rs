//! The services the tests need. Redis servers are started by the tests themselves (they
//! kill them); PostgreSQL is provided here: `SHORTENER_TEST_PG_URL`, else the server on
//! 127.0.0.1:5432, else a throwaway cluster of the test kit (`PostgresCluster`).

use std::net::TcpStream;
use std::time::Duration;

use anyhow::Context as _;
use shortener_testkit::PostgresCluster;
use shortener_testkit::postgres::{DEFAULT_PG_URL, PG_URL_ENV};

/// Fails with one line naming the Debian package when `binary` is not on PATH.
pub fn require_binary(binary: &str) -> anyhow::Result<()> {
    shortener_testkit::require_binary(binary)?;
    Ok(())
}

/// A PostgreSQL server for the tests; a throwaway one is stopped and removed on drop.
#[derive(Debug)]
pub struct Postgres {
    url: String,
    _throwaway: Option<PostgresCluster>,
}

impl Postgres {
    pub fn provide() -> anyhow::Result<Self> {
        if let Ok(url) = std::env::var(PG_URL_ENV) {
            return Ok(Self {
                url,
                _throwaway: None,
            });
        }
        if TcpStream::connect_timeout(&([127, 0, 0, 1], 5432).into(), Duration::from_secs(1))
            .is_ok()
        {
            return Ok(Self {
                url: DEFAULT_PG_URL.into(),
                _throwaway: None,
            });
        }
        eprintln!("xtask: no PostgreSQL on 127.0.0.1:5432, starting a throwaway cluster");
        let cluster = PostgresCluster::start().context(
            "no PostgreSQL server answers on 127.0.0.1:5432 and none could be started; \
             or set SHORTENER_TEST_PG_URL",
        )?;
        Ok(Self {
            url: cluster.url(""),
            _throwaway: Some(cluster),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}
