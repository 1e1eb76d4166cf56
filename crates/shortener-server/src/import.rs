//! `shortener import --from FORMAT FILE`: links from another shortener (or from our own
//! export) into the configured storage, keeping their codes.
//!
//! Formats: `ndjson`, our export (every field comes back: code, url, times, visit limit,
//! visits, owner, redirect options, tags); `shlink-csv`, the CSV that Shlink's importer
//! reads (`Long URL` and `Short code` columns, and `Title` and `Tags`, separated by `|`,
//! when there are; headers compared without case or spaces, `,` or `;` between values). Every record is read and checked before anything is written, so a file with a
//! bad line changes nothing and the error names the line and the field. A code that is
//! taken already is skipped, so an import that stopped can be run again.
//!
//! What does not come: Shlink's `Domain` (this service has one domain yet; the count of
//! records that had one is reported), and target rules: an import
//! is an operator's act, and the targets are taken as they were.

use std::io::BufRead;

use anyhow::{Context as _, bail};
use shortener_core::{
    InsertError, LinkOptions, LinkRepository, NewLink, OptionColumns, Owner, ShortCode, Tags,
    TargetUrl, Title, VisitOutcome, VisitTally,
};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::export::LinkLine;
use crate::migrate::Database;

/// The formats `shortener import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Ndjson,
    ShlinkCsv,
}

/// One link to import, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub link: NewLink,
    pub visits: u64,
}

/// What an import did (or, dry, would do).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub imported: usize,
    /// Codes that exist already, left as they are.
    pub skipped: usize,
}

/// Reads every record of `input`; `owner` replaces each record's owner. Returns them
/// with the count of records whose Shlink domain is not kept.
///
/// # Errors
/// The first bad record, with its line number and field.
pub fn read(
    source: Source,
    input: impl BufRead,
    owner: Option<&Owner>,
    now: OffsetDateTime,
) -> anyhow::Result<(Vec<Record>, usize)> {
    match source {
        Source::Ndjson => read_ndjson(input, owner).map(|records| (records, 0)),
        Source::ShlinkCsv => read_shlink_csv(input, owner, now),
    }
}

fn read_ndjson(input: impl BufRead, owner: Option<&Owner>) -> anyhow::Result<Vec<Record>> {
    let mut records = Vec::new();
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: LinkLine =
            serde_json::from_str(&line).with_context(|| format!("line {number}"))?;
        let record_owner = match (owner, parsed.owner.as_deref()) {
            (Some(owner), _) => Some(owner.clone()),
            (None, Some(name)) => {
                Some(Owner::parse(name).map_err(|e| anyhow::anyhow!("line {number}: owner: {e}"))?)
            }
            (None, None) => None,
        };
        records.push(Record {
            link: NewLink {
                code: code(number, &parsed.code)?,
                url: url(number, &parsed.url)?,
                created_at: time(number, "created_at", &parsed.created_at)?,
                expires_at: (parsed.expires_at.as_deref())
                    .map(|raw| time(number, "expires_at", raw))
                    .transpose()?,
                max_visits: parsed.max_visits,
                owner: record_owner,
                tags: Tags::parse(parsed.tags.split(',').filter(|tag| !tag.is_empty()))
                    .map_err(|e| anyhow::anyhow!("line {number}: tags: {e}"))?,
                options: LinkOptions::try_from(OptionColumns {
                    redirect_status: parsed.redirect_status.map(i64::from),
                    forward_query: parsed.forward_query,
                    expired_url: parsed.expired_url,
                    title: parsed.title,
                    crawlable: parsed.crawlable,
                })
                .map_err(|e| anyhow::anyhow!("line {number}: {e}"))?,
            },
            visits: parsed.visits,
        });
    }
    Ok(records)
}

fn read_shlink_csv(
    mut input: impl BufRead,
    owner: Option<&Owner>,
    now: OffsetDateTime,
) -> anyhow::Result<(Vec<Record>, usize)> {
    let mut text = String::new();
    input.read_to_string(&mut text)?;
    // Shlink asks which; the header line tells.
    let header = text.lines().next().unwrap_or_default();
    let delimiter = if header.contains(';') && !header.contains(',') {
        b';'
    } else {
        b','
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let headers: Vec<String> = (reader.headers()?.iter())
        .map(|name| name.replace(' ', "").to_lowercase())
        .collect();
    let column = |name: &str| headers.iter().position(|header| header == name);
    let (Some(long_url), Some(short_code)) = (column("longurl"), column("shortcode")) else {
        bail!("line 1: the header must have `Long URL` and `Short code` columns");
    };
    let (title, tags, domain) = (column("title"), column("tags"), column("domain"));
    let (mut records, mut dropped) = (Vec::new(), 0);
    for (index, row) in reader.records().enumerate() {
        // The header is line 1.
        let number = index + 2;
        let row = row.with_context(|| format!("line {number}"))?;
        let field = |position: usize| row.get(position).unwrap_or_default().trim();
        if domain.is_some_and(|position| !field(position).is_empty()) {
            dropped += 1;
        }
        // Shlink's importer separates tags with `|`.
        let tags = tags.map(field).unwrap_or_default().split('|');
        let tags = Tags::parse(tags.map(str::trim).filter(|tag| !tag.is_empty()))
            .map_err(|e| anyhow::anyhow!("line {number}: tags: {e}"))?;
        let title = title.map(field).filter(|title| !title.is_empty());
        let title = (title.map(Title::parse).transpose())
            .map_err(|e| anyhow::anyhow!("line {number}: title: {e}"))?;
        records.push(Record {
            link: NewLink {
                code: code(number, field(short_code))?,
                url: url(number, field(long_url))?,
                created_at: now,
                expires_at: None,
                max_visits: None,
                owner: owner.cloned(),
                tags,
                options: LinkOptions {
                    title,
                    ..LinkOptions::default()
                },
            },
            visits: 0,
        });
    }
    Ok((records, dropped))
}

fn code(number: usize, raw: &str) -> anyhow::Result<ShortCode> {
    ShortCode::parse(raw).map_err(|e| anyhow::anyhow!("line {number}: code `{raw}`: {e}"))
}

fn time(number: usize, field: &str, raw: &str) -> anyhow::Result<OffsetDateTime> {
    OffsetDateTime::parse(raw, &Rfc3339)
        .map_err(|e| anyhow::anyhow!("line {number}: {field} `{raw}`: {e}"))
}

fn url(number: usize, raw: &str) -> anyhow::Result<TargetUrl> {
    TargetUrl::parse(raw).map_err(|e| anyhow::anyhow!("line {number}: url: {e}"))
}

/// Writes `records` to the database at `url` (unless `dry_run`).
///
/// # Errors
/// When the database cannot be opened or written; the links imported before stay.
pub async fn run(url: &str, records: Vec<Record>, dry_run: bool) -> anyhow::Result<Report> {
    let database = Database::connect(url).await?;
    let mut report = Report::default();
    for record in records {
        let written = match &database {
            Database::Sqlite(repository) => write(repository, record, dry_run).await?,
            Database::Postgres(repository) => write(repository, record, dry_run).await?,
        };
        if written {
            report.imported += 1;
        } else {
            report.skipped += 1;
        }
    }
    Ok(report)
}

/// Inserts one record and its visits; `false` when its code is taken.
async fn write(
    repository: &impl LinkRepository,
    record: Record,
    dry_run: bool,
) -> anyhow::Result<bool> {
    let code = record.link.code.clone();
    if dry_run {
        return Ok(repository.get(&code).await?.is_none());
    }
    let link = match repository.insert(record.link).await {
        Ok(link) => link,
        Err(InsertError::CodeTaken) => return Ok(false),
        Err(InsertError::Storage(error)) => return Err(error.into()),
    };
    if record.visits == 0 {
        return Ok(true);
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
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shlink_csv_is_read_with_either_delimiter() {
        let now = OffsetDateTime::UNIX_EPOCH;
        for text in [
            "Long URL,Short code,Title,Tags\nhttps://a.example/x,abc,A title,x|y\n\"https://b.example/?q=1,2\",def,,\n",
            "longUrl;shortCode\nhttps://a.example/x;abc\nhttps://b.example/?q=1,2;def\n",
        ] {
            let (records, dropped) = read(Source::ShlinkCsv, text.as_bytes(), None, now).unwrap();
            let seen: Vec<(&str, &str)> = (records.iter())
                .map(|r| (r.link.code.as_str(), r.link.url.as_str()))
                .collect();
            assert_eq!(
                seen,
                [
                    ("abc", "https://a.example/x"),
                    ("def", "https://b.example/?q=1,2")
                ]
            );
            assert_eq!(dropped, 0);
            let tags: Vec<&str> = records[0].link.tags.names().collect();
            let expected: &[&str] = if text.contains("Tags") {
                &["x", "y"]
            } else {
                &[]
            };
            assert_eq!(tags, expected);
            let title = records[0].link.options.title.as_ref().map(Title::as_str);
            assert_eq!(title, text.contains("Title").then_some("A title"));
        }
    }

    #[test]
    fn a_bad_record_names_its_line_and_field() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let csv = "Long URL,Short code\nhttps://a.example/,ok\nnot a url,abc\n";
        let error = read(Source::ShlinkCsv, csv.as_bytes(), None, now).unwrap_err();
        assert!(error.to_string().starts_with("line 3: url"), "{error}");
        let csv = "Short code\nabc\n";
        let error = read(Source::ShlinkCsv, csv.as_bytes(), None, now).unwrap_err();
        assert!(error.to_string().contains("Long URL"), "{error}");
        let ndjson = "{\"code\":\"a b\",\"url\":\"https://a.example/\",\"created_at\":\"2026-01-01T00:00:00Z\"}\n";
        let error = read(Source::Ndjson, ndjson.as_bytes(), None, now).unwrap_err();
        assert!(
            error.to_string().starts_with("line 1: code `a b`"),
            "{error}"
        );
    }

    #[test]
    fn an_export_line_reads_back_whole() {
        let line = "{\"code\":\"abc\",\"url\":\"https://a.example/\",\"created_at\":\"2026-01-01T00:00:00Z\",\"expires_at\":null,\"max_visits\":3,\"visits\":2,\"owner\":\"team\"}\n";
        let (records, _) = read(
            Source::Ndjson,
            line.as_bytes(),
            None,
            OffsetDateTime::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(records[0].visits, 2);
        assert_eq!(records[0].link.max_visits, Some(3));
        assert_eq!(
            records[0].link.owner.as_ref().map(Owner::as_str),
            Some("team")
        );
        let other = Owner::parse("other").unwrap();
        let (records, _) = read(
            Source::Ndjson,
            line.as_bytes(),
            Some(&other),
            OffsetDateTime::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(records[0].link.owner, Some(other));
    }
}
