//! `cargo xtask up` as a user runs it: three nodes behind nginx on one Redis and one
//! PostgreSQL database. Creates through nginx reach every node, a link made on one node
//! resolves through the balancer, the shared quota holds through nginx, and Ctrl-C
//! leaves no process and no port behind.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use shortener_testkit::{Guard, binary, concurrently, free_port, metric};

const NODES: u16 = 3;
/// The `create` policy `up` writes into every node's config.
const CAPACITY: f64 = 50.0;
const PER_SEC: f64 = 10.0;

/// A port P with P+1..=P+NODES free too.
fn port_with_free_neighbours() -> u16 {
    for _ in 0..50 {
        let port = free_port().unwrap();
        if port < 60_000
            && (port..=port + NODES).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        {
            return port;
        }
    }
    panic!("no run of {} free ports", NODES + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_runs_three_nodes_behind_nginx_and_stops_clean() {
    let port = port_with_free_neighbours();
    let mut up = Guard::spawn(
        "cargo xtask up",
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args([
                "up",
                "--nodes",
                &NODES.to_string(),
                "--port",
                &port.to_string(),
            ])
            .arg("--binary")
            .arg(binary())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit()),
    )
    .unwrap();
    let stdout = up.child().stdout.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("up: {line}");
            if line.starts_with("Ctrl-C stops everything") {
                let _ = sender.send(());
            }
        }
    });
    receiver
        .recv_timeout(Duration::from_secs(180))
        .expect("xtask up printed its URLs");

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let balancer = format!("http://127.0.0.1:{port}");
    let create = |base: String| {
        let http = http.clone();
        async move {
            http.post(format!("{base}/api/v1/links"))
                .json(&serde_json::json!({"url": "https://example.com/up"}))
                .send()
                .await
                .unwrap()
        }
    };

    // Every create of this test is one client (127.0.0.1, as nginx reports it), so all of
    // them count against one bucket from the first one on.
    let started = Instant::now();
    let mut admitted = 0_u32;
    for _ in 0..12 {
        assert_eq!(create(balancer.clone()).await.status(), 201);
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

    let on_node = create(format!("http://127.0.0.1:{}", node_ports[0])).await;
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
        let batch = concurrently(16, |_| create(balancer.clone())).await;
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

    // Ctrl-C: everything stops within 10 s, and every port is free again.
    up.signal("INT");
    let status = up
        .wait_timeout(Duration::from_secs(10))
        .unwrap()
        .expect("xtask up stopped within 10 s of SIGINT");
    assert!(status.success(), "{status}");
    for p in port..=port + NODES {
        assert!(
            TcpListener::bind(("127.0.0.1", p)).is_ok(),
            "port {p} still taken"
        );
    }
    let nginx = Command::new("pgrep")
        .args(["-f", "target/up/nginx"])
        .output()
        .unwrap();
    assert!(nginx.stdout.is_empty(), "nginx left running");
}
