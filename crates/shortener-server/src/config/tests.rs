// figment's `Jail` closures return `figment::Result`, whose error is large; the type is the API's.
#![allow(clippy::result_large_err)]

use figment::Jail;

use super::*;

fn load_in(jail: &Jail, toml: &str) -> Result<Settings, ConfigError> {
    jail.create_file("shortener.toml", toml).unwrap();
    Config::load(Some(Path::new("shortener.toml")))
}

#[test]
fn defaults_are_the_embedded_setup() {
    Jail::expect_with(|_| {
        let config = Config::load(None).unwrap();
        assert_eq!(config.server.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(config.storage.kind, StorageKind::Sqlite);
        assert_eq!(config.limiter.kind, LimiterKind::Memory);
        assert_eq!(config.limiter.policies["create"].capacity, 100);
        assert!(!config.limiter.policies.contains_key("redirect"));
        assert_eq!(
            config.server.client_ip_header,
            ClientIpHeader::XForwardedFor
        );
        assert_eq!(
            (config.limiter.ipv4_prefix, config.limiter.ipv6_prefix),
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
        assert_eq!(config.server.redirect_status, 301);
        assert_eq!(config.limiter.policies["create"].capacity, 50);
        assert!((config.limiter.policies["create"].refill_per_sec - 2.0).abs() < f64::EPSILON);
        assert_eq!(config.limiter.policies["redirect"].capacity, 1000);
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
        ];
        for (toml, key) in cases {
            let error = load_in(jail, toml).unwrap_err().to_string();
            assert!(error.contains(key), "{toml:?}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
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
    let limiter = crate::wiring::redis_config(
        &Config {
            limiter,
            ..Config::default()
        },
        shortener_core::Algorithm::TokenBucket,
    );
    assert!(!format!("{limiter:?}").contains("s3cret"));
}

#[test]
fn storage_and_shutdown_keys_have_defaults_and_are_checked() {
    Jail::expect_with(|jail| {
        let config = Config::load(None).unwrap();
        assert_eq!(config.server.shutdown_timeout_ms, 10_000);
        assert_eq!(config.storage.sqlite_synchronous, SynchronousConfig::Full);
        assert!(config.storage.sqlite_group_commit);
        assert_eq!(config.storage.sqlite_wal_max_mb, 64);
        let config = load_in(
            jail,
            "[storage]\nsqlite_synchronous = \"normal\"\nsqlite_group_commit = false\nsqlite_wal_max_mb = 4\n",
        )
        .unwrap();
        assert_eq!(config.storage.sqlite_synchronous, SynchronousConfig::Normal);
        assert!(!config.storage.sqlite_group_commit);
        assert_eq!(config.storage.sqlite_wal_max_mb, 4);
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

/// `config/default.toml` is the built-in defaults written out: every key, every value.
#[test]
fn the_default_file_is_the_built_in_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/default.toml");
    let file = Figment::from(Toml::file(&path));
    let written: Config = file.extract().expect("config/default.toml parses");
    let as_json = |config: &Config| serde_json::to_value(config).unwrap();
    assert_eq!(as_json(&written), as_json(&Config::default()));
    // And it names every key: nothing is left to the defaults (but the empty lists of API
    // keys and tiers, which the file shows in comments).
    let keys = |value: &serde_json::Value| -> Vec<String> {
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
    };
    let raw: serde_json::Value = file.extract().unwrap();
    assert_eq!(keys(&raw), keys(&as_json(&Config::default())));
}
