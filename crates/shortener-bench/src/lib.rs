//! The benchmark harness that `cargo xtask bench` runs, and what its binaries share.
//!
//! - `src/bin/bench/` runs each benchmark beside its reference and writes the reports (`report.rs`).
//!   `limiters.rs`, `http.rs`, `rls.rs`, `import.rs`, `agents.rs` and `links.rs` hold the benchmarks; `tools.rs` starts the servers they load and the tools they run.
//! - `src/bin/ceiling.rs` is a bare poem redirect server, the ceiling of any poem redirect service.
//! - `src/bin/limiter_client.rs` measures the limiter alone and prints one [`ClientReport`].
//! - This library holds what they share: [`Figures`], the benchmark [`policy`], the key space ([`identities`], [`Rng`]).
//!
//! Not a test: figures are never asserted.
//! No crate depends on this one, so it may use the test kit as a normal dependency.

use std::fmt;

use serde::{Deserialize, Serialize};
use shortener_core::Policy;

/// The distinct keys of the limiter benchmarks, like `redis-benchmark -r 10000`.
pub const IDENTITIES: usize = 10_000;
/// The target of every link the benchmarks create, where the `ceiling` redirects too.
pub const TARGET: &str = "https://example.com/bench";

/// A rate (per second) and its latency percentiles: what every load generator reports.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Figures {
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rate, p50, p99) = (self.rate, self.p50_ms, self.p99_ms);
        write!(f, "{rate:.0}/s (p50 {p50:.3} ms, p99 {p99:.3} ms)")
    }
}

/// What one `limiter_client` run measured, printed as one JSON line for the harness.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ClientReport {
    #[serde(flatten)]
    pub figures: Figures,
    pub decisions: u64,
    pub allowed: u64,
    pub errors: u64,
    /// The client's own CPU seconds (user and system) while it measured.
    #[serde(default)]
    pub cpu_seconds: f64,
}

/// The CPU seconds (user and system) the process `pid` (`self`: this one) has used so far,
/// from `/proc/PID/stat`, in ticks of `USER_HZ`, 100 a second on Linux.
pub fn cpu_seconds(pid: &str) -> std::io::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // utime and stime, fields 14 and 15 of the line, 12 and 13 after the command name
    // (which is in parentheses and may hold spaces).
    let fields = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let mut ticks = fields.split_whitespace().skip(11).map(str::parse::<f64>);
    match (ticks.next(), ticks.next()) {
        (Some(Ok(utime)), Some(Ok(stime))) => Ok((utime + stime) / 100.0),
        _ => Err(std::io::Error::other(format!("short /proc stat: {stat}"))),
    }
}

/// The policy of the limiter benchmarks: capacity 100, one token per 100 000 us (10/s).
pub fn policy() -> Policy {
    Policy::from_interval("bench", 100, 100_000).expect("a valid policy")
}

/// SplitMix64, seeded per task so that tasks do not walk the same keys in step.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..bound` (`bound` > 0); the modulo bias is below 1e-15 for our bounds.
    pub fn below(&mut self, bound: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % bound as u64) as usize
    }
}

/// The key space, zero-padded to 12 digits like redis-benchmark's `__rand_int__`, so that
/// our keys and redis-benchmark's have the same length.
pub fn identities(count: usize) -> Vec<String> {
    (0..count).map(|index| format!("{index:012}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_spread_over_the_whole_space() {
        let mut rng = Rng(7);
        let mut seen = [false; 100];
        for _ in 0..10_000 {
            seen[rng.below(100)] = true;
        }
        assert!(seen.iter().all(|hit| *hit));
        assert_eq!(identities(2), ["000000000000", "000000000001"]);
    }
}
