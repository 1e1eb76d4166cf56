//! Black-box tests against real `shortener` processes.

mod api;
mod bad_input;
mod limits;
mod lifecycle;
