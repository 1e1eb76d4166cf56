//! `[log]` read alone, for a configuration that does not load.

// figment's `Jail` closures return `figment::Result`, whose error is large; the type is the API's.
#![allow(clippy::result_large_err)]

use std::path::Path;

use figment::Jail;

use crate::config::{Config, LogFormat};

/// A file that does not load still says its `log.format`, so that the error is said in
/// it; the rate limit service also reads theirs (`LOG_FORMAT`), the HTTP server does not.
#[test]
fn the_log_format_of_a_configuration_that_does_not_load_is_read_alone() {
    Jail::expect_with(|jail| {
        let file = Some(Path::new("shortener.toml"));
        assert_eq!(Config::log_format_of(file, false), LogFormat::Text);
        jail.create_file(
            "shortener.toml",
            "[log]\nformat = \"json\"\n[nosuch]\nkey = 1\n",
        )?;
        assert!(Config::load(file).is_err());
        assert_eq!(Config::log_format_of(file, false), LogFormat::Json);
        jail.create_file("shortener.toml", "[log]\nformat = \"xml\"\n")?;
        assert_eq!(Config::log_format_of(file, false), LogFormat::Text);
        jail.set_env("SHORTENER_LOG__FORMAT", "json");
        assert_eq!(Config::log_format_of(file, false), LogFormat::Json);
        jail.clear_env();
        jail.set_env("LOG_FORMAT", "JSON");
        assert_eq!(Config::log_format_of(None, false), LogFormat::Text);
        assert_eq!(Config::log_format_of(None, true), LogFormat::Json);
        Ok(())
    });
}
