//! What a visit is counted as, read from its request and cached per `User-Agent`:
//!
//! - `values.rs` reduces a visit to what is counted: the referring host, and the browser,
//!   OS and device of its `User-Agent` ([`values::Tracking`] is `[visits]`'s part).
//! - `bots.rs` tells people from bots; both cache per `User-Agent` in the bounded `PerAgent`.
//!
//! Where a visit goes is `visit_rules.rs`'s, beside `AppState`, which it extends.

pub(crate) mod bots;
pub mod values;
