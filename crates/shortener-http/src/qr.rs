//! QR codes of short URLs, rendered off the async workers and kept in a small cache:
//! [`QrCodes`].
//!
//! A 2048-pixel PNG takes milliseconds of CPU. Drawn on a tokio worker, a few concurrent
//! ones stall every redirect queued behind them; so renders run on the blocking pool, at
//! most half the cores at once (a request finding none free is told to retry:
//! 503 with `Retry-After`), and their output is cached per (short URL, format, size).
//! A QR code depends only on the short URL, which never changes for a code, so a cached
//! image is never stale; the cache is bounded by bytes ([`CACHE_BYTES`]).

use std::sync::Arc;

use qrcode::{Color, EcLevel, QrCode};
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use tokio::sync::Semaphore;

/// Modules of white border around the code, as the QR standard asks.
const QUIET_ZONE: usize = 4;

/// The most bytes of rendered images kept.
const CACHE_BYTES: u64 = 32 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Svg,
    Png,
}

/// Why no image was made.
#[derive(Debug, thiserror::Error)]
pub enum QrError {
    /// Every render slot is taken: retry shortly.
    #[error("every QR render slot is busy")]
    Busy,
    #[error("{0}")]
    Failed(String),
}

/// Renders and caches QR codes.
#[derive(Debug)]
pub struct QrCodes {
    renders: Arc<Semaphore>,
    cache: Cache<(String, Format, u32), Arc<Vec<u8>>, ImageBytes>,
}

/// An image weighs its bytes: the cache holds [`CACHE_BYTES`] of images.
#[derive(Debug, Clone)]
struct ImageBytes;

impl Weighter<(String, Format, u32), Arc<Vec<u8>>> for ImageBytes {
    fn weight(&self, _: &(String, Format, u32), image: &Arc<Vec<u8>>) -> u64 {
        u64::try_from(image.len()).unwrap_or(u64::MAX)
    }
}

impl Default for QrCodes {
    /// Renders run at once on half the cores at most (at least one), so that the other
    /// half is left to redirects.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let max_renders = (cores / 2).max(1);
        Self {
            renders: Arc::new(Semaphore::new(max_renders)),
            // About 2 KB an image (a PNG of 300 pixels, or an SVG).
            cache: Cache::with_weighter(
                usize::try_from(CACHE_BYTES / 2_048).unwrap_or(usize::MAX),
                CACHE_BYTES,
                ImageBytes,
            ),
        }
    }
}

impl QrCodes {
    /// The image of `text` in `format`, `size` pixels wide: from the cache, or rendered
    /// on the blocking pool.
    ///
    /// # Errors
    /// [`QrError::Busy`] when every render slot is taken; [`QrError::Failed`] when the
    /// text cannot be encoded.
    pub async fn image(
        &self,
        text: &str,
        format: Format,
        size: u32,
    ) -> Result<Arc<Vec<u8>>, QrError> {
        let key = (text.to_owned(), format, size);
        if let Some(image) = self.cache.get(&key) {
            return Ok(image);
        }
        let permit = Arc::clone(&self.renders)
            .try_acquire_owned()
            .map_err(|_| QrError::Busy)?;
        let text = key.0.clone();
        let image = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            render(&text, format, size)
        })
        .await
        .map_err(|e| QrError::Failed(e.to_string()))??;
        let image = Arc::new(image);
        self.cache.insert(key, Arc::clone(&image));
        Ok(image)
    }
}

fn render(text: &str, format: Format, size: u32) -> Result<Vec<u8>, QrError> {
    let qr = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M)
        .map_err(|e| QrError::Failed(e.to_string()))?;
    match format {
        Format::Svg => Ok(qr
            .render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(size, size)
            .max_dimensions(size.max(64) * 2, size.max(64) * 2)
            .build()
            .into_bytes()),
        Format::Png => png(&qr, size),
    }
}

/// Draws the modules at the largest whole scale that fits `size` (at least one pixel
/// per module), with the quiet zone, as an 8-bit greyscale PNG.
fn png(qr: &QrCode, size: u32) -> Result<Vec<u8>, QrError> {
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
    let failed = |e: png::EncodingError| QrError::Failed(format!("png: {e}"));
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(&pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn images_are_cached_and_renders_bounded() {
        let codes = QrCodes::default();
        let first = codes
            .image("http://s.example/abc", Format::Png, 256)
            .await
            .unwrap();
        assert!(first.starts_with(b"\x89PNG"));
        // Every slot taken: a cached image still comes, a new one is refused as busy.
        let _slot = Arc::clone(&codes.renders)
            .try_acquire_many_owned(u32::try_from(codes.renders.available_permits()).unwrap())
            .unwrap();
        let again = codes
            .image("http://s.example/abc", Format::Png, 256)
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert!(matches!(
            codes.image("http://s.example/abc", Format::Svg, 256).await,
            Err(QrError::Busy)
        ));
    }
}
