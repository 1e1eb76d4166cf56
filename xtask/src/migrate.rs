//! `cargo xtask migrate [--database-url URL] [--status]`: applies the pending migrations
//! of the database that the URL names, or with `--status` lists each one as applied or
//! pending.
//!
//! The migrations are the adapters' own, embedded in `shortener-sqlite` and
//! `shortener-postgres`, and applied by their `migrate()`: this task only picks the
//! adapter and prints, so it can never disagree with what the server applies at start.
//! A relative SQLite path is relative to the current directory, as for the server.

use anyhow::{Context as _, bail};
use shortener_postgres::PostgresRepository;
use shortener_sqlite::SqliteRepository;

/// The `storage.url` of `config/default.toml`: the database of `cargo run --release`.
const DEFAULT_DATABASE_URL: &str = "sqlite://shortener.db";

const USAGE: &str = "usage: cargo xtask migrate [--database-url URL] [--status]";

/// Runs the task with the arguments that follow `migrate`.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let Some(options) = Options::parse(args)? else {
        println!("{USAGE}");
        return Ok(());
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let shown = shortener_core::RedactedUrl::new(options.database_url.as_str());
    runtime.block_on(async {
        let database = Database::connect(&options.database_url)
            .await
            .with_context(|| format!("cannot open {shown}"))?;
        if options.status {
            println!("migrations of {shown}:");
            for (version, description, applied) in database.status().await? {
                println!(
                    "  {version:04} {description:<32} {}",
                    if applied { "applied" } else { "pending" }
                );
            }
            return Ok(());
        }
        let applied = database.migrate().await?;
        if applied.is_empty() {
            println!("{shown}: no pending migration");
        }
        for (version, description) in applied {
            println!("{shown}: applied {version:04} {description}");
        }
        Ok(())
    })
}

#[derive(Debug, PartialEq, Eq)]
struct Options {
    database_url: String,
    status: bool,
}

impl Options {
    /// The options, or `None` for `--help`.
    fn parse(args: &[String]) -> anyhow::Result<Option<Self>> {
        let mut options = Self {
            database_url: DEFAULT_DATABASE_URL.to_owned(),
            status: false,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--status" => options.status = true,
                "--database-url" => {
                    options.database_url =
                        args.next().context("--database-url needs a URL")?.clone()
                }
                "-h" | "--help" => return Ok(None),
                other => match other.strip_prefix("--database-url=") {
                    Some(url) => options.database_url = url.to_owned(),
                    None => bail!("unknown argument `{other}`\n{USAGE}"),
                },
            }
        }
        Ok(Some(options))
    }
}

/// The adapter of the backend a URL names, connected without the migration check.
#[derive(Debug)]
enum Database {
    Sqlite(SqliteRepository),
    Postgres(PostgresRepository),
}

impl Database {
    async fn connect(url: &str) -> anyhow::Result<Self> {
        // One connection: migrations run one after another anyway.
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite(
                SqliteRepository::connect_unchecked(url, 1).await?,
            ))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres(
                PostgresRepository::connect_unchecked(url, 1).await?,
            ))
        } else {
            bail!("the database URL must start with sqlite: or postgres://")
        }
    }

    /// Every migration, in version order: `(version, description, applied)`.
    async fn status(&self) -> anyhow::Result<Vec<(i64, String, bool)>> {
        Ok(match self {
            Self::Sqlite(database) => database.migration_status().await?,
            Self::Postgres(database) => database.migration_status().await?,
        })
    }

    /// Applies the pending migrations; returns those applied, with their descriptions.
    async fn migrate(&self) -> anyhow::Result<Vec<(i64, String)>> {
        let applied = match self {
            Self::Sqlite(database) => database.migrate().await?,
            Self::Postgres(database) => database.migrate().await?,
        };
        Ok(self
            .status()
            .await?
            .into_iter()
            .filter(|(version, _, _)| applied.contains(version))
            .map(|(version, description, _)| (version, description))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|&arg| arg.to_owned()).collect()
    }

    #[test]
    fn the_default_url_is_that_of_the_default_config() {
        let config = std::fs::read_to_string(crate::root().join("config/default.toml")).unwrap();
        let storage = config
            .split("[storage]")
            .nth(1)
            .unwrap()
            .split("\n[")
            .next()
            .unwrap();
        assert!(
            storage
                .lines()
                .any(|line| line.split('#').next().unwrap().trim()
                    == format!("url = \"{DEFAULT_DATABASE_URL}\""))
        );
    }

    #[test]
    fn arguments_are_parsed() {
        let default = Options {
            database_url: DEFAULT_DATABASE_URL.into(),
            status: false,
        };
        assert_eq!(Options::parse(&[]).unwrap(), Some(default));
        let given = Options {
            database_url: "postgres://u@h/db".into(),
            status: true,
        };
        assert_eq!(
            Options::parse(&args(&["--status", "--database-url", "postgres://u@h/db"])).unwrap(),
            Some(given)
        );
        let given = Options {
            database_url: "sqlite://x.db".into(),
            status: false,
        };
        assert_eq!(
            Options::parse(&args(&["--database-url=sqlite://x.db"])).unwrap(),
            Some(given)
        );
        assert_eq!(Options::parse(&args(&["--help"])).unwrap(), None);
        assert!(Options::parse(&args(&["--database-url"])).is_err());
        assert!(Options::parse(&args(&["--stats"])).is_err());
    }

    #[tokio::test]
    async fn a_fresh_sqlite_file_is_pending_then_migrated_once() {
        let dir = std::env::temp_dir().join(format!("xtask-migrate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("fresh.db").display());
        let database = Database::connect(&url).await.unwrap();
        let before = database.status().await.unwrap();
        assert!(!before.is_empty() && before.iter().all(|(_, _, applied)| !applied));
        let applied = database.migrate().await.unwrap();
        let expected: Vec<(i64, String)> = before.into_iter().map(|(v, d, _)| (v, d)).collect();
        assert_eq!(applied, expected);
        assert!(
            database
                .status()
                .await
                .unwrap()
                .iter()
                .all(|(_, _, applied)| *applied)
        );
        assert_eq!(database.migrate().await.unwrap(), Vec::new());
        assert!(Database::connect("mysql://db/links").await.is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
