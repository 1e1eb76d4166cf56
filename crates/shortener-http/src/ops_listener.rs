//! `server.ops_bind`: `/metrics` and `/readyz` on a second address, so that they need not
//! be public. With it set, the public address answers them 404 (as if absent) and the ops
//! address answers them and `/healthz` only; without it, the public address answers all.

use poem::error::NotFoundError;
use poem::{Endpoint, IntoResponse as _, Request, Response};

/// The paths that move to the ops address.
const MOVED: [&str; 2] = ["/metrics", "/readyz"];

/// What the ops address answers.
const OPS: [&str; 3] = ["/metrics", "/readyz", "/healthz"];

/// Which side of the split an endpoint serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Everything (no `ops_bind`).
    All,
    /// The public address beside an ops address: all but [`MOVED`].
    Public,
    /// The ops address: [`OPS`] only.
    Ops,
}

/// Answers 404 for the paths that `side` does not serve.
#[derive(Debug)]
pub struct Split<E> {
    pub inner: E,
    pub side: Side,
}

impl<E: Endpoint> Endpoint for Split<E> {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        let path = request.uri().path();
        let served = match self.side {
            Side::All => true,
            Side::Public => !MOVED.contains(&path),
            Side::Ops => OPS.contains(&path),
        };
        if !served {
            return Err(NotFoundError.into());
        }
        self.inner.call(request).await.map(|r| r.into_response())
    }
}
