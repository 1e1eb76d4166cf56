//! What the tests of `cargo xtask up` share: a run of free ports, `up` started and
//! waited for, and its stop checked.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use shortener_testkit::{Guard, binary, free_port};

/// A port P with P+1..=P+`after` free too.
pub fn port_with_free_neighbours(after: u16) -> u16 {
    for _ in 0..50 {
        let port = free_port().unwrap();
        if port < 60_000
            && (port..=port + after).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        {
            return port;
        }
    }
    panic!("no run of {} free ports", after + 1);
}

/// `cargo xtask up ARGS --binary <the test build>`, once it has printed its URLs.
pub fn start_up(args: &[String]) -> Guard {
    let mut up = Guard::spawn(
        "cargo xtask up",
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("up")
            .args(args)
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
    up
}

/// An HTTP client that does not follow redirects.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// A create through `base`.
pub async fn create(http: &reqwest::Client, base: &str) -> reqwest::Response {
    http.post(format!("{base}/api/v1/links"))
        .json(&serde_json::json!({"url": "https://example.com/up"}))
        .send()
        .await
        .unwrap()
}

/// Ctrl-C: everything stops within 10 s, every port of `ports` is free again, and no
/// process whose command line has `leftover` runs.
pub fn stop(mut up: Guard, ports: std::ops::RangeInclusive<u16>, leftover: &str) {
    up.signal("INT");
    let status = up
        .wait_timeout(Duration::from_secs(10))
        .unwrap()
        .expect("xtask up stopped within 10 s of SIGINT");
    assert!(status.success(), "{status}");
    for p in ports {
        assert!(
            TcpListener::bind(("127.0.0.1", p)).is_ok(),
            "port {p} still taken"
        );
    }
    let left = Command::new("pgrep")
        .args(["-f", leftover])
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "{leftover} left running");
}
