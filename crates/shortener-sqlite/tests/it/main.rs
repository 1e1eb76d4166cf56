//! Tests of `SqliteRepository` on real SQLite databases: the shared conformance story,
//! on a file and in memory, and what is specific to this adapter.

mod conformance;
mod lifecycle;

use shortener_core::{NewLink, ShortCode, TargetUrl};
use shortener_sqlite::SqliteRepository;
use shortener_testkit::TempDir;
use time::OffsetDateTime;

/// A database file in a fresh temporary directory, removed with the value.
#[derive(Debug)]
pub struct TempDatabase {
    pub url: String,
    _dir: TempDir,
}

impl Default for TempDatabase {
    fn default() -> Self {
        let dir = TempDir::new();
        let url = format!("sqlite://{}", dir.path().join("links.db").display());
        Self { url, _dir: dir }
    }
}

impl TempDatabase {
    pub async fn connect(&self, migrate: bool) -> SqliteRepository {
        SqliteRepository::connect(&self.url, 8, migrate)
            .await
            .expect("connect")
    }
}

pub fn new_link(code: &str) -> NewLink {
    NewLink {
        domain: shortener_core::Domain::default(),
        code: ShortCode::parse(code).expect("a valid code"),
        url: TargetUrl::parse(&format!("https://example.com/{code}")).expect("a valid url"),
        created_at: OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("a valid time"),
        expires_at: None,
        max_visits: None,
        owner: None,
        tags: shortener_core::Tags::default(),
        options: shortener_core::LinkOptions::default(),
    }
}

/// `visits` people's visits of `key` today, as a flush hands them over.
pub fn tally(key: &shortener_core::LinkKey, visits: u64) -> shortener_core::VisitTally {
    shortener_core::VisitTally {
        key: key.clone(),
        day: time::OffsetDateTime::now_utc().date(),
        visits,
        bots: 0,
    }
}
