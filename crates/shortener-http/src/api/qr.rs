//! QR codes of short URLs, as SVG or PNG.

use std::sync::Arc;

use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Binary;
use poem_openapi::{ApiResponse, Enum, OpenApi};

use super::auth::Caller;
use super::{ApiError, ApiTags};
use crate::auth::Scope;
use crate::limit::limit_by_query;
use crate::qr::{Format, QrError};
use crate::state::AppState;

#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[oai(rename_all = "lowercase")]
pub enum QrFormat {
    #[default]
    Svg,
    Png,
}

#[derive(ApiResponse, Debug)]
enum QrResponse {
    /// The QR code of the link's `short_url`.
    #[oai(status = 200, content_type = "image/svg+xml")]
    Svg(
        Binary<Vec<u8>>,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Vary")] String,
    ),
    /// The QR code of the link's `short_url`.
    #[oai(status = 200, content_type = "image/png")]
    Png(
        Binary<Vec<u8>>,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Vary")] String,
    ),
}

/// A shared cache must not answer a keyed request with an anonymous one's image.
const VARY: &str = "X-API-Key";

/// QR codes.
#[derive(Debug, Default)]
pub struct Qr;

#[OpenApi]
impl Qr {
    /// The short URL of a link as a QR code, for the same callers as the look-up. It takes
    /// tokens of the `lookup` policy by its size: one for SVG, `1 + size / 512` for PNG.
    /// A code made with an API key is sent `Cache-Control: private`. While every render
    /// slot is busy, a code not rendered before is 503 with `Retry-After`.
    #[oai(
        path = "/api/v1/links/:code/qr",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "linkQrCode",
        transform = "limit_qr"
    )]
    async fn qr(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        /// The link's domain, by its host; the default domain when absent.
        #[oai(validator(
            max_length = 259,
            pattern = r"^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$"
        ))]
        domain: Query<Option<String>>,
        caller: Caller,
        /// `svg` (default) or `png`.
        format: Query<Option<QrFormat>>,
        /// The width and height in pixels, 64 to 2048 (default 256).
        #[oai(validator(minimum(value = "64"), maximum(value = "2048")))]
        size: Query<Option<u32>>,
    ) -> Result<QrResponse, ApiError> {
        let key = caller.require(Scope::Read)?;
        let link_key = state.link_key(&code, domain.0.as_deref())?;
        let link = state.visible_link(&link_key, key).await?;
        let cache = if key.is_some() || link.owner.is_some() {
            "private, max-age=86400"
        } else {
            "public, max-age=86400"
        };
        let short_url = state.link_body(link).short_url;
        let size = size.0.unwrap_or(256);
        let format = format.0.unwrap_or_default();
        let image = state
            .qr
            .image(
                &short_url,
                match format {
                    QrFormat::Svg => Format::Svg,
                    QrFormat::Png => Format::Png,
                },
                size,
            )
            .await
            .map_err(|error| match error {
                QrError::Busy => ApiError::status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "every QR render slot is busy; retry in a second",
                ),
                QrError::Failed(why) => ApiError::status(StatusCode::INTERNAL_SERVER_ERROR, why),
            })?;
        let image = Binary(image.as_ref().clone());
        Ok(match format {
            QrFormat::Svg => QrResponse::Svg(image, cache.to_owned(), VARY.to_owned()),
            QrFormat::Png => QrResponse::Png(image, cache.to_owned(), VARY.to_owned()),
        })
    }
}

/// Limits QR codes as look-ups, at a cost that grows with the image ([`qr_cost`]).
fn limit_qr(endpoint: impl poem::Endpoint) -> impl poem::Endpoint {
    limit_by_query(endpoint, &["lookup"], qr_cost)
}

/// The tokens of a QR request: one for SVG (text, cheap to draw), `1 + size / 512` for PNG
/// (2 to 5 from 512 pixels up), read from the query as the operation reads it; a query it
/// will refuse costs one.
fn qr_cost(query: &str) -> u64 {
    let (mut png, mut size) = (false, 256u64);
    // Names and values decoded, as the operation reads them (a parameter given twice
    // never gets here: `SingleParams` refuses it first).
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match (name.as_ref(), value.as_ref()) {
            ("format", "png") => png = true,
            ("size", value) => size = value.parse().unwrap_or(256).min(2048),
            _ => {}
        }
    }
    if png { 1 + size / 512 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::qr_cost;

    #[test]
    fn a_qr_code_is_priced_by_the_size_the_operation_reads() {
        assert_eq!(qr_cost("format=svg&size=2048"), 1);
        assert_eq!(qr_cost("format=png&size=2035"), 4);
        // Encoded as a client may write it: the same size, the same price.
        assert_eq!(qr_cost("format=png&si%7Ae=2035"), 4);
        assert_eq!(qr_cost("%66ormat=png&size=%32%30%33%35"), 4);
        assert_eq!(qr_cost("format=png"), 1, "256 px by default");
    }
}
