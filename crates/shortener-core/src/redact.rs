//! Connection URLs without their secrets, for logs and error messages: the one place
//! every crate hides a password.

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
pub fn redact_url(url: &str) -> String {
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
}
