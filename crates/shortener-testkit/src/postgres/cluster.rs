//! [`PostgresCluster`]: a throwaway PostgreSQL server made with `initdb` and `pg_ctl`.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::tool;
use crate::process::{Watchdog, output_within};
use crate::{TempDir, TestPki, free_port};

const STARTUP: Duration = Duration::from_secs(120);

/// A PostgreSQL cluster in a [`TempDir`], on a free loopback port with trust auth, stopped
/// on drop (and its postmaster killed by a [`Watchdog`] if this process dies first). Run
/// as the `postgres` user when this process runs as root, since PostgreSQL refuses root.
#[derive(Debug)]
pub struct PostgresCluster {
    bin: PathBuf,
    port: u16,
    as_postgres_user: bool,
    _watchdog: Option<Watchdog>,
    // Last: removed once the server is stopped.
    dir: TempDir,
}

impl PostgresCluster {
    /// # Errors
    /// When `initdb` is missing (one line naming the Debian package) or the server does
    /// not start.
    pub fn start() -> io::Result<Self> {
        Self::start_with(None)
    }

    /// A cluster that also serves TLS (`ssl = on`) with the server certificate of `pki`.
    ///
    /// # Errors
    /// As [`PostgresCluster::start`].
    pub fn start_tls(pki: &TestPki) -> io::Result<Self> {
        Self::start_with(Some(pki))
    }

    fn start_with(pki: Option<&TestPki>) -> io::Result<Self> {
        let initdb = tool("initdb")?;
        let bin = initdb.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut cluster = Self {
            bin,
            port: free_port()?,
            as_postgres_user: is_root(),
            _watchdog: None,
            dir: TempDir::with_prefix("postgres")?,
        };
        cluster.chown()?;
        let data = cluster.data();
        cluster.run(
            "initdb",
            &["-U", "postgres", "--auth=trust", "-E", "UTF8", "-D", &data],
        )?;
        let mut conf = format!(
            "\nlisten_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n",
            cluster.port,
            cluster.dir.path().display()
        );
        if let Some(pki) = pki {
            let data = cluster.dir.path().join("data");
            std::fs::copy(pki.cert_file(), data.join("server.pem"))?;
            std::fs::copy(pki.key_file(), data.join("server.key"))?;
            // The server refuses a key file that others may read.
            std::fs::set_permissions(
                data.join("server.key"),
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            )?;
            conf.push_str("ssl = on\nssl_cert_file = 'server.pem'\nssl_key_file = 'server.key'\n");
        }
        let conf_file = cluster.dir.path().join("data/postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_file)?;
        text.push_str(&conf);
        std::fs::write(&conf_file, text)?;
        cluster.chown()?;
        let log = cluster.dir.path().join("log").display().to_string();
        cluster.run("pg_ctl", &["-D", &data, "-l", &log, "-w", "start"])?;
        let pid_file = cluster.dir.path().join("data/postmaster.pid");
        let postmaster = std::fs::read_to_string(pid_file)?
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        cluster._watchdog =
            Watchdog::after_exit(r#"kill -9 "$1" 2>/dev/null"#, &[postmaster.as_ref()]).ok();
        Ok(cluster)
    }

    /// `postgres://postgres@localhost:<port>/postgres`, with `?query` when not empty
    /// (`localhost`: the name the TLS certificate is for).
    pub fn url(&self, query: &str) -> String {
        let url = format!("postgres://postgres@localhost:{}/postgres", self.port);
        if query.is_empty() {
            url
        } else {
            format!("{url}?{query}")
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The rows of `sql`, queried over the Unix socket (unaligned, tuples only, trimmed).
    ///
    /// # Errors
    /// When `psql` is missing or reports an error.
    pub fn query(&self, sql: &str) -> io::Result<String> {
        let socket = self.dir.path().display().to_string();
        let port = self.port.to_string();
        let out = self.run(
            "psql",
            &[
                "-X", "-h", &socket, "-p", &port, "-U", "postgres", "-At", "-c", sql,
            ],
        )?;
        Ok(out.trim().to_owned())
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// Hands the cluster's files to the `postgres` user, when it runs the cluster.
    fn chown(&self) -> io::Result<()> {
        if !self.as_postgres_user {
            return Ok(());
        }
        let output = output_within(
            Command::new("chown")
                .args(["-R", "postgres"])
                .arg(self.dir.path()),
            Duration::from_secs(30),
        )?;
        if output.status.success() {
            Ok(())
        } else {
            Err(io::Error::other("chown -R postgres failed"))
        }
    }

    fn command(&self, tool_name: &str) -> Command {
        let program = self.bin.join(tool_name);
        let program = if program.is_file() {
            program
        } else {
            tool(tool_name).unwrap_or(program)
        };
        if self.as_postgres_user {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    fn run(&self, tool_name: &str, args: &[&str]) -> io::Result<String> {
        let output = output_within(self.command(tool_name).args(args), STARTUP)?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(5).collect();
            Err(io::Error::other(format!(
                "{tool_name} failed: {}; log: {}",
                String::from_utf8_lossy(&output.stderr).trim(),
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )))
        }
    }
}

impl Drop for PostgresCluster {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"))
}

#[cfg(test)]
mod tests {
    use std::net::TcpStream;

    use super::*;

    /// The last resort when no PostgreSQL answers: a throwaway cluster starts, answers, and
    /// is gone after drop (directory removed, port closed).
    #[test]
    fn a_cluster_starts_answers_and_is_removed() {
        let cluster = PostgresCluster::start().unwrap();
        let port = cluster.port();
        let dir = cluster.dir().to_path_buf();
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "it listens"
        );
        assert_eq!(cluster.query("SELECT 1 + 1").unwrap(), "2");
        drop(cluster);
        assert!(!dir.exists(), "the directory is removed");
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "the cluster is stopped"
        );
    }
}
