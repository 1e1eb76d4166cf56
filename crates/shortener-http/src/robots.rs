//! `/robots.txt`: crawlers follow no link of this service but those marked `crawlable`,
//! each domain's own (by the request's `Host`).
//! A short link is a pointer, not a page; indexing it would only duplicate (or hide) the
//! target's own entry, unless its owner wants it found.

use std::sync::Arc;

use poem::web::Data;
use poem::{Request, Response};
use shortener_core::{LinkRepository as _, ShortCode};

use crate::state::AppState;

/// The most crawlable links listed. Google reads the first 500 KiB of a robots.txt; this
/// many lines of the longest codes (64 characters) stay well under it.
pub const MAX_CRAWLABLE: usize = 5_000;

#[poem::handler]
pub async fn robots(request: &Request, state: Data<&Arc<AppState>>) -> Response {
    let response = Response::builder().content_type("text/plain; charset=utf-8");
    let Some(site) = state
        .serving
        .domains
        .by_host(crate::domains::request_host(request))
    else {
        // A host this service does not serve has nothing to crawl.
        return response.header("cache-control", "no-store").body(text(&[]));
    };
    let repository = state.shortener.repository();
    match repository.crawlable(&site.domain, MAX_CRAWLABLE).await {
        Ok(codes) => response
            .header("cache-control", "public, max-age=300")
            .body(text(&codes)),
        Err(error) => {
            // Keeping crawlers off everything is always safe; kept by no cache.
            tracing::warn!(%error, "robots.txt lists no crawlable link: storage failed");
            response.header("cache-control", "no-store").body(text(&[]))
        }
    }
}

/// Each crawlable link allowed by its exact path (`$` ends the match for the crawlers that
/// read it, Google's and Bing's; the others, reading it as a character, allow less, never
/// more), then everything else disallowed: the most specific rule wins.
fn text(codes: &[ShortCode]) -> String {
    let mut text = "User-agent: *\n".to_owned();
    for code in codes {
        text.push_str(&format!("Allow: /{code}$\n"));
    }
    text + "Disallow: /\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawlable_links_are_allowed_by_their_exact_path() {
        assert_eq!(text(&[]), "User-agent: *\nDisallow: /\n");
        let codes = ["abc", "x-1"].map(|code| ShortCode::parse(code).unwrap());
        assert_eq!(
            text(&codes),
            "User-agent: *\nAllow: /abc$\nAllow: /x-1$\nDisallow: /\n"
        );
    }
}
