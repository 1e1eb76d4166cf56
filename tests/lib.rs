//! Black-box tests of the service over HTTP (`it/`), by harness: `it/in_process/` runs
//! the service (and the rate limit service) on threads of the test, each node with its
//! own runtime and metrics, the default; `it/process/` runs real `shortener` processes
//! where the process is the point (the command line, signals, stdout and logs, the
//! environment, storage faults under SIGKILL, TLS, memory, the container image). The
//! support they need lives in the workspace's one test kit, `shortener-testkit`; it is
//! re-exported here so that a test module needs one `use shortener_tests::...` line.

pub use shortener_testkit::config;
pub use shortener_testkit::container;
pub use shortener_testkit::npm;
pub use shortener_testkit::{
    Answer, Api, InProcessApp, InProcessRls, Launch, PostgresCluster, RedisCluster, RedisServer,
    Served, Store, TableLock, TempDir, TestApp, TestConfig, TestDatabase, TestPki, TlsRedisCluster,
    TlsRedisServer, answers_ok, binary, check_config, client, concurrently, free_port, in_parallel,
    metric, mmdb, scrape, spawn_app, spawn_in_process, workspace,
};
