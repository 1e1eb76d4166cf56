//! The command line of `cargo xtask up`.

use std::path::PathBuf;

use anyhow::bail;

/// `cargo xtask up`: nodes, Redis, PostgreSQL and a gateway on this machine.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct Options {
    /// Shortener nodes, on ports P+1..P+N.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=32))]
    pub nodes: u16,
    /// One redis-server, or a three-master cluster.
    #[arg(long, value_enum, default_value_t = RedisMode::Standalone)]
    pub redis: RedisMode,
    /// One PostgreSQL database for every node, or SQLite (one node only).
    #[arg(long, value_enum, default_value_t = StorageMode::Postgres)]
    pub storage: StorageMode,
    /// nginx, or Envoy limiting creates per client through the rate limit service
    /// (deploy/envoy.yaml, deploy/ratelimit/config/).
    #[arg(long, value_enum, default_value_t = GatewayMode::Nginx)]
    pub gateway: GatewayMode,
    /// With `--gateway envoy`: K `shortener ratelimit-server` processes on the shared
    /// Redis, gRPC and HTTP on the ports after the nodes'.
    #[arg(long, value_name = "K", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=8))]
    pub rls: u16,
    /// The gateway's port.
    #[arg(long, value_name = "P", default_value_t = 8080, value_parser = clap::value_parser!(u16).range(1..65_000))]
    pub port: u16,
    /// This shortener binary instead of a release build.
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RedisMode {
    Standalone,
    Cluster,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageMode {
    Postgres,
    Sqlite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GatewayMode {
    Nginx,
    Envoy,
}

impl Options {
    /// What clap cannot say in an attribute: SQLite is for one node.
    ///
    /// # Errors
    /// `--storage sqlite` with more than one node.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.storage == StorageMode::Sqlite && self.nodes > 1 {
            bail!(
                "--storage sqlite: a SQLite file belongs to one node; use --nodes 1, or \
                 PostgreSQL for several"
            );
        }
        Ok(())
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
    use clap::Parser as _;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Up {
        #[command(flatten)]
        options: Options,
    }

    fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let up = Up::try_parse_from(std::iter::once("up").chain(args.iter().copied()))?;
        up.options.check()?;
        Ok(up.options)
    }

    #[test]
    fn defaults_and_flags() {
        let defaults = parse(&[]).unwrap();
        assert_eq!(
            (
                defaults.nodes,
                defaults.redis,
                defaults.storage,
                defaults.port
            ),
            (3, RedisMode::Standalone, StorageMode::Postgres, 8080)
        );
        let options = parse(&["--nodes", "5", "--redis", "cluster", "--port", "9000"]).unwrap();
        assert_eq!(
            (options.nodes, options.redis, options.port),
            (5, RedisMode::Cluster, 9000)
        );
        assert_eq!(
            options.node_ports().collect::<Vec<_>>(),
            [9001, 9002, 9003, 9004, 9005]
        );
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
