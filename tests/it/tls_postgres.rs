//! PostgreSQL over TLS: a throwaway cluster with `ssl = on` and a certificate of a
//! [`TestPki`], reached by `PostgresRepository` with `sslmode=verify-full`. The shared
//! test server is not touched.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use shortener_postgres::PostgresRepository;
use shortener_redis::testing::TestPki;
use shortener_tests::TempDir;

/// A PostgreSQL cluster made with `initdb`, serving TLS on a free loopback port with trust
/// auth; stopped on drop. Run as the `postgres` user when the tests run as root, since
/// PostgreSQL refuses to run as root.
struct TlsPostgres {
    bin: PathBuf,
    dir: TempDir,
    port: u16,
    as_postgres: bool,
}

impl TlsPostgres {
    fn start(pki: &TestPki) -> Self {
        let bin = bin_dir();
        let dir = TempDir::new();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
        let cluster = Self {
            bin,
            dir,
            port,
            as_postgres,
        };
        cluster.chown();
        let data = cluster.data();
        cluster.run(
            "initdb",
            &["-U", "postgres", "--auth=trust", "-E", "UTF8", "-D", &data],
        );
        std::fs::copy(pki.cert_file(), cluster.dir.path().join("data/server.pem")).unwrap();
        std::fs::copy(pki.key_file(), cluster.dir.path().join("data/server.key")).unwrap();
        let mut conf =
            std::fs::read_to_string(cluster.dir.path().join("data/postgresql.conf")).unwrap();
        conf.push_str(&format!(
            "\nssl = on\nssl_cert_file = 'server.pem'\nssl_key_file = 'server.key'\n\
             listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\n",
            cluster.dir.path().display()
        ));
        std::fs::write(cluster.dir.path().join("data/postgresql.conf"), conf).unwrap();
        // The server refuses a key file that others may read.
        let key = cluster.dir.path().join("data/server.key");
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        cluster.chown();
        let log = cluster.dir.path().join("log").display().to_string();
        cluster.run("pg_ctl", &["-D", &data, "-l", &log, "-w", "start"]);
        cluster
    }

    /// Hands the cluster's files to the `postgres` user, when it runs the cluster.
    fn chown(&self) {
        if self.as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(self.dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "chown postgres");
        }
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn url(&self, query: &str) -> String {
        format!(
            "postgres://postgres@localhost:{}/postgres?{query}",
            self.port
        )
    }

    /// One value, queried over the Unix socket.
    fn query(&self, sql: &str) -> String {
        let socket = self.dir.path().display().to_string();
        let port = self.port.to_string();
        self.run(
            "psql",
            &[
                "-h", &socket, "-p", &port, "-U", "postgres", "-At", "-c", sql,
            ],
        )
        .trim()
        .to_owned()
    }

    fn command(&self, tool: &str) -> Command {
        let program = self.bin.join(tool);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    fn run(&self, tool: &str, args: &[&str]) -> String {
        let output = self.command(tool).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{tool} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "stop"])
            .output();
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` with `initdb`, else `initdb` on PATH.
fn bin_dir() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop().unwrap_or_else(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").is_file())
            .map(|dir| Path::new(&dir).to_path_buf())
            .expect("initdb not found: install the Debian package postgresql")
    })
}

#[tokio::test]
async fn verify_full_connects_over_tls_and_checks_the_certificate() {
    let pki = TestPki::generate();
    let postgres = TlsPostgres::start(&pki);
    let ca = pki.ca_file().display().to_string();

    // Migrations run over the connection, so connecting proves queries work over TLS.
    let repository = PostgresRepository::connect(
        &postgres.url(&format!("sslmode=verify-full&sslrootcert={ca}")),
        2,
        true,
    )
    .await
    .expect("verify-full with the CA that signed the certificate");
    let sessions = postgres.query(
        "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_ssl s \
         JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'shortener'",
    );
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
