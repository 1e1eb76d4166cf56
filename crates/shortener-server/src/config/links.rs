//! `[links]`: the rules of the links themselves (which targets they may have, alias case)
//! and of their redirects (how long caches keep them, whether a query string passes on).

use serde::{Deserialize, Serialize};

/// `[links]`: which targets links may have (see `shortener_core::TargetRules`), and how
/// their redirects are answered.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinksConfig {
    /// Loopback, RFC 1918, link-local, unique-local and `localhost` hosts are refused
    /// unless this is true.
    pub allow_private_targets: bool,
    /// Hosts no link may target: `example.org` exactly, `*.bad.example` any host under it.
    pub deny_hosts: Vec<String>,
    /// A file of more such hosts, one per line (`#` comments), read again when it changes.
    pub deny_hosts_file: String,
    /// Look-alike hosts are refused unless this is true: a label that mixes scripts, or
    /// one in another script that is confusable with an ASCII name (UTS #39).
    pub allow_mixed_script_hosts: bool,
    /// Aliases are stored in lower case, and a code not found as written is looked up in
    /// lower case: `Launch` and `launch` are one alias.
    pub case_insensitive_aliases: bool,
    /// How long browsers and shared caches (a CDN) may keep a redirect, in seconds; 0
    /// (the default) lets none keep it. Links with `max_visits` are never cacheable, and
    /// links that expire sooner are cacheable only until they expire.
    pub redirect_max_age_secs: u64,
    /// A redirect passes the request's query string on: merged into the target's, the
    /// request's parameters winning (`/abc?utm_source=x`).
    pub forward_query: bool,
    /// The most memory that hashing and checking link passwords may hold at once, in MiB:
    /// each hash in flight holds 19 MiB, and at most one runs per core.
    pub password_memory_mb: u64,
}

impl Default for LinksConfig {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            deny_hosts: Vec::new(),
            deny_hosts_file: String::new(),
            allow_mixed_script_hosts: false,
            case_insensitive_aliases: false,
            redirect_max_age_secs: 0,
            forward_query: false,
            password_memory_mb: 64,
        }
    }
}
