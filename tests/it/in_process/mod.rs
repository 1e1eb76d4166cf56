//! The service on a thread of the test (`spawn_in_process`), with nothing outside the
//! test process: no `shortener` process, no Redis, no PostgreSQL, no proxy or browser.
//! `cargo xtask test --quick` runs these (`it in_process::`) beside the unit tests.

mod bad_input;
mod caching;
mod compat_limit;
mod export;
mod find_if_exists;
mod forward_query;
mod hardening;
mod link_options;
mod listing_order;
mod lookups;
mod manage;
mod redirect_rules;
mod side_doors;
mod stored_keys;
mod tags;
mod visit_values;
