//! `shortener import --from FORMAT FILE`: links from another shortener (or from our own
//! export) into the configured storage, keeping their codes.
//!
//! Formats (`read.rs`): `ndjson`, our export (every field comes back: code, url, times,
//! visit limit, visits, owner, redirect options, tags); `shlink-csv`, the CSV that
//! Shlink's importer reads (`Long URL`, `Short code`, `Title`, `Tags`).
//!
//! Each line ends in one of four ways, and the report says which, with line numbers:
//! - imported;
//! - unchanged: its code exists with the same target (so an import that stopped, or ran
//!   before, can run again and changes nothing);
//! - conflict: its code exists with another target, which stays;
//! - refused: a value is not valid, or a target (`url`, `expired_url`) breaks the
//!   service's target rules (`[links]`), as a create through the API would be refused.
//!
//! Links are written many at a time (SQLite commits concurrent inserts in one
//! transaction: its group commit), so a large file imports in seconds. What does not
//! come: Shlink's `Domain` (this service has one domain yet; the count of records that
//! had one is reported).

mod progress;
mod read;

use futures_util::{StreamExt as _, stream};
use shortener_core::{
    InsertError, LinkRepository, NewLink, RepositoryError, VisitOutcome, VisitTally,
};
use time::OffsetDateTime;

pub use self::progress::Progress;
pub use self::read::{Source, read};
use crate::migrate::Database;
use crate::targets::Targets;

/// How many links are written at once.
const CONCURRENCY: usize = 64;

/// One link to import, checked, with its line in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub line: usize,
    pub link: NewLink,
    pub visits: u64,
}

/// A line that was not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub line: usize,
    pub reason: String,
}

/// What reading a file gave.
#[derive(Debug, Default)]
pub struct Reading {
    pub records: Vec<Record>,
    pub refused: Vec<Refusal>,
    /// Records whose Shlink `Domain` is not kept.
    pub domains_dropped: usize,
}

impl Reading {
    /// Moves the records whose targets the service's rules refuse to `refused`.
    pub fn check_targets(&mut self, targets: &Targets) {
        let (kept, refused): (Vec<Record>, Vec<Record>) = std::mem::take(&mut self.records)
            .into_iter()
            .partition(|record| refusal(record, targets).is_none());
        for record in refused {
            let reason = refusal(&record, targets).unwrap_or_default();
            self.refused.push(Refusal {
                line: record.line,
                reason,
            });
        }
        self.records = kept;
    }
}

/// Why the targets of `record` are refused, if they are.
fn refusal(record: &Record, targets: &Targets) -> Option<String> {
    let expired_url = record.link.options.expired_url.as_ref();
    [
        ("url", Some(&record.link.url)),
        ("expired_url", expired_url),
    ]
    .into_iter()
    .find_map(|(field, url)| {
        let refused = targets.check(url?).err()?;
        Some(format!("{field}: {refused}"))
    })
}

/// What an import did (or, dry, would do).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub imported: usize,
    pub unchanged: usize,
    /// Codes that exist with another target, by line.
    pub conflicts: Vec<Refusal>,
}

/// How one record ended.
enum Outcome {
    Imported,
    Unchanged,
    Conflict(Refusal),
}

/// Writes `records` to the database at `url` (unless `dry_run`), calling `progress` with
/// the count done after each.
///
/// # Errors
/// When the database cannot be opened or written; the links imported before stay.
pub async fn run(
    url: &str,
    records: Vec<Record>,
    dry_run: bool,
    progress: impl FnMut(usize),
) -> anyhow::Result<Report> {
    match Database::connect(url).await? {
        Database::Sqlite(repository) => write_all(&repository, records, dry_run, progress).await,
        Database::Postgres(repository) => write_all(&repository, records, dry_run, progress).await,
    }
}

async fn write_all(
    repository: &impl LinkRepository,
    records: Vec<Record>,
    dry_run: bool,
    mut progress: impl FnMut(usize),
) -> anyhow::Result<Report> {
    let mut outcomes = stream::iter(records)
        .map(|record| write(repository, record, dry_run))
        .buffer_unordered(CONCURRENCY);
    let (mut report, mut done) = (Report::default(), 0);
    while let Some(outcome) = outcomes.next().await {
        match outcome? {
            Outcome::Imported => report.imported += 1,
            Outcome::Unchanged => report.unchanged += 1,
            Outcome::Conflict(conflict) => report.conflicts.push(conflict),
        }
        done += 1;
        progress(done);
    }
    report.conflicts.sort_by_key(|conflict| conflict.line);
    Ok(report)
}

/// Inserts one record and its visits, unless its code exists.
async fn write(
    repository: &impl LinkRepository,
    record: Record,
    dry_run: bool,
) -> Result<Outcome, RepositoryError> {
    let code = record.link.code.clone();
    let taken = |existing: shortener_core::Link| {
        if existing.url == record.link.url {
            Outcome::Unchanged
        } else {
            Outcome::Conflict(Refusal {
                line: record.line,
                reason: format!("code `{code}` is taken by another target"),
            })
        }
    };
    if dry_run {
        return Ok(repository
            .get(&code)
            .await?
            .map_or(Outcome::Imported, taken));
    }
    let link = match repository.insert(record.link.clone()).await {
        Ok(link) => link,
        Err(InsertError::CodeTaken) => {
            // Deleted since, in a race: counted as a conflict, which a rerun settles.
            let existing = repository.get(&code).await?;
            return Ok(existing.map_or_else(
                || {
                    Outcome::Conflict(Refusal {
                        line: record.line,
                        reason: format!("code `{code}` changed during the import"),
                    })
                },
                taken,
            ));
        }
        Err(InsertError::Storage(error)) => return Err(error),
    };
    if record.visits == 0 {
        return Ok(Outcome::Imported);
    }
    if link.max_visits.is_some() {
        // A limited link's total is what bounds it: counted one by one, atomically, as
        // redirects count it (an expired link takes none, and redirects no more anyway).
        let now = OffsetDateTime::now_utc();
        for _ in 0..record.visits {
            if !matches!(
                repository.record_visit(&code, now).await?,
                VisitOutcome::Counted(_)
            ) {
                break;
            }
        }
    } else {
        // Booked on the day the link was made: the source keeps no days.
        let tally = VisitTally {
            code,
            day: link.created_at.date(),
            visits: record.visits,
            bots: 0,
        };
        repository.add_visits(&[tally]).await?;
    }
    Ok(Outcome::Imported)
}
