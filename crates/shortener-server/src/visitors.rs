//! Telling people from bots by `User-Agent`, for the visit statistics: bots are counted
//! apart and never use up a link's `max_visits`.

use std::fmt;

use shortener_core::{FastMap, Sharded};

/// The longest `User-Agent` whose verdict is kept; a longer one is matched each time.
const MAX_KEPT_BYTES: usize = 512;
/// Verdicts kept per shard; a full shard starts over.
const VERDICTS_PER_SHARD: usize = 256;

/// The bot patterns of the `isbot` crate (300+ maintained regular expressions, compiled
/// once into one), with the verdicts of the `User-Agent`s seen lately: browsers send
/// few distinct strings, and a look-up costs a third of a match (which also lowercases
/// the string into a new one).
pub struct BotDetector {
    bots: isbot::Bots,
    verdicts: Sharded<FastMap<Box<str>, bool>>,
}

impl Default for BotDetector {
    fn default() -> Self {
        Self {
            bots: isbot::Bots::default(),
            verdicts: Sharded::new(16),
        }
    }
}

impl BotDetector {
    /// Whether this `User-Agent` is a known bot. A request without one is counted as a
    /// person: API clients often send none, and their visits are the link's business.
    pub fn is_bot(&self, user_agent: Option<&str>) -> bool {
        let Some(user_agent) = user_agent else {
            return false;
        };
        if user_agent.len() > MAX_KEPT_BYTES {
            return self.bots.is_bot(user_agent);
        }
        if let Some(&bot) = self.verdicts.read(user_agent).get(user_agent) {
            return bot;
        }
        let bot = self.bots.is_bot(user_agent);
        let mut shard = self.verdicts.write(user_agent);
        if shard.len() >= VERDICTS_PER_SHARD {
            shard.clear();
        }
        shard.insert(user_agent.into(), bot);
        bot
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
        for n in 0..20 * super::VERDICTS_PER_SHARD {
            assert!(!bots.is_bot(Some(&format!("{browser} {n}"))));
        }
        let kept: usize = bots.verdicts.each().map(|shard| shard.len()).sum();
        assert!(kept <= 16 * super::VERDICTS_PER_SHARD, "{kept}");
        assert!(bots.is_bot(Some(crawler)));
    }
}
