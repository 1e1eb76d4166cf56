//! QR codes of short URLs, as SVG or PNG.

use std::sync::Arc;

use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Binary;
use poem_openapi::{ApiResponse, Enum, OpenApi};
use qrcode::{Color, EcLevel, QrCode};

use super::auth::Caller;
use super::{ApiError, ApiTags, parse_code};
use crate::limit::limit_lookup;
use crate::state::{AppState, Scope};

/// Modules of white border around the code, as the QR standard asks.
const QUIET_ZONE: usize = 4;

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
    Svg(Binary<Vec<u8>>, #[oai(header = "Cache-Control")] String),
    /// The QR code of the link's `short_url`.
    #[oai(status = 200, content_type = "image/png")]
    Png(Binary<Vec<u8>>, #[oai(header = "Cache-Control")] String),
}

/// QR codes.
#[derive(Debug, Default)]
pub struct Qr;

#[OpenApi]
impl Qr {
    /// The short URL of a link as a QR code, for the same callers as the look-up.
    #[oai(
        path = "/api/v1/links/:code/qr",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "linkQrCode",
        transform = "limit_lookup"
    )]
    async fn qr(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        caller: Caller,
        /// `svg` (default) or `png`.
        format: Query<Option<QrFormat>>,
        /// The width and height in pixels, 64 to 2048 (default 256).
        #[oai(validator(minimum(value = "64"), maximum(value = "2048")))]
        size: Query<Option<u32>>,
    ) -> Result<QrResponse, ApiError> {
        let key = caller.require(Scope::Read)?;
        let code = parse_code(&code)?;
        let link = state.visible_link(&code, key).await?;
        let short_url = state.link_body(link).short_url;
        let qr = QrCode::with_error_correction_level(short_url.as_bytes(), EcLevel::M)
            .map_err(|e| ApiError::status(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let size = size.0.unwrap_or(256);
        let cache = "public, max-age=86400".to_owned();
        Ok(match format.0.unwrap_or_default() {
            QrFormat::Svg => {
                let svg = qr
                    .render::<qrcode::render::svg::Color<'_>>()
                    .min_dimensions(size, size)
                    .max_dimensions(size.max(64) * 2, size.max(64) * 2)
                    .build();
                QrResponse::Svg(Binary(svg.into_bytes()), cache)
            }
            QrFormat::Png => QrResponse::Png(Binary(png(&qr, size)?), cache),
        })
    }
}

/// Draws the modules at the largest whole scale that fits `size` (at least one pixel
/// per module), with the quiet zone, as an 8-bit greyscale PNG.
fn png(qr: &QrCode, size: u32) -> Result<Vec<u8>, ApiError> {
    let modules = qr.width();
    let colors = qr.to_colors();
    let span = modules + 2 * QUIET_ZONE;
    let scale = (size as usize / span).max(1);
    let side = span * scale;
    let mut pixels = vec![255u8; side * side];
    for (index, color) in colors.iter().enumerate() {
        if *color != Color::Dark {
            continue;
        }
        let (x, y) = (index % modules + QUIET_ZONE, index / modules + QUIET_ZONE);
        for row in y * scale..(y + 1) * scale {
            pixels[row * side + x * scale..row * side + (x + 1) * scale].fill(0);
        }
    }
    let side = u32::try_from(side).unwrap_or(u32::MAX);
    let mut out = Vec::new();
    let failed = |e: png::EncodingError| {
        ApiError::status(StatusCode::INTERNAL_SERVER_ERROR, format!("png: {e}"))
    };
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(&pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}
