//! The services the tests need. Redis servers are started by the tests
//! themselves (they kill them); PostgreSQL is provided here: `SHORTENER_TEST_PG_URL`, else
//! the server on 127.0.0.1:5432, else a throwaway cluster made with `initdb`/`pg_ctl`.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};

const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Fails with one line naming what to install when `binary` is not on PATH.
pub fn require_binary(binary: &str, install: &str) -> anyhow::Result<()> {
    if find_binary(binary).is_none() {
        bail!("`{binary}` not found on PATH: install {install}");
    }
    Ok(())
}

fn find_binary(binary: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(binary))
        .find(|candidate| candidate.is_file())
}

/// A PostgreSQL server for the tests; a throwaway one is stopped and removed on drop.
#[derive(Debug)]
pub struct Postgres {
    url: String,
    throwaway: Option<Throwaway>,
}

#[derive(Debug)]
struct Throwaway {
    data_dir: PathBuf,
    bin_dir: PathBuf,
    as_postgres_user: bool,
}

impl Postgres {
    pub fn provide() -> anyhow::Result<Self> {
        if let Ok(url) = std::env::var("SHORTENER_TEST_PG_URL") {
            return Ok(Self {
                url,
                throwaway: None,
            });
        }
        if TcpStream::connect_timeout(&([127, 0, 0, 1], 5432).into(), Duration::from_secs(1))
            .is_ok()
        {
            return Ok(Self {
                url: DEFAULT_PG_URL.into(),
                throwaway: None,
            });
        }
        eprintln!("xtask: no PostgreSQL on 127.0.0.1:5432, starting a throwaway cluster");
        Self::start_throwaway()
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    fn start_throwaway() -> anyhow::Result<Self> {
        let bin_dir = postgres_bin_dir()?;
        let port = free_port()?;
        let data_dir = std::env::temp_dir().join(format!("shortener-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data_dir);
        std::fs::create_dir_all(&data_dir)?;
        // PostgreSQL refuses to run as root: use the `postgres` user then.
        let as_postgres_user = is_root();
        if as_postgres_user {
            crate::run(
                Command::new("chown")
                    .args(["-R", "postgres"])
                    .arg(&data_dir),
            )?;
        }
        let pg = |tool: &str| {
            let program = bin_dir.join(tool);
            if as_postgres_user {
                let mut command = Command::new("runuser");
                command.args(["-u", "postgres", "--"]).arg(program);
                command
            } else {
                Command::new(program)
            }
        };
        let data = data_dir.join("data");
        crate::run(
            pg("initdb")
                .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "-D"])
                .arg(&data),
        )?;
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -k {}",
            data_dir.display()
        );
        crate::run(
            pg("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-l"])
                .arg(data_dir.join("log"))
                .args(["-w", "-o", &options, "start"]),
        )?;
        Ok(Self {
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            throwaway: Some(Throwaway {
                data_dir,
                bin_dir,
                as_postgres_user,
            }),
        })
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let Some(throwaway) = &self.throwaway else {
            return;
        };
        let data = throwaway.data_dir.join("data");
        let pg_ctl = throwaway.bin_dir.join("pg_ctl");
        let mut command = if throwaway.as_postgres_user {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(pg_ctl);
            c
        } else {
            Command::new(pg_ctl)
        };
        let _ = command
            .arg("-D")
            .arg(&data)
            .args(["-m", "fast", "stop"])
            .status();
        let _ = std::fs::remove_dir_all(&throwaway.data_dir);
    }
}

fn postgres_bin_dir() -> anyhow::Result<PathBuf> {
    if let Some(initdb) = find_binary("initdb") {
        return Ok(initdb.parent().map(PathBuf::from).unwrap_or_default());
    }
    // Debian keeps the server tools out of PATH, under /usr/lib/postgresql/<version>/bin.
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop().context(
        "no PostgreSQL server answers on 127.0.0.1:5432 and `initdb` was not found: install the Debian package postgresql, or set SHORTENER_TEST_PG_URL",
    )
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last resort when no PostgreSQL answers: a throwaway cluster starts, answers, and is gone
    /// after drop (data directory removed, port closed).
    #[test]
    fn throwaway_cluster_starts_answers_and_is_removed() {
        let postgres = Postgres::start_throwaway().unwrap();
        let port: u16 = postgres
            .url()
            .rsplit(':')
            .next()
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let data_dir = postgres.throwaway.as_ref().unwrap().data_dir.clone();
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "the cluster answers"
        );
        drop(postgres);
        assert!(!data_dir.exists(), "the data directory is removed");
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "the cluster is stopped"
        );
    }
}
