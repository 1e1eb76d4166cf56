//! The JSON formats: pages of Shlink's `GET /rest/v3/short-urls` and of Kutt's
//! `GET /api/v2/links`, saved to a file.
//!
//! A file holds one or more JSON values one after another (pages saved back to back), or
//! an array of them; a page's links are under `shortUrls.data` (Shlink) or `data` (Kutt),
//! and a bare link object or an array of links reads too. A link's line is where its
//! object starts.

use std::collections::HashMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use shortener_core::{NewLink, Owner};
use time::OffsetDateTime;

use super::ReadError;
use super::{code, created, domain, link, optional_time, tags, title, url};
use crate::import::Reading;

/// Every link object of `text`, with its line, in file order.
fn links(text: &str) -> Result<Vec<(usize, &RawValue)>, ReadError> {
    let mut found = Vec::new();
    for value in serde_json::Deserializer::from_str(text).into_iter::<&RawValue>() {
        walk(value?, &mut found, 0)?;
    }
    // Objects come in file order, so lines are counted once over the whole text.
    let (mut line, mut counted) = (1, 0);
    Ok(found
        .into_iter()
        .map(|raw| {
            let at = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
            line += text
                .get(counted..at)
                .map_or(0, |gap| gap.matches('\n').count());
            counted = at.max(counted);
            (line, raw)
        })
        .collect())
}

/// How deep pages and links may be nested: an array of pages (1), a page (2), its
/// `shortUrls` (3), their `data` (4), the array of links (5), with room to spare. The
/// walk recurses once per level, so the input must not choose how deep.
const MAX_DEPTH: usize = 8;

fn walk<'a>(
    raw: &'a RawValue,
    found: &mut Vec<&'a RawValue>,
    depth: usize,
) -> Result<(), ReadError> {
    let nested = || {
        if depth >= MAX_DEPTH {
            return Err(ReadError::TooDeep(MAX_DEPTH));
        }
        Ok(())
    };
    match raw.get().as_bytes().first() {
        Some(b'[') => {
            nested()?;
            for item in serde_json::from_str::<Vec<&RawValue>>(raw.get())? {
                walk(item, found, depth + 1)?;
            }
        }
        Some(b'{') => {
            let object: HashMap<String, &RawValue> = serde_json::from_str(raw.get())?;
            match object.get("shortUrls").or_else(|| object.get("data")) {
                Some(inner) => {
                    nested()?;
                    walk(inner, found, depth + 1)?;
                }
                None => found.push(raw),
            }
        }
        // Anything else is refused as a link, by its line.
        _ => found.push(raw),
    }
    Ok(())
}

/// Reads each link object of `text` as `T`, then into a link with `link`.
fn each<T: DeserializeOwned>(
    text: &str,
    reading: &mut Reading,
    mut link: impl FnMut(T) -> Result<(NewLink, u64), String>,
) -> Result<(), ReadError> {
    for (line, raw) in links(text)? {
        let record = serde_json::from_str::<T>(raw.get())
            .map_err(|e| e.to_string())
            .and_then(&mut link);
        reading.take(line, record);
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShlinkUrl {
    short_code: String,
    long_url: String,
    date_created: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    title: Option<String>,
    #[serde(default)]
    crawlable: bool,
    forward_query: Option<bool>,
    meta: Option<ShlinkMeta>,
    /// Shlink 3 and later.
    visits_summary: Option<ShlinkVisits>,
    /// Shlink 2.
    visits_count: Option<u64>,
    domain: Option<String>,
    /// Not in Shlink's listing: a file that adds each link's rules (from
    /// `GET /rest/v3/short-urls/{shortCode}/redirect-rules`) brings them.
    #[serde(default)]
    redirect_rules: Vec<crate::shlink_rules::ShlinkRule>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ShlinkMeta {
    valid_since: Option<String>,
    valid_until: Option<String>,
    max_visits: Option<u64>,
}

#[derive(Deserialize)]
struct ShlinkVisits {
    total: u64,
}

/// Shlink's short URLs: code, target, creation, tags, title, `crawlable`, `forwardQuery`,
/// `meta.validUntil` (the expiry), `meta.maxVisits`, the visit total, and the
/// `redirectRules` a file adds to a link. A link whose
/// `meta.validSince` is still ahead is refused: it would redirect at once here.
pub(super) fn shlink(
    text: &str,
    owner: Option<&Owner>,
    now: OffsetDateTime,
    reading: &mut Reading,
) -> Result<(), ReadError> {
    each(text, reading, |short: ShlinkUrl| {
        let meta = short.meta.unwrap_or_default();
        let since = optional_time("meta.validSince", meta.valid_since.as_deref())?;
        if let Some(since) = since.filter(|since| *since > now) {
            return Err(format!(
                "meta.validSince {since}: a link that starts later is not supported"
            ));
        }
        let created_at = created("dateCreated", short.date_created.as_deref(), now)?;
        let mut link = link(
            code(&short.short_code)?,
            url(&short.long_url)?,
            created_at,
            owner,
        );
        link.domain = domain(short.domain.as_deref())?;
        link.expires_at = optional_time("meta.validUntil", meta.valid_until.as_deref())?;
        link.max_visits = meta.max_visits;
        link.tags = tags(short.tags.iter().map(String::as_str))?;
        link.options.forward_query = short.forward_query;
        link.options.title = short.title.as_deref().and_then(title);
        link.options.crawlable = short.crawlable;
        if !short.redirect_rules.is_empty() {
            link.options.rules = crate::shlink_rules::rules(short.redirect_rules)?;
        }
        let visits = short.visits_summary.map(|v| v.total).or(short.visits_count);
        Ok((link, visits.unwrap_or(0)))
    })
}

#[derive(Deserialize)]
struct KuttLink {
    address: String,
    target: String,
    description: Option<String>,
    created_at: Option<String>,
    expire_in: Option<String>,
    #[serde(default)]
    visit_count: u64,
    #[serde(default)]
    password: bool,
    domain: Option<String>,
}

/// Kutt's links: `address` (the code), `target`, `description` (the title),
/// `created_at`, `expire_in` (the expiry) and `visit_count`. A link behind a password is
/// refused, since this service would redirect it to anyone.
pub(super) fn kutt(
    text: &str,
    owner: Option<&Owner>,
    now: OffsetDateTime,
    reading: &mut Reading,
) -> Result<(), ReadError> {
    each(text, reading, |kutt: KuttLink| {
        if kutt.password {
            return Err("password: a link behind a password is not supported".to_owned());
        }
        let created_at = created("created_at", kutt.created_at.as_deref(), now)?;
        let mut link = link(code(&kutt.address)?, url(&kutt.target)?, created_at, owner);
        link.domain = domain(kutt.domain.as_deref())?;
        link.expires_at = optional_time("expire_in", kutt.expire_in.as_deref())?;
        link.options.title = kutt.description.as_deref().and_then(title);
        Ok((link, kutt.visit_count))
    })
}
