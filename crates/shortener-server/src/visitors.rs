//! Telling people from bots by `User-Agent`, for the visit statistics: bots are counted
//! apart and never use up a link's `max_visits`.

use std::fmt;

/// The bot patterns of the `isbot` crate (300+ maintained regular expressions, compiled
/// once into one).
#[derive(Default)]
pub struct BotDetector(isbot::Bots);

impl BotDetector {
    /// Whether this `User-Agent` is a known bot. A request without one is counted as a
    /// person: API clients often send none, and their visits are the link's business.
    pub fn is_bot(&self, user_agent: Option<&str>) -> bool {
        user_agent.is_some_and(|user_agent| self.0.is_bot(user_agent))
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
}
