//! The application service: every operation that the driving adapters of this crate (the
//! REST API with a locked link's page, the redirect fast path, the Shlink, YOURLS and Kutt
//! APIs) ask of the service, as methods of [`AppState`].
//! A handler parses its request, calls one of these and writes the answer; the rules of
//! the product (target checks, passwords, rate limits on guesses, visit counting) live
//! here, once, whichever API asked.
//!
//! - [`create`]: a create or edit body checked and made into a link or a patch;
//! - [`links`]: a link named by a request, as its caller may see it and as bodies show
//!   it; the cache of every node told of an edit; whether storage answers;
//! - [`redirect`]: where a visit of a code goes, and the answer that sends it there;
//! - [`unlock`]: an attempt at a locked link's password, rate limited per client and link;
//! - [`visits`]: what a request tells of its visit, and the counting of its values;
//! - [`keys`]: the stored API keys read again, and a name clash with the file's keys.
//!
//! Not here: the shared state itself ([`crate::state`]), the core's [`shortener_core::Shortener`]
//! that these call for storage and codes, and anything about a request's wire format.
//!
//! [`AppState`]: crate::state::AppState

mod create;
pub(crate) mod keys;
mod links;
mod redirect;
mod unlock;
mod visits;

pub(crate) use redirect::Sent;
