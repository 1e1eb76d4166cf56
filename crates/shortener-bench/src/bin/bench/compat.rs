//! Benchmark 12, of the other shorteners' APIs: creates through Shlink's, Kutt's and
//! YOURLS' APIs against creates through this service's own, on one node, alternated in
//! every round. Links are kept in memory, so that the APIs' own work (reading their
//! shapes, writing their answers, rewriting their errors) is what differs.

use anyhow::ensure;
use shortener_testkit::require_binary;

use super::Context;
use super::report::Section;
use super::tools::{CREATE, Node, UNLIMITED, Var};

/// The API key every create carries, and its SHA-256 (`printf %s bench-compat-key |
/// sha256sum`).
const KEY: &str = "bench-compat-key";
const SHA256: &str = "f36dbb3d77d03b1c56656d9b54f2ef82867803639a898cc24b52fa2100f26e7a";
const OURS: &str = "this API";

pub fn run(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    require_binary("wrk")?;
    let config = format!(
        "[storage]\nkind = \"memory\"\n[limiter.policies.create]\n{UNLIMITED}\
         [compat]\nshlink = true\nkutt = true\nyourls = true\n\
         [[api_keys]]\nname = \"bench\"\nsha256 = \"{SHA256}\"\n"
    );
    let node = Node::start(context, &config)?;
    let key: Var = ("BENCH_API_KEY", KEY, "<an API key>");
    let yourls_path = format!(
        "/yourls-api.php?signature={KEY}&action=shorturl&url=https%3A%2F%2Fexample.com%2Fcreated-by-wrk"
    );
    let apis: [(&str, Vec<Var>); 4] = [
        (OURS, vec![key, CREATE]),
        (
            "Shlink's API",
            vec![
                key,
                CREATE,
                (
                    "BENCH_CREATE_PATH",
                    "/rest/v3/short-urls",
                    "/rest/v3/short-urls",
                ),
                (
                    "BENCH_CREATE_BODY",
                    r#"{"longUrl":"https://example.com/created-by-wrk"}"#,
                    "'{\"longUrl\":...}'",
                ),
            ],
        ),
        (
            "Kutt's API",
            vec![
                key,
                CREATE,
                ("BENCH_CREATE_PATH", "/api/v2/links", "/api/v2/links"),
                (
                    "BENCH_CREATE_BODY",
                    r#"{"target":"https://example.com/created-by-wrk"}"#,
                    "'{\"target\":...}'",
                ),
            ],
        ),
        (
            "YOURLS' API",
            vec![
                key,
                CREATE,
                ("BENCH_CREATE_METHOD", "GET", "GET"),
                (
                    "BENCH_CREATE_PATH",
                    &yourls_path,
                    "/yourls-api.php?...&action=shorturl",
                ),
                ("BENCH_CREATE_BODY", "", "''"),
            ],
        ),
    ];
    let url = format!("{}/", node.base);
    for (_, env) in &apis {
        context.wrk(env).warm_up([&url])?;
    }
    context.step("warmed up every API with 1 s of wrk");
    context.alternate(&apis, |_, (label, env)| {
        let run = context.wrk(env).run(&url)?;
        let (bad, errors) = (run.bad_statuses, run.socket_errors);
        ensure!(
            bad == 0.0 && errors == 0.0,
            "{label}: {bad} bad statuses, {errors} socket errors"
        );
        Ok(section.figures(label, "creates/s", run.figures))
    })?;
    let wrk = context.wrk(&apis[0].1);
    let command = wrk.describe("http://127.0.0.1:PORT/");
    for (label, _) in &apis[1..] {
        let what = format!("creates/s through {label} vs {OURS} (goal >= 0.9)");
        section.versus(&what, [label, OURS, "creates/s"], &command);
    }
    section.notes = vec![
        format!("One release node, links in memory, the `create` policy too large to refuse, Shlink's, Kutt's and YOURLS' APIs on; wrk -t2 -c{} -d{}s per API with `BENCH_CREATE=1` and the request each API's clients send (`wrk.lua`), every response a 2xx, alternated in every round.", wrk.connections, wrk.seconds),
        "Each create carries the same API key: X-API-Key (Shlink's X-Api-Key, Kutt's X-API-KEY) or YOURLS' signature in the query.".to_owned(),
    ];
    Ok(())
}
