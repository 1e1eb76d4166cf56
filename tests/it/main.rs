//! Black-box tests against real `shortener` processes.

mod api;
mod bad_input;
mod config_examples;
mod connections;
mod fallback_bound;
mod hardening;
mod identity;
mod invalidation;
mod keys;
mod lifecycle;
mod limits;
mod lookups;
mod manage;
mod manage_nodes;
mod page;
mod postgres_nodes;
mod postgres_outages;
mod redis_errors;
mod redis_faults;
mod redis_nodes;
mod sqlite_limits;
mod sqlite_storage;
mod starvation;
mod statement_timeout;
mod tls_nodes;
mod tls_postgres;
