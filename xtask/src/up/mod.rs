//! `cargo xtask up`: the whole system on this machine, as a user would run it past one
//! machine: N shortener nodes (release builds) on ports P+1..P+N, one Redis (or a
//! three-master cluster) that they share for the limiter, one PostgreSQL database for the
//! links, and nginx on port P balancing round-robin over the nodes from `deploy/nginx.conf`;
//! or, with `--gateway envoy`, Envoy on port P from `deploy/envoy.yaml`, limiting creates
//! per client through K `shortener ratelimit-server` processes on the same Redis.
//! It waits for every node's `/readyz`, prints the URLs, and stops everything it started on
//! Ctrl-C or SIGTERM.
//!
//! Not a deployment tool: every process is a child of this one, its files live under
//! `target/up/`, and the database is a throwaway one, dropped on exit.

mod envoy;
mod nginx;
mod options;
mod spawn;

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use shortener_testkit::{Guard, RedisCluster, RedisServer, TestDatabase};

pub use options::{GatewayMode, Options, RedisMode, StorageMode};

/// The `create` policy every node applies, shared through Redis: small enough that a
/// few terminals of `cargo xtask load` run into it at once.
pub const CREATE_CAPACITY: u64 = 50;
pub const CREATE_PER_SEC: u64 = 10;

/// How long a node may take to answer `/readyz` with 200.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How long the nodes get to drain and flush after SIGTERM, within the 10 s of a stop.
const DRAIN_WITHIN: Duration = Duration::from_secs(7);

pub fn run(options: &Options) -> anyhow::Result<()> {
    options.check()?;
    let binary = match &options.binary {
        // Absolute: each node runs in a directory of its own.
        Some(binary) => std::fs::canonicalize(binary)
            .with_context(|| format!("--binary {}", binary.display()))?,
        None => release_binary()?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let stack = Stack::start(options, &binary, &runtime)?;
    stack.print_urls();
    runtime.block_on(until_signal())?;
    eprintln!("xtask up: stopping");
    stack.stop();
    Ok(())
}

/// Everything `up` started; dropping it kills what is left.
struct Stack {
    port: u16,
    nodes: Vec<Node>,
    gateway: Gateway,
    services: Vec<envoy::Rls>,
    _redis: Redis,
    _database: Option<TestDatabase>,
    _postgres: Option<crate::services::Postgres>,
    dir: PathBuf,
}

struct Node {
    port: u16,
    guard: Guard,
}

enum Gateway {
    Nginx(Guard),
    Envoy(shortener_testkit::Envoy),
}

enum Redis {
    Standalone(RedisServer),
    Cluster(RedisCluster),
}

impl Stack {
    fn start(
        options: &Options,
        binary: &Path,
        runtime: &tokio::runtime::Runtime,
    ) -> anyhow::Result<Self> {
        // Refused before anything starts: one line each, naming the Debian package.
        if options.gateway == GatewayMode::Nginx {
            crate::services::require_binary("nginx")?;
        } else {
            shortener_testkit::envoy::envoy_binary()
                .context("Envoy is needed for --gateway envoy")?;
        }
        crate::services::require_binary("redis-server")?;
        let rls_ports = options.rls_ports();
        let service_ports = rls_ports.iter().flat_map(|&(grpc, http)| [grpc, http]);
        for port in std::iter::once(options.port)
            .chain(options.node_ports())
            .chain(service_ports)
        {
            TcpListener::bind(("127.0.0.1", port))
                .with_context(|| format!("port {port} is taken; choose another with --port"))?;
        }
        let dir = crate::root().join("target/up");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir)?;

        let redis = match options.redis {
            RedisMode::Standalone => Redis::Standalone(
                RedisServer::try_start_private().context("cannot start redis-server")?,
            ),
            RedisMode::Cluster => {
                Redis::Cluster(RedisCluster::try_start().context("cannot start a Redis cluster")?)
            }
        };
        let (postgres, database) = match options.storage {
            StorageMode::Postgres => {
                let postgres = crate::services::Postgres::provide()?;
                let database = TestDatabase::create_on(postgres.url())
                    .context("cannot create the database")?;
                (Some(postgres), Some(database))
            }
            StorageMode::Sqlite => (None, None),
        };
        let storage = match &database {
            Some(database) => format!("kind = \"postgres\"\nurl = \"{}\"", database.url()),
            None => format!(
                "kind = \"sqlite\"\nurl = \"sqlite://{}\"",
                dir.join("shortener.db").display()
            ),
        };
        let limiter = match &redis {
            Redis::Standalone(server) => format!("redis_url = \"{}\"", server.url()),
            Redis::Cluster(cluster) => format!(
                "redis_cluster = [{}]",
                cluster
                    .urls()
                    .iter()
                    .map(|url| format!("\"{url}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };

        let mut nodes = Vec::new();
        for (index, port) in options.node_ports().enumerate() {
            let config = node_config(options, port, &storage, &limiter);
            nodes.push(Node::start(&dir, index + 1, port, binary, &config)?);
            // The first node applies the migrations alone; the others find them done.
            if index == 0 {
                runtime.block_on(wait_ready(&nodes[0], READY_WITHIN))?;
            }
        }
        for node in &nodes[1..] {
            runtime.block_on(wait_ready(node, READY_WITHIN))?;
        }
        let node_ports: Vec<u16> = options.node_ports().collect();
        let (gateway, services, log) = match options.gateway {
            GatewayMode::Nginx => (
                Gateway::Nginx(nginx::start(&dir, options.port, &node_ports)?),
                Vec::new(),
                "target/up/nginx/error.log",
            ),
            GatewayMode::Envoy => {
                let services =
                    runtime.block_on(envoy::start_services(&dir, binary, &limiter, &rls_ports))?;
                let envoy = envoy::start_envoy(&dir, options.port, &node_ports, &services)?;
                (Gateway::Envoy(envoy), services, "target/up/envoy/envoy.log")
            }
        };
        // Through to a node: the gateway answers, and balances.
        runtime.block_on(wait_ok(
            &format!("http://127.0.0.1:{}/healthz", options.port),
            Duration::from_secs(20),
            log,
        ))?;
        Ok(Self {
            port: options.port,
            nodes,
            gateway,
            services,
            _redis: redis,
            _database: database,
            _postgres: postgres,
            dir,
        })
    }

    fn print_urls(&self) {
        let base = format!("http://127.0.0.1:{}", self.port);
        let gateway = match self.gateway {
            Gateway::Nginx(_) => "nginx",
            Gateway::Envoy(_) => "Envoy",
        };
        println!();
        println!(
            "shortener is up: {} nodes behind {gateway}",
            self.nodes.len()
        );
        println!("  page          {base}/");
        println!("  API docs      {base}/docs");
        println!("  OpenAPI       {base}/openapi.json");
        for (index, node) in self.nodes.iter().enumerate() {
            println!(
                "  node {}        http://127.0.0.1:{}/metrics   (log: {})",
                index + 1,
                node.port,
                self.dir
                    .join(format!("node-{}/shortener.log", index + 1))
                    .display()
            );
        }
        for (index, service) in self.services.iter().enumerate() {
            println!(
                "  ratelimit {}   grpc 127.0.0.1:{}, http://127.0.0.1:{}/metrics   (log: {})",
                index + 1,
                service.grpc,
                service.http,
                self.dir
                    .join(format!("rls-{}/ratelimit-server.log", index + 1))
                    .display()
            );
        }
        println!(
            "  create limit  {CREATE_CAPACITY} at once, {CREATE_PER_SEC}/s, per client, shared by every node"
        );
        if let Gateway::Envoy(envoy) = &self.gateway {
            println!(
                "  gateway limit deploy/ratelimit/config/shortener.yaml, per client address, \
                 through every rate limit service (Envoy admin: http://{})",
                envoy.admin
            );
            println!("  try           cargo xtask load --gateway envoy --url {base}");
        } else {
            println!("  try           cargo xtask load --url {base}");
        }
        println!("Ctrl-C stops everything.");
    }

    /// SIGTERM to every node (they drain and flush), then nginx; whatever is still
    /// running after `DRAIN_WITHIN` is killed when the stack drops.
    fn stop(mut self) {
        for node in &self.nodes {
            node.guard.signal("TERM");
        }
        let deadline = Instant::now() + DRAIN_WITHIN;
        for node in &mut self.nodes {
            let left = deadline.saturating_duration_since(Instant::now());
            let _ = node.guard.wait_timeout(left);
        }
        match &mut self.gateway {
            Gateway::Nginx(nginx) => {
                nginx.signal("QUIT");
                let _ = nginx.wait_timeout(Duration::from_secs(2));
            }
            // Killed when the stack drops: Envoy keeps nothing.
            Gateway::Envoy(_) => {}
        }
        for service in &mut self.services {
            service.guard.signal("TERM");
            let _ = service.guard.wait_timeout(Duration::from_secs(2));
        }
    }
}

impl Node {
    fn start(
        dir: &Path,
        number: usize,
        port: u16,
        binary: &Path,
        config: &str,
    ) -> anyhow::Result<Self> {
        let home = dir.join(format!("node-{number}"));
        let guard = spawn::spawn_in(&home, &format!("node {number}"), binary, "serve", config)?;
        Ok(Self { port, guard })
    }
}

fn node_config(options: &Options, port: u16, storage: &str, limiter: &str) -> String {
    format!(
        r#"# Written by `cargo xtask up`.
[server]
bind = "127.0.0.1:{port}"
public_url = "http://127.0.0.1:{public}"
# nginx, on this machine, appends the client's address to X-Forwarded-For.
trusted_proxies = ["127.0.0.1/32"]
client_ip_header = "x-forwarded-for"

[storage]
{storage}

[limiter]
kind = "redis"
{limiter}
on_error = "local"
nodes = {nodes}

[limiter.policies.create]
capacity = {CREATE_CAPACITY}
refill_per_sec = {CREATE_PER_SEC}

[limiter.policies.redirect]
capacity = 1000
refill_per_sec = 500
"#,
        public = options.port,
        nodes = options.nodes,
    )
}

/// Until `url` answers a 2xx; else, after `within`, an error that says where to look.
pub(crate) async fn wait_ok(url: &str, within: Duration, look_at: &str) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()?;
    let deadline = Instant::now() + within;
    loop {
        if let Ok(response) = http.get(url).send().await
            && response.status().is_success()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{url} does not answer 2xx within {within:?}: see {look_at}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Until the node's `/readyz` answers 200 (it reaches its storage and limiter).
async fn wait_ready(node: &Node, within: Duration) -> anyhow::Result<()> {
    let log = format!(
        "target/up/{}/shortener.log",
        node.guard.name().replace(' ', "-")
    );
    wait_ok(
        &format!("http://127.0.0.1:{}/readyz", node.port),
        within,
        &log,
    )
    .await
}

/// SIGINT (Ctrl-C) or SIGTERM.
async fn until_signal() -> anyhow::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result?,
        _ = terminate.recv() => {}
    }
    Ok(())
}

/// `target/release/shortener`, built now.
fn release_binary() -> anyhow::Result<PathBuf> {
    eprintln!("xtask up: building the release binary");
    crate::run(crate::cargo().args([
        "build",
        "--release",
        "-p",
        "shortener-server",
        "--bin",
        "shortener",
    ]))?;
    Ok(shortener_testkit::cargo::target_dir().join("release/shortener"))
}
