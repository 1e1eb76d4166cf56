//! `/docs`: Swagger UI, served with a Content-Security-Policy that it runs under.
//!
//! Swagger UI is one HTML page with its scripts inline (poem-openapi builds it). The page
//! shares its origin with the web page, which keeps an API key in `sessionStorage`, so a
//! script injected here could read it. The policy allows exactly the inline scripts of
//! this page, by their SHA-256 (computed once, from the page as built), requests to this
//! origin only, and no framing (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for
//! browsers that predate it). Styles may be inline: Swagger UI sets `style` attributes.

use base64::Engine as _;
use poem::http::{HeaderValue, header};
use poem::{Endpoint, Request, Response};
use sha2::{Digest, Sha256};

/// The Swagger UI page and its policy.
#[derive(Debug)]
pub struct Docs {
    html: String,
    policy: HeaderValue,
}

impl Docs {
    /// Serves `html` (poem-openapi's Swagger UI page) under a policy made for it.
    pub fn new(html: String) -> Self {
        let policy = policy_for(&html);
        Self {
            policy: HeaderValue::from_str(&policy)
                .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'")),
            html,
        }
    }
}

/// A policy that allows the inline scripts of `html` by their hashes and nothing else.
fn policy_for(html: &str) -> String {
    let mut hashes = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<script") {
        let Some(open_end) = rest[start..].find('>') else {
            break;
        };
        let body_start = start + open_end + 1;
        let Some(length) = rest[body_start..].find("</script>") else {
            break;
        };
        let script = &rest[body_start..body_start + length];
        let digest = Sha256::digest(script.as_bytes());
        hashes.push_str(&format!(
            " 'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(digest)
        ));
        rest = &rest[body_start + length..];
    }
    format!(
        "default-src 'none'; script-src{hashes}; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; font-src 'self' data:; connect-src 'self'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

impl Endpoint for Docs {
    type Output = Response;

    async fn call(&self, _request: Request) -> poem::Result<Response> {
        Ok(Response::builder()
            .content_type("text/html; charset=utf-8")
            .header(header::CONTENT_SECURITY_POLICY, self.policy.clone())
            .header(header::X_FRAME_OPTIONS, "DENY")
            .header(header::REFERRER_POLICY, "no-referrer")
            .body(self.html.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::policy_for;

    #[test]
    fn the_policy_names_each_inline_script_by_its_hash() {
        let policy = policy_for("<script charset=\"UTF-8\">a()</script><p><script>b()</script>");
        // printf 'a()' | openssl dgst -sha256 -binary | base64
        assert!(
            policy.contains("'sha256-qVpDBgj7bpq5hMAcGp3AOc79J3Y1Z4HvySTwKrWDoy4='"),
            "{policy}"
        );
        assert_eq!(policy.matches("'sha256-").count(), 2);
        assert!(policy.contains("frame-ancestors 'none'"));
        assert!(!policy.contains("unsafe-eval"));
    }
}
