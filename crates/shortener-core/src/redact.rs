//! [`RedactedUrl`]: a connection URL that never shows its secrets, the one place every
//! crate hides a password when a URL is logged, debug-printed or put in an error.

use std::fmt;

/// A connection URL (database, Redis) whose `Display` and `Debug` hide its password and
/// the values of secret query parameters (`?password=`, `?sslpassword=`, ...) behind `***`.
/// A URL that does not parse is not shown at all, since where its secret sits is unknown.
/// [`RedactedUrl::expose`] gives the URL itself, for the one place that connects with it.
#[derive(Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct RedactedUrl(String);

impl RedactedUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    /// The URL with its secrets, to connect with; never to log.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for RedactedUrl {
    fn from(url: String) -> Self {
        Self(url)
    }
}

impl From<&str> for RedactedUrl {
    fn from(url: &str) -> Self {
        Self(url.to_owned())
    }
}

impl fmt::Display for RedactedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

impl fmt::Debug for RedactedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", redact_url(&self.0))
    }
}

/// Query parameters whose value is a secret (compared without case).
const SECRET_PARAMETERS: [&str; 7] = [
    "password",
    "pass",
    "pwd",
    "secret",
    "token",
    "sslpassword",
    "auth",
];

/// `url` with its password and the values of secret query parameters (`?password=`,
/// `?sslpassword=`, ...) replaced by `***`. A URL that does not parse is not shown at
/// all, since where its secret sits is unknown.
fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return "<unparsable url>".to_owned();
    };
    if parsed.password().is_some() {
        // Cannot fail: a URL with a password has a host.
        let _ = parsed.set_password(Some("***"));
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(name, value)| {
                let secret = SECRET_PARAMETERS
                    .iter()
                    .any(|secret| name.eq_ignore_ascii_case(secret));
                let value = if secret { "***".into() } else { value };
                (name.into_owned(), value.into_owned())
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_secret_parameters_are_hidden() {
        assert_eq!(
            redact_url("postgres://app:hunter2@db:5432/links"),
            "postgres://app:***@db:5432/links"
        );
        assert_eq!(
            redact_url("redis://:hunter2@10.0.0.1:6379/0"),
            "redis://:***@10.0.0.1:6379/0"
        );
        assert_eq!(
            redact_url("postgres://app@db/links?sslmode=require&Password=hunter2&sslpassword=x"),
            "postgres://app@db/links?sslmode=require&Password=***&sslpassword=***"
        );
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        assert_eq!(redact_url("sqlite://shortener.db"), "sqlite://shortener.db");
        assert_eq!(redact_url("not a url hunter2"), "<unparsable url>");
    }

    #[test]
    fn display_and_debug_hide_the_password_and_expose_keeps_it() {
        let url = RedactedUrl::new("postgres://app:hunter2@db/links?password=hunter2");
        assert_eq!(url.to_string(), "postgres://app:***@db/links?password=***");
        assert!(!format!("{url:?}").contains("hunter2"));
        assert!(!format!("{:?}", Some(&url)).contains("hunter2"));
        assert_eq!(
            url.expose(),
            "postgres://app:hunter2@db/links?password=hunter2"
        );
    }
}
