//! Nodes in this process beside real programs: Redis (killed, paused, full, clustered),
//! PostgreSQL (shared by nodes, stopped, slow), Envoy, headless Chromium, schemathesis
//! and other projects' clients from npm and PyPI. `cargo xtask test` starts what they need.

mod console;
mod console_admin;
mod console_axe;
mod console_link;
mod console_phone;
mod contract;
mod domains;
mod fallback_bound;
mod invalidation;
mod kutt_clients;
mod manage_nodes;
mod page;
mod page_stats;
mod page_tags;
mod passwords;
mod postgres_nodes;
mod postgres_outages;
mod redirect_splits;
mod redis_errors;
mod redis_faults;
mod redis_nodes;
mod rls;
mod shlink_clients;
mod statement_timeout;
mod stored_keys_nodes;
mod tls_postgres;
mod yourls_clients;
