//! The programs that `cargo xtask bench` measures with, and the little they share.
//!
//! - `src/bin/ceiling.rs`: a bare poem server answering every request with the same 302, the
//!   ceiling that the shortener's redirects are compared with.
//! - `src/bin/limiter_client.rs`: decisions per second and latency through
//!   `RedisRateLimiter`, from many tokio tasks in one process.
//! - `benches/memory_limiter.rs`: a criterion benchmark of `MemoryRateLimiter` from 1, 2
//!   and 8 threads.
//! - Here: [`Args`] (`--name value` flags), [`Rng`] (random keys without a dependency),
//!   [`Latencies`] (percentiles) and [`IDENTITIES`] with [`identities`] (the key space).
//!
//! This crate is not part of the service and no crate depends on it. It asserts nothing
//! about speed: the programs print figures (one `key=value` line) and `xtask/src/bench`
//! starts the servers, alternates the runs, takes medians and writes docs/BENCHMARKS.md.

use std::str::FromStr;
use std::time::Duration;

/// How many distinct keys (identities) the limiter benchmarks spread their calls over,
/// like `redis-benchmark -r 10000`.
pub const IDENTITIES: usize = 10_000;

/// `--name value` command-line flags, looked up by name; anything else is an error.
#[derive(Debug, Clone, Default)]
pub struct Args {
    pairs: Vec<(String, String)>,
}

impl Args {
    /// The process's arguments after the program name.
    ///
    /// # Errors
    /// A message naming an argument that is not `--name value`.
    pub fn from_env() -> Result<Self, String> {
        Self::parse(std::env::args().skip(1))
    }

    /// # Errors
    /// As [`Args::from_env`].
    pub fn parse(arguments: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut pairs = Vec::new();
        let mut arguments = arguments.into_iter();
        while let Some(flag) = arguments.next() {
            let Some(name) = flag.strip_prefix("--") else {
                return Err(format!("unexpected argument `{flag}`"));
            };
            let value = arguments
                .next()
                .ok_or_else(|| format!("`{flag}` needs a value"))?;
            pairs.push((name.to_owned(), value));
        }
        Ok(Self { pairs })
    }

    /// The last value given for `--name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(flag, _)| flag == name)
            .map(|(_, value)| value.as_str())
    }

    /// The value of `--name` parsed, or `default` when absent.
    ///
    /// # Errors
    /// A message naming the flag when its value does not parse.
    pub fn parsed<T: FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.get(name) {
            None => Ok(default),
            Some(value) => value
                .parse()
                .map_err(|_| format!("bad value `{value}` for --{name}")),
        }
    }

    /// `--name` in (decimal) seconds, or `default`.
    ///
    /// # Errors
    /// As [`Args::parsed`], also for a negative or infinite number.
    pub fn seconds(&self, name: &str, default: Duration) -> Result<Duration, String> {
        match self.get(name) {
            None => Ok(default),
            Some(value) => value
                .parse::<f64>()
                .ok()
                .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
                .ok_or_else(|| format!("bad value `{value}` for --{name}: seconds expected")),
        }
    }

    /// Names of flags that are not in `known`, so that a typo is an error, not a default.
    pub fn unknown<'a>(&'a self, known: &[&str]) -> Vec<&'a str> {
        self.pairs
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| !known.contains(name))
            .collect()
    }
}

/// SplitMix64: fast, good enough to spread keys uniformly, and seeded per task so that
/// tasks do not walk the same keys in step.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0); the modulo bias is below 1e-15 for our bounds.
    pub fn below(&mut self, bound: usize) -> usize {
        // A usize always fits a u64 on the platforms we run on, and the result is below bound.
        #[allow(clippy::cast_possible_truncation)]
        let index = (self.next_u64() % bound as u64) as usize;
        index
    }
}

/// The identities of the key space, zero-padded to 12 digits like redis-benchmark's
/// `__rand_int__`, so that our keys and redis-benchmark's have the same length.
pub fn identities(count: usize) -> Vec<String> {
    (0..count).map(|index| format!("{index:012}")).collect()
}

/// Latencies of one run, in nanoseconds, for percentiles.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    nanos: Vec<u64>,
}

impl Latencies {
    pub fn record(&mut self, latency: Duration) {
        self.nanos
            .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
    }

    pub fn merge(&mut self, other: Self) {
        self.nanos.extend(other.nanos);
    }

    pub fn len(&self) -> usize {
        self.nanos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nanos.is_empty()
    }

    /// The `quantile` (0.0 to 1.0) in milliseconds, nearest rank; 0 when empty.
    pub fn quantile_ms(&mut self, quantile: f64) -> f64 {
        if self.nanos.is_empty() {
            return 0.0;
        }
        let last = self.nanos.len() - 1;
        // Both casts are exact for any realistic number of samples (below 2^52).
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let rank = ((last as f64) * quantile.clamp(0.0, 1.0)).round() as usize;
        let (_, nanos, _) = self.nanos.select_nth_unstable(rank);
        #[allow(clippy::cast_precision_loss)] // nanoseconds below 2^52 are exact
        let millis = *nanos as f64 / 1e6;
        millis
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_are_name_value_pairs_and_typos_are_reported() {
        let args =
            Args::parse(["--tasks", "8", "--seconds", "0.5", "--taks", "3"].map(String::from))
                .unwrap();
        assert_eq!(args.parsed("tasks", 64_usize).unwrap(), 8);
        assert_eq!(args.parsed("keys", 10_usize).unwrap(), 10);
        assert_eq!(
            args.seconds("seconds", Duration::ZERO).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(args.unknown(&["tasks", "seconds"]), ["taks"]);
        assert!(Args::parse(["positional".to_owned()]).is_err());
        assert!(Args::parse(["--tasks".to_owned()]).is_err());
        assert!(args.seconds("tasks", Duration::ZERO).is_ok());
        assert!(
            Args::parse(["--s", "-1"].map(String::from))
                .unwrap()
                .seconds("s", Duration::ZERO)
                .is_err()
        );
    }

    #[test]
    fn quantiles_use_the_nearest_rank() {
        let mut latencies = Latencies::default();
        assert!(latencies.quantile_ms(0.5).abs() < f64::EPSILON);
        for millis in (1..=100).rev() {
            latencies.record(Duration::from_millis(millis));
        }
        assert!((latencies.quantile_ms(0.5) - 51.0).abs() < 1e-9);
        assert!((latencies.quantile_ms(0.99) - 99.0).abs() < 1e-9);
        assert!((latencies.quantile_ms(1.0) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn keys_are_spread_over_the_whole_space() {
        let mut rng = Rng::new(7);
        let mut seen = [false; 100];
        for _ in 0..10_000 {
            seen[rng.below(100)] = true;
        }
        assert!(seen.iter().all(|hit| *hit));
        assert_eq!(identities(2), ["000000000000", "000000000001"]);
    }
}
