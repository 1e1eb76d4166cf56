//! The formats `shortener import` reads, each record to a [`Record`] or a [`Refusal`]
//! that names its line and field. Only what stops the whole file (it cannot be read, a
//! CSV header without the columns that make a link) is an error.

use std::io::BufRead;

use shortener_core::{
    Domain, LinkOptions, MAX_TITLE_CHARS, NewLink, OptionColumns, Owner, ShortCode, Tags,
    TargetUrl, Title,
};
use time::format_description::well_known::{Iso8601, Rfc3339};
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

use super::{Reading, Record, Refusal};
use crate::export::LinkLine;

mod pages;
mod table;

/// The formats `shortener import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Source {
    /// This service's export, a link per line: everything comes back.
    Ndjson,
    /// The CSV of Shlink's importer and web client.
    ShlinkCsv,
    /// Pages of Shlink's `GET /rest/v3/short-urls`, saved to a file.
    ShlinkJson,
    /// A CSV of YOURLS' `yourls_url` table.
    Yourls,
    /// Pages of Kutt's `GET /api/v2/links`, saved to a file.
    Kutt,
    /// Bitly's CSV export of links.
    BitlyCsv,
}

/// What stops a whole file (a line that is not a link is refused by its number instead).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("not JSON")]
    NotJson(#[from] serde_json::Error),
    #[error("pages nested deeper than {0} levels: not a file of links")]
    TooDeep(usize),
    #[error("line 1: the header must have {0} columns")]
    Header(&'static str),
    #[error("no links in the file: is it of the format given to --from?")]
    NoLinks,
}

/// Reads every record of `input`; `owner` replaces each record's owner.
///
/// # Errors
/// When `input` cannot be read, is not of its format at all (not JSON, a CSV header
/// without the columns of a link), or holds no link.
pub fn read(
    source: Source,
    input: impl BufRead,
    owner: Option<&Owner>,
    now: OffsetDateTime,
) -> Result<Reading, ReadError> {
    let mut reading = Reading::default();
    match source {
        Source::Ndjson => capped_lines(input, |number, line| match line {
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => reading.take(number, ndjson(line, owner)),
            Err(reason) => reading.take(number, Err(reason)),
        })?,
        Source::ShlinkCsv => table::shlink(&text(input)?, owner, now, &mut reading)?,
        Source::Yourls => table::yourls(&text(input)?, owner, now, &mut reading)?,
        Source::BitlyCsv => table::bitly(&text(input)?, owner, now, &mut reading)?,
        Source::ShlinkJson => pages::shlink(&text(input)?, owner, now, &mut reading)?,
        Source::Kutt => pages::kutt(&text(input)?, owner, now, &mut reading)?,
    }
    if reading.records.is_empty() && reading.refused.is_empty() {
        return Err(ReadError::NoLinks);
    }
    Ok(reading)
}

/// The longest line of an NDJSON file, in bytes: a link's line is a few kilobytes at
/// most (two URLs of 8 KiB, a title, tags), so a longer one is refused by its number
/// without being held in memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Calls `each` with every line of `input` (numbered from 1, without its line break),
/// or with why it is refused: longer than [`MAX_LINE_BYTES`], or not UTF-8.
fn capped_lines(
    mut input: impl BufRead,
    mut each: impl FnMut(usize, Result<&str, String>),
) -> std::io::Result<()> {
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let limit = (MAX_LINE_BYTES + 1) as u64;
        if std::io::Read::take(&mut input, limit).read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_LINE_BYTES {
            skip_line(&mut input)?;
            each(
                number,
                Err(format!("the line is longer than {MAX_LINE_BYTES} bytes")),
            );
            continue;
        }
        match std::str::from_utf8(&line) {
            Ok(text) => each(number, Ok(text.trim_end_matches(['\n', '\r']))),
            Err(_) => each(number, Err("the line is not UTF-8".to_owned())),
        }
    }
    Ok(())
}

/// Reads past the rest of the current line, holding no more than the reader's buffer.
fn skip_line(input: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buffer = input.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        match memchr::memchr(b'\n', buffer) {
            Some(at) => {
                input.consume(at + 1);
                return Ok(());
            }
            None => {
                let length = buffer.len();
                input.consume(length);
            }
        }
    }
}

/// One line of our export.
fn ndjson(line: &str, owner: Option<&Owner>) -> Result<(NewLink, u64), String> {
    let parsed: LinkLine = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let owner = match (owner, parsed.owner.as_deref()) {
        (Some(owner), _) => Some(owner.clone()),
        (None, Some(name)) => Some(Owner::parse(name).map_err(|e| format!("owner: {e}"))?),
        (None, None) => None,
    };
    let options = LinkOptions::try_from(OptionColumns {
        redirect_status: parsed.redirect_status.map(i64::from),
        forward_query: parsed.forward_query,
        expired_url: parsed.expired_url,
        title: parsed.title,
        crawlable: parsed.crawlable,
        password_hash: parsed.password_hash,
        rules: parsed.rules,
    })
    .map_err(|e| e.0)?;
    let link = NewLink {
        domain: domain(parsed.domain.as_deref())?,
        code: code(&parsed.code)?,
        url: url(&parsed.url)?,
        created_at: time("created_at", &parsed.created_at)?,
        expires_at: (parsed.expires_at.as_deref())
            .map(|raw| time("expires_at", raw))
            .transpose()?,
        max_visits: parsed.max_visits,
        owner,
        tags: tags(parsed.tags.split(','))?,
        options,
    };
    Ok((link, parsed.visits))
}

fn text(mut input: impl BufRead) -> std::io::Result<String> {
    let mut text = String::new();
    input.read_to_string(&mut text)?;
    Ok(text)
}

/// A link's domain as the source names it (by host); the default one when it names none.
fn domain(raw: Option<&str>) -> Result<Domain, String> {
    match raw.map(str::trim).filter(|raw| !raw.is_empty()) {
        Some(raw) => Domain::parse(raw).map_err(|e| format!("domain `{raw}`: {e}")),
        None => Ok(Domain::default()),
    }
}

fn code(raw: &str) -> Result<ShortCode, String> {
    ShortCode::parse(raw).map_err(|e| format!("code `{raw}`: {e}"))
}

fn time(field: &str, raw: &str) -> Result<OffsetDateTime, String> {
    OffsetDateTime::parse(raw, &Rfc3339).map_err(|e| format!("{field} `{raw}`: {e}"))
}

/// A time as other shorteners write it: RFC 3339, ISO 8601 (`+0000` offsets too), or
/// `YYYY-MM-DD HH:MM:SS` without an offset (MySQL's and SQLite's), taken as UTC.
fn loose_time(field: &str, raw: &str) -> Result<OffsetDateTime, String> {
    let raw = raw.trim();
    let plain = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    OffsetDateTime::parse(raw, &Rfc3339)
        .or_else(|_| OffsetDateTime::parse(raw, &Iso8601::DEFAULT))
        .or_else(|_| {
            // Fractions of a second, when written, are dropped.
            let whole = raw.split('.').next().unwrap_or(raw);
            PrimitiveDateTime::parse(whole, plain).map(PrimitiveDateTime::assume_utc)
        })
        .map_err(|_| format!("{field} `{raw}`: not a date and time"))
}

/// A creation time as another shortener wrote it (see [`loose_time`]); `now` when the
/// source has none.
fn created(field: &str, raw: Option<&str>, now: OffsetDateTime) -> Result<OffsetDateTime, String> {
    match raw.map(str::trim).filter(|raw| !raw.is_empty()) {
        Some(raw) => loose_time(field, raw),
        None => Ok(now),
    }
}

/// An optional time (an expiry) as another shortener wrote it.
fn optional_time(field: &str, raw: Option<&str>) -> Result<Option<OffsetDateTime>, String> {
    raw.map(|raw| loose_time(field, raw)).transpose()
}

/// A link of the given parts, with nothing else set: what another shortener's record
/// starts from.
fn link(
    code: ShortCode,
    url: TargetUrl,
    created_at: OffsetDateTime,
    owner: Option<&Owner>,
) -> NewLink {
    NewLink {
        domain: Domain::default(),
        code,
        url,
        created_at,
        expires_at: None,
        max_visits: None,
        owner: owner.cloned(),
        tags: Tags::default(),
        options: LinkOptions::default(),
    }
}

/// A title another shortener kept (often fetched from the page): control characters
/// become spaces and what passes [`MAX_TITLE_CHARS`] is cut, rather than the link refused.
fn title(raw: &str) -> Option<Title> {
    let cleaned: String = (raw.trim().chars())
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_TITLE_CHARS)
        .collect();
    Title::parse(cleaned.trim()).ok()
}

fn url(raw: &str) -> Result<TargetUrl, String> {
    TargetUrl::parse(raw).map_err(|e| format!("url: {e}"))
}

fn tags<'a>(names: impl Iterator<Item = &'a str>) -> Result<Tags, String> {
    let names = names.map(str::trim).filter(|name| !name.is_empty());
    Tags::parse(names).map_err(|e| format!("tags: {e}"))
}

impl Reading {
    /// Keeps the record of line `line`, or its refusal.
    fn take(&mut self, line: usize, record: Result<(NewLink, u64), String>) {
        match record {
            Ok((link, visits)) => self.records.push(Record { line, link, visits }),
            Err(reason) => self.refused.push(Refusal { line, reason }),
        }
    }
}

#[cfg(test)]
mod tests;
