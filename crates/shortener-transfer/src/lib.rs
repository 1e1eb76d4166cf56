//! Links in and out of storage as files, over the repository port:
//!
//! - [`export`]: every link a caller reaches as NDJSON or CSV, one page of the keyset walk
//!   at a time ([`export::page`], which the HTTP API streams; [`export::write`], which the
//!   CLI runs), CSV cells safe to open in a spreadsheet;
//! - [`import`]: our NDJSON and the files of the shorteners people leave (Shlink, YOURLS,
//!   Kutt, Bitly) read into records ([`import::read`]), held to the API's rules
//!   ([`import::Rules`]), and written 5 000 to a transaction ([`import::write`]).
//!   `import/read.rs` refuses each bad line by its number; `read/table.rs` reads the CSV formats, `read/pages.rs` the JSON ones.
//!   `import/rules.rs` holds every record to what a create through the API meets, targets included;
//! - [`shlink_rules`]: Shlink's redirect rules and ours, both ways (the import and the
//!   Shlink API of `shortener-http` read them through it).
//!
//! The caller gives a repository, and for an import the domain resolver and the target rules.
//!
//! Not here: opening a database by its URL (`shortener-backends`), the command line and
//! its progress bar (`shortener-server`), the HTTP operation (`shortener-http`).

pub mod export;
pub mod import;
pub mod shlink_rules;
