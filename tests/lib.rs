//! Black-box tests of the service over HTTP (`it/`): in this process (`spawn_in_process`)
//! where the API alone is under test, and as real `shortener` processes (`spawn_app`)
//! where a test needs one (signals, stdout and logs, the environment, faults of Redis and
//! PostgreSQL, TLS, SQLite durability, several nodes, the browser, a metric of its own
//! traffic). The support they need lives in the workspace's one test kit,
//! `shortener-testkit`; it is re-exported here so that a test module needs one
//! `use shortener_tests::...` line.

pub use shortener_testkit::container;
pub use shortener_testkit::npm;
pub use shortener_testkit::{
    BASE_CONFIG, InProcessApp, PostgresCluster, RedisCluster, RedisServer, Served, TableLock,
    TempDir, TestApp, TestDatabase, TestPki, TlsRedisCluster, TlsRedisServer, answers_ok, binary,
    check_config, client, concurrently, free_port, in_parallel, metric, mmdb, scrape, spawn_app,
    spawn_in_process, workspace,
};
