//! Links from another shortener (or from our own export) into a repository, keeping
//! their codes: what `shortener import --from FORMAT FILE` runs.
//!
//! Formats (`read.rs`, with `read/table.rs` for the CSV ones and `read/pages.rs` for the
//! JSON ones): `ndjson`, our export (every field comes back: code, url, times, visit
//! limit, visits, owner, redirect options, tags); `shlink-csv`, the CSV that Shlink's
//! importer reads; `shlink-json` and `kutt`, pages of their APIs saved to a file;
//! `yourls`, a CSV of its `yourls_url` table; `bitly-csv`, Bitly's export.
//!
//! Each line ends in one of four ways, and the report says which, with line numbers:
//! - imported;
//! - unchanged: its code exists with the same target (so an import that stopped, or ran
//!   before, can run again and changes nothing);
//! - conflict: its code exists with another target, which stays;
//! - refused: a value is not valid, or a target (`url`, `expired_url`) breaks the
//!   service's target rules (`[links]`), as a create through the API would be refused.
//!
//! Links are written 5 000 to a transaction (`LinkRepository::insert_many`), one commit
//! for each batch rather than one per link, so a large file imports in seconds. A link
//! keeps the domain its source names (Shlink's and Kutt's `domain`, ours), the default
//! domain when it names none or names the default host; `--domain HOST` puts every link
//! on that domain instead (the caller's resolver, [`Reading::place`]).

mod read;
mod rules;

use shortener_core::{
    Domain, InsertError, Link, LinkKey, LinkRepository, NewLink, RepositoryError, VisitOutcome,
    VisitTally,
};
use time::OffsetDateTime;

pub use self::read::{MAX_LINE_BYTES, ReadError, Source, read};
pub use self::rules::Rules;

/// How many links are written in one transaction: one commit (one fsync) for each.
const BATCH: usize = 5000;

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
}

impl Reading {
    /// Puts every record on `onto` when given, else on its own domain, each as
    /// `resolve` names it (the service's default host is its default domain).
    pub fn place(&mut self, resolve: impl Fn(&Domain) -> Domain, onto: Option<&Domain>) {
        for record in &mut self.records {
            let link = &mut record.link;
            link.domain = resolve(onto.unwrap_or(&link.domain));
        }
    }

    /// Applies the API's rules to every record (see [`Rules`]), and moves those that
    /// break one to `refused`, naming the field.
    pub fn check(&mut self, rules: &Rules<'_>) {
        let mut kept = Vec::with_capacity(self.records.len());
        for mut record in std::mem::take(&mut self.records) {
            match rules.apply(&mut record) {
                Ok(()) => kept.push(record),
                Err(reason) => self.refused.push(Refusal {
                    line: record.line,
                    reason,
                }),
            }
        }
        self.records = kept;
    }
}

/// What an import did (or, dry, would do).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub imported: usize,
    pub unchanged: usize,
    /// Codes that exist with another target, by line.
    pub conflicts: Vec<Refusal>,
    /// Why the import stopped before the end of the file, naming the first line not
    /// written; what `imported` counts was written all the same.
    pub stopped: Option<String>,
}

/// How one record ended.
enum Outcome {
    Imported,
    Unchanged,
    Conflict(Refusal),
}

/// Writes `records` to `repository` (unless `dry_run`, which only looks up their codes),
/// calling `progress` with the count done after each batch. A write that fails stops it:
/// the report says where ([`Report::stopped`]) and counts what was written before.
pub async fn write(
    repository: &impl LinkRepository,
    records: Vec<Record>,
    dry_run: bool,
    mut progress: impl FnMut(usize),
) -> Report {
    let (mut report, mut done) = (Report::default(), 0);
    let mut records = records.into_iter().peekable();
    while records.peek().is_some() {
        let batch: Vec<Record> = records.by_ref().take(BATCH).collect();
        let (count, first_line) = (batch.len(), batch[0].line);
        let (outcomes, written) = if dry_run {
            match look_up(repository, batch).await {
                Ok(outcomes) => (outcomes, Ok(())),
                Err(error) => (Vec::new(), Err(error)),
            }
        } else {
            write_batch(repository, batch).await
        };
        for outcome in outcomes {
            match outcome {
                Outcome::Imported => report.imported += 1,
                Outcome::Unchanged => report.unchanged += 1,
                Outcome::Conflict(conflict) => report.conflicts.push(conflict),
            }
        }
        if let Err(error) = written {
            let what = if report.imported + report.unchanged + report.conflicts.len() > done {
                "the visits of the batch from"
            } else {
                "the batch from"
            };
            report.stopped = Some(format!(
                "{what} line {first_line} could not be written: {}",
                shortener_core::cause::chain(&error)
            ));
            break;
        }
        done += count;
        progress(done);
    }
    report.conflicts.sort_by_key(|conflict| conflict.line);
    report
}

/// What a dry run says of each record: imported unless its code exists.
async fn look_up(
    repository: &impl LinkRepository,
    batch: Vec<Record>,
) -> Result<Vec<Outcome>, RepositoryError> {
    let keys: Vec<LinkKey> = batch.iter().map(|record| record.link.key()).collect();
    let existing = repository.get_many(&keys).await?;
    Ok(batch
        .iter()
        .zip(existing)
        .map(|(record, link)| link.map_or(Outcome::Imported, |link| taken(record, &link)))
        .collect())
}

/// Inserts a batch in one transaction, then the visits of the links it wrote. The
/// outcomes are those of the links written, even when their visits then fail.
async fn write_batch(
    repository: &impl LinkRepository,
    batch: Vec<Record>,
) -> (Vec<Outcome>, Result<(), RepositoryError>) {
    let links = batch.iter().map(|record| record.link.clone()).collect();
    let results = match repository.insert_many(links).await {
        Ok(results) => results,
        Err(error) => return (Vec::new(), Err(error)),
    };
    // The links of the codes that were taken, in one query (a rerun takes every code).
    let taken_keys: Vec<LinkKey> = batch
        .iter()
        .zip(&results)
        .filter(|(_, result)| matches!(result, Err(InsertError::CodeTaken)))
        .map(|(record, _)| record.link.key())
        .collect();
    let (mut outcomes, mut counted) = (Vec::with_capacity(batch.len()), Vec::new());
    let mut existing = match repository.get_many(&taken_keys).await {
        Ok(existing) => existing.into_iter(),
        Err(error) => {
            // The batch is written: its new links are imported, the taken ones unknown.
            let imported = results.iter().filter(|result| result.is_ok()).count();
            outcomes.extend((0..imported).map(|_| Outcome::Imported));
            return (outcomes, Err(error));
        }
    };
    for (record, result) in batch.into_iter().zip(results) {
        match result {
            Ok(link) => {
                outcomes.push(Outcome::Imported);
                counted.push((link, record.visits));
            }
            Err(InsertError::CodeTaken) => outcomes.push(match existing.next().flatten() {
                Some(existing) => taken(&record, &existing),
                // Deleted since, in a race: counted as a conflict, which a rerun settles.
                None => conflict(&record, "changed during the import"),
            }),
            Err(InsertError::Storage(error)) => return (outcomes, Err(error)),
        }
    }
    let visits = add_visits(repository, counted).await;
    (outcomes, visits)
}

/// The visits the imported links had at their source.
async fn add_visits(
    repository: &impl LinkRepository,
    links: Vec<(Link, u64)>,
) -> Result<(), RepositoryError> {
    let mut tallies = Vec::new();
    for (link, visits) in links {
        match (visits, link.max_visits) {
            (0, _) => {}
            // A limited link's total is what bounds it: counted one by one, atomically,
            // as redirects count it (an expired link takes none, and redirects no more).
            (visits, Some(max_visits)) => {
                let now = OffsetDateTime::now_utc();
                for _ in 0..visits.min(max_visits) {
                    let counted = repository.record_visit(&link.key(), now).await?;
                    if !matches!(counted, VisitOutcome::Counted(_)) {
                        break;
                    }
                }
            }
            // Booked on the day the link was made: the source keeps no days.
            (visits, None) => tallies.push(VisitTally {
                day: link.created_at.date(),
                key: link.key(),
                visits,
                bots: 0,
            }),
        }
    }
    if !tallies.is_empty() {
        repository.add_visits(&tallies).await?;
    }
    Ok(())
}

/// A record whose code exists: unchanged when it holds the same target.
fn taken(record: &Record, existing: &Link) -> Outcome {
    if existing.url == record.link.url {
        Outcome::Unchanged
    } else {
        conflict(record, "is taken by another target")
    }
}

fn conflict(record: &Record, what: &str) -> Outcome {
    Outcome::Conflict(Refusal {
        line: record.line,
        reason: format!("code `{}` {what}", record.link.code),
    })
}
