//! Middleware around the whole application, one job each, outermost first:
//!
//! - [`NoSniff`]: `X-Content-Type-Options: nosniff` on every response;
//! - [`OneHost`]: 400 for an HTTP/1.1 request without `Host`, or any with two;
//! - [`Measured`]: counts and times each request by operation and status class, and logs
//!   it when `log.requests` (the redirects answered before the router are measured there);
//! - [`RequestTimeout`]: 503 with `Retry-After` when a request takes longer than
//!   `server.request_timeout_ms`;
//! - [`Problems`]: every error leaves as `application/problem+json` naming its field, and a
//!   405 carries `Allow` ([`AllowedMethods`]);
//! - [`BodyLimit`]: 413 for a body over `server.max_body_bytes`;
//! - [`SingleParams`]: 400 for a query that names a parameter twice (redirects, answered
//!   before the router, pass their query on as it is).
//!
//! And one helper for handlers: [`header_text`], a request header read by a constant name.
//!
//! The layers a redirect passes through ([`NoSniff`], [`RequestTimeout`], the redirects'
//! own and the rate limit's) write `call` as a plain `fn` that moves the request into
//! the inner endpoint's future and returns an `async` block holding only that future.
//! An `async fn call` would keep its own copy of the request (472 bytes) beside the inner
//! future, which holds it too: each layer added that much to the future that poem boxes
//! for every request, and copies as it goes. The redirect's future was 5 KB before.

mod allow;
mod body_limit;
mod headers;
mod host;
pub mod measured;
mod nosniff;
mod problems;
mod single_params;
mod timeout;

pub use allow::AllowedMethods;
pub use body_limit::BodyLimit;
pub use headers::header_text;
pub use host::OneHost;
pub use measured::Measured;
pub use nosniff::NoSniff;
pub use problems::{Problems, problem_of_error};
pub use single_params::SingleParams;
pub use timeout::RequestTimeout;
