//! `ceiling [ADDRESS]` (default `127.0.0.1:0`): a bare poem server that answers every GET
//! with the same `302 Found` to the link the redirect benchmark creates, and nothing else:
//! one catch-all route, no limiter, no storage, no middleware. On the same machine, runtime
//! and wrk settings, it is the ceiling of any poem redirect service, the shortener's
//! included. Not a shortener: it stores and checks nothing.
//!
//! Prints `ceiling listening on http://ADDRESS` once it accepts connections, like
//! `shortener`, and serves until killed.

use poem::http::StatusCode;
use poem::listener::{Acceptor as _, Listener as _, TcpListener};
use poem::{Response, Route, Server, get, handler};

/// The target of the benchmark's hot link (the harness creates the shortener's link with it).
const LOCATION: &str = "https://example.com/bench";

#[handler]
fn found() -> Response {
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", LOCATION)
        .finish()
}

/// The same runtime as `shortener`: multi-threaded, one worker per core.
#[tokio::main]
async fn main() -> std::io::Result<()> {
    let bind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
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
