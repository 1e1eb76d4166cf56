//! The shared `RateLimiter` story (shortener-conformance), on one Redis and on a cluster.

mod standalone {
    use std::time::Duration;

    use shortener_core::Algorithm;
    use shortener_redis::RedisRateLimiter;

    use crate::support::{Target, connect, server};

    async fn make(algorithm: Algorithm) -> RedisRateLimiter {
        let target = Target::Standalone(server().url().to_owned());
        connect(&target, algorithm, Duration::from_secs(2)).await
    }

    shortener_conformance::rate_limiter_tests!(make);
}

mod cluster {
    use std::time::Duration;

    use shortener_core::Algorithm;
    use shortener_redis::RedisRateLimiter;

    use crate::support::{Target, cluster, connect};

    async fn make(algorithm: Algorithm) -> RedisRateLimiter {
        let target = Target::Cluster(cluster().urls());
        connect(&target, algorithm, Duration::from_secs(2)).await
    }

    shortener_conformance::rate_limiter_tests!(make);
}
