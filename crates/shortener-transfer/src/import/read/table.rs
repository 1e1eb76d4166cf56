//! The CSV formats: Shlink's importer CSV, a YOURLS `yourls_url` table, Bitly's export.
//!
//! Header names are compared in lower case without spaces, `_` or `-`; values are
//! separated by `,`, or by `;` when the first line has `;` and no `,`. A record's line is
//! where it starts in the file (a quoted value may span lines).

use csv::{ReaderBuilder, StringRecord};
use shortener_core::{NewLink, Owner};
use time::OffsetDateTime;

use super::ReadError;
use super::{code, created, domain, link, tags, title, url};
use crate::import::Reading;

/// A CSV file, read whole: its rows with their lines.
struct Table {
    rows: Vec<(usize, Result<StringRecord, String>)>,
}

/// The columns of a header row.
struct Columns(Vec<String>);

fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

impl Table {
    fn read(text: &str) -> Self {
        let first = text.lines().next().unwrap_or_default();
        let delimiter = if first.contains(';') && !first.contains(',') {
            b';'
        } else {
            b','
        };
        let mut reader = ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        let line = |position: Option<&csv::Position>| {
            position.map_or(0, |p| usize::try_from(p.line()).unwrap_or(usize::MAX))
        };
        let rows = (reader.records())
            .map(|row| match row {
                Ok(row) => (line(row.position()), Ok(row)),
                Err(error) => (line(error.position()), Err(error.to_string())),
            })
            .collect();
        Self { rows }
    }

    /// Whether the first row's first value is `name` (so the file has a header).
    fn starts_with(&self, name: &str) -> bool {
        let first = self.rows.first().and_then(|(_, row)| row.as_ref().ok());
        first.and_then(|row| row.get(0)).map(normalize).as_deref() == Some(name)
    }

    /// Takes the first row as the header.
    fn header(&mut self) -> Columns {
        if self.rows.is_empty() {
            return Columns(Vec::new());
        }
        let names = match self.rows.remove(0).1 {
            Ok(row) => row.iter().map(normalize).collect(),
            Err(_) => Vec::new(),
        };
        Columns(names)
    }

    /// Reads each row with `link`, keeping its link or its refusal.
    fn each(
        self,
        reading: &mut Reading,
        mut link: impl FnMut(&Row<'_>) -> Result<(NewLink, u64), String>,
    ) {
        for (line, row) in self.rows {
            let record = row.and_then(|row| link(&Row(&row)));
            reading.take(line, record);
        }
    }
}

impl Columns {
    /// The position of the first of `names` that the header has.
    fn find(&self, names: &[&str]) -> Option<usize> {
        (names.iter()).find_map(|name| self.0.iter().position(|column| column == name))
    }

    /// The positions of the columns that make a link, or the error that names them.
    fn required(
        &self,
        url: &[&str],
        code: &[&str],
        what: &'static str,
    ) -> Result<[usize; 2], ReadError> {
        match (self.find(url), self.find(code)) {
            (Some(url), Some(code)) => Ok([url, code]),
            _ => Err(ReadError::Header(what)),
        }
    }
}

struct Row<'a>(&'a StringRecord);

impl Row<'_> {
    /// The trimmed value at `at`; empty when there is no such column.
    fn get(&self, at: Option<usize>) -> &str {
        at.and_then(|at| self.0.get(at)).unwrap_or_default().trim()
    }

    /// A count of visits; 0 when empty.
    fn count(&self, at: Option<usize>, field: &str) -> Result<u64, String> {
        match self.get(at) {
            "" => Ok(0),
            raw => raw
                .parse()
                .map_err(|_| format!("{field} `{raw}`: not a count")),
        }
    }
}

/// The CSV of Shlink's importer: `Long URL` and `Short code`, and `Title`, `Tags`
/// (separated by `|`) and `Domain` when there are, in any order.
pub(super) fn shlink(
    text: &str,
    owner: Option<&Owner>,
    now: OffsetDateTime,
    reading: &mut Reading,
) -> Result<(), ReadError> {
    let mut table = Table::read(text);
    let columns = table.header();
    let [long_url, short_code] =
        columns.required(&["longurl"], &["shortcode"], "`Long URL` and `Short code`")?;
    let title_at = columns.find(&["title"]);
    let (tags_at, domain_at) = (columns.find(&["tags"]), columns.find(&["domain"]));
    table.each(reading, |row| {
        let mut new = link(
            code(row.get(Some(short_code)))?,
            url(row.get(Some(long_url)))?,
            now,
            owner,
        );
        new.domain = domain(Some(row.get(domain_at)))?;
        new.tags = tags(row.get(tags_at).split('|'))?;
        new.options.title = title(row.get(title_at));
        Ok((new, 0))
    });
    Ok(())
}

/// YOURLS' `yourls_url` table as CSV: `keyword, url, title, timestamp, ip, clicks`, with
/// or without its header row (without one, in that order). The timestamp is taken as
/// UTC; the IP address is not kept.
pub(super) fn yourls(
    text: &str,
    owner: Option<&Owner>,
    now: OffsetDateTime,
    reading: &mut Reading,
) -> Result<(), ReadError> {
    let mut table = Table::read(text);
    let columns = if table.starts_with("keyword") {
        table.header()
    } else {
        let names = ["keyword", "url", "title", "timestamp", "ip", "clicks"];
        Columns(names.map(String::from).to_vec())
    };
    let [url_at, keyword] = columns.required(&["url"], &["keyword"], "`keyword` and `url`")?;
    let title_at = columns.find(&["title"]);
    let (timestamp, clicks) = (columns.find(&["timestamp"]), columns.find(&["clicks"]));
    table.each(reading, |row| {
        let created = created("timestamp", Some(row.get(timestamp)), now)?;
        let mut new = link(
            code(row.get(Some(keyword)))?,
            url(row.get(Some(url_at)))?,
            created,
            owner,
        );
        new.options.title = title(row.get(title_at));
        Ok((new, row.count(clicks, "clicks")?))
    });
    Ok(())
}

/// Bitly's CSV export: the target from `long_url` (or `Destination URL`, `Original
/// URL`), the code from the last path segment of `Bitlink` (or `Short link`, `Link`,
/// `id`: `bit.ly/3xYz` gives `3xYz`), and `Title`, `Created` (or `Created at`, `Date
/// created`), `Tags` (separated by `,`, `|` or `;`) and `Clicks` (or `Total clicks`,
/// `Engagements`) when there are.
pub(super) fn bitly(
    text: &str,
    owner: Option<&Owner>,
    now: OffsetDateTime,
    reading: &mut Reading,
) -> Result<(), ReadError> {
    let mut table = Table::read(text);
    let columns = table.header();
    let [long_url, bitlink] = columns.required(
        &["longurl", "destinationurl", "originalurl"],
        &["bitlink", "shortlink", "shorturl", "link", "id"],
        "`long_url` and `Bitlink`",
    )?;
    let title_at = columns.find(&["title"]);
    let created_at = columns.find(&["created", "createdat", "datecreated", "creationdate"]);
    let tags_at = columns.find(&["tags"]);
    let clicks = columns.find(&["clicks", "totalclicks", "engagements", "totalengagements"]);
    table.each(reading, |row| {
        let raw = row.get(Some(bitlink));
        let back_half = raw.trim_end_matches('/').rsplit('/').next().unwrap_or(raw);
        let created = created("created", Some(row.get(created_at)), now)?;
        let mut new = link(
            code(back_half)?,
            url(row.get(Some(long_url)))?,
            created,
            owner,
        );
        new.tags = tags(row.get(tags_at).split([',', '|', ';']))?;
        new.options.title = title(row.get(title_at));
        Ok((new, row.count(clicks, "clicks")?))
    });
    Ok(())
}
