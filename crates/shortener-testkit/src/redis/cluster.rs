//! A three-master Redis Cluster of throwaway `redis-server` processes.

use std::collections::HashSet;
use std::io;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{Process, STARTUP};
use crate::process::{output_within, require_binary};
use crate::{TempDir, free_port};

const MASTERS: usize = 3;

/// Three cluster-enabled masters on free loopback ports (each below 55536, with its cluster
/// bus port + 10000 free too), joined by `redis-cli --cluster create`, all killed on drop.
#[derive(Debug)]
pub struct RedisCluster {
    // Killed before their directory is removed: fields drop in order.
    processes: Vec<Process>,
    ports: Vec<u16>,
    dir: TempDir,
}

impl RedisCluster {
    /// Starts the nodes and returns once every node reports `cluster_state:ok`.
    ///
    /// # Panics
    /// With one clear line when a binary is missing or the cluster does not form.
    pub fn start() -> Self {
        Self::try_start().unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`RedisCluster::start`].
    ///
    /// # Errors
    /// When `redis-server` or `redis-cli` is missing or the cluster does not form in time.
    pub fn try_start() -> io::Result<Self> {
        require_binary("redis-server")?;
        let redis_cli = require_binary("redis-cli")?;
        let ports = cluster_ports()?;
        let dir = TempDir::with_prefix("redis-cluster")?;
        let mut cluster = Self {
            ports: ports.clone(),
            dir,
            processes: Vec::new(),
        };
        for port in ports {
            let args = node_args(cluster.dir.path(), port);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let process = Process::spawn(port, cluster.dir.path(), &args)?;
            cluster.processes.push(process);
        }
        create_cluster(Command::new(redis_cli), &cluster.ports)?;
        wait_until_ok(&cluster.ports, cluster_info)?;
        Ok(cluster)
    }

    /// `redis://127.0.0.1:<port>` of every master.
    pub fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|port| format!("redis://127.0.0.1:{port}"))
            .collect()
    }
}

/// The `redis-server` arguments of a cluster node on `port`, its node table in `dir`.
pub(super) fn node_args(dir: &Path, port: u16) -> Vec<String> {
    let config_file = dir.join(format!("nodes-{port}.conf"));
    vec![
        "--cluster-enabled".into(),
        "yes".into(),
        "--cluster-config-file".into(),
        config_file.to_string_lossy().into_owned(),
        "--cluster-node-timeout".into(),
        "5000".into(),
    ]
}

/// Joins the masters on `ports` into one cluster (all slots, no replicas) with
/// `redis_cli`, a `redis-cli` command that may carry connection options such as `--tls`.
/// Bounded: `redis-cli` waits forever for nodes that cannot meet (as TLS nodes whose
/// certificates the cluster bus refuses).
pub(super) fn create_cluster(mut redis_cli: Command, ports: &[u16]) -> io::Result<()> {
    redis_cli
        .arg("--cluster")
        .arg("create")
        .args(ports.iter().map(|port| format!("127.0.0.1:{port}")))
        .args(["--cluster-replicas", "0", "--cluster-yes"]);
    let output = output_within(&mut redis_cli, STARTUP).map_err(|error| {
        if error.kind() == io::ErrorKind::TimedOut {
            io::Error::other(
                "redis-cli --cluster create did not finish within 20 s: the nodes did not meet",
            )
        } else {
            error
        }
    })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&output.stdout).trim()
        )))
    }
}

/// Waits until `cluster_info(port)` says `cluster_state:ok` for every port: the slots are
/// assigned and every node agrees, so the first client sees a whole cluster.
pub(super) fn wait_until_ok(
    ports: &[u16],
    cluster_info: impl Fn(u16) -> io::Result<String>,
) -> io::Result<()> {
    let deadline = Instant::now() + STARTUP;
    for &port in ports {
        loop {
            if cluster_info(port).is_ok_and(|info| info.contains("cluster_state:ok")) {
                break;
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "redis cluster node on port {port} not ok within 20 s"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

fn cluster_info(port: u16) -> io::Result<String> {
    let query = || -> redis::RedisResult<String> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
        let mut connection = client.get_connection_with_timeout(Duration::from_millis(500))?;
        redis::cmd("CLUSTER").arg("INFO").query(&mut connection)
    };
    query().map_err(io::Error::other)
}

/// Distinct free ports below 55536 whose cluster bus port (+ 10000) is free as well.
pub(super) fn cluster_ports() -> io::Result<Vec<u16>> {
    let mut ports = Vec::new();
    let mut seen = HashSet::new();
    for _ in 0..1000 {
        let port = free_port()?;
        if port >= 55536 || !seen.insert(port) || seen.contains(&(port + 10000)) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            seen.insert(port + 10000);
            ports.push(port);
            if ports.len() == MASTERS {
                return Ok(ports);
            }
        }
    }
    Err(io::Error::other(
        "no free loopback ports below 55536 for a redis cluster",
    ))
}
