//! Other shorteners' APIs, spoken over the same core as this service's own: a tool
//! written for one of them keeps working once its server address points here.
//!
//! Each is a driving adapter of its own that maps its requests onto the same creates,
//! look-ups and edits as [`crate::api`] (the same checks of targets and aliases, the same
//! `create` policy and its tokens, the same owner), and its answers and errors onto the
//! shapes its clients read. Each is off unless `[compat]` switches it on.
//!
//! - [`shlink`]: Shlink's REST API under `/rest/`.

pub(crate) mod shlink;
