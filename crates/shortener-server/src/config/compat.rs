//! `[compat]`: the APIs of other shorteners that the service speaks besides its own, so
//! that tools written for them keep working when their links move here.

use serde::{Deserialize, Serialize};

/// `[compat]`: each API off unless switched on; when on, its paths are its own (an alias
/// cannot take its first segment).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompatConfig {
    /// Shlink's REST API under `/rest/` (v3, and v1/v2 where older tools call them),
    /// with Shlink's `X-Api-Key` header taking this service's API keys.
    pub shlink: bool,
    /// Kutt's API v2 under `/api/v2/`, with its `X-API-KEY` header taking this
    /// service's API keys.
    pub kutt: bool,
    /// YOURLS' API at `/yourls-api.php`: `signature=KEY`, or `username=NAME` and
    /// `password=KEY`, are this service's API keys.
    pub yourls: bool,
}
