//! The `Allow` header of a 405, which RFC 9110 §15.5.6 requires: the methods of the path
//! template that matched, taken from the OpenAPI operations.

use poem::http::{HeaderValue, Method};

/// The methods of each path template (`/api/v1/links/{code}`), for the `Allow` header
/// that RFC 9110 requires on a 405.
#[derive(Debug, Default)]
pub struct AllowedMethods {
    routes: Vec<(Vec<Segment>, Vec<Method>)>,
}

#[derive(Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Variable,
}

impl AllowedMethods {
    /// From `(path template, method)` pairs, templates in the OpenAPI `{name}` form.
    pub fn new<'a>(operations: impl IntoIterator<Item = (&'a str, Method)>) -> Self {
        let mut allowed = Self::default();
        for (template, method) in operations {
            let segments: Vec<Segment> = split(template)
                .map(|segment| {
                    if segment.starts_with('{') && segment.ends_with('}') {
                        Segment::Variable
                    } else {
                        Segment::Literal(segment.to_owned())
                    }
                })
                .collect();
            let methods = match allowed.routes.iter_mut().find(|(s, _)| *s == segments) {
                Some((_, methods)) => methods,
                None => {
                    allowed.routes.push((segments, Vec::new()));
                    &mut allowed.routes.last_mut().expect("just pushed").1
                }
            };
            // The router answers HEAD wherever it answers GET.
            let implied = (method == Method::GET).then_some(Method::HEAD);
            for method in std::iter::once(method).chain(implied) {
                if !methods.contains(&method) {
                    methods.push(method);
                }
            }
        }
        allowed
    }

    /// The `Allow` value for `path`: the methods of the matching template with the most
    /// literal segments (the one the router picks), `None` when no template matches.
    pub(super) fn allow(&self, path: &str) -> Option<HeaderValue> {
        let parts: Vec<&str> = split(path).collect();
        let (_, methods) = self
            .routes
            .iter()
            .filter(|(segments, _)| {
                segments.len() == parts.len()
                    && segments
                        .iter()
                        .zip(&parts)
                        .all(|(segment, part)| match segment {
                            Segment::Literal(literal) => literal == part,
                            Segment::Variable => true,
                        })
            })
            .max_by_key(|(segments, _)| {
                segments
                    .iter()
                    .filter(|s| matches!(s, Segment::Literal(_)))
                    .count()
            })?;
        let value = methods
            .iter()
            .map(Method::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        HeaderValue::from_str(&value).ok()
    }
}

fn split(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|segment| !segment.is_empty())
}
