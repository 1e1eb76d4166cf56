//! `ceiling [ADDRESS]` (default `127.0.0.1:0`): a bare poem server that answers every GET
//! with the same `302 Found` to the benchmark's link target, and nothing else (no limiter,
//! storage or middleware): on the same machine, runtime and wrk settings, the ceiling of
//! any poem redirect service. Prints `ceiling listening on http://ADDRESS`, like `shortener`.

use poem::http::StatusCode;
use poem::listener::{Acceptor as _, Listener as _, TcpListener};
use poem::{Response, Route, Server, get, handler};

/// The target of the benchmark's links.
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
    let bind = std::env::args().nth(1);
    let listener = TcpListener::bind(bind.as_deref().unwrap_or("127.0.0.1:0"));
    let acceptor = listener.into_acceptor().await?;
    if let Some(local) = acceptor.local_addr()[0].as_socket_addr() {
        println!("ceiling listening on http://{local}");
    }
    Server::new_with_acceptor(acceptor)
        .run(Route::new().at("/*path", get(found)))
        .await
}
