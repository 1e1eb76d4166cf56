//! `[visits]`: what a visit is counted by beside people and bots, and how many values of
//! each are kept.

use serde::{Deserialize, Serialize};

/// `[visits]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VisitsConfig {
    /// The most values kept per link, UTC day and dimension; the rest count as `other`.
    pub top_values: usize,
    /// Count the host of each visit's `Referer` (`direct` without one).
    pub track_referrer: bool,
    /// Count the browser, operating system and device class of each visit's
    /// `User-Agent`.
    pub track_agent: bool,
    /// A visit with `DNT: 1` or `Sec-GPC: 1` counts with no values.
    pub respect_do_not_track: bool,
    /// A MaxMind DB file of countries (GeoLite2-Country, GeoIP2-Country or DB-IP's
    /// IP-to-Country Lite), read again when it changes; empty: no countries.
    pub geoip_db: String,
    /// Count the country of each visit's client address, when `geoip_db` is set.
    pub track_country: bool,
    /// How often the values are written, in seconds. A write costs a row per link, day
    /// and value whatever the visits, so a longer interval writes fewer rows; a crash
    /// loses at most this long of values (a shutdown writes them).
    pub flush_values_secs: u64,
}

impl Default for VisitsConfig {
    fn default() -> Self {
        Self {
            top_values: shortener_core::DEFAULT_TOP_VALUES,
            track_referrer: true,
            track_agent: true,
            respect_do_not_track: false,
            geoip_db: String::new(),
            track_country: true,
            flush_values_secs: 10,
        }
    }
}

impl VisitsConfig {
    /// # Errors
    /// The line naming the key, when `top_values` is not within 1 to 1000 or
    /// `flush_values_secs` not within 1 to 3600.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=1000).contains(&self.top_values) {
            return Err(
                "invalid value for key `visits.top_values`: must be between 1 and 1000".into(),
            );
        }
        if !(1..=3600).contains(&self.flush_values_secs) {
            return Err(
                "invalid value for key `visits.flush_values_secs`: must be between 1 and 3600"
                    .into(),
            );
        }
        Ok(())
    }
}
