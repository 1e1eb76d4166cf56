//! Their files' fixtures: `TestBasicConfig`, `TestDomainMerge`, `TestConfigLimitOverride`,
//! the files theirs refuses, `TestShadowModeConfig`, `TestWildcardConfig`, `TestMetadata`.

use shortener_rls::limits::Unit::{Day, Hour, Minute, Second};

use super::{Fixture, Lookup, Outcome, limit, loads, none, unlimited};

const D: &str = "test-domain";

/// A fixture theirs refuses; the last of its files is the one the error names.
const fn refused(
    test: &'static str,
    files: &'static [&'static str],
    merge: bool,
    message: &'static str,
) -> Fixture {
    let file = files[files.len() - 1];
    Fixture {
        test,
        files,
        merge,
        outcome: Outcome::Refused { file, message },
    }
}

const BASIC: &[Lookup] = &[
    none("foo_domain", &[]),
    none(D, &[]),
    none(D, &[("key1", "something")]),
    none(D, &[("key1", "value1")]),
    none(D, &[("key2", "value2"), ("subkey", "subvalue")]),
    none(D, &[("key5", "value5"), ("subkey5", "subvalue")]),
    limit(
        D,
        &[("key1", "value1"), ("subkey1", "something")],
        5,
        Second,
        "test-domain.key1_value1.subkey1",
    ),
    limit(
        D,
        &[("key1", "value1"), ("subkey1", "subvalue1")],
        10,
        Second,
        "test-domain.key1_value1.subkey1_subvalue1",
    ),
    limit(D, &[("key2", "something")], 20, Minute, "test-domain.key2"),
    limit(
        D,
        &[("key2", "value2")],
        30,
        Minute,
        "test-domain.key2_value2",
    ),
    none(D, &[("key2", "value3")]),
    limit(D, &[("key3", "foo")], 1, Hour, "test-domain.key3"),
    limit(D, &[("key4", "foo")], 1, Day, "test-domain.key4").named("key4_rate_limit"),
    unlimited(D, &[("key6", "foo")], "test-domain.key6"),
    limit(
        D,
        &[("key7", "unspecified_value")],
        70,
        Minute,
        "test-domain.key7_unspecified_value",
    )
    .detailed(),
    limit(
        D,
        &[("key7", "another_value")],
        70,
        Minute,
        "test-domain.key7_another_value",
    )
    .detailed(),
];

const MERGE: &[Lookup] = &[
    none("foo_domain", &[]),
    none(D, &[]),
    limit(
        D,
        &[("key1", "value1")],
        10,
        Minute,
        "test-domain.key1_value1",
    ),
    limit(
        D,
        &[("key2", "value2")],
        20,
        Minute,
        "test-domain.key2_value2",
    ),
];

const SOMETHING: &[(&str, &str)] = &[("key1", "value1"), ("subkey1", "something")];

const OVERRIDE: &[Lookup] = &[
    none("foo_domain", &[]).overriding(10, Day),
    limit(
        D,
        SOMETHING,
        10,
        Day,
        "test-domain.key1_value1.subkey1_something",
    )
    .overriding(10, Day),
    limit(
        D,
        SOMETHING,
        42,
        Hour,
        "test-domain.key1_value1.subkey1_something",
    )
    .overriding(42, Hour),
    limit(
        D,
        &[("key1", "value1"), ("subkey1", "something_else")],
        42,
        Hour,
        "test-domain.key1_value1.subkey1_something_else",
    )
    .overriding(42, Hour),
];

const SHADOW: &[Lookup] = &[
    limit(D, SOMETHING, 5, Second, "test-domain.key1_value1.subkey1"),
    limit(
        D,
        &[("key1", "value1"), ("subkey1", "subvalue1")],
        10,
        Second,
        "test-domain.key1_value1.subkey1_subvalue1",
    )
    .shadow(),
    limit(D, &[("key2", "something")], 20, Minute, "test-domain.key2").shadow(),
    limit(
        D,
        &[("key2", "value2")],
        30,
        Minute,
        "test-domain.key2_value2",
    ),
];

const WILDCARD: &[Lookup] = &[
    limit(D, &[("noVal", "foo1")], 20, Minute, "test-domain.noVal"),
    limit(D, &[("noVal", "foo2")], 20, Minute, "test-domain.noVal"),
    limit(D, &[("wild", "foo1")], 20, Minute, "test-domain.wild_foo*"),
    limit(D, &[("wild", "foo2")], 20, Minute, "test-domain.wild_foo*"),
    limit(
        D,
        &[("nestedWild", "val1"), ("wild", "goo2")],
        20,
        Minute,
        "test-domain.nestedWild_val1.wild_goo*",
    ),
    none(D, &[("wild", "bar")]),
    none(D, &[("noWild", "foo1")]),
    limit(
        D,
        &[("midWild", "barab")],
        20,
        Minute,
        "test-domain.midWild_bar*b",
    ),
    limit(
        D,
        &[("midWild", "bar123b")],
        20,
        Minute,
        "test-domain.midWild_bar*b",
    ),
    limit(
        D,
        &[("midWild", "barb")],
        20,
        Minute,
        "test-domain.midWild_bar*b",
    ),
    none(D, &[("midWild", "bara")]),
    none(D, &[("midWild", "xbarb")]),
    limit(
        D,
        &[("multiWild", "foo123bar456baz")],
        10,
        Minute,
        "test-domain.multiWild_foo*bar*baz",
    ),
    limit(
        D,
        &[("multiWild", "foobarbaz")],
        10,
        Minute,
        "test-domain.multiWild_foo*bar*baz",
    ),
    none(D, &[("multiWild", "foo123baz")]),
    none(D, &[("multiWild", "bar456baz")]),
];

const METADATA: &[Lookup] = &[
    none(D, &[]),
    limit(D, SOMETHING, 5, Second, "test-domain.key1_value1.subkey1")
        .metadata(&["name"], "service_1"),
    limit(D, &[("key2", "something")], 20, Minute, "test-domain.key2")
        .metadata(&["service_with_quota", "name"], "service_2"),
];

const BASIC_FILE: &[&str] = &["basic_config.yaml"];
const MERGED: &[&str] = &["merge_domain_key1.yaml", "merge_domain_key2.yaml"];

pub const FIXTURES: &[Fixture] = &[
    loads("TestBasicConfig", BASIC_FILE, false, BASIC),
    loads("TestDomainMerge", MERGED, true, MERGE),
    loads("TestConfigLimitOverride", BASIC_FILE, false, OVERRIDE),
    refused(
        "TestEmptyDomain",
        &["empty_domain.yaml"],
        false,
        "config file cannot have empty domain",
    ),
    refused(
        "TestDuplicateDomain",
        &["basic_config.yaml", "duplicate_domain.yaml"],
        false,
        "duplicate domain 'test-domain' in config file",
    ),
    refused(
        "TestEmptyKey",
        &["empty_key.yaml"],
        false,
        "descriptor has empty key",
    ),
    refused(
        "TestDuplicateKey",
        &["duplicate_key.yaml"],
        false,
        "duplicate descriptor composite key 'test-domain.key1_value1'",
    ),
    refused(
        "TestDuplicateKeyDomainMerge",
        &["merge_domain_key1.yaml", "merge_domain_key1.yaml"],
        true,
        "duplicate descriptor composite key 'test-domain.key1_value1'",
    ),
    refused(
        "TestBadLimitUnit",
        &["bad_limit_unit.yaml"],
        false,
        "invalid rate limit unit 'foo'",
    ),
    refused(
        "TestReplacesSelf",
        &["replaces_self.yaml"],
        false,
        "replaces should not contain name of same descriptor",
    ),
    refused(
        "TestReplacesEmpty",
        &["replaces_empty.yaml"],
        false,
        "should not have an empty replaces entry",
    ),
    refused(
        "TestBadYaml",
        &["bad_yaml.yaml"],
        false,
        "error loading config file: found unexpected end of stream",
    ),
    refused(
        "TestMisspelledKey",
        &["misspelled_key.yaml"],
        false,
        "unknown field `ratelimit`",
    ),
    refused(
        "TestMisspelledKey",
        &["misspelled_key2.yaml"],
        false,
        "unknown field `requestsperunit`",
    ),
    refused(
        "TestNonStringKey",
        &["non_string_key.yaml"],
        false,
        "unknown field `0.25`",
    ),
    refused(
        "TestNonMapList",
        &["non_map_list.yaml"],
        false,
        "invalid type: string \"a\"",
    ),
    refused(
        "TestUnlimitedWithRateLimitUnit",
        &["unlimited_with_unit.yaml"],
        false,
        "should not specify rate limit unit when unlimited",
    ),
    loads(
        "TestShadowModeConfig",
        &["shadowmode_config.yaml"],
        false,
        SHADOW,
    ),
    loads("TestWildcardConfig", &["wildcard.yaml"], false, WILDCARD),
    loads("TestMetadata", &["metadata.yaml"], false, METADATA),
];
