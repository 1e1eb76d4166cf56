//! A three-master Redis Cluster that speaks TLS only, clients and cluster bus alike.

use std::io;

use super::cluster::{cluster_ports, create_cluster, node_args, wait_until_ok};
use super::tls::{redis_cli, server_args, tls_ping};
use super::{Process, STARTUP};
use crate::process::{output_within, require_binary};
use crate::{TempDir, TestPki};

/// Three cluster-enabled masters that accept TLS connections only, with the server
/// certificate of a [`TestPki`], and talk TLS to each other on the cluster bus
/// (`tls-cluster`), so that `CLUSTER SLOTS` announces their TLS ports. Killed on drop.
#[derive(Debug)]
pub struct TlsRedisCluster {
    // Killed before their directory is removed: fields drop in order.
    processes: Vec<Process>,
    ports: Vec<u16>,
    dir: TempDir,
}

impl TlsRedisCluster {
    /// Starts the nodes and returns once every node reports `cluster_state:ok` over TLS.
    ///
    /// # Panics
    /// With one clear line when a binary is missing or the cluster does not form.
    pub fn start(pki: &TestPki) -> Self {
        Self::try_start(pki).unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`TlsRedisCluster::start`].
    ///
    /// # Errors
    /// When `redis-server` or `redis-cli` is missing or the cluster does not form in time.
    pub fn try_start(pki: &TestPki) -> io::Result<Self> {
        require_binary("redis-server")?;
        require_binary("redis-cli")?;
        let ports = cluster_ports()?;
        let mut cluster = Self {
            ports: ports.clone(),
            dir: TempDir::with_prefix("redis-tls-cluster")?,
            processes: Vec::new(),
        };
        for port in ports {
            let mut args = server_args(pki, port);
            args.extend(node_args(cluster.dir.path(), port));
            args.extend(["--tls-cluster", "yes", "--tls-replication", "yes"].map(String::from));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let process = Process::spawn_checked(port, cluster.dir.path(), &args, |port| {
                tls_ping(pki, port)
            })?;
            cluster.processes.push(process);
        }
        create_cluster(redis_cli(pki), &cluster.ports)?;
        wait_until_ok(&cluster.ports, |port| cluster_info(pki, port))?;
        Ok(cluster)
    }

    /// `rediss://127.0.0.1:<port>` of every master.
    pub fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|port| format!("rediss://127.0.0.1:{port}"))
            .collect()
    }

    /// The number of keys on each master (`DBSIZE` over TLS, trusting the CA of `pki`), in
    /// the order of [`TlsRedisCluster::urls`]: tells a test which nodes its calls reached.
    ///
    /// # Panics
    /// When a node does not answer.
    pub fn key_counts(&self, pki: &TestPki) -> Vec<u64> {
        self.ports
            .iter()
            .map(|&port| {
                let reply = query(pki, port, &["DBSIZE"]).unwrap_or_else(|error| panic!("{error}"));
                reply
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("DBSIZE on port {port} answered {:?}", reply.trim()))
            })
            .collect()
    }
}

fn cluster_info(pki: &TestPki, port: u16) -> io::Result<String> {
    query(pki, port, &["CLUSTER", "INFO"])
}

/// The reply of one command to the node on `port`, over TLS (`redis-cli` without a
/// terminal prints the bare reply).
fn query(pki: &TestPki, port: u16, command: &[&str]) -> io::Result<String> {
    let output = output_within(
        redis_cli(pki)
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(command),
        STARTUP,
    )?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(io::Error::other(format!(
            "redis-cli {} on port {port} failed: {}",
            command.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}
