//! [`Connected`]: a connection to Redis that passed the limiter's checks, and its script.

use shortener_core::LimiterError;

use crate::backend::{Backend, Operation};
use crate::config::RedisConfig;
use crate::deadline::Deadline;
use crate::scripts::{self, Lua, PROBE};

/// A checked connection and the script it runs.
pub(crate) struct Connected {
    pub backend: Backend,
    pub script: &'static Lua,
}

impl Connected {
    /// Connects and checks the server (as `RedisRateLimiter::connect` says).
    pub(crate) async fn check(config: &RedisConfig) -> Result<Self, LimiterError> {
        let timeout = config.timeout;
        let backend = Backend::connect(config).await?;
        let (version, seconds, _micros): (String, u64, u64) = backend
            .run(Deadline::after(timeout), Operation::Script(&PROBE.call()))
            .await?;
        let major = version
            .split('.')
            .next()
            .and_then(|major| major.parse::<u32>().ok());
        if major.is_none_or(|major| major < 7) {
            return Err(LimiterError::Unexpected(
                format!("redis 7.0 or newer is required, the server is {version}").into(),
            ));
        }
        if seconds == 0 {
            return Err(LimiterError::Unexpected(
                "TIME in a script returned 0".to_owned().into(),
            ));
        }
        let Some(script) = scripts::script(config.algorithm) else {
            return Err(LimiterError::Misconfigured(
                "the fixed window is decided per demand of an all-or-nothing call, not as a limiter's algorithm".to_owned().into(),
            ));
        };
        let hash: String = backend
            .run(
                Deadline::after(timeout),
                Operation::Query(&script.load_command()),
            )
            .await?;
        if hash != script.hash() {
            return Err(LimiterError::Unexpected(
                format!("SCRIPT LOAD returned {hash}, expected {}", script.hash()).into(),
            ));
        }
        tracing::debug!(backend = backend.kind(), %version, "redis rate limiter connected");
        Ok(Self { backend, script })
    }
}
