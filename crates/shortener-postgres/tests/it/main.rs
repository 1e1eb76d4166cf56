//! Tests of `PostgresRepository` on a real PostgreSQL: the shared conformance story and
//! what is specific to this adapter.
//!
//! The server is `SHORTENER_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); the tests run in a database of their
//! own, shared by every test of this process and dropped after it
//! (`shortener_testkit::TestDatabase::shared`).

mod conformance;
mod grouped;
mod lifecycle;
mod outages;

use shortener_core::{AlphabetCodeGenerator, CodeGenerator, NewLink, ShortCode, TargetUrl};
use shortener_postgres::PostgresRepository;
use shortener_testkit::TestDatabase;
use time::OffsetDateTime;
use url::Url;

/// The URL of this process's test database, created on the first call.
///
/// # Panics
/// With one line naming `SHORTENER_TEST_PG_URL` when PostgreSQL does not answer.
pub fn database_url() -> Url {
    Url::parse(TestDatabase::shared().url()).expect("a valid database url")
}

/// A random lowercase hex string of `length` digits.
pub fn random_hex(length: usize) -> String {
    AlphabetCodeGenerator::new("0123456789abcdef", length)
        .expect("a valid alphabet")
        .generate()
        .to_string()
}

/// A repository on this process's test database, migrated.
pub async fn connect() -> PostgresRepository {
    PostgresRepository::connect(database_url().as_str(), 8, true)
        .await
        .expect("connect to the test database")
}

/// A code no other test uses.
pub fn random_code() -> ShortCode {
    AlphabetCodeGenerator::new("0123456789abcdefghijklmnopqrstuvwxyz", 16)
        .expect("a valid alphabet")
        .generate()
}

pub fn new_link(code: &ShortCode) -> NewLink {
    NewLink {
        domain: shortener_core::Domain::default(),
        code: code.clone(),
        url: TargetUrl::parse(&format!("https://example.com/{code}")).expect("a valid url"),
        created_at: OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("a valid time"),
        expires_at: None,
        max_visits: None,
        owner: None,
        tags: shortener_core::Tags::default(),
        options: shortener_core::LinkOptions::default(),
    }
}

/// `visits` people's visits of `code` today, as a flush hands them over.
pub fn tally(code: &ShortCode, visits: u64) -> shortener_core::VisitTally {
    shortener_core::VisitTally {
        key: shortener_core::LinkKey::on_default(code.clone()),
        day: OffsetDateTime::now_utc().date(),
        visits,
        bots: 0,
    }
}
