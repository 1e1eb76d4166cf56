//! Black-box tests against real `shortener` processes (`it/`). The support they need lives
//! in the workspace's one test kit, `shortener-testkit`; it is re-exported here so that a
//! test module needs one `use shortener_tests::...` line.

pub use shortener_testkit::{
    BASE_CONFIG, PostgresCluster, RedisCluster, RedisServer, TableLock, TempDir, TestApp,
    TestDatabase, TestPki, TlsRedisCluster, TlsRedisServer, binary, check_config, client,
    concurrently, free_port, in_parallel, metric, scrape, spawn_app,
};
