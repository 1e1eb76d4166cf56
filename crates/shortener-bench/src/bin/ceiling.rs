//! `ceiling`: a bare poem server on a free loopback port that answers every GET with the
//! same `302 Found` to the benchmark's link target, and nothing else (no limiter,
//! storage or middleware): on the same machine, runtime and wrk settings, the ceiling of
//! any poem redirect service. Prints `ceiling listening on http://ADDRESS`, like `shortener`.

use poem::http::StatusCode;
use poem::listener::{Acceptor as _, Listener as _, TcpListener};
use poem::{Response, Route, Server, get, handler};
use shortener_bench::TARGET;

#[handler]
fn found() -> Response {
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", TARGET)
        .finish()
}

/// The same runtime as `shortener`: multi-threaded, one worker per core.
#[tokio::main]
async fn main() -> std::io::Result<()> {
    let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await?;
    if let Some(local) = acceptor.local_addr()[0].as_socket_addr() {
        println!("ceiling listening on http://{local}");
    }
    Server::new_with_acceptor(acceptor)
        .run(Route::new().at("/*path", get(found)))
        .await
}
