//! The service's answers, rule by rule, through a real tonic client talking to the
//! service on a loopback port, deciding with the memory limiter (the same port the
//! Redis limiter implements; `tests/it/in_process/external/rls/` runs them on Redis, across processes).

mod algorithms;
mod requests;
mod rules;
mod support;
mod theirs;
