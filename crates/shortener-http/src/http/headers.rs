//! Request headers read by constant names: [`header_text`].

use poem::Request;
use poem::http::HeaderName;

/// The value of `request`'s header `name` as text: `None` when it is absent or not
/// visible ASCII, as poem's `Request::header` answers. This looks up a `HeaderName`
/// rather than parsing the name string on every call, which showed in the redirect's
/// profile. See `cargo xtask bench --only http` (one hot link) in docs/BENCHMARKS.md.
pub fn header_text<'r>(request: &'r Request, name: &HeaderName) -> Option<&'r str> {
    let value = request.headers().get(name)?;
    value.to_str().ok()
}
