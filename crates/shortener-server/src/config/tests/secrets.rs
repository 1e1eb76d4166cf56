//! Keys set from the files that `SHORTENER_<SECTION>__<KEY>_FILE` variables name.

// figment's `Jail` closures return `figment::Result`, whose error is large; the type is the API's.
#![allow(clippy::result_large_err)]

use figment::Jail;

use crate::config::{Config, Storage};

#[test]
fn secrets_come_from_the_files_that_variables_name() {
    Jail::expect_with(|jail| {
        // A mounted secret ends with a line break; the value does not.
        jail.create_file("database-url", "postgres://app:s3cret@db/links\n")?;
        jail.create_file(
            "api-keys",
            "[{name = \"ops\", sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\", scopes = [\"admin\"]}]",
        )?;
        jail.create_file("capacity", "7\n")?;
        jail.create_file("deny", "bad.example\n")?;
        jail.set_env("SHORTENER_STORAGE__KIND", "postgres");
        jail.set_env("SHORTENER_STORAGE__URL_FILE", "database-url");
        jail.set_env("SHORTENER_API_KEYS_FILE", "api-keys");
        jail.set_env(
            "SHORTENER_LIMITER__POLICIES__CREATE__CAPACITY_FILE",
            "capacity",
        );
        // A key whose own name ends in _file is that key, not a file's.
        jail.set_env("SHORTENER_LINKS__DENY_HOSTS_FILE", "deny");
        let settings = Config::load(None).unwrap();
        assert!(
            matches!(&settings.storage, Storage::Postgres { url, .. } if url.expose() == "postgres://app:s3cret@db/links")
        );
        assert!(
            settings.api_keys.find("test").is_some(),
            "the key from the file"
        );
        assert_eq!(settings.config.limiter.policies["create"].capacity, 7);
        assert_eq!(settings.config.links.deny_hosts_file, "deny");
        // A file that cannot be read names the key and the variable.
        jail.set_env("SHORTENER_STORAGE__URL_FILE", "missing");
        let error = Config::load(None).unwrap_err().to_string();
        assert!(
            error.contains("storage.url") && error.contains("SHORTENER_STORAGE__URL_FILE"),
            "{error}"
        );
        Ok(())
    });
}
