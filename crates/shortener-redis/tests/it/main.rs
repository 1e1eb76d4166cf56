//! Integration tests of the Redis rate limiter, all against real `redis-server` processes
//! (one test binary made of modules, sharing one standalone server and one cluster).

mod all_or_nothing;
mod calendar;
mod coalescing;
mod concurrency;
mod conformance;
mod debts;
mod differential;
mod faults;
mod history;
mod leases;
mod storage;
mod support;
mod tls;
