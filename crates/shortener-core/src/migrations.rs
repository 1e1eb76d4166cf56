//! The one migration runner of the workspace: what is applied, what is pending, what was
//! modified after it was applied, and applying what is pending, for any database whose
//! adapter says which migrations it knows, which the database has applied, and how to
//! apply the pending ones ([`Migrations`]). Each adapter keeps its own `migrations/` and
//! its own engine (sqlx's migrator); the rules live here, once.

use std::collections::BTreeMap;
use std::future::Future;

use crate::repository::RepositoryError;

/// One migration: its version, description and checksum (of its SQL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    pub version: i64,
    pub description: String,
    pub checksum: Vec<u8>,
}

impl From<(i64, String, Vec<u8>)> for Migration {
    /// A row of a bookkeeping table: version, description, checksum.
    fn from((version, description, checksum): (i64, String, Vec<u8>)) -> Self {
        Self {
            version,
            description,
            checksum,
        }
    }
}

/// A migration's state in a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    pub version: i64,
    pub description: String,
    pub applied: bool,
}

/// A database with migrations: what an adapter provides, and the runner's operations on it.
pub trait Migrations: Sync {
    /// The name of the engine, in errors (`sqlite`, `postgres`).
    const ENGINE: &'static str;

    /// This build's up migrations, in version order.
    fn known(&self) -> Vec<Migration>;

    /// The migrations the database has applied successfully; none before the first.
    ///
    /// # Errors
    /// [`RepositoryError`] when the database cannot be read.
    fn applied(&self) -> impl Future<Output = Result<Vec<Migration>, RepositoryError>> + Send;

    /// Applies every pending migration, each in a transaction of its own.
    ///
    /// # Errors
    /// `Unexpected` when a migration fails or an applied one was modified; `Unavailable`
    /// when the database cannot be reached.
    fn apply_pending(&self) -> impl Future<Output = Result<(), RepositoryError>> + Send;

    /// Every migration this build knows or the database has applied, in version order.
    ///
    /// # Errors
    /// As [`Migrations::applied`].
    fn migration_status(
        &self,
    ) -> impl Future<Output = Result<Vec<MigrationStatus>, RepositoryError>> + Send {
        async move { Ok(status(&self.known(), &self.applied().await?)) }
    }

    /// Applies the pending migrations; returns those this call applied.
    ///
    /// # Errors
    /// As [`Migrations::apply_pending`].
    fn migrate(&self) -> impl Future<Output = Result<Vec<Migration>, RepositoryError>> + Send {
        async move {
            let before = self.applied().await?;
            self.apply_pending().await?;
            let after = self.applied().await?;
            Ok(after
                .into_iter()
                .filter(|migration| !before.iter().any(|old| old.version == migration.version))
                .collect())
        }
    }

    /// Refuses a database on which a migration of this build is pending or was modified.
    ///
    /// # Errors
    /// `Unexpected`, naming the migrations and what to do; as [`Migrations::applied`].
    fn check_migrated(&self) -> impl Future<Output = Result<(), RepositoryError>> + Send {
        async move { check(Self::ENGINE, &self.known(), &self.applied().await?) }
    }
}

/// `known` and `applied` side by side, in version order.
fn status(known: &[Migration], applied: &[Migration]) -> Vec<MigrationStatus> {
    let mut all: BTreeMap<i64, MigrationStatus> = known
        .iter()
        .map(|migration| {
            let status = MigrationStatus {
                version: migration.version,
                description: migration.description.clone(),
                applied: false,
            };
            (migration.version, status)
        })
        .collect();
    for migration in applied {
        all.entry(migration.version)
            .or_insert_with(|| MigrationStatus {
                version: migration.version,
                description: migration.description.clone(),
                applied: true,
            })
            .applied = true;
    }
    all.into_values().collect()
}

fn check(engine: &str, known: &[Migration], applied: &[Migration]) -> Result<(), RepositoryError> {
    let mut pending = Vec::new();
    for migration in known {
        let Migration {
            version,
            description,
            checksum,
        } = migration;
        match applied.iter().find(|old| old.version == *version) {
            None => pending.push(format!("{version} ({description})")),
            Some(old) if old.checksum != *checksum => {
                return Err(RepositoryError::Unexpected(
                    format!(
                        "{engine} migration {version} ({description}) was modified after it \
                         was applied"
                    )
                    .into(),
                ));
            }
            Some(_) => {}
        }
    }
    if pending.is_empty() {
        return Ok(());
    }
    Err(RepositoryError::Unexpected(
        format!(
            "the {engine} database has pending migrations: {}; apply them with \
             `shortener migrate` or storage.migrate = true",
            pending.join(", ")
        )
        .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migration(version: i64, checksum: u8) -> Migration {
        Migration {
            version,
            description: format!("m{version}"),
            checksum: vec![checksum],
        }
    }

    #[test]
    fn status_lists_known_and_applied_in_order() {
        let known = [migration(1, 1), migration(2, 2)];
        let applied = [migration(1, 1), migration(7, 7)];
        let status = status(&known, &applied);
        let seen: Vec<_> = status.iter().map(|s| (s.version, s.applied)).collect();
        assert_eq!(seen, [(1, true), (2, false), (7, true)]);
    }

    #[test]
    fn a_pending_or_modified_migration_is_refused_with_its_name() {
        let known = [migration(1, 1), migration(2, 2)];
        assert!(check("sqlite", &known, &known).is_ok());
        let pending = check("sqlite", &known, &known[..1])
            .unwrap_err()
            .to_string();
        assert!(pending.contains("pending migrations: 2 (m2)"), "{pending}");
        assert!(pending.contains("shortener migrate"), "{pending}");
        let modified = check("postgres", &known, &[migration(1, 9), migration(2, 2)])
            .unwrap_err()
            .to_string();
        assert!(
            modified.contains("postgres migration 1 (m1) was modified"),
            "{modified}"
        );
    }
}
