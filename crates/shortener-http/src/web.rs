//! The web page at `/`: one HTML file, one stylesheet and the console's scripts (ES
//! modules) from `web/`, embedded at compile time and served with strict security headers.
//!
//! The page talks to the public API only (it makes links, and with an API key manages
//! them, their tags, visits and keys); it has no endpoint of its own. Its
//! Content-Security-Policy allows scripts, styles and requests from this origin only: no
//! inline script, no remote origin, no framing.

use poem::http::{HeaderValue, Method, StatusCode, header};
use poem::{Endpoint, IntoResponse, Request, Response};

use crate::domains::Domains;

const INDEX_HTML: &str = include_str!("../web/index.html");

/// Every file under `/assets/`, by its path there, with its content type; any other
/// name is a 404.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.css", CSS, include_str!("../web/app.css")),
    ("app.js", JS, include_str!("../web/app.js")),
    ("console/api.js", JS, include_str!("../web/console/api.js")),
    (
        "console/charts.js",
        JS,
        include_str!("../web/console/charts.js"),
    ),
    ("console/dom.js", JS, include_str!("../web/console/dom.js")),
    (
        "console/domains.js",
        JS,
        include_str!("../web/console/domains.js"),
    ),
    (
        "console/keys.js",
        JS,
        include_str!("../web/console/keys.js"),
    ),
    (
        "console/link.js",
        JS,
        include_str!("../web/console/link.js"),
    ),
    (
        "console/links.js",
        JS,
        include_str!("../web/console/links.js"),
    ),
    (
        "console/main.js",
        JS,
        include_str!("../web/console/main.js"),
    ),
    (
        "console/overview.js",
        JS,
        include_str!("../web/console/overview.js"),
    ),
    (
        "console/rules.js",
        JS,
        include_str!("../web/console/rules.js"),
    ),
    (
        "console/tags.js",
        JS,
        include_str!("../web/console/tags.js"),
    ),
    (
        "console/visits.js",
        JS,
        include_str!("../web/console/visits.js"),
    ),
];
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// Everything from this origin, nothing inline, nothing remote.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; \
    form-action 'self'; frame-ancestors 'none'";

/// Serves `GET /` (the page, or the redirect of the domain's `root_redirect`) and
/// `GET /assets/{file}` (its stylesheet and script), and passes every other request to
/// the routes it wraps.
#[derive(Debug)]
pub struct WithPage<E> {
    pub inner: E,
    /// Whose `root_redirect` sends `/` elsewhere, by the request's `Host`.
    pub domains: Domains,
}

impl<E: Endpoint> Endpoint for WithPage<E> {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        let path = request.uri().path();
        let page = if path == "/" {
            let site = (self.domains).by_host(crate::domains::request_host(&request));
            Some(match site.and_then(|site| site.root_redirect.as_ref()) {
                Some(url) => Response::builder()
                    .status(StatusCode::FOUND)
                    .header(header::LOCATION, url.as_str())
                    .header(header::CACHE_CONTROL, "private, max-age=0")
                    .finish(),
                None => page(INDEX_HTML, "text/html; charset=utf-8"),
            })
        } else {
            path.strip_prefix("/assets/").map(asset)
        };
        match page {
            Some(_) if !matches!(*request.method(), Method::GET | Method::HEAD) => {
                let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
                Ok(response)
            }
            Some(page) => Ok(page),
            None => (self.inner.call(request).await).map(IntoResponse::into_response),
        }
    }
}

fn asset(file: &str) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, content_type, body)) => page(body, content_type),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn page(body: &'static str, content_type: &'static str) -> Response {
    let mut response = Response::builder()
        .header(header::CONTENT_TYPE, content_type)
        // Embedded in the binary: a new release may change them, so revalidate.
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_no_inline_script_or_style_and_no_remote_origin() {
        assert!(!INDEX_HTML.contains("<script>"), "inline script");
        assert!(!INDEX_HTML.contains("style="), "inline style");
        let handler = INDEX_HTML.split(" on").skip(1).any(|rest| {
            let name: String = rest.chars().take_while(char::is_ascii_lowercase).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(!handler, "an inline event handler");
        let files = ASSETS.iter().map(|(name, _, body)| (*name, *body));
        for (name, file) in files.chain([("index.html", INDEX_HTML)]) {
            // The SVG namespace of the charts is a name, never fetched.
            let file = file.replace("http://www.w3.org/2000/svg", "");
            assert!(!file.contains("http://"), "a remote origin in {name}");
            assert!(
                !file.contains("https://") || name == "index.html",
                "a remote origin in {name}"
            );
        }
        // The budget: the console's assets, uncompressed, under 150 KB in all.
        let total: usize = ASSETS.iter().map(|(_, _, body)| body.len()).sum();
        assert!(INDEX_HTML.len() + total < 150_000);
    }

    #[test]
    fn every_asset_is_served_with_its_type_and_other_names_are_404() {
        for (name, content_type, body) in ASSETS {
            let response = asset(name);
            assert_eq!(response.status(), StatusCode::OK, "{name}");
            assert_eq!(response.headers()[header::CONTENT_TYPE], *content_type);
            assert!(!body.is_empty(), "{name}");
        }
        for name in [
            "",
            "console/",
            "console/nope.js",
            "../Cargo.toml",
            "console/../app.js",
        ] {
            assert_eq!(asset(name).status(), StatusCode::NOT_FOUND, "{name}");
        }
    }

    #[test]
    fn every_module_the_scripts_import_is_served() {
        for (name, _, body) in ASSETS {
            let dir = name.rsplit_once('/').map_or("", |(dir, _)| dir);
            for line in body.lines().filter(|line| line.starts_with("import ")) {
                let path = line.split('"').nth(1).expect("an import's path");
                let path = path.strip_prefix("./").expect("a relative import");
                let full = if dir.is_empty() {
                    path.to_owned()
                } else {
                    format!("{dir}/{path}")
                };
                assert!(
                    ASSETS.iter().any(|(other, _, _)| *other == full),
                    "{name} imports {full}, which is not served"
                );
            }
        }
    }

    #[test]
    fn every_field_has_a_label_and_an_alert() {
        for field in [
            "url",
            "domain",
            "alias",
            "expires_at",
            "max_visits",
            "api_key",
        ] {
            assert!(
                INDEX_HTML.contains(&format!("<label for=\"{field}\"")),
                "{field}"
            );
            assert!(
                INDEX_HTML.contains(&format!("id=\"{field}-error\" role=\"alert\"")),
                "{field}"
            );
        }
    }
}
