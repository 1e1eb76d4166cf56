//! Black-box tests of the service over HTTP, by harness: `in_process/` runs the service on
//! a thread of the test (the default), `process/` runs real `shortener` processes where a
//! process is the point. Helpers shared by scenarios live in `support`.

mod in_process;
mod process;
mod support;
