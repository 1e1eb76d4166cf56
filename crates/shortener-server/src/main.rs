//! The `shortener` binary: parses the command line (`cli`) and runs the subcommand it
//! names. `shortener --help` lists them; `serve` is the default.
//!
//! Exit codes: 0 done; 2 a bad command line, a bad configuration, or a start that the
//! configuration refuses (restarting unchanged will not help); 1 any other failure.

use std::path::Path;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};
use shortener_backends::RefusedStart;
use shortener_server::cli::{Cli, Command, ConfigCommand, ExportArgs, ImportArgs, MigrateArgs};
use shortener_server::config::{Config, LogConfig, LogFormat, Settings, Storage};
use shortener_server::logging;
use shortener_server::ratelimit_server;
use shortener_server::{app, export, health, import, migrate};

/// jemalloc, not the system's allocator: with glibc's, the cache's small, long-lived
/// entries pinned pages among the visit flushes' short-lived ones. RSS then stayed far
/// above the live heap. jemalloc returns unused pages after a second from a background
/// thread (`JEMALLOC_SYS_WITH_MALLOC_CONF` in `.cargo/config.toml`).
/// On Linux it also replaces `malloc` itself (the `unprefixed_malloc_on_supported_platforms`
/// feature), so that SQLite's page caches and statements, one set per pooled connection,
/// live in jemalloc's arenas rather than in a glibc arena per connection thread (glibc
/// makes up to eight per core). See `cargo xtask bench --only links` (RSS per cached
/// link) in docs/BENCHMARKS.md.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = cli.config.as_deref();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(config, false),
        Command::RatelimitServer => serve(config, true),
        Command::Migrate(args) => migrate(config, &args),
        Command::Export(args) => export(config, &args),
        Command::Import(args) => import(config, &args),
        Command::Config(ConfigCommand::Check { ratelimit_server }) => {
            check(config, ratelimit_server)
        }
        Command::Keys(command) => shortener_server::keys::run(command, |storage| {
            database_url(config, storage.database_url.as_ref(), "keep keys in")
        }),
        Command::Health { ratelimit_server } => health(config, ratelimit_server),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "shortener",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
    }
}

/// The settings of `file` and the environment as the HTTP server reads them, or as the
/// rate limit service does (`rls`: envoyproxy/ratelimit's variables too).
fn load_as(
    file: Option<&Path>,
    rls: bool,
) -> Result<Settings, shortener_server::config::ConfigError> {
    if rls {
        Config::load_for_rls(file, std::env::vars())
    } else {
        Config::load(file)
    }
}

/// The settings of `file` (and the environment), or the exit code 2 after saying why.
fn load(file: Option<&Path>, rls: bool) -> Result<Settings, ExitCode> {
    let loaded = load_as(file, rls);
    if let Ok(settings) = &loaded {
        for warning in &settings.warnings {
            eprintln!("shortener: warning: {warning}");
        }
    }
    loaded.map_err(|error| {
        eprintln!("shortener: configuration error: {error}");
        ExitCode::from(2)
    })
}

/// The runtime, or exit code 1 after saying why in `format` (text for the commands that
/// keep no log).
fn runtime(format: LogFormat) -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            logging::error(format, &format!("cannot start the runtime: {error}"));
            ExitCode::FAILURE
        })
}

fn serve(file: Option<&Path>, rls: bool) -> ExitCode {
    let loaded = load_as(file, rls);
    let settings = match loaded {
        Ok(settings) => settings,
        Err(error) => {
            // The rest did not load, but `log.format` may have: a collector reads the one
            // line that says why the process stopped as it reads the others.
            let log = LogConfig {
                format: Config::log_format_of(file, rls),
                ..LogConfig::default()
            };
            logging::init(&log);
            logging::error(log.format, &format!("configuration error: {error}"));
            return ExitCode::from(2);
        }
    };
    let format = settings.config.log.format;
    logging::init(&settings.config.log);
    for warning in &settings.warnings {
        logging::warn(format, warning);
    }
    let runtime = match runtime(format) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    // In the runtime: the signal handlers are installed from it, before anything listens.
    let served = runtime.block_on(async {
        let shutdown = app::shutdown_signal();
        if rls {
            ratelimit_server::serve(settings, shutdown).await
        } else {
            app::serve(settings, shutdown).await
        }
    });
    // `serve` kept the shutdown deadline; tasks still running past it are not waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            logging::error(format, &format!("{error:#}"));
            // A start refused by configuration (fail_closed without its Redis) is exit 2,
            // like a bad config file: restarting it unchanged will not help.
            if error.is::<RefusedStart>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// The database a command works on: `--database-url` (`given`), else the configuration's
/// `storage.url`; exit code 2 for memory storage, which keeps none.
fn database_url(
    file: Option<&Path>,
    given: Option<&String>,
    task: &str,
) -> Result<String, ExitCode> {
    match given {
        Some(url) => Ok(url.clone()),
        None => storage_url(&load(file, false)?, None, task),
    }
}

/// As [`database_url`], with the configuration loaded already.
fn storage_url(
    settings: &Settings,
    given: Option<&String>,
    task: &str,
) -> Result<String, ExitCode> {
    if let Some(url) = given {
        return Ok(url.clone());
    }
    match &settings.storage {
        Storage::Sqlite { url, .. } | Storage::Postgres { url, .. } => Ok(url.expose().to_owned()),
        Storage::Memory => {
            eprintln!("shortener: storage.kind = \"memory\" keeps no database: nothing to {task}");
            Err(ExitCode::from(2))
        }
    }
}

fn import(file: Option<&Path>, args: &ImportArgs) -> ExitCode {
    // The configuration's target rules apply to imported targets as to created ones.
    let settings = match load(file, false) {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    let url = match storage_url(&settings, args.database_url.as_ref(), "import into") {
        Ok(url) => url,
        Err(code) => return code,
    };
    let read = std::fs::File::open(&args.file)
        .map_err(anyhow::Error::from)
        .and_then(|input| {
            let input = std::io::BufReader::new(input);
            let now = time::OffsetDateTime::now_utc();
            Ok(import::read(args.from, input, args.owner.as_ref(), now)?)
        });
    let mut reading = match read {
        Ok(reading) => reading,
        Err(error) => {
            eprintln!("shortener: {}: {error:#}", args.file.display());
            return ExitCode::from(2);
        }
    };
    let domains = &settings.serving.domains;
    reading.place(
        |name| (domains.named(Some(name.as_str()))).unwrap_or_else(|_| name.clone()),
        args.domain.as_ref(),
    );
    let deny = settings.targets.deny_list();
    reading.check(&import::Rules {
        targets: settings.targets.rules(),
        deny: &deny,
        case_insensitive_aliases: settings.serving.case_insensitive_aliases,
        owner: args.owner.as_ref(),
        keep_owners: args.keep_owners,
        now: time::OffsetDateTime::now_utc(),
    });
    let runtime = match runtime(LogFormat::Text) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let total = reading.records.len();
    let progress = import::Progress::new(total);
    // Pending migrations are applied first as `serve` applies them, unless the
    // configuration says they are the operator's to apply.
    let pending = if settings.config.storage.migrate {
        import::Pending::Apply
    } else {
        import::Pending::Refuse
    };
    let written = runtime.block_on(import::run(
        &url,
        reading.records,
        args.dry_run,
        pending,
        |done| progress.show(done),
    ));
    progress.finish();
    let report = match written {
        Ok(import::Imported { migrations, report }) => {
            for migration in migrations {
                let (version, description) = (migration.version, migration.description);
                eprintln!("shortener: applied migration {version:04} {description}");
            }
            report
        }
        Err(error) => {
            eprintln!("shortener: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut refused = reading.refused;
    refused.sort_by_key(|refusal| refusal.line);
    for (kind, lines) in [("conflict", &report.conflicts), ("refused", &refused)] {
        for line in lines {
            println!("line {}: {kind}: {}", line.line, line.reason);
        }
    }
    let verb = if args.dry_run {
        "would import"
    } else {
        "imported"
    };
    println!(
        "{verb} {} links; {} unchanged, {} conflicts, {} refused",
        report.imported,
        report.unchanged,
        report.conflicts.len(),
        refused.len()
    );
    if let Some(stopped) = &report.stopped {
        eprintln!(
            "shortener: the import stopped: {stopped}; the {} links counted above were written, the lines after were not",
            report.imported
        );
        return ExitCode::FAILURE;
    }
    // A line that did not come in is worth a failing exit, so that a script notices.
    if refused.is_empty() && report.conflicts.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn export(file: Option<&Path>, args: &ExportArgs) -> ExitCode {
    let url = match database_url(file, args.database_url.as_ref(), "export") {
        Ok(url) => url,
        Err(code) => return code,
    };
    let runtime = match runtime(LogFormat::Text) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let format = if args.format == "csv" {
        export::Format::Csv
    } else {
        export::Format::Ndjson
    };
    let reach = args
        .owner
        .clone()
        .map_or(export::Reach::All, export::Reach::Owner);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match runtime.block_on(export::run(&url, format, &reach, &mut out)) {
        Ok(links) => {
            eprintln!("shortener: exported {links} links");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("shortener: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn migrate(file: Option<&Path>, args: &MigrateArgs) -> ExitCode {
    let url = match database_url(file, args.database_url.as_ref(), "migrate") {
        Ok(url) => url,
        Err(code) => return code,
    };
    let runtime = match runtime(LogFormat::Text) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    match runtime.block_on(migrate::run(&url, args.status)) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("shortener: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn check(file: Option<&Path>, rls: bool) -> ExitCode {
    let settings = match load(file, rls) {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    let shown = file.map_or_else(
        || "the defaults and the environment".to_owned(),
        |file| file.display().to_string(),
    );
    if rls {
        let directory = ratelimit_server::runtime_directory(&settings);
        match directory.load() {
            Ok((_, files)) => println!(
                "{shown}: valid; {} limits file(s) in {}",
                files.len(),
                directory.path().display()
            ),
            Err(error) => {
                eprintln!("shortener: the limits files do not load: {error}");
                return ExitCode::from(2);
            }
        }
    } else {
        let kind = |debug: String| debug.to_lowercase();
        println!(
            "{shown}: valid (storage {}, limiter {})",
            kind(format!("{:?}", settings.config.storage.kind)),
            kind(format!("{:?}", settings.config.limiter.kind))
        );
    }
    ExitCode::SUCCESS
}

fn health(file: Option<&Path>, ratelimit_server: bool) -> ExitCode {
    // Loaded as the service loads it, without repeating its warnings at every check.
    let loaded = load_as(file, ratelimit_server);
    let settings = match loaded {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("shortener: configuration error: {error}");
            return ExitCode::from(2);
        }
    };
    let (address, path) = health::endpoint(&settings, ratelimit_server);
    match health::check(address, path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shortener: unhealthy: {error}");
            ExitCode::FAILURE
        }
    }
}
