//! `shortener [serve] [--config FILE]`: loads the configuration and serves.

use std::path::PathBuf;
use std::process::ExitCode;

use shortener_server::app;
use shortener_server::config::Config;
use shortener_server::wiring::LimiterRefusedStart;

const USAGE: &str = "usage: shortener [serve] [--config FILE]   (or SHORTENER_CONFIG=FILE)";

fn main() -> ExitCode {
    let mut config_file = std::env::var_os("SHORTENER_CONFIG").map(PathBuf::from);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "serve" => {}
            "--config" => match args.next() {
                Some(file) => config_file = Some(file.into()),
                None => return usage_error("--config needs a file"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage_error(&format!("unknown argument `{other}`")),
        }
    }
    let config = match Config::load(config_file.as_deref()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("shortener: configuration error: {error}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .init();
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
    let served = runtime.block_on(app::serve(config, app::shutdown_signal()));
    // `serve` kept the shutdown deadline; tasks still running past it are not waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shortener: {error:#}");
            // A start refused by configuration (fail_closed without its Redis) is exit 2,
            // like a bad config file: restarting it unchanged will not help.
            if error.is::<LimiterRefusedStart>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("shortener: {message}\n{USAGE}");
    ExitCode::from(2)
}
