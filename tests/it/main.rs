//! Black-box tests of the service over HTTP, in this process or as real `shortener`
//! processes (see the crate's documentation for which).

mod api;
mod bad_input;
mod caching;
mod cli;
mod config_examples;
mod connections;
mod export;
mod fallback_bound;
mod forward_query;
mod hardening;
mod identity;
mod invalidation;
mod keys;
mod lifecycle;
mod limits;
mod link_options;
mod logs;
mod lookups;
mod manage;
mod manage_nodes;
mod page;
mod page_tags;
mod postgres_nodes;
mod postgres_outages;
mod redis_errors;
mod redis_faults;
mod redis_nodes;
mod rls;
mod sqlite_limits;
mod sqlite_storage;
mod starvation;
mod statement_timeout;
mod tags;
mod tls_nodes;
mod tls_postgres;
