//! The command line of `cargo xtask up`.

use std::path::PathBuf;

use anyhow::{Context as _, bail};

pub const USAGE: &str = "usage: cargo xtask up [--nodes N] [--redis standalone|cluster] \
[--storage postgres|sqlite] [--gateway nginx|envoy] [--rls K] [--port P] [--binary PATH]
  --nodes N      shortener nodes on ports P+1..P+N (default 3)
  --gateway      nginx (default), or Envoy limiting creates per client through the rate
                 limit service (deploy/envoy.yaml, deploy/ratelimit/config/)
  --rls K        with --gateway envoy: K `shortener ratelimit-server` processes on the
                 shared Redis, gRPC and HTTP on the ports after the nodes' (default 2)
  --redis        one redis-server (default) or a three-master cluster
  --storage      one PostgreSQL database for every node (default), or SQLite (one node only)
  --port P       the gateway's port (default 8080)
  --binary PATH  this shortener binary instead of a release build";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisMode {
    Standalone,
    Cluster,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageMode {
    Postgres,
    Sqlite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayMode {
    Nginx,
    Envoy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub nodes: u16,
    pub redis: RedisMode,
    pub storage: StorageMode,
    pub gateway: GatewayMode,
    pub rls: u16,
    pub port: u16,
    pub binary: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            nodes: 3,
            redis: RedisMode::Standalone,
            storage: StorageMode::Postgres,
            gateway: GatewayMode::Nginx,
            rls: 2,
            port: 8080,
            binary: None,
        }
    }
}

impl Options {
    /// `None` for `--help`.
    ///
    /// # Errors
    /// An unknown flag or a bad value, naming it.
    pub fn parse(args: &[String]) -> anyhow::Result<Option<Self>> {
        let mut options = Self::default();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Ok(None);
            }
            let value = args
                .next()
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))?;
            match flag.as_str() {
                "--nodes" => {
                    options.nodes = value
                        .parse()
                        .ok()
                        .filter(|n| (1..=32).contains(n))
                        .with_context(|| format!("--nodes: `{value}` is not 1 to 32"))?;
                }
                "--redis" => {
                    options.redis = match value.as_str() {
                        "standalone" => RedisMode::Standalone,
                        "cluster" => RedisMode::Cluster,
                        _ => bail!("--redis: `{value}` is not standalone or cluster"),
                    };
                }
                "--storage" => {
                    options.storage = match value.as_str() {
                        "postgres" => StorageMode::Postgres,
                        "sqlite" => StorageMode::Sqlite,
                        _ => bail!("--storage: `{value}` is not postgres or sqlite"),
                    };
                }
                "--gateway" => {
                    options.gateway = match value.as_str() {
                        "nginx" => GatewayMode::Nginx,
                        "envoy" => GatewayMode::Envoy,
                        _ => bail!("--gateway: `{value}` is not nginx or envoy"),
                    };
                }
                "--rls" => {
                    options.rls = value
                        .parse()
                        .ok()
                        .filter(|k| (1..=8).contains(k))
                        .with_context(|| format!("--rls: `{value}` is not 1 to 8"))?;
                }
                "--port" => {
                    options.port = value
                        .parse()
                        .ok()
                        .filter(|port| *port > 0 && *port < 65_000)
                        .with_context(|| format!("--port: `{value}` is not a port below 65000"))?;
                }
                "--binary" => options.binary = Some(PathBuf::from(value)),
                _ => bail!("unknown flag `{flag}`\n{USAGE}"),
            }
        }
        if options.storage == StorageMode::Sqlite && options.nodes > 1 {
            bail!(
                "--storage sqlite: a SQLite file belongs to one node; use --nodes 1, or \
                 PostgreSQL for several"
            );
        }
        Ok(Some(options))
    }

    /// P+1..=P+N.
    pub fn node_ports(&self) -> impl Iterator<Item = u16> + use<> {
        let first = self.port + 1;
        first..first + self.nodes
    }

    /// The (gRPC, HTTP) ports of each rate limit service, after the nodes': none behind
    /// nginx.
    pub fn rls_ports(&self) -> Vec<(u16, u16)> {
        if self.gateway == GatewayMode::Nginx {
            return Vec::new();
        }
        let first = self.port + self.nodes + 1;
        (0..self.rls)
            .map(|index| (first + 2 * index, first + 2 * index + 1))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Option<Options>> {
        Options::parse(&args.iter().map(ToString::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_and_flags() {
        assert_eq!(parse(&[]).unwrap(), Some(Options::default()));
        let options = parse(&["--nodes", "5", "--redis", "cluster", "--port", "9000"])
            .unwrap()
            .unwrap();
        assert_eq!(
            (options.nodes, options.redis, options.port),
            (5, RedisMode::Cluster, 9000)
        );
        assert_eq!(
            options.node_ports().collect::<Vec<_>>(),
            [9001, 9002, 9003, 9004, 9005]
        );
        assert_eq!(parse(&["--help"]).unwrap(), None);
        assert!(options.rls_ports().is_empty(), "no services behind nginx");
        let envoy = parse(&[
            "--gateway",
            "envoy",
            "--nodes",
            "2",
            "--rls",
            "2",
            "--port",
            "9000",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(envoy.rls_ports(), [(9003, 9004), (9005, 9006)]);
    }

    #[test]
    fn bad_flags_are_named() {
        for (args, named) in [
            (&["--nodes", "0"][..], "--nodes"),
            (&["--redis", "sentinel"], "--redis"),
            (&["--storage", "mysql"], "--storage"),
            (&["--port", "x"], "--port"),
            (&["--gateway", "haproxy"], "--gateway"),
            (&["--rls", "0"], "--rls"),
            (&["--nodes"], "--nodes"),
            (&["--colour", "red"], "--colour"),
            (&["--storage", "sqlite"], "--storage sqlite"),
        ] {
            let error = parse(args).unwrap_err().to_string();
            assert!(error.contains(named), "{args:?}: {error}");
        }
        assert!(parse(&["--storage", "sqlite", "--nodes", "1"]).is_ok());
    }
}
