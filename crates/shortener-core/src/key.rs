//! Where a link lives: its [`Domain`] (the host its short URL is served on) and its code,
//! together a [`LinkKey`]. Codes are unique per domain, so the same code may lead to two
//! targets on two domains; every lookup, edit and visit names both.

use std::fmt;

use crate::domain::{ParseError, ShortCode};

/// The host a link is served on: the service's default domain (its `public_url`), or one
/// of the domains it is configured to serve, as a lower-case host name with an optional
/// port.
///
/// The default domain is stored as the empty text, so that a change of `public_url`
/// keeps every link on it; every other domain as its host name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Domain(String);

impl Domain {
    /// Longest accepted host name, in bytes (DNS's limit, plus a port).
    pub const MAX_BYTES: usize = 253 + 6;

    /// Parses a host name (`go.example.org`, `localhost:8080`), ASCII case ignored.
    ///
    /// # Errors
    /// When the host is empty or too long, has a character other than letters, digits,
    /// `-` and `.`, an empty label, or a port that is not a number.
    pub fn parse(raw: &str) -> Result<Self, ParseError> {
        let refuse = |why: &str| Err(ParseError(format!("must be a host name ({why})")));
        if raw.is_empty() || raw.len() > Self::MAX_BYTES {
            return refuse("1 to 253 characters");
        }
        let (name, port) = match raw.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (raw, None),
        };
        if port.is_some_and(|port| port.parse::<u16>().is_err()) {
            return refuse("a port is a number up to 65535");
        }
        let label_ok = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && (label.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if !name.split('.').all(label_ok) {
            return refuse("letters, digits, '-' and '.', no empty label");
        }
        Ok(Self(raw.to_ascii_lowercase()))
    }

    /// Reads a stored domain back: the empty text is the default domain.
    ///
    /// # Errors
    /// When the text is neither empty nor a host name.
    pub fn from_stored(raw: &str) -> Result<Self, ParseError> {
        if raw.is_empty() {
            Ok(Self::default())
        } else {
            Self::parse(raw)
        }
    }

    /// The host name; the empty text for the default domain (how it is stored).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_default(&self) -> bool {
        self.0.is_empty()
    }
}

/// A link's identity: its domain and its code.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkKey {
    pub domain: Domain,
    pub code: ShortCode,
}

impl LinkKey {
    pub fn new(domain: Domain, code: ShortCode) -> Self {
        Self { domain, code }
    }

    /// The code on the default domain.
    pub fn on_default(code: ShortCode) -> Self {
        Self::new(Domain::default(), code)
    }

    /// Reads back what `Display` wrote (`code`, or `host/code`): how nodes name a link to
    /// each other.
    ///
    /// # Errors
    /// When the host or the code is not valid.
    pub fn parse(raw: &str) -> Result<Self, ParseError> {
        match raw.split_once('/') {
            Some((host, code)) => Ok(Self::new(Domain::parse(host)?, ShortCode::parse(code)?)),
            None => Ok(Self::on_default(ShortCode::parse(raw)?)),
        }
    }
}

/// `code` on the default domain, `host/code` on another one.
impl fmt::Display for LinkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.domain.is_default() {
            write!(f, "{}", self.code)
        } else {
            write!(f, "{}/{}", self.domain.as_str(), self.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_lower_case_names_with_an_optional_port() {
        assert_eq!(
            Domain::parse("Go.Example.ORG").unwrap().as_str(),
            "go.example.org"
        );
        assert_eq!(
            Domain::parse("localhost:8080").unwrap().as_str(),
            "localhost:8080"
        );
        assert_eq!(Domain::parse("127.0.0.1").unwrap().as_str(), "127.0.0.1");
        for bad in [
            "",
            "a..b",
            ".a",
            "a b",
            "a:b",
            "a:70000",
            "ä.de",
            "a/b",
            &"a".repeat(64),
        ] {
            assert!(Domain::parse(bad).is_err(), "{bad}");
        }
        assert!(Domain::from_stored("").unwrap().is_default());
        assert!(!Domain::from_stored("go.example.org").unwrap().is_default());
    }

    #[test]
    fn keys_show_their_domain_unless_it_is_the_default() {
        let code = ShortCode::parse("abc").unwrap();
        assert_eq!(LinkKey::on_default(code.clone()).to_string(), "abc");
        let other = LinkKey::new(Domain::parse("go.example.org").unwrap(), code);
        assert_eq!(other.to_string(), "go.example.org/abc");
        assert_eq!(LinkKey::parse("go.example.org/abc").unwrap(), other);
        assert_eq!(LinkKey::parse("abc").unwrap().domain, Domain::default());
        assert!(LinkKey::parse("/abc").is_err());
        assert!(LinkKey::parse("a.b/").is_err());
    }
}
