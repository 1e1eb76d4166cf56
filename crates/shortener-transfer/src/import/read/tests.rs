//! The formats of `shortener import`, each read from a sample of the file it names.

use super::*;

const NOW: OffsetDateTime = OffsetDateTime::UNIX_EPOCH;
const TODAY: OffsetDateTime = time::macros::datetime!(2026-12-03 00:00 UTC);

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

/// A record's line, code, url and visits.
type Seen = (usize, String, String, u64);

/// Each record as [`Seen`], and the lines refused.
fn summary(source: Source, text: &str) -> (Vec<Seen>, Vec<usize>) {
    let reading = read(source, text.as_bytes(), None, TODAY).unwrap();
    let records = (reading.records.iter())
        .map(|r| {
            let link = &r.link;
            (
                r.line,
                link.code.as_str().to_owned(),
                link.url.as_str().to_owned(),
                r.visits,
            )
        })
        .collect();
    (records, reading.refused.iter().map(|r| r.line).collect())
}

#[test]
fn shlink_pages_read_with_their_meta_visits_and_lines() {
    // Two pages saved back to back, as `curl` of page 1 and page 2 would.
    let pages = r#"{"shortUrls": {"data": [
  {"shortCode": "12C18", "shortUrl": "https://s.test/12C18", "longUrl": "https://store.steampowered.com",
   "dateCreated": "2016-08-21T20:34:16+02:00", "visitsSummary": {"total": 328, "nonBots": 328, "bots": 0},
   "tags": ["games", "Tech"], "meta": {"validSince": "2017-01-21T00:00:00+02:00", "validUntil": "2030-01-01T00:00:00+00:00", "maxVisits": 500},
   "domain": null, "title": "Welcome to Steam", "crawlable": true, "forwardQuery": false},
  {"shortCode": "later", "longUrl": "https://a.example/", "meta": {"validSince": "2999-01-01T00:00:00+00:00"}}
], "pagination": {"currentPage": 1, "pagesCount": 2}}}
{"shortUrls": {"data": [
  {"shortCode": "old", "longUrl": "https://b.example/", "dateCreated": "2019-01-01T00:00:00+00:00", "visitsCount": 7, "domain": "go.example.org"},
  {"shortCode": "bad code", "longUrl": "https://c.example/"}
]}}"#;
    let (records, refused) = summary(Source::ShlinkJson, pages);
    assert_eq!(
        records,
        [
            (
                2,
                "12C18".into(),
                "https://store.steampowered.com/".into(),
                328
            ),
            (9, "old".into(), "https://b.example/".into(), 7),
        ]
    );
    assert_eq!(refused, [6, 10]);
    let reading = read(Source::ShlinkJson, pages.as_bytes(), None, TODAY).unwrap();
    let steam = &reading.records[0].link;
    assert_eq!(steam.max_visits, Some(500));
    assert_eq!(steam.expires_at.map(OffsetDateTime::year), Some(2030));
    assert_eq!(steam.created_at.unix_timestamp(), 1_471_804_456);
    assert_eq!(steam.tags.names().collect::<Vec<_>>(), ["games", "tech"]);
    assert_eq!(
        steam.options.title.as_ref().map(Title::as_str),
        Some("Welcome to Steam")
    );
    assert!(steam.options.crawlable);
    assert_eq!(steam.options.forward_query, Some(false));
    assert!(
        steam.domain.is_default(),
        "a null domain is the default one"
    );
    let old = &reading.records[1].link;
    assert_eq!(old.domain.as_str(), "go.example.org", "a domain is kept");
    assert!(reading.refused[0].reason.starts_with("meta.validSince"));
    assert!(
        read(
            Source::ShlinkJson,
            "{\"shortUrls\": [".as_bytes(),
            None,
            NOW
        )
        .is_err()
    );
}

#[test]
fn kutt_pages_read_and_a_link_behind_a_password_is_refused() {
    let page = r#"{"limit": 10, "skip": 0, "total": 3, "data": [
{"id": "5b9e", "address": "docs", "banned": false, "created_at": "2024-03-01T10:00:00.000Z", "link": "https://kutt.it/docs",
 "password": false, "target": "https://docs.example/guide", "description": "The guide", "updated_at": "2024-03-01T10:00:00.000Z",
 "visit_count": 12, "expire_in": "2031-05-05 10:00:00"},
{"id": "7c1f", "address": "secret", "target": "https://secret.example/", "password": true, "visit_count": 1},
{"id": "9d2a", "address": "plain", "target": "https://plain.example/", "visit_count": 0, "domain": "go.example.org"}
]}"#;
    let (records, refused) = summary(Source::Kutt, page);
    assert_eq!(
        records,
        [
            (2, "docs".into(), "https://docs.example/guide".into(), 12),
            (6, "plain".into(), "https://plain.example/".into(), 0),
        ]
    );
    assert_eq!(refused, [5]);
    let reading = read(Source::Kutt, page.as_bytes(), None, NOW).unwrap();
    let docs = &reading.records[0].link;
    assert_eq!(
        docs.options.title.as_ref().map(Title::as_str),
        Some("The guide")
    );
    assert_eq!(docs.expires_at.map(OffsetDateTime::year), Some(2031));
    assert!(reading.refused[0].reason.starts_with("password"));
    assert!(docs.domain.is_default());
    assert_eq!(reading.records[1].link.domain.as_str(), "go.example.org");
}

#[test]
fn a_yourls_table_reads_with_or_without_its_header() {
    let rows = "ozh,http://ozh.org/,Ozh RICHARD,2024-01-05 10:11:12,127.0.0.1,42\n\
                yourls,https://yourls.org/,\"YOURLS, Your Own URL Shortener\",2024-01-06 00:00:00,127.0.0.1,0\n\
                bad,not a url,,2024-01-06 00:00:00,127.0.0.1,1\n";
    for (text, first) in [
        (rows.to_owned(), 1),
        (format!("keyword,url,title,timestamp,ip,clicks\n{rows}"), 2),
    ] {
        let (records, refused) = summary(Source::Yourls, &text);
        assert_eq!(
            records,
            [
                (first, "ozh".into(), "http://ozh.org/".into(), 42),
                (first + 1, "yourls".into(), "https://yourls.org/".into(), 0),
            ]
        );
        assert_eq!(refused, [first + 2]);
        let reading = read(Source::Yourls, text.as_bytes(), None, NOW).unwrap();
        let ozh = &reading.records[0].link;
        assert_eq!(ozh.created_at.unix_timestamp(), 1_704_449_472);
        let title = reading.records[1].link.options.title.clone();
        assert_eq!(
            title.as_ref().map(Title::as_str),
            Some("YOURLS, Your Own URL Shortener")
        );
    }
}

#[test]
fn a_bitly_export_reads_its_back_halves() {
    let csv = "Title,Bitlink,long_url,Created,Tags,Clicks\n\
               Launch,bit.ly/3xYzAbc,https://launch.example/,2021-03-04T10:11:12+0000,\"launch, q4\",9\n\
               ,https://bit.ly/my-brand/,https://brand.example/,,,\n\
               Broken,bit.ly/ok2,https://ok.example/,yesterday,,\n";
    let (records, refused) = summary(Source::BitlyCsv, csv);
    assert_eq!(
        records,
        [
            (2, "3xYzAbc".into(), "https://launch.example/".into(), 9),
            (3, "my-brand".into(), "https://brand.example/".into(), 0),
        ]
    );
    assert_eq!(refused, [4]);
    let reading = read(Source::BitlyCsv, csv.as_bytes(), None, NOW).unwrap();
    let launch = &reading.records[0].link;
    assert_eq!(launch.created_at.unix_timestamp(), 1_614_852_672);
    assert_eq!(launch.tags.names().collect::<Vec<_>>(), ["launch", "q4"]);
    assert!(reading.refused[0].reason.starts_with("created `yesterday`"));
    let error = read(Source::BitlyCsv, "Title,Clicks\n".as_bytes(), None, NOW).unwrap_err();
    assert!(error.to_string().contains("long_url"), "{error}");
}

#[test]
fn a_foreign_title_is_cleaned_and_cut_rather_than_refused() {
    let long = format!("a\u{7}b{}", "x".repeat(600));
    let cut = title(&long).unwrap();
    assert_eq!(cut.as_str().chars().count(), MAX_TITLE_CHARS);
    assert!(cut.as_str().starts_with("a b"));
    assert_eq!(title("   "), None);
}

#[test]
fn nesting_that_the_input_chooses_is_refused_not_followed() {
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    for source in [Source::ShlinkJson, Source::Kutt] {
        let error = read(source, deep.as_bytes(), None, NOW).unwrap_err();
        assert!(format!("{error:#}").contains("nested deeper"), "{error:#}");
    }
    // Pages as they are saved, an array of pages, still read.
    let pages =
        r#"[{"shortUrls": {"data": [{"shortCode": "abc", "longUrl": "https://a.example/"}]}}]"#;
    let reading = read(Source::ShlinkJson, pages.as_bytes(), None, NOW).unwrap();
    assert_eq!(reading.records.len(), 1);
}

#[test]
fn an_ndjson_line_past_the_cap_is_refused_by_its_number_and_the_rest_read() {
    let good =
        r#"{"code": "abc", "url": "https://a.example/", "created_at": "2026-01-01T00:00:00Z"}"#;
    let long = format!(
        r#"{{"code": "big", "url": "https://a.example/{}", "created_at": "2026-01-01T00:00:00Z"}}"#,
        "x".repeat(MAX_LINE_BYTES)
    );
    let text = format!("{good}\n{long}\n\n{}\n", good.replace("abc", "def"));
    let reading = read(Source::Ndjson, text.as_bytes(), None, NOW).unwrap();
    let lines: Vec<usize> = reading.records.iter().map(|record| record.line).collect();
    assert_eq!(lines, [1, 4]);
    assert_eq!(reading.refused.len(), 1);
    assert_eq!(reading.refused[0].line, 2);
    assert!(
        reading.refused[0].reason.contains("longer than"),
        "{:?}",
        reading.refused
    );
    // Not UTF-8: that line refused, the others read.
    let mut bytes = format!("{good}\n").into_bytes();
    bytes.extend_from_slice(b"\xff\xfe\n");
    let reading = read(Source::Ndjson, bytes.as_slice(), None, NOW).unwrap();
    assert_eq!((reading.records.len(), reading.refused.len()), (1, 1));
}

#[test]
fn a_file_with_no_links_at_all_is_an_error_not_an_empty_import() {
    for (source, text) in [
        (Source::Ndjson, ""),
        (Source::Ndjson, "\n\n"),
        (Source::ShlinkJson, "[]"),
        (Source::Kutt, "{\"data\": []}"),
    ] {
        let error = read(source, text.as_bytes(), None, NOW).unwrap_err();
        assert!(
            error.to_string().contains("no links"),
            "{source:?} {text:?}: {error}"
        );
    }
}
