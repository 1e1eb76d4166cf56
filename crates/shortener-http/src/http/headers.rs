//! Request headers read by constant names: [`header_text`].

use poem::Request;
use poem::http::HeaderName;

/// The value of `request`'s header `name` as text: `None` when it is absent or not
/// visible ASCII, as poem's `Request::header` answers. That method takes the name as a
/// string and parses it again on every call (a few percent of a redirect's instructions,
/// by callgrind, for the five headers a redirect reads); this looks up a `HeaderName`.
pub fn header_text<'r>(request: &'r Request, name: &HeaderName) -> Option<&'r str> {
    let value = request.headers().get(name)?;
    value.to_str().ok()
}
