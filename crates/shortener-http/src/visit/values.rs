//! What a visit is counted by, beside people and bots: the host of its `Referer`, and
//! the browser family, operating system family and device class of its `User-Agent`.
//!
//! Nothing here keeps a visitor: no address, no full `User-Agent`, no full referring URL
//! leaves this module, only a host name (an address written as a host counts as
//! `other`) and names from the parser's fixed dataset. A request with `DNT: 1` or
//! `Sec-GPC: 1` counts as a visit with no values when `visits.respect_do_not_track` is
//! on.
//!
//! The parser is Project Woothee's (the `woothee` crate): a compiled-in dataset, a few
//! microseconds per string. Browsers send few distinct strings, so each one's result is
//! cached ([`Agents`]); a redirect then costs a hash look-up.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use shortener_core::{DIRECT, OTHER, Visitor};

use crate::visit::bots::PerAgent;

/// The longest `User-Agent` parsed; a longer one counts as `other`.
const MAX_AGENT_BYTES: usize = 512;

/// `[visits]` as requests read it: which values are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tracking {
    pub referrer: bool,
    /// `track_country`, with a `geoip_db` configured.
    pub country: bool,
    pub agent: bool,
    pub respect_do_not_track: bool,
}

/// What a request tells of its visit.
#[derive(Debug, Clone, Copy)]
pub struct Visit<'r> {
    pub visitor: Visitor,
    /// The `Referer`, when the request's own one counts (not for the unlock form's post,
    /// whose referrer is the unlock page).
    pub referer: Option<Option<&'r str>>,
    pub user_agent: Option<&'r str>,
    /// The client's address, when countries are counted.
    pub client: Option<std::net::IpAddr>,
    /// `DNT: 1` or `Sec-GPC: 1`, read only under `respect_do_not_track` (else false).
    pub do_not_track: bool,
}

/// A `User-Agent` reduced to what is counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub browser: Box<str>,
    pub os: Box<str>,
    /// `desktop`, `mobile`, `tablet`, `bot` or `other`.
    pub device: &'static str,
}

/// The `User-Agent` parser with its cache.
pub struct Agents {
    parser: woothee::parser::Parser,
    cache: PerAgent<Arc<Agent>>,
}

impl Default for Agents {
    fn default() -> Self {
        Self {
            parser: woothee::parser::Parser::new(),
            cache: PerAgent::default(),
        }
    }
}

impl fmt::Debug for Agents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Agents")
    }
}

impl Agents {
    /// What `user_agent` is counted as; a bot (by the bot list) is a `bot` device
    /// whatever the parser says.
    pub fn of(&self, user_agent: &str, visitor: Visitor) -> Arc<Agent> {
        let agent = (self.cache).get_or(user_agent, || Arc::new(self.parse(user_agent)));
        Self::as_visitor(agent, visitor)
    }

    fn as_visitor(agent: Arc<Agent>, visitor: Visitor) -> Arc<Agent> {
        if visitor == Visitor::Bot && agent.device != "bot" {
            Arc::new(Agent {
                device: "bot",
                ..(*agent).clone()
            })
        } else {
            agent
        }
    }

    fn parse(&self, user_agent: &str) -> Agent {
        let unknown = || Agent {
            browser: OTHER.into(),
            os: OTHER.into(),
            device: OTHER,
        };
        if user_agent.is_empty() || user_agent.len() > MAX_AGENT_BYTES {
            return unknown();
        }
        let Some(parsed) = self.parser.parse(user_agent) else {
            return unknown();
        };
        fn known(name: &str) -> &str {
            if name.is_empty() || name == woothee::woothee::VALUE_UNKNOWN {
                OTHER
            } else {
                name
            }
        }
        let os = match parsed.os {
            os if os.starts_with("Windows") && os != "Windows Phone OS" => "Windows",
            "Mac OSX" => "macOS",
            "iPhone" | "iPad" | "iPod" | "iOS" => "iOS",
            os => known(os),
        };
        let device = match parsed.category {
            "crawler" => "bot",
            "pc" => "desktop",
            "smartphone"
                if parsed.os == "iPad"
                    || (parsed.os == "Android" && !user_agent.contains("Mobile")) =>
            {
                "tablet"
            }
            "smartphone" | "mobilephone" => "mobile",
            _ => OTHER,
        };
        Agent {
            browser: known(parsed.name).into(),
            os: os.into(),
            device,
        }
    }
}

/// The referring host of a `Referer`: `direct` without one, `other` when it names no
/// host (or an address), else the host in lower case, without user, port or path.
pub fn referrer(referer: Option<&str>) -> Cow<'_, str> {
    let Some(referer) = referer.map(str::trim).filter(|referer| !referer.is_empty()) else {
        return Cow::Borrowed(DIRECT);
    };
    let Some((_, rest)) = referer.split_once("://") else {
        return Cow::Borrowed(OTHER);
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = host
        .split(':')
        .next()
        .unwrap_or_default()
        .trim_end_matches('.');
    let is_name = host.bytes().any(|b| b.is_ascii_alphabetic())
        && host.len() <= shortener_core::dimensions::MAX_VALUE_BYTES
        && (host.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if !is_name || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return Cow::Borrowed(OTHER);
    }
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(host.to_ascii_lowercase())
    } else {
        Cow::Borrowed(host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_referrer_is_its_host_and_nothing_else() {
        let cases = [
            (None, "direct"),
            (Some(""), "direct"),
            (
                Some("https://News.Example.com/item?id=1#top"),
                "news.example.com",
            ),
            (
                Some("https://user:pw@www.example.org:8443/path"),
                "www.example.org",
            ),
            (
                Some("android-app://com.google.android.gm/"),
                "com.google.android.gm",
            ),
            (Some("https://example.com./"), "example.com"),
            (Some("http://192.0.2.7/login"), "other"),
            (Some("http://[2001:db8::1]/"), "other"),
            (Some("not a url"), "other"),
            (Some("https://bad_host!.example/"), "other"),
        ];
        for (referer, expected) in cases {
            assert_eq!(referrer(referer), expected, "{referer:?}");
        }
    }

    #[test]
    fn user_agents_become_browser_os_and_device() {
        let agents = Agents::default();
        let cases = [
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
                ("Chrome", "Windows", "desktop"),
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
                ("Safari", "iOS", "mobile"),
            ),
            (
                "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
                ("Safari", "iOS", "tablet"),
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
                ("Chrome", "Android", "tablet"),
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
                ("Firefox", "Linux", "desktop"),
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
                ("Safari", "macOS", "desktop"),
            ),
            ("curl/8.5.0", ("HTTP Library", "other", "other")),
            ("", ("other", "other", "other")),
        ];
        for (user_agent, (browser, os, device)) in cases {
            let agent = agents.of(user_agent, Visitor::Person);
            assert_eq!(
                (&*agent.browser, &*agent.os, agent.device),
                (browser, os, device),
                "{user_agent}"
            );
            // Cached: the same answer again.
            assert_eq!(agents.of(user_agent, Visitor::Person), agent);
        }
        let bot = agents.of(
            "Googlebot/2.1 (+http://www.google.com/bot.html)",
            Visitor::Bot,
        );
        assert_eq!(bot.device, "bot");
        let listed = agents.of("curl/8.5.0", Visitor::Bot);
        assert_eq!(listed.device, "bot", "the bot list wins over the parser");
    }
}
