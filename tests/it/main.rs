//! Black-box tests of the service over HTTP, in this process or as real `shortener`
//! processes (see the crate's documentation for which).

mod api;
mod cli;
mod compose;
mod config_examples;
mod connections;
mod container;
mod domains;
mod fallback_bound;
mod identity;
mod import;
mod in_process;
mod invalidation;
mod keys;
mod lifecycle;
mod limits;
mod logs;
mod manage_nodes;
mod page;
mod page_stats;
mod page_tags;
mod password_work;
mod passwords;
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
mod support;
mod tls_nodes;
mod tls_postgres;
