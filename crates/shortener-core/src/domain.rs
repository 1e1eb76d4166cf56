//! Domain newtypes: a value of these types has passed validation. The [`crate::Link`] they
//! make up is in `link.rs`.

use std::fmt;

/// Why a piece of user input was refused; the message names the rule that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// Longest accepted target URL, in bytes.
pub const MAX_URL_BYTES: usize = 8192;

/// Paths that the server routes itself, so they can never be a code or an alias.
pub const RESERVED: &[&str] = &[
    "api",
    "docs",
    "openapi.json",
    "healthz",
    "readyz",
    "metrics",
    "assets",
    "robots.txt",
];

/// A short code: 1 to 64 characters of `[A-Za-z0-9_-]`.
///
/// Generated codes and aliases are both codes; this type is also what an incoming
/// redirect path is parsed into, so that odd characters are refused before any lookup.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShortCode(String);

impl ShortCode {
    /// Parses a code from a path segment.
    ///
    /// # Errors
    /// When the code is empty, longer than 64 characters or has a character outside
    /// `[A-Za-z0-9_-]`.
    pub fn parse(raw: &str) -> Result<Self, ParseError> {
        match Self::fault(raw) {
            None => Ok(Self(raw.to_owned())),
            Some(fault) => Err(ParseError(fault.into())),
        }
    }

    /// Whether `raw` is a code: what [`ShortCode::parse`] accepts, without allocating.
    pub fn is_valid(raw: &str) -> bool {
        Self::fault(raw).is_none()
    }

    fn fault(raw: &str) -> Option<&'static str> {
        if raw.is_empty() || raw.len() > 64 {
            Some("must be 1 to 64 characters long")
        } else if !raw.bytes().all(is_code_byte) {
            Some("may only contain A-Z, a-z, 0-9, '_' and '-'")
        } else {
            None
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ShortCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_code_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// A code chosen by the user: 3 to 64 of `[A-Za-z0-9_-]`, and not a reserved path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Alias(ShortCode);

impl Alias {
    /// # Errors
    /// When the alias is shorter than 3 or longer than 64 characters, has another
    /// character than `[A-Za-z0-9_-]`, or is one of the reserved paths.
    pub fn parse(raw: &str) -> Result<Self, ParseError> {
        if raw.len() < 3 || raw.len() > 64 {
            return Err(ParseError("must be 3 to 64 characters long".into()));
        }
        let code = ShortCode::parse(raw)?;
        if RESERVED
            .iter()
            .any(|reserved| reserved.eq_ignore_ascii_case(raw))
        {
            return Err(ParseError(format!("'{raw}' is a reserved path")));
        }
        Ok(Self(code))
    }

    pub fn into_code(self) -> ShortCode {
        self.0
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// An absolute `http` or `https` URL with a host, no user-info, no control characters,
/// at most `MAX_URL_BYTES` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetUrl(String);

impl TargetUrl {
    /// # Errors
    /// When any of the rules in the type's description is broken.
    pub fn parse(raw: &str) -> Result<Self, ParseError> {
        if raw.is_empty() {
            return Err(ParseError("must not be empty".into()));
        }
        if raw.len() > MAX_URL_BYTES {
            return Err(ParseError(format!("must be at most {MAX_URL_BYTES} bytes")));
        }
        // Checked on the raw text: the URL parser silently strips tabs and newlines.
        if raw.chars().any(|c| c.is_control() || c == ' ') {
            return Err(ParseError(
                "must not contain spaces or control characters".into(),
            ));
        }
        let parsed = url::Url::parse(raw)
            .map_err(|e| ParseError(format!("must be an absolute URL ({e})")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ParseError(format!(
                "scheme '{}' is not allowed, only http and https",
                parsed.scheme()
            )));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(ParseError("must have a host".into()));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(ParseError("must not contain user-info".into()));
        }
        // Keep the serialized form: it is what every client will be redirected to.
        let normalized: String = parsed.into();
        if normalized.len() > MAX_URL_BYTES {
            return Err(ParseError(format!("must be at most {MAX_URL_BYTES} bytes")));
        }
        Ok(Self(normalized))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The target with a request's `query` merged into its own (see `merge_query`).
    pub fn with_query(&self, query: &str) -> String {
        merge_query(&self.0, query)
    }
}

/// The target `url` with `query` (a request's query string, as sent) merged into its own:
/// the target's parameters first, but for those whose name the request also has, then
/// the request's; the fragment stays last. Names and values are kept byte for byte
/// (both are already URL-encoded), and empty pieces (`a&&b`) are dropped.
pub(crate) fn merge_query(url: &str, query: &str) -> String {
    let requested: Vec<&str> = query.split('&').filter(|pair| !pair.is_empty()).collect();
    if requested.is_empty() {
        return url.to_owned();
    }
    let (rest, fragment) = match url.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (url, None),
    };
    let (base, own) = rest.split_once('?').unwrap_or((rest, ""));
    let kept = (own.split('&'))
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let own = parameter_name(pair);
            !requested.iter().any(|asked| parameter_name(asked) == own)
        });
    let merged: Vec<&str> = kept.chain(requested.iter().copied()).collect();
    let mut url = format!("{base}?{}", merged.join("&"));
    if let Some(fragment) = fragment {
        url.push('#');
        url.push_str(fragment);
    }
    url
}

/// The name of a `name=value` query parameter (all of it when it has no `=`).
fn parameter_name(pair: &str) -> &str {
    pair.split_once('=').map_or(pair, |(name, _)| name)
}

/// Reads a persisted code back; adapters call it on rows written by this program.
impl TryFrom<String> for ShortCode {
    type Error = ParseError;
    fn try_from(value: String) -> Result<Self, ParseError> {
        Self::parse(&value)
    }
}

/// The name of the API key that created a link. Links made without a key have none.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner(String);

impl Owner {
    /// Parses a key name: 1 to 64 characters of `[A-Za-z0-9_.-]`.
    ///
    /// # Errors
    /// When the name is empty, too long, or has another character.
    pub fn parse(raw: &str) -> Result<Self, ParseError> {
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
        if raw.is_empty() || raw.len() > 64 || !raw.bytes().all(allowed) {
            return Err(ParseError(
                "must be 1 to 64 characters of A-Z, a-z, 0-9, '_', '-' and '.'".into(),
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    //! The domain types' rules, one test per rule.

    use super::*;

    #[test]
    fn a_request_s_query_is_merged_into_the_target_s_and_wins() {
        let merged = |target: &str, query: &str| {
            merge_query(TargetUrl::parse(target).unwrap().as_str(), query)
        };
        assert_eq!(
            merged("https://example.com/p", "utm=x&b=2"),
            "https://example.com/p?utm=x&b=2"
        );
        assert_eq!(
            merged("https://example.com/p?a=1&b=1&c#top", "b=2&d=%20"),
            "https://example.com/p?a=1&c&b=2&d=%20#top"
        );
        assert_eq!(
            merged("https://example.com/p?a=1", "&&"),
            "https://example.com/p?a=1"
        );
        assert_eq!(
            merged("https://example.com/p?a=1", ""),
            "https://example.com/p?a=1"
        );
        assert_eq!(
            merged("https://example.com/p?a=1", "a"),
            "https://example.com/p?a"
        );
    }

    #[test]
    fn urls_are_validated() {
        for ok in [
            "https://example.com/a",
            "http://x.y:8080/p?q=1#f",
            "https://[::1]/",
        ] {
            assert!(TargetUrl::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,hi",
            "ftp://example.com/",
            "/relative",
            "example.com",
            "https://user:pw@example.com/",
            "https://user@example.com/",
            "https://exa\tmple.com/",
            "https://example.com/\n",
            "",
            "http://",
            "file:///etc/passwd",
        ] {
            assert!(TargetUrl::parse(bad).is_err(), "{bad:?}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert!(TargetUrl::parse(&long).is_err());
    }

    #[test]
    fn aliases_are_validated() {
        assert!(Alias::parse("abc").is_ok());
        assert!(Alias::parse("my-link_2").is_ok());
        for bad in [
            "ab",
            "a b",
            "héllo",
            "docs",
            "API",
            "metrics",
            "x/y",
            &"a".repeat(65),
        ] {
            assert!(Alias::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn codes_reject_odd_characters() {
        assert!(ShortCode::parse("aZ09_-").is_ok());
        for bad in ["", "a.b", "%2e", "a/b", "ä", &"x".repeat(65)] {
            assert!(ShortCode::parse(bad).is_err(), "{bad}");
        }
    }
}
