//! `up --gateway envoy`: K `shortener ratelimit-server` processes on the shared Redis,
//! reading the repository's `deploy/ratelimit/config/` limits, and Envoy on the gateway's
//! port from `deploy/envoy.yaml`, its rate-limit filter calling them.

use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use shortener_testkit::{Envoy, Gateway, Guard, render_gateway};

/// A running rate limit service of `up`.
pub struct Rls {
    pub grpc: u16,
    pub http: u16,
    pub guard: Guard,
}

/// Starts the rate limit services, on `limiter` (the `[limiter]` lines of the nodes'
/// Redis), and waits for each one's `/healthcheck`.
pub async fn start_services(
    dir: &Path,
    binary: &Path,
    limiter: &str,
    ports: &[(u16, u16)],
) -> anyhow::Result<Vec<Rls>> {
    let limits = crate::root().join("deploy/ratelimit");
    let mut services = Vec::new();
    for (index, &(grpc, http)) in ports.iter().enumerate() {
        let home = dir.join(format!("rls-{}", index + 1));
        let config = format!(
            r#"# Written by `cargo xtask up --gateway envoy`.
[limiter]
kind = "redis"
{limiter}
timeout_ms = 200
on_error = "local"

[rls]
grpc_bind = "127.0.0.1:{grpc}"
http_bind = "127.0.0.1:{http}"
runtime_root = "{root}"
"#,
            root = limits.display()
        );
        let name = format!("rls {}", index + 1);
        let guard = super::spawn::spawn_in(&home, &name, binary, "ratelimit-server", &config)?;
        services.push(Rls { grpc, http, guard });
    }
    for (index, service) in services.iter().enumerate() {
        super::wait_ok(
            &format!("http://127.0.0.1:{}/healthcheck", service.http),
            Duration::from_secs(30),
            &format!("target/up/rls-{}/ratelimit-server.log", index + 1),
        )
        .await?;
    }
    Ok(services)
}

/// Envoy on `port` in front of the nodes, calling the services.
pub fn start_envoy(
    dir: &Path,
    port: u16,
    nodes: &[u16],
    services: &[Rls],
) -> anyhow::Result<Envoy> {
    let nodes: Vec<String> = nodes
        .iter()
        .map(|port| format!("127.0.0.1:{port}"))
        .collect();
    let services: Vec<String> = services
        .iter()
        .map(|service| format!("127.0.0.1:{}", service.grpc))
        .collect();
    let config = render_gateway(&Gateway {
        listen_port: port,
        services: &nodes,
        rls: &services,
        failure_mode_deny: false,
    })?;
    let home = dir.join("envoy");
    fs::create_dir_all(&home)?;
    Envoy::start_in(&home, &config).context("cannot start Envoy (see target/up/envoy/envoy.log)")
}
