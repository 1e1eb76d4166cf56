//! Telling people from bots by `User-Agent`, for the visit statistics: bots are counted
//! apart and never use up a link's `max_visits`.

use std::fmt;

use shortener_core::{FastMap, Sharded};

/// The longest `User-Agent` whose result is kept; a longer one is worked out each time.
const MAX_KEPT_BYTES: usize = 512;
/// Results kept per shard; a full shard starts over.
const KEPT_PER_SHARD: usize = 256;

/// What was worked out of the `User-Agent`s seen lately, bounded: browsers send few
/// distinct strings, so a redirect costs a look-up, while a client sending many
/// distinct ones fills at most 16 shards of 256 strings of at most 512 bytes.
#[derive(Debug)]
pub(crate) struct PerAgent<V> {
    shards: Sharded<FastMap<Box<str>, V>>,
}

impl<V> Default for PerAgent<V> {
    fn default() -> Self {
        Self {
            shards: Sharded::new(16),
        }
    }
}

impl<V: Clone> PerAgent<V> {
    /// The kept result of `user_agent`, or `work`'s, kept when the string is short enough.
    pub(crate) fn get_or(&self, user_agent: &str, work: impl FnOnce() -> V) -> V {
        if user_agent.len() > MAX_KEPT_BYTES {
            return work();
        }
        if let Some(kept) = self.shards.read(user_agent).get(user_agent) {
            return kept.clone();
        }
        let value = work();
        let mut shard = self.shards.write(user_agent);
        if shard.len() >= KEPT_PER_SHARD {
            shard.clear();
        }
        shard.insert(user_agent.into(), value.clone());
        value
    }
}

/// The bot patterns of the `isbot` crate (300+ maintained regular expressions, compiled
/// once into one), with their verdicts kept per `User-Agent`. A match lowercases the
/// string into a new one and runs the regex, so a kept verdict is much cheaper.
/// See `cargo xtask bench --only http` (a browser's User-Agent) in docs/BENCHMARKS.md.
#[derive(Default)]
pub struct BotDetector {
    bots: isbot::Bots,
    verdicts: PerAgent<bool>,
}

impl BotDetector {
    /// Whether this `User-Agent` is a known bot. A request without one is counted as a
    /// person: API clients often send none, and their visits are the link's business.
    pub(crate) fn is_bot(&self, user_agent: Option<&str>) -> bool {
        user_agent.is_some_and(|user_agent| {
            (self.verdicts).get_or(user_agent, || self.bots.is_bot(user_agent))
        })
    }
}

impl fmt::Debug for BotDetector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BotDetector")
    }
}

#[cfg(test)]
mod tests {
    use super::BotDetector;

    #[test]
    fn crawlers_are_bots_and_browsers_are_people() {
        let bots = BotDetector::default();
        assert!(bots.is_bot(Some("Googlebot/2.1 (+http://www.google.com/bot.html)")));
        assert!(bots.is_bot(Some(
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
        )));
        assert!(!bots.is_bot(Some(
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
        )));
        assert!(!bots.is_bot(None));
    }

    /// A verdict is the same the second time (from the kept ones), for a string too
    /// long to keep, and after a shard filled up and started over.
    #[test]
    fn kept_verdicts_are_the_matches() {
        let bots = BotDetector::default();
        let crawler = "Googlebot/2.1 (+http://www.google.com/bot.html)";
        let browser = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
        let long_crawler = format!("{crawler} {}", "x".repeat(super::MAX_KEPT_BYTES));
        for _ in 0..2 {
            assert!(bots.is_bot(Some(crawler)));
            assert!(!bots.is_bot(Some(browser)));
            assert!(bots.is_bot(Some(&long_crawler)));
        }
        for n in 0..20 * super::KEPT_PER_SHARD {
            assert!(!bots.is_bot(Some(&format!("{browser} {n}"))));
        }
        let kept: usize = (bots.verdicts.shards.each()).map(|shard| shard.len()).sum();
        assert!(kept <= 16 * super::KEPT_PER_SHARD, "{kept}");
        let long = bots
            .verdicts
            .shards
            .each()
            .flat_map(|shard| shard.keys().map(|key| key.len()).collect::<Vec<_>>());
        assert!(long.max().unwrap_or(0) <= super::MAX_KEPT_BYTES);
        assert!(bots.is_bot(Some(crawler)));
    }
}
