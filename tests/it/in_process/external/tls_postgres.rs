//! PostgreSQL over TLS: a throwaway cluster with `ssl = on` and a certificate of a
//! [`TestPki`], reached by `PostgresRepository` with `sslmode=verify-full`. The shared
//! test server is not touched.

use shortener_postgres::PostgresRepository;
use shortener_tests::{PostgresCluster, TestPki};

#[tokio::test]
async fn verify_full_connects_over_tls_and_checks_the_certificate() {
    let pki = TestPki::generate();
    let postgres = PostgresCluster::start_tls(&pki).unwrap();
    let ca = pki.ca_file().display().to_string();

    // Migrations run over the connection, so connecting proves queries work over TLS.
    let repository = PostgresRepository::connect(
        &postgres.url(&format!("sslmode=verify-full&sslrootcert={ca}")),
        2,
        true,
    )
    .await
    .expect("verify-full with the CA that signed the certificate");
    let sessions = postgres
        .query(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_ssl s \
             JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'shortener'",
        )
        .unwrap();
    let (with_ssl, all) = sessions.split_once('|').unwrap();
    assert!(
        all != "0",
        "the repository's sessions are there: {sessions}"
    );
    assert_eq!(with_ssl, all, "every session of the repository uses TLS");
    repository.close().await;

    let other = pki.other_ca_file().display().to_string();
    let error = PostgresRepository::connect(
        &postgres.url(&format!("sslmode=verify-full&sslrootcert={other}")),
        2,
        true,
    )
    .await
    .expect_err("a certificate that the CA did not sign is refused");
    assert!(
        error.to_string().contains("certificate"),
        "names the cause: {error}"
    );

    let plain = PostgresRepository::connect(&postgres.url("sslmode=require"), 1, false).await;
    assert!(
        plain.is_ok(),
        "require encrypts without checking: {plain:?}"
    );
}
