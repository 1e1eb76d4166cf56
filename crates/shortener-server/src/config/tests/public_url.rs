//! `server.public_url` and `server.cors_origins`, checked at start.

// figment's `Jail` closures return `figment::Result`, whose error is large; the type is the API's.
#![allow(clippy::result_large_err)]

use figment::Jail;

use super::load_in;

/// `server.public_url` starts every short URL: a user name and password, a query or a
/// fragment in it would ride along in each, so they are refused; a path is a prefix.
#[test]
fn a_public_url_with_userinfo_a_query_or_a_fragment_is_refused() {
    Jail::expect_with(|jail| {
        for bad in [
            "https://admin:hunter2@s.example",
            "https://user@s.example",
            "https://s.example/?ref=x",
            "https://s.example/#top",
            "https://s.example/a b",
        ] {
            let error = load_in(jail, &format!("[server]\npublic_url = \"{bad}\""))
                .unwrap_err()
                .to_string();
            assert!(error.contains("server.public_url"), "{bad}: {error}");
        }
        for good in [
            "https://s.example",
            "https://s.example/go/",
            "http://127.0.0.1:8080",
        ] {
            load_in(jail, &format!("[server]\npublic_url = \"{good}\""))
                .unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        Ok(())
    });
}

/// `server.cors_origins` are compared with browsers' `Origin` headers, which are lower
/// case and have no path: anything else would never match, so it is refused.
#[test]
fn cors_origins_must_be_origins() {
    Jail::expect_with(|jail| {
        for bad in [
            "app.example.org",
            "https://app.example.org/",
            "https://App.example.org",
            "ftp://app.example.org",
            "https://",
        ] {
            let error = load_in(jail, &format!("[server]\ncors_origins = [\"{bad}\"]"))
                .unwrap_err()
                .to_string();
            assert!(error.contains("server.cors_origins"), "{bad}: {error}");
        }
        for good in ["https://app.shlink.io", "http://127.0.0.1:3000", "*"] {
            load_in(jail, &format!("[server]\ncors_origins = [\"{good}\"]"))
                .unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        Ok(())
    });
}
