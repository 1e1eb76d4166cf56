//! `share_threshold` and wildcards in stats keys: their `TestShareThreshold` (on
//! `share_threshold.yaml`) and `TestWildcardStatsBehavior` (configurations built in Go).

use shortener_rls::limits::Unit::Minute;

use super::{Fixture, Lookup, limit, loads, none};

const D: &str = "test-domain";

const SHARE: &[Lookup] = &[
    // Case 1: one pattern, every value.
    limit(
        D,
        &[("files", "files/a.pdf")],
        100,
        Minute,
        "test-domain.files_files/*",
    )
    .shared(&["files/*"]),
    limit(
        D,
        &[("files", "files/b.csv")],
        100,
        Minute,
        "test-domain.files_files/*",
    )
    .shared(&["files/*"]),
    limit(
        D,
        &[("files", "files/c.txt")],
        100,
        Minute,
        "test-domain.files_files/*",
    )
    .shared(&["files/*"]),
    // Case 2: with value_to_metric, and above detailed_metric: the pattern wins.
    limit(
        D,
        &[("route", "api/v1"), ("method", "GET")],
        60,
        Minute,
        "test-domain.route_api/*.method",
    )
    .shared(&["api/*", ""]),
    limit(
        D,
        &[("service", "svc/user"), ("endpoint", "get")],
        80,
        Minute,
        "test-domain.service_svc/*.endpoint_get",
    )
    .shared(&["svc/*", ""])
    .detailed(),
    // Case 3: nested.
    limit(
        D,
        &[("nested", "parent"), ("files", "nested/file1.txt")],
        200,
        Minute,
        "test-domain.nested_parent.files_nested/*",
    )
    .shared(&["", "nested/*"]),
    limit(
        D,
        &[("files", "top/file1.txt"), ("files", "nested/file1.txt")],
        300,
        Minute,
        "test-domain.files_top/*.files_nested/*",
    )
    .shared(&["top/*", "nested/*"]),
    limit(
        D,
        &[("path", "path/foo"), ("file", "file/doc1"), ("type", "pdf")],
        120,
        Minute,
        "test-domain.path_path/*.file_file/*.type",
    )
    .shared(&["path/*", "", ""]),
    limit(
        D,
        &[
            ("user", "user/alice"),
            ("resource", "res/file1"),
            ("action", "read"),
        ],
        150,
        Minute,
        "test-domain.user_user/*.resource_res/*.action",
    )
    .shared(&["user/*", "res/*", ""]),
    // Case 4: the exact value first, then the pattern.
    limit(
        D,
        &[("file", "test1")],
        50,
        Minute,
        "test-domain.file_test1",
    ),
    limit(
        D,
        &[("file", "test2")],
        100,
        Minute,
        "test-domain.file_test*",
    )
    .shared(&["test*"]),
    limit(
        D,
        &[("file", "test23")],
        100,
        Minute,
        "test-domain.file_test*",
    )
    .shared(&["test*"]),
    limit(
        D,
        &[("file", "test123")],
        100,
        Minute,
        "test-domain.file_test*",
    )
    .shared(&["test*"]),
    // Case 5: a wildcard in the middle.
    limit(
        D,
        &[("midpath", "/api/v1")],
        100,
        Minute,
        "test-domain.midpath_/api*v1",
    )
    .shared(&["/api*v1"]),
    limit(
        D,
        &[("midpath", "/api-beta-v1")],
        100,
        Minute,
        "test-domain.midpath_/api*v1",
    )
    .shared(&["/api*v1"]),
    limit(
        D,
        &[("midpath", "/apiXYZv1")],
        100,
        Minute,
        "test-domain.midpath_/api*v1",
    )
    .shared(&["/api*v1"]),
    none(D, &[("midpath", "/api/v2")]),
    // Case 6: several wildcards.
    limit(
        D,
        &[("multiroute", "svcAepBrpc")],
        50,
        Minute,
        "test-domain.multiroute_svc*ep*rpc",
    )
    .shared(&["svc*ep*rpc"]),
    limit(
        D,
        &[("multiroute", "svcXXXepYYYrpc")],
        50,
        Minute,
        "test-domain.multiroute_svc*ep*rpc",
    )
    .shared(&["svc*ep*rpc"]),
    limit(
        D,
        &[("multiroute", "svceprpc")],
        50,
        Minute,
        "test-domain.multiroute_svc*ep*rpc",
    )
    .shared(&["svc*ep*rpc"]),
    none(D, &[("multiroute", "svcABCrpc")]),
    // Case 7: a middle wildcard, shared and value_to_metric.
    limit(
        D,
        &[("midroute", "/api/v2")],
        80,
        Minute,
        "test-domain.midroute_/api*v2",
    )
    .shared(&["/api*v2"]),
    limit(
        D,
        &[("midroute", "/api-beta-v2")],
        80,
        Minute,
        "test-domain.midroute_/api*v2",
    )
    .shared(&["/api*v2"]),
    // Case 8: middle wildcards at two levels.
    limit(
        D,
        &[("tenant", "t1prod"), ("resource", "resAv2")],
        60,
        Minute,
        "test-domain.tenant_t*prod.resource_res*v2",
    )
    .shared(&["t*prod", "res*v2"]),
    limit(
        D,
        &[("tenant", "t99prod"), ("resource", "resBBBv2")],
        60,
        Minute,
        "test-domain.tenant_t*prod.resource_res*v2",
    )
    .shared(&["t*prod", "res*v2"]),
];

const FOO1: &[(&str, &str)] = &[("wild", "foo1")];

pub const FIXTURES: &[Fixture] = &[
    loads(
        "TestShareThreshold",
        &["share_threshold.yaml"],
        false,
        SHARE,
    ),
    loads(
        "TestWildcardStatsBehavior/No flags",
        &["inline/wildcard_stats_plain.yaml"],
        false,
        &[limit(D, FOO1, 20, Minute, "test-domain.wild_foo*")],
    ),
    loads(
        "TestWildcardStatsBehavior/value_to_metric",
        &["inline/wildcard_stats_value_to_metric.yaml"],
        false,
        &[limit(D, FOO1, 20, Minute, "test-domain.wild_foo1")],
    ),
    loads(
        "TestWildcardStatsBehavior/share_threshold",
        &["inline/wildcard_stats_shared.yaml"],
        false,
        &[limit(D, FOO1, 20, Minute, "test-domain.wild_foo*").shared(&["foo*"])],
    ),
    loads(
        "TestWildcardStatsBehavior/share_threshold with value_to_metric",
        &["inline/wildcard_stats_shared_value_to_metric.yaml"],
        false,
        &[limit(D, FOO1, 20, Minute, "test-domain.wild_foo*").shared(&["foo*"])],
    ),
    loads(
        "TestWildcardStatsBehavior/value_to_metric in other descriptor",
        &["inline/wildcard_stats_other_value_to_metric.yaml"],
        false,
        &[limit(
            D,
            &[("wild", "foo1"), ("other", "bar"), ("limit", "X")],
            20,
            Minute,
            "test-domain.wild_foo*.other_bar.limit",
        )],
    ),
    loads(
        "TestWildcardStatsBehavior/middle+trailing wildcard - no flags",
        &["inline/wildcard_stats_middle_plain.yaml"],
        false,
        &[
            limit(
                D,
                &[("wild", "foo123bar456")],
                20,
                Minute,
                "test-domain.wild_foo*bar*",
            ),
            limit(
                D,
                &[("wild", "fooXbarY")],
                20,
                Minute,
                "test-domain.wild_foo*bar*",
            ),
        ],
    ),
    loads(
        "TestWildcardStatsBehavior/middle+trailing wildcard - value_to_metric",
        &["inline/wildcard_stats_middle_value_to_metric.yaml"],
        false,
        &[limit(
            D,
            &[("wild", "foo123bar456")],
            20,
            Minute,
            "test-domain.wild_foo123bar456",
        )],
    ),
];
