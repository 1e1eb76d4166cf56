//! Stats keys: their `TestDetailedMetric` and `TestValueToMetric_*`, whose configurations
//! theirs builds in Go (here under `inline/`).

use shortener_rls::limits::Unit::{Minute, Second};

use super::{Fixture, limit, loads};

const ROUTE: &[(&str, &str)] = &[
    ("route", "draw"),
    ("http_method", "GET"),
    ("subject_id", "123"),
];
const API: &[(&str, &str)] = &[
    ("route", "api"),
    ("http_method", "GET"),
    ("subject_id", "user123"),
];
const REALISTIC: &[&str] = &["inline/detailed_metric_realistic.yaml"];

pub const FIXTURES: &[Fixture] = &[
    loads(
        "TestDetailedMetric/nested with no values but request only top-level key",
        &["inline/detailed_metric_top_only.yaml"],
        true,
        &[limit(
            "nested",
            &[("key-1", "value-1")],
            100,
            Minute,
            "nested.key-1_value-1",
        )
        .detailed()],
    ),
    loads(
        "TestDetailedMetric/... request only top-level key with no detailed metric",
        &["inline/detailed_metric_top_only_plain.yaml"],
        true,
        &[limit(
            "nested",
            &[("key-1", "value-1")],
            100,
            Minute,
            "nested.key-1",
        )],
    ),
    loads(
        "TestDetailedMetric/nested with no values and request fully nested descriptors",
        &["inline/detailed_metric_both.yaml"],
        true,
        &[limit(
            "nested",
            &[("key-1", "value-1"), ("key-2", "value-2")],
            5,
            Minute,
            "nested.key-1_value-1.key-2_value-2",
        )
        .detailed()],
    ),
    loads(
        "TestDetailedMetric/... fully nested descriptors with no detailed metric",
        &["inline/detailed_metric_neither.yaml"],
        true,
        &[limit(
            "nested",
            &[("key-1", "value-1"), ("key-2", "value-2")],
            5,
            Minute,
            "nested.key-1.key-2",
        )],
    ),
    loads(
        "TestDetailedMetric/test nested descriptors with simple request, only second not nested, nested request",
        REALISTIC,
        true,
        &[
            limit(
                "nested",
                &[("key_1", "value-for-key-1")],
                500,
                Minute,
                "nested.key_1_value-for-key-1",
            )
            .detailed(),
            limit(
                "nested",
                &[("key_2", "key-2-value")],
                5000,
                Minute,
                "nested.key_2_key-2-value",
            )
            .detailed(),
            limit(
                "nested",
                &[("key_2", "key-2-value"), ("key_3", "requested-key3-value")],
                5,
                Minute,
                "nested.key_2_key-2-value.key_3_requested-key3-value",
            )
            .detailed(),
        ],
    ),
    loads(
        "TestValueToMetric_UsesRuntimeValuesInStats",
        &["inline/value_to_metric_runtime.yaml"],
        false,
        &[limit(
            "domain",
            ROUTE,
            60,
            Minute,
            "domain.route_draw.http_method_GET.subject_id",
        )],
    ),
    loads(
        "TestValueToMetric_DefaultKeyIncludesValueAtThatLevel",
        &["inline/value_to_metric_default_key.yaml"],
        false,
        &[limit(
            "d",
            &[("k1", "A"), ("k2", "foo")],
            1,
            Second,
            "d.k1_A.k2",
        )],
    ),
    loads(
        "TestValueToMetric_MidLevelOnly",
        &["inline/value_to_metric_mid_level.yaml"],
        false,
        &[limit(
            "d",
            &[("k1", "X"), ("k2", "Y"), ("k3", "Z")],
            1,
            Second,
            "d.k1.k2_Y.k3",
        )],
    ),
    loads(
        "TestValueToMetric_NoFlag_Unchanged",
        &["inline/value_to_metric_no_flag.yaml"],
        false,
        &[limit(
            "d",
            &[("k1", "X"), ("k2", "Y")],
            1,
            Second,
            "d.k1.k2",
        )],
    ),
    loads(
        "TestValueToMetric_DoesNotOverrideDetailedMetric",
        &["inline/value_to_metric_detailed_leaf.yaml"],
        false,
        &[limit(
            "domain",
            ROUTE,
            60,
            Minute,
            "domain.route_draw.http_method_GET.subject_id_123",
        )
        .detailed()],
    ),
    loads(
        "TestValueToMetric_WithConfiguredValues",
        &["inline/value_to_metric_configured_values.yaml"],
        false,
        &[
            limit(
                "test-domain",
                API,
                60,
                Minute,
                "test-domain.route_api.http_method_GET.subject_id",
            ),
            limit(
                "test-domain",
                &[
                    ("route", "api"),
                    ("http_method", "POST"),
                    ("subject_id", "user456"),
                ],
                30,
                Minute,
                "test-domain.route_api.http_method_POST.subject_id",
            ),
        ],
    ),
    loads(
        "TestValueToMetric_WithWildcard",
        &["inline/value_to_metric_wildcard.yaml"],
        false,
        &[
            limit(
                "domain",
                &[
                    ("user", "alice"),
                    ("action", "readfile"),
                    ("resource", "documents"),
                ],
                100,
                Minute,
                "domain.user_alice.action_readfile.resource",
            ),
            limit(
                "domain",
                &[
                    ("user", "bob"),
                    ("action", "readdata"),
                    ("resource", "database"),
                ],
                100,
                Minute,
                "domain.user_bob.action_readdata.resource",
            ),
        ],
    ),
    loads(
        "TestValueToMetric_WithEmptyValue",
        &["inline/value_to_metric_runtime.yaml"],
        false,
        &[
            limit(
                "domain",
                &[("route", ""), ("http_method", "GET"), ("subject_id", "123")],
                60,
                Minute,
                "domain.route.http_method_GET.subject_id",
            ),
            limit(
                "domain",
                &[
                    ("route", "draw"),
                    ("http_method", ""),
                    ("subject_id", "123"),
                ],
                60,
                Minute,
                "domain.route_draw.http_method.subject_id",
            ),
            limit(
                "domain",
                &[("route", ""), ("http_method", ""), ("subject_id", "123")],
                60,
                Minute,
                "domain.route.http_method.subject_id",
            ),
        ],
    ),
    loads(
        "TestValueToMetric_FullKeyMatchesStatsKey/value_to_metric",
        &["inline/full_key_value_to_metric.yaml"],
        false,
        &[limit(
            "test-domain",
            API,
            60,
            Minute,
            "test-domain.route_api.http_method_GET.subject_id",
        )],
    ),
    loads(
        "TestValueToMetric_FullKeyMatchesStatsKey/no value_to_metric",
        &["inline/full_key_plain.yaml"],
        false,
        &[limit(
            "test-domain-2",
            API,
            60,
            Minute,
            "test-domain-2.route.http_method.subject_id",
        )],
    ),
    loads(
        "TestValueToMetric_FullKeyMatchesStatsKey/detailed_metric",
        &["inline/full_key_detailed.yaml"],
        false,
        &[limit(
            "test-domain-3",
            API,
            60,
            Minute,
            "test-domain-3.route_api.http_method_GET.subject_id_user123",
        )
        .detailed()],
    ),
];
