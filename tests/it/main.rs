//! Black-box tests against real `shortener` processes.

mod api;
mod bad_input;
mod lifecycle;
mod limits;
mod redis_faults;
mod redis_nodes;
