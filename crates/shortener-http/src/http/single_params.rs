//! Query parameters given once: a request that names a parameter twice is refused with a
//! 400 naming it, before any operation reads the query. Otherwise the rate limit, which
//! prices some requests by their query (a QR code by its size), and the operation, which
//! uses the query, could read different values of the same name.

use std::future::Future;

use poem::http::StatusCode;
use poem::{Endpoint, IntoResponse as _, Request, Response};

use crate::api_error::problem_response;

/// The parameters that are lists, given once per value (`tag=a&tag=b`, and Shlink's
/// `tags[]=a&tags[]=b`).
const LISTS: &[&str] = &["tag", "tags[]"];

/// Refuses requests whose query string names a parameter twice (see the module doc).
#[derive(Debug)]
pub struct SingleParams<E> {
    pub inner: E,
}

impl<E: Endpoint> Endpoint for SingleParams<E> {
    type Output = Response;

    fn call(&self, request: Request) -> impl Future<Output = poem::Result<Response>> + Send {
        let repeated = request.uri().query().and_then(repeated);
        let inner = repeated.is_none().then(|| self.inner.call(request));
        async move {
            match (inner, repeated) {
                (Some(inner), _) => inner.await.map(poem::IntoResponse::into_response),
                (None, name) => Ok(problem_response(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "{}: the query parameter is given more than once",
                        name.unwrap_or_default()
                    ),
                )
                .into_response()),
            }
        }
    }
}

/// The first parameter of `query` named twice (names compared decoded, as operations
/// read them), unless it is one of the [`LISTS`].
fn repeated(query: &str) -> Option<String> {
    let mut seen: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    for (name, _) in url::form_urlencoded::parse(query.as_bytes()) {
        if LISTS.contains(&name.as_ref()) {
            continue;
        }
        if seen.contains(&name) {
            return Some(name.into_owned());
        }
        seen.push(name);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_given_twice_is_found_however_it_is_written() {
        assert_eq!(repeated("size=64&format=png"), None);
        assert_eq!(repeated("tag=a&tag=b&limit=3"), None, "tag is a list");
        assert_eq!(repeated("size=64&size=2035").as_deref(), Some("size"));
        assert_eq!(repeated("size=64&si%7Ae=2035").as_deref(), Some("size"));
        assert_eq!(repeated("q&q").as_deref(), Some("q"));
        assert_eq!(repeated(""), None);
    }
}
