//! Tests of a real `shortener` process, where the process is the point: the command line
//! and its exit codes, signals and graceful stops, logs on stdout, the configuration read
//! from files and the environment, storage faults under SIGKILL, TLS with its own servers,
//! a process's memory, and the container image, compose file and Kubernetes manifests.
//! Every process starts through the test kit's `Launch`.

mod cli;
mod compose;
mod config_examples;
mod container;
mod import;
mod keys;
mod kubernetes;
mod lifecycle;
mod logs;
mod password_work;
mod sqlite_limits;
mod sqlite_storage;
mod tls_nodes;
