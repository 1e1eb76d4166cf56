//! `shortener [serve] [--config FILE]`: loads the configuration and serves.
//! `shortener keys new --name NAME [--tier TIER] [--scopes create,read,...]`: a new API key.
//! `shortener ratelimit-server [--config FILE]`: the rate limit service for Envoy.
//! `shortener --version`.

use std::path::PathBuf;
use std::process::ExitCode;

use shortener_server::app;
use shortener_server::config::Config;
use shortener_server::keys::NewKey;
use shortener_server::ratelimit_server::{self, LimitsRefusedStart};
use shortener_server::wiring::LimiterRefusedStart;

const USAGE: &str = "usage: shortener [serve] [--config FILE]   (or SHORTENER_CONFIG=FILE)
       shortener keys new --name NAME [--tier TIER] [--scopes create,read,update,delete,admin]
       shortener ratelimit-server [--config FILE]
       shortener --version";

fn main() -> ExitCode {
    let mut config_file = std::env::var_os("SHORTENER_CONFIG").map(PathBuf::from);
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("keys") {
        args.next();
        return keys(args);
    }
    let mut rls = false;
    if args.peek().map(String::as_str) == Some("ratelimit-server") {
        args.next();
        rls = true;
    }
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "serve" => {}
            "--config" => match args.next() {
                Some(file) => config_file = Some(file.into()),
                None => return usage_error("--config needs a file"),
            },
            "-V" | "--version" => {
                println!("shortener {}", shortener_server::version::long());
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage_error(&format!("unknown argument `{other}`")),
        }
    }
    let loaded = if rls {
        Config::load_for_rls(config_file.as_deref(), std::env::vars())
    } else {
        Config::load(config_file.as_deref())
    };
    let config = match loaded {
        Ok(config) => config,
        Err(error) => {
            eprintln!("shortener: configuration error: {error}");
            return ExitCode::from(2);
        }
    };
    shortener_server::logging::init(&config.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("shortener: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let served = if rls {
        runtime.block_on(ratelimit_server::serve(config, app::shutdown_signal()))
    } else {
        runtime.block_on(app::serve(config, app::shutdown_signal()))
    };
    // `serve` kept the shutdown deadline; tasks still running past it are not waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shortener: {error:#}");
            // A start refused by configuration (fail_closed without its Redis) is exit 2,
            // like a bad config file: restarting it unchanged will not help.
            if error.is::<LimiterRefusedStart>() || error.is::<LimitsRefusedStart>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn keys(mut args: impl Iterator<Item = String>) -> ExitCode {
    if args.next().as_deref() != Some("new") {
        return usage_error("`keys` takes `new`");
    }
    let request = match NewKey::from_args(args) {
        Ok(request) => request,
        Err(error) => return usage_error(&error),
    };
    match request.generate() {
        Ok((_key, text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("shortener: no randomness for a key: {error}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("shortener: {message}\n{USAGE}");
    ExitCode::from(2)
}
