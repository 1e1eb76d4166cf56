//! The service on a thread of the test (`spawn_in_process`, `InProcessRls`), the default
//! harness: each node has a runtime and metrics of its own, and starts in milliseconds.
//!
//! The files here need nothing outside the test process: no `shortener` process, no
//! Redis, no PostgreSQL, no proxy or browser. `cargo xtask test --quick` runs them beside
//! the unit tests. Those in `external/` run the same nodes beside real programs.

mod api;
mod bad_input;
mod caching;
mod compat_limit;
mod connections;
mod export;
mod external;
mod find_if_exists;
mod forward_query;
mod hardening;
mod identity;
mod limits;
mod link_options;
mod listing_order;
mod lookups;
mod manage;
mod metrics;
mod redirect_rules;
mod side_doors;
mod starvation;
mod stored_keys;
mod tags;
mod visit_values;
