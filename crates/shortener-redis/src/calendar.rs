//! The `WindowCounter` port on Redis: one call of `lua/calendar_window.lua` per request,
//! on envoyproxy/ratelimit's keys (`<their key><window start>`), with Redis's clock.
//!
//! The window's start is part of a key's name, and a script must name its keys before it
//! runs, so the keys are named from this node's estimate of Redis's clock (the last
//! reply's time, carried forward on the local monotonic clock); the script checks each
//! key's window against `TIME` and, at a window's edge where the estimate is off, answers
//! with its time instead, and the keys are named again. On Redis Cluster their keys have
//! no hash tag, so a request's keys may lie in several slots: each key is then its own
//! call, and [`Spending`] holds per key.

use std::sync::LazyLock;
use std::sync::atomic::Ordering;

use shortener_core::limiter::Clock as _;
use shortener_core::limiter::calendar::{Counted, window_start};
use shortener_core::{LimiterError, Spending, WindowCount, WindowCounter, WindowHit};

use crate::limiter::RedisRateLimiter;
use crate::scripts::{Lua, ScriptCall};

static CALENDAR: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(include_str!("../../../lua/calendar_window.lua")));

/// Calls at a window's edge whose keys were named for the wrong window, at most.
const RENAMES: usize = 2;

impl WindowCounter for RedisRateLimiter {
    async fn count_windows(
        &self,
        hits: &[WindowHit],
        spending: Spending,
    ) -> Result<Vec<WindowCount>, LimiterError> {
        if hits.len() > 1 && self.connected().await?.backend.is_cluster() {
            let mut counts = Vec::with_capacity(hits.len());
            for hit in hits {
                counts.extend(
                    self.count_at(std::slice::from_ref(hit), spending, None)
                        .await?,
                );
            }
            return Ok(counts);
        }
        self.count_at(hits, spending, None).await
    }
}

impl RedisRateLimiter {
    /// As [`WindowCounter::count_windows`] at an explicit time, for the tests (`now_us`
    /// must not be behind Redis's clock).
    ///
    /// # Errors
    /// As [`WindowCounter::count_windows`].
    #[doc(hidden)]
    pub async fn count_at(
        &self,
        hits: &[WindowHit],
        spending: Spending,
        now_us: Option<u64>,
    ) -> Result<Vec<WindowCount>, LimiterError> {
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let mut estimate = now_us.unwrap_or_else(|| self.redis_now_estimate());
        for _ in 0..=RENAMES {
            let now_secs = estimate / 1_000_000;
            let windows: Vec<u64> = (hits.iter())
                .map(|hit| window_start(now_secs, hit.unit_secs))
                .collect();
            let keys: Vec<String> = (hits.iter().zip(&windows))
                .map(|(hit, window)| format!("{}{window}", hit.key))
                .collect();
            let mut call = ScriptCall::new(&CALENDAR, &keys, 16 + 40 * hits.len());
            call.arg(match spending {
                Spending::Each => "each",
                Spending::StopWhenOver => "stop",
                Spending::AllOrNothing => "all",
            });
            call.time_arg(now_us);
            for (hit, window) in hits.iter().zip(&windows) {
                call.arg(hit.limit).arg(hit.hits).arg(hit.unit_secs.max(1));
                call.arg(hit.expire_secs.max(1)).arg(*window);
            }
            let reply = self.run_script(&call).await?;
            let (named_right, redis_now) = decode(&reply, hits)?;
            if now_us.is_none() {
                self.learn_redis_clock(redis_now);
            }
            if let Some(counts) = named_right {
                return Ok(counts);
            }
            self.calendar_renames.fetch_add(1, Ordering::Relaxed);
            estimate = redis_now;
        }
        Err(LimiterError::Unexpected(
            "the calendar window script kept answering for another window".into(),
        ))
    }

    /// Moves this node's estimate of Redis's clock by `by_us`, as a clock that drifted
    /// would, for the tests of the renaming at a window's edge.
    #[doc(hidden)]
    pub fn skew_calendar_estimate(&self, by_us: i64) {
        self.calendar_offset_us.fetch_add(by_us, Ordering::Relaxed);
    }

    /// Calls answered for another window and made again with the keys named anew.
    pub fn calendar_renames(&self) -> u64 {
        self.calendar_renames.load(Ordering::Relaxed)
    }

    /// Redis's clock as last seen, moved forward on the local monotonic clock.
    fn redis_now_estimate(&self) -> u64 {
        let offset = self.calendar_offset_us.load(Ordering::Relaxed);
        self.clock.now_us().saturating_add_signed(offset)
    }

    fn learn_redis_clock(&self, redis_now_us: u64) {
        let local = i128::from(self.clock.now_us());
        let offset = i128::from(redis_now_us) - local;
        let offset = i64::try_from(offset).unwrap_or(0);
        self.calendar_offset_us.store(offset, Ordering::Relaxed);
    }
}

/// `{1, now_us, before, after, over, ...}` as the counts, or `{0, now_us}` (a key named
/// for another window) as `None`; with Redis's time either way.
fn decode(
    reply: &redis::Value,
    hits: &[WindowHit],
) -> Result<(Option<Vec<WindowCount>>, u64), LimiterError> {
    let unexpected =
        || LimiterError::Unexpected(format!("calendar window script returned {reply:?}").into());
    let redis::Value::Array(items) = reply else {
        return Err(unexpected());
    };
    let number = |value: &redis::Value| match value {
        redis::Value::Int(number) => u64::try_from(*number).map_err(|_| unexpected()),
        _ => Err(unexpected()),
    };
    let [named_right, now_us, counts @ ..] = &items[..] else {
        return Err(unexpected());
    };
    let now_us = number(now_us)?;
    if number(named_right)? == 0 {
        return Ok((None, now_us));
    }
    if counts.len() != 3 * hits.len() {
        return Err(unexpected());
    }
    let now_secs = now_us / 1_000_000;
    let decoded = (counts.chunks_exact(3).zip(hits))
        .map(|(triple, hit)| {
            let unit = hit.unit_secs.max(1);
            let counted = Counted {
                before: number(&triple[0])?,
                after: number(&triple[1])?,
                over: number(&triple[2])? == 1,
            };
            Ok(counted.with_reset(unit - now_secs % unit))
        })
        .collect::<Result<Vec<_>, LimiterError>>()?;
    Ok((Some(decoded), now_us))
}
