//! The `shortener` command line, parsed by clap: what each subcommand takes, and its
//! `--help`. `main.rs` runs what it names; the work itself lives in [`crate::app`],
//! [`crate::migrate`], [`crate::export`], [`crate::import`], [`crate::keys`], [`crate::ratelimit_server`] and [`crate::health`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use shortener_core::{Domain, Owner};

use shortener_http::auth::Scope;

/// The shortener and its rate limiter. Without a subcommand it serves (`serve`).
#[derive(Debug, Parser)]
#[command(name = "shortener", version = shortener_http::version::LONG, about)]
pub struct Cli {
    /// The TOML configuration file; built-in defaults and `SHORTENER_*` variables apply
    /// without one.
    #[arg(long, global = true, value_name = "FILE", env = "SHORTENER_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// A subcommand.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serves the shortener's HTTP API and redirects (the default).
    Serve,
    /// Applies the pending storage migrations of `storage.url`, or lists them.
    Migrate(MigrateArgs),
    /// Checks a configuration without starting anything.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Makes API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Writes every link of `storage.url` (or one owner's) to standard output, as NDJSON
    /// or CSV, newest first: what `GET /api/v1/links/export` streams, read from storage
    /// directly.
    Export(ExportArgs),
    /// Reads links from a file of another shortener (or of `export`) into `storage.url`,
    /// keeping their codes; a code that exists is skipped, a bad line changes nothing.
    Import(ImportArgs),
    /// Serves Envoy's rate limit service (gRPC) from envoyproxy/ratelimit's limits files.
    RatelimitServer,
    /// Asks the running service of this configuration whether it is up (exit 0) or not
    /// (exit 1): a container's health check, which has no shell or HTTP client to do it.
    Health {
        /// Asks the rate limit service (`rls.http_bind`, `/healthcheck`) instead of the
        /// HTTP server (`server.ops_bind` or `server.bind`, `/healthz`).
        #[arg(long)]
        ratelimit_server: bool,
    },
    /// Prints a shell completion script to standard output.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
}

/// `shortener migrate`.
#[derive(Debug, Args, PartialEq, Eq)]
pub struct MigrateArgs {
    /// Lists each migration as applied or pending, and changes nothing.
    #[arg(long)]
    pub status: bool,
    /// The database (sqlite:… or postgres://…) instead of the configuration's
    /// `storage.url`.
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
}

/// `shortener export`.
#[derive(Debug, Args, PartialEq, Eq)]
pub struct ExportArgs {
    /// `ndjson` (one JSON object per line) or `csv` (a header line, then RFC 4180 rows).
    #[arg(long, default_value = "ndjson", value_parser = ["ndjson", "csv"])]
    pub format: String,
    /// Only the links of this API key name.
    #[arg(long, value_parser = parse_owner)]
    pub owner: Option<Owner>,
    /// The database (sqlite:… or postgres://…) instead of the configuration's
    /// `storage.url`.
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
}

/// `shortener import`.
#[derive(Debug, Args, PartialEq, Eq)]
pub struct ImportArgs {
    /// The file's format. Exit 1 when a line is refused or its code is taken by another
    /// target.
    #[arg(long, value_enum)]
    pub from: crate::import::Source,
    /// The file to read.
    pub file: PathBuf,
    /// The owner of every imported link (an API key name). Without it, imported links
    /// have no owner, unless `--keep-owners` is given.
    #[arg(long, value_parser = parse_owner, conflicts_with = "keep_owners")]
    pub owner: Option<Owner>,
    /// Keeps the owners the file names (our NDJSON export's `owner`): a file then places
    /// links in those API keys' namespaces, so it takes this explicit flag.
    #[arg(long)]
    pub keep_owners: bool,
    /// The domain of every imported link (its host), instead of the file's.
    #[arg(long, value_name = "HOST", value_parser = parse_domain)]
    pub domain: Option<Domain>,
    /// Reads and checks everything and says what would be imported, writing nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The database (sqlite:… or postgres://…) instead of the configuration's
    /// `storage.url`.
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
}

/// `shortener config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Loads the configuration as the server would and reports the first bad key (exit 2),
    /// or that it is valid (exit 0). Connects to nothing.
    Check {
        /// Checks it as `ratelimit-server` reads it: envoyproxy/ratelimit's variables too,
        /// and every limits file of the runtime directory.
        #[arg(long)]
        ratelimit_server: bool,
    },
}

/// `shortener keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Prints a new random API key once, and the `[[api_keys]]` block (with only its
    /// SHA-256) to paste into the configuration; with `--store`, keeps it in storage
    /// instead, where every running node takes it within a second.
    New(NewKeyArgs),
    /// Lists the keys kept in storage (not those of the configuration file).
    List(StoredKeysArgs),
    /// Revokes a key kept in storage: every running node refuses it within a second.
    Revoke {
        /// The key's name.
        #[arg(value_parser = parse_owner)]
        name: Owner,
        #[command(flatten)]
        storage: StoredKeysArgs,
    },
}

/// Where `shortener keys` finds the stored keys.
#[derive(Debug, Args, Clone, PartialEq, Eq)]
pub struct StoredKeysArgs {
    /// The database (sqlite:… or postgres://…) instead of the configuration's
    /// `storage.url`.
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
}

/// `shortener keys new`.
#[derive(Debug, Args, Clone, PartialEq, Eq)]
pub struct NewKeyArgs {
    /// The owner of the links made with the key (letters, digits, `-`, `_`, `.`).
    #[arg(long, value_parser = parse_owner)]
    pub name: Owner,
    /// The tier whose `[tiers.*]` policies apply to the key.
    #[arg(long)]
    pub tier: Option<String>,
    /// Keeps the key in storage (`storage.url`, or `--database-url`) instead of printing
    /// a block for the configuration file.
    #[arg(long)]
    pub store: bool,
    /// With `--store`: whose links the key reaches, when not its own name's.
    #[arg(long, value_parser = parse_owner, requires = "store")]
    pub owner: Option<Owner>,
    #[command(flatten)]
    pub storage: StoredKeysArgs,
    /// What the key may do.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = parse_scope,
        default_value = "create,read,update,delete"
    )]
    pub scopes: Vec<Scope>,
}

fn parse_owner(raw: &str) -> Result<Owner, String> {
    Owner::parse(raw).map_err(|error| error.to_string())
}

fn parse_domain(raw: &str) -> Result<Domain, String> {
    Domain::parse(raw).map_err(|error| error.to_string())
}

fn parse_scope(raw: &str) -> Result<Scope, String> {
    Scope::parse(raw.trim()).ok_or_else(|| {
        format!("unknown scope `{raw}`; expected create, read, update, delete or admin")
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("shortener").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_subcommand_serves_and_config_goes_anywhere() {
        let cli = parse(&[]).unwrap();
        assert!(cli.command.is_none());
        let cli = parse(&["migrate", "--status", "--config", "a.toml"]).unwrap();
        assert_eq!(cli.config, Some(PathBuf::from("a.toml")));
        let Some(Command::Migrate(args)) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(
            args,
            MigrateArgs {
                status: true,
                database_url: None
            }
        );
    }

    #[test]
    fn key_arguments_are_checked_and_named() {
        let cli = parse(&["keys", "new", "--name", "acme", "--scopes", "create,read"]).unwrap();
        let Some(Command::Keys(KeysCommand::New(key))) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(key.scopes, [Scope::Create, Scope::Read]);
        assert_eq!(key.tier, None);
        let cli = parse(&["keys", "new", "--name", "acme"]).unwrap();
        let Some(Command::Keys(KeysCommand::New(key))) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(
            key.scopes,
            [Scope::Create, Scope::Read, Scope::Update, Scope::Delete]
        );
        for (args, named) in [
            (
                &["keys", "new", "--name", "acme", "--scopes", "write"][..],
                "--scopes",
            ),
            (&["keys", "new", "--tier", "pro"], "--name"),
            (&["keys", "new", "--name", "a b"], "--name"),
            (&["serve", "--colour"], "--colour"),
        ] {
            let error = parse(args).unwrap_err().to_string();
            assert!(error.contains(named), "{args:?}: {error}");
        }
    }
}
