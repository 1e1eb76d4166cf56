//! The formats `shortener import` reads, each record to a [`Record`] or a [`Refusal`]
//! that names its line and field. Only what stops the whole file (it cannot be read, a
//! CSV header without the columns that make a link) is an error.

use std::io::BufRead;

use anyhow::bail;
use shortener_core::{
    LinkOptions, NewLink, OptionColumns, Owner, ShortCode, Tags, TargetUrl, Title,
};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{Reading, Record, Refusal};
use crate::export::LinkLine;

/// The formats `shortener import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Ndjson,
    ShlinkCsv,
}

/// Reads every record of `input`; `owner` replaces each record's owner.
///
/// # Errors
/// When `input` cannot be read, or a CSV header lacks the columns of a link.
pub fn read(
    source: Source,
    input: impl BufRead,
    owner: Option<&Owner>,
    now: OffsetDateTime,
) -> anyhow::Result<Reading> {
    let mut reading = Reading::default();
    match source {
        Source::Ndjson => {
            for (index, line) in input.lines().enumerate() {
                let line = line?;
                if !line.trim().is_empty() {
                    reading.take(index + 1, ndjson(&line, owner));
                }
            }
        }
        Source::ShlinkCsv => shlink_csv(input, owner, now, &mut reading)?,
    }
    Ok(reading)
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
    })
    .map_err(|e| e.0)?;
    let link = NewLink {
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

/// The CSV of Shlink's importer: `Long URL` and `Short code`, and `Title`, `Tags`
/// (separated by `|`) and `Domain` when there are, in any order; header names compared
/// without case or spaces, values separated by `,` or `;` (Shlink asks which; the header
/// line tells).
fn shlink_csv(
    mut input: impl BufRead,
    owner: Option<&Owner>,
    now: OffsetDateTime,
    reading: &mut Reading,
) -> anyhow::Result<()> {
    let mut text = String::new();
    input.read_to_string(&mut text)?;
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
    let (title, tag_list, domain) = (column("title"), column("tags"), column("domain"));
    for (index, row) in reader.records().enumerate() {
        // The header is line 1.
        let number = index + 2;
        let row = match row {
            Ok(row) => row,
            Err(error) => {
                reading.take(number, Err(error.to_string()));
                continue;
            }
        };
        let field = |position: usize| row.get(position).unwrap_or_default().trim();
        if domain.is_some_and(|position| !field(position).is_empty()) {
            reading.domains_dropped += 1;
        }
        let record = (|| {
            let title = title.map(field).filter(|title| !title.is_empty());
            let title = title.map(Title::parse).transpose();
            let link = NewLink {
                code: code(field(short_code))?,
                url: url(field(long_url))?,
                created_at: now,
                expires_at: None,
                max_visits: None,
                owner: owner.cloned(),
                tags: tags(tag_list.map(field).unwrap_or_default().split('|'))?,
                options: LinkOptions {
                    title: title.map_err(|e| format!("title: {e}"))?,
                    ..LinkOptions::default()
                },
            };
            Ok((link, 0))
        })();
        reading.take(number, record);
    }
    Ok(())
}

fn code(raw: &str) -> Result<ShortCode, String> {
    ShortCode::parse(raw).map_err(|e| format!("code `{raw}`: {e}"))
}

fn time(field: &str, raw: &str) -> Result<OffsetDateTime, String> {
    OffsetDateTime::parse(raw, &Rfc3339).map_err(|e| format!("{field} `{raw}`: {e}"))
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
mod tests {
    use super::*;

    const NOW: OffsetDateTime = OffsetDateTime::UNIX_EPOCH;

    #[test]
    fn a_shlink_csv_is_read_with_either_delimiter() {
        for text in [
            "Long URL,Short code,Title,Tags\nhttps://a.example/x,abc,A title,x|y\n\"https://b.example/?q=1,2\",def,,\n",
            "longUrl;shortCode\nhttps://a.example/x;abc\nhttps://b.example/?q=1,2;def\n",
        ] {
            let reading = read(Source::ShlinkCsv, text.as_bytes(), None, NOW).unwrap();
            let seen: Vec<(usize, &str, &str)> = (reading.records.iter())
                .map(|r| (r.line, r.link.code.as_str(), r.link.url.as_str()))
                .collect();
            assert_eq!(
                seen,
                [
                    (2, "abc", "https://a.example/x"),
                    (3, "def", "https://b.example/?q=1,2")
                ]
            );
            let first = &reading.records[0].link;
            let tags: Vec<&str> = first.tags.names().collect();
            let expected: &[&str] = if text.contains("Tags") {
                &["x", "y"]
            } else {
                &[]
            };
            assert_eq!(tags, expected);
            let title = first.options.title.as_ref().map(Title::as_str);
            assert_eq!(title, text.contains("Title").then_some("A title"));
        }
    }

    #[test]
    fn a_bad_record_is_refused_naming_its_line_and_field_and_the_rest_is_read() {
        let csv = "Long URL,Short code\nhttps://a.example/,ok\nnot a url,abc\n";
        let reading = read(Source::ShlinkCsv, csv.as_bytes(), None, NOW).unwrap();
        assert_eq!(reading.records.len(), 1);
        assert_eq!(reading.refused[0].line, 3);
        assert!(
            reading.refused[0].reason.starts_with("url"),
            "{:?}",
            reading.refused
        );
        let csv = "Short code\nabc\n";
        let error = read(Source::ShlinkCsv, csv.as_bytes(), None, NOW).unwrap_err();
        assert!(error.to_string().contains("Long URL"), "{error}");
        let ndjson = "{\"code\":\"a b\",\"url\":\"https://a.example/\",\"created_at\":\"2026-01-01T00:00:00Z\"}\nnot json\n";
        let reading = read(Source::Ndjson, ndjson.as_bytes(), None, NOW).unwrap();
        let lines: Vec<usize> = reading.refused.iter().map(|r| r.line).collect();
        assert_eq!(lines, [1, 2]);
        assert!(reading.refused[0].reason.starts_with("code `a b`"));
    }

    #[test]
    fn an_export_line_reads_back_whole() {
        let line = "{\"code\":\"abc\",\"url\":\"https://a.example/\",\"created_at\":\"2026-01-01T00:00:00Z\",\"expires_at\":null,\"max_visits\":3,\"visits\":2,\"owner\":\"team\",\"tags\":\"a,b\",\"title\":\"T\"}\n";
        let reading = read(Source::Ndjson, line.as_bytes(), None, NOW).unwrap();
        let record = &reading.records[0];
        assert_eq!((record.visits, record.link.max_visits), (2, Some(3)));
        assert_eq!(record.link.owner.as_ref().map(Owner::as_str), Some("team"));
        assert_eq!(record.link.tags.names().collect::<Vec<_>>(), ["a", "b"]);
        let other = Owner::parse("other").unwrap();
        let reading = read(Source::Ndjson, line.as_bytes(), Some(&other), NOW).unwrap();
        assert_eq!(reading.records[0].link.owner, Some(other));
    }
}
