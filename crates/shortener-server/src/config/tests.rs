//! Loading the configuration with `figment::Jail`: defaults, the file, the environment,
//! and each refused key named.

// figment's `Jail` closures return `figment::Result`, whose error is large; the type is the API's.
#![allow(clippy::result_large_err)]

use figment::Jail;

use super::*;

mod leases;
mod log;
mod public_url;
mod secrets;

fn load_in(jail: &Jail, toml: &str) -> Result<Settings, ConfigError> {
    jail.create_file("shortener.toml", toml).unwrap();
    Config::load(Some(Path::new("shortener.toml")))
}

/// Each (file, key): loading the file fails with one line that names the key.
fn refused_naming_the_key(jail: &Jail, cases: &[(&str, &str)]) {
    for (toml, key) in cases {
        let error = load_in(jail, toml).unwrap_err().to_string();
        assert!(error.contains(key), "{toml:?}: {error}");
        assert!(!error.contains('\n'), "one line: {error}");
    }
}

#[test]
fn defaults_are_the_embedded_setup() {
    Jail::expect_with(|_| {
        let config = Config::load(None).unwrap();
        assert_eq!(config.config.server.bind.to_string(), "127.0.0.1:8080");
        assert!(
            matches!(&config.storage, Storage::Sqlite { url, .. } if url.expose() == "sqlite://shortener.db")
        );
        assert!(config.redis.is_none());
        assert_eq!(config.config.limiter.policies["create"].capacity, 100);
        assert!(!config.config.limiter.policies.contains_key("redirect"));
        assert_eq!(
            config.config.server.client_ip_header,
            ClientIpHeader::XForwardedFor
        );
        assert_eq!(
            (
                config.config.limiter.ipv4_prefix,
                config.config.limiter.ipv6_prefix
            ),
            (32, 64)
        );
        Ok(())
    });
}

#[test]
fn file_then_environment_win_in_order() {
    Jail::expect_with(|jail| {
        jail.set_env("SHORTENER_LIMITER__POLICIES__CREATE__CAPACITY", "50");
        jail.set_env("SHORTENER_CONFIG", "ignored by the loader");
        jail.set_env("SHORTENER_TEST_PG_URL", "postgres://ignored");
        let config = load_in(
            jail,
            r#"
            [server]
            redirect_status = 301
            [limiter.policies.create]
            capacity = 10
            refill_per_sec = 2.0
            [limiter.policies.redirect]
            capacity = 1000
            refill_per_sec = 100
            "#,
        )
        .unwrap();
        assert_eq!(config.config.server.redirect_status, 301);
        assert_eq!(config.config.limiter.policies["create"].capacity, 50);
        assert!(
            (config.config.limiter.policies["create"].refill_per_sec - 2.0).abs() < f64::EPSILON
        );
        assert_eq!(config.config.limiter.policies["redirect"].capacity, 1000);
        Ok(())
    });
}

#[test]
fn unknown_keys_and_bad_values_name_the_key() {
    Jail::expect_with(|jail| {
        let cases = [
            ("[server]\nbindd = \"127.0.0.1:1\"", "bindd"),
            ("[server]\nredirect_status = 200", "server.redirect_status"),
            ("[storage]\nkind = \"mysql\"", "storage.kind"),
            ("[limiter]\non_error = \"maybe\"", "limiter.on_error"),
            (
                "[limiter.policies.create]\ncapacity = 0\nrefill_per_sec = 1",
                "limiter.policies.create",
            ),
            (
                "[limiter.policies.upload]\ncapacity = 1\nrefill_per_sec = 1",
                "limiter.policies.upload",
            ),
            ("[codes]\nlength = 0", "codes.length"),
            (
                "[[api_keys]]\nname = \"a\"\nsha256 = \"xyz\"",
                "api_keys[0].sha256",
            ),
            (
                "[server]\ntrusted_proxies = [\"not a cidr\"]",
                "trusted_proxies",
            ),
            (
                "[server]\nclient_ip_header = \"x-client-ip\"",
                "client_ip_header",
            ),
            ("[limiter]\nipv4_prefix = 33", "limiter.ipv4_prefix"),
            ("[limiter]\nipv6_prefix = 129", "limiter.ipv6_prefix"),
            ("[limiter]\nipv6_prefix = -1", "ipv6_prefix"),
            ("[limiter]\nredis_pool_size = 0", "limiter.redis_pool_size"),
            (
                "[links]\npassword_memory_mb = 18",
                "links.password_memory_mb",
            ),
        ];
        refused_naming_the_key(jail, &cases);
        Ok(())
    });
}

#[test]
fn tls_urls_and_ca_files_are_checked() {
    Jail::expect_with(|jail| {
        jail.create_file("ca.pem", "-----BEGIN CERTIFICATE-----\n")?;
        let redis = "[limiter]\nkind = \"redis\"\n";
        let cases = [
            (
                format!("{redis}redis_url = \"redisx://h:1\""),
                "limiter.redis_url",
            ),
            (
                format!("{redis}redis_cluster = [\"rediss://a:1\", \"redis://b:1\"]"),
                "limiter.redis_cluster[1]",
            ),
            (
                format!("{redis}redis_url = \"redis://h:1\"\nredis_ca_file = \"ca.pem\""),
                "limiter.redis_ca_file",
            ),
            (
                format!("{redis}redis_url = \"rediss://h:1\"\nredis_ca_file = \"gone.pem\""),
                "limiter.redis_ca_file",
            ),
            (
                "[storage]\nkind = \"postgres\"\nurl = \"postgres://h/db?sslmode=verify\""
                    .to_owned(),
                "storage.url",
            ),
        ];
        for (toml, key) in cases {
            let error = load_in(jail, &toml).unwrap_err().to_string();
            assert!(error.contains(key), "{toml:?}: {error}");
        }
        let good = [
            format!("{redis}redis_url = \"rediss://h:1\"\nredis_ca_file = \"ca.pem\""),
            format!("{redis}redis_cluster = [\"rediss://a:1\", \"rediss://b:1\"]"),
            "[storage]\nkind = \"postgres\"\n\
             url = \"postgres://h/db?sslmode=verify-full&sslrootcert=ca.pem\""
                .to_owned(),
        ];
        for toml in good {
            load_in(jail, &toml).unwrap_or_else(|error| panic!("{toml:?}: {error}"));
        }
        Ok(())
    });
}

#[test]
fn secrets_are_redacted() {
    let storage = StorageConfig {
        url: "postgres://app:s3cret@db/x?password=s3cret".into(),
        ..StorageConfig::default()
    };
    assert!(!format!("{storage:?}").contains("s3cret"));
    let limiter = LimiterConfig {
        redis_url: "redis://:s3cret@h:1".into(),
        redis_cluster: vec!["rediss://u:s3cret@a:1".into()],
        ..LimiterConfig::default()
    };
    assert!(!format!("{limiter:?}").contains("s3cret"));
    Jail::expect_with(|jail| {
        jail.set_env(
            "SHORTENER_STORAGE__URL",
            "postgres://app:s3cret@db/x?password=s3cret",
        );
        let settings = load_in(
            jail,
            "[storage]\nkind = \"postgres\"\n[limiter]\nkind = \"redis\"\nredis_url = \"redis://:s3cret@h:1\"",
        )
        .unwrap();
        assert!(settings.redis.is_some());
        assert!(!format!("{settings:?}").contains("s3cret"));
        Ok(())
    });
}

/// Each backend kind takes only its own keys: another kind's key is an error naming it,
/// from the file or the environment, while the built-in defaults of every key stay.
#[test]
fn a_key_of_another_backend_kind_is_an_error() {
    Jail::expect_with(|jail| {
        let cases = [
            (
                "[storage]\nkind = \"sqlite\"\nstatement_timeout_ms = 100",
                "storage.statement_timeout_ms",
            ),
            (
                "[storage]\nkind = \"postgres\"\nurl = \"postgres://h/db\"\nsqlite_wal_max_mb = 4",
                "storage.sqlite_wal_max_mb",
            ),
            (
                "[storage]\nkind = \"memory\"\nurl = \"sqlite://x.db\"",
                "storage.url",
            ),
            (
                "[storage]\nkind = \"sqlite\"\nurl = \"postgres://h/db\"",
                "storage.url",
            ),
            ("[storage]\nkind = \"postgres\"", "storage.url"),
            (
                "[limiter]\nredis_url = \"redis://h:1\"",
                "limiter.redis_url",
            ),
            (
                "[limiter]\nkind = \"memory\"\non_error = \"fail_open\"",
                "limiter.on_error",
            ),
        ];
        for (toml, key) in cases {
            let error = load_in(jail, toml).unwrap_err().to_string();
            assert!(error.contains(key), "{toml:?}: {error}");
        }
        let error = load_in(jail, "[storage]\nstatement_timeout_ms = 100").unwrap_err();
        assert_eq!(
            error.to_string(),
            "key `storage.statement_timeout_ms` is for storage.kind = \"postgres\", \
             not \"sqlite\": remove it"
        );
        jail.set_env("SHORTENER_LIMITER__TIMEOUT_MS", "20");
        let error = load_in(jail, "").unwrap_err().to_string();
        assert!(error.contains("limiter.timeout_ms"), "{error}");
        jail.set_env("SHORTENER_LIMITER__KIND", "redis");
        let settings = load_in(jail, "").unwrap();
        let redis = settings.redis.expect("kind = redis from the environment");
        assert_eq!(redis.redis.timeout, std::time::Duration::from_millis(20));
        assert_eq!(
            redis.on_error,
            shortener_core::limiter::fallback::OnError::Local
        );
        let settings = load_in(
            jail,
            "[storage]\nkind = \"postgres\"\nurl = \"postgres://h/db\"\nstatement_timeout_ms = 0\nmax_connections = 3",
        )
        .unwrap();
        let Storage::Postgres { pool, migrate, .. } = settings.storage else {
            panic!("postgres: {:?}", settings.storage);
        };
        assert_eq!(
            (pool.max_connections, pool.statement_timeout, migrate),
            (3, None, true)
        );
        Ok(())
    });
}

#[test]
fn storage_and_shutdown_keys_have_defaults_and_are_checked() {
    Jail::expect_with(|jail| {
        let sqlite = |settings: Settings| match settings.storage {
            Storage::Sqlite { settings, .. } => settings,
            other => panic!("not sqlite: {other:?}"),
        };
        let config = Config::load(None).unwrap();
        assert_eq!(config.config.server.shutdown_timeout_ms, 10_000);
        assert_eq!(sqlite(config), shortener_sqlite::SqliteSettings::default());
        // `max_connections = 0`, the default, is the kind's own (SQLite's rule is tested in
        // its crate, PostgreSQL's is 16); any other is taken as given.
        let config = load_in(jail, "[storage]\nmax_connections = 3\n").unwrap();
        assert_eq!(sqlite(config).max_connections, 3);
        let postgres = "[storage]\nkind = \"postgres\"\nurl = \"postgres://h/db\"\n";
        let Storage::Postgres { pool, .. } = load_in(jail, postgres).unwrap().storage else {
            panic!("not postgres");
        };
        assert_eq!(pool.max_connections, 16);
        let config = load_in(
            jail,
            "[storage]\nsqlite_synchronous = \"normal\"\nsqlite_group_commit = false\nsqlite_wal_max_mb = 4\n",
        )
        .unwrap();
        let settings = sqlite(config);
        assert_eq!(settings.synchronous, shortener_sqlite::Synchronous::Normal);
        assert!(!settings.group_commit);
        assert_eq!(settings.wal_max_bytes, 4 << 20);
        for (toml, key) in [
            (
                "[storage]\nsqlite_synchronous = \"off\"\n",
                "sqlite_synchronous",
            ),
            (
                "[storage]\nsqlite_wal_max_mb = 0\n",
                "storage.sqlite_wal_max_mb",
            ),
            (
                "[server]\nshutdown_timeout_ms = 0\n",
                "server.shutdown_timeout_ms",
            ),
        ] {
            let error = load_in(jail, toml).unwrap_err().to_string();
            assert!(error.contains(key), "{toml}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
        Ok(())
    });
}

/// `config/default.toml` is the built-in defaults written out: every key, every value,
/// the keys of one backend kind only in the commented-out blocks headed "Only with kind".
#[test]
fn the_default_file_is_the_built_in_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/default.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    Jail::expect_with(|jail| {
        jail.create_file("shortener.toml", &text)?;
        let settings = Config::load(Some(Path::new("shortener.toml"))).expect("it loads");
        assert_eq!(as_json(&settings.config), as_json(&Config::default()));
        Ok(())
    });
    // The file with those blocks uncommented names every key of `Config::default()`, with
    // its value (but the empty lists of API keys and tiers, which it shows in comments).
    let mut in_block = false;
    let mut uncommented = String::new();
    for line in text.lines() {
        in_block = (in_block || line.starts_with("# Only with kind")) && !line.is_empty();
        let line = match line.strip_prefix("# ") {
            Some(setting)
                if in_block
                    && setting.split_once(" = ").is_some_and(|(key, _)| {
                        key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                    }) =>
            {
                setting
            }
            _ => line,
        };
        uncommented.push_str(line);
        uncommented.push('\n');
    }
    let file = Figment::from(Toml::string(&uncommented));
    let written: Config = file.extract().expect("config/default.toml parses");
    assert_eq!(as_json(&written), as_json(&Config::default()));
    let raw: serde_json::Value = file.extract().unwrap();
    assert_eq!(keys(&raw), keys(&as_json(&Config::default())));
}

fn as_json(config: &Config) -> serde_json::Value {
    serde_json::to_value(config).unwrap()
}

/// The dotted keys of `value` with a non-empty value.
fn keys(value: &serde_json::Value) -> Vec<String> {
    let mut keys = Vec::new();
    let mut stack = vec![(String::new(), value.clone())];
    while let Some((prefix, value)) = stack.pop() {
        if let serde_json::Value::Object(map) = value {
            for (key, value) in map {
                let empty = value.as_array().is_some_and(Vec::is_empty)
                    || value.as_object().is_some_and(serde_json::Map::is_empty);
                if empty {
                    continue;
                }
                let path = format!("{prefix}{key}");
                keys.push(path.clone());
                stack.push((format!("{path}."), value));
            }
        }
    }
    keys.sort();
    keys
}
