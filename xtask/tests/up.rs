//! `cargo xtask up` as a user runs it: three nodes behind nginx on one Redis and one
//! PostgreSQL database. Creates through nginx reach every node, a link made on one node
//! resolves through the balancer, the shared quota holds through nginx, and Ctrl-C
//! leaves no process and no port behind.

mod support;

use std::time::Instant;

use shortener_testkit::{concurrently, metric};
use support::{create, http, port_with_free_neighbours, start_up, stop};

const NODES: u16 = 3;
/// The `create` policy `up` writes into every node's config.
const CAPACITY: f64 = 50.0;
const PER_SEC: f64 = 10.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_runs_three_nodes_behind_nginx_and_stops_clean() {
    let port = port_with_free_neighbours(NODES);
    let up = start_up(&[
        "--nodes".into(),
        NODES.to_string(),
        "--port".into(),
        port.to_string(),
    ]);
    let http = http();
    let balancer = format!("http://127.0.0.1:{port}");

    // Every create of this test is one client (127.0.0.1, as nginx reports it), so all of
    // them count against one bucket from the first one on.
    let started = Instant::now();
    let mut admitted = 0_u32;
    for _ in 0..12 {
        assert_eq!(create(&http, &balancer).await.status(), 201);
        admitted += 1;
    }
    let node_ports: Vec<u16> = (1..=NODES).map(|i| port + i).collect();
    for node in &node_ports {
        let created = metric(
            &format!("http://127.0.0.1:{node}"),
            "shortener_links_created_total",
        )
        .await;
        assert!(
            created >= 1.0,
            "node on port {node} created nothing through nginx"
        );
    }

    let on_node = create(&http, &format!("http://127.0.0.1:{}", node_ports[0])).await;
    assert_eq!(on_node.status(), 201);
    admitted += 1;
    let code = on_node.json::<serde_json::Value>().await.unwrap()["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let redirect = http.get(format!("{balancer}/{code}")).send().await.unwrap();
    assert_eq!(redirect.status(), 302);
    assert_eq!(redirect.headers()["location"], "https://example.com/up");

    // 16 at a time through nginx until 300 answers: the shared quota holds.
    let mut refused = 0_u32;
    for _ in 0..300 / 16 {
        let batch = concurrently(16, |_| create(&http, &balancer)).await;
        for status in batch.iter().map(|response| response.status().as_u16()) {
            match status {
                201 => admitted += 1,
                429 => refused += 1,
                other => panic!("status {other} through nginx"),
            }
        }
    }
    let bound = CAPACITY + PER_SEC * started.elapsed().as_secs_f64();
    println!("through nginx: admitted {admitted}, refused {refused}, bound {bound:.1}");
    assert!(refused > 0, "the quota never refused");
    assert!(
        f64::from(admitted) <= bound,
        "admitted {admitted} > bound {bound:.1}"
    );

    stop(up, port..=port + NODES, "target/up/nginx");
}
