//! The shared `LinkRepository` story; scenarios share the test database.

async fn make() -> shortener_postgres::PostgresRepository {
    crate::connect().await
}

shortener_conformance::link_repository_tests!(make);
