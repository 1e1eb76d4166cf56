//! `ceiling [--bind 127.0.0.1:0]`: a bare poem server that answers every GET with the same
//! `302 Found` to the link the redirect benchmark creates, and nothing else: one catch-all
//! route, no limiter, no storage, no middleware. On the same machine, runtime and wrk
//! settings, it is the ceiling of any poem redirect service, the shortener's included.
//!
//! Prints `ceiling listening on http://ADDRESS` once it accepts connections, like
//! `shortener`, and serves until killed.

use std::process::ExitCode;

use poem::http::StatusCode;
use poem::listener::{Acceptor as _, Listener as _, TcpListener};
use poem::{Response, Route, Server, get, handler};
use shortener_bench::Args;

/// The target of the benchmark's hot link (xtask creates the shortener's link with it).
const LOCATION: &str = "https://example.com/bench";

#[handler]
fn found() -> Response {
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", LOCATION)
        .finish()
}

fn main() -> ExitCode {
    let bind = match Args::from_env() {
        Ok(args) if args.unknown(&["bind"]).is_empty() => {
            args.get("bind").unwrap_or("127.0.0.1:0").to_owned()
        }
        Ok(_) => return usage("unknown flag"),
        Err(error) => return usage(&error),
    };
    // The same runtime as `shortener`: multi-threaded, one worker per core.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("ceiling: cannot start tokio: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(&bind)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("ceiling: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(bind: &str) -> std::io::Result<()> {
    let acceptor = TcpListener::bind(bind).into_acceptor().await?;
    let local = acceptor
        .local_addr()
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    println!(
        "ceiling listening on http://{}",
        local.trim_start_matches("socket://")
    );
    Server::new_with_acceptor(acceptor)
        .run(Route::new().at("/*path", get(found)))
        .await
}

fn usage(error: &str) -> ExitCode {
    eprintln!("ceiling: {error}\nusage: ceiling [--bind 127.0.0.1:0]");
    ExitCode::from(2)
}
