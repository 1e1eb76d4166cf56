//! Redirect rules on a real request: what core's evaluator asks of a visit
//! ([`RequestFacts`], each fact read once and only when a condition asks for it), and
//! where a visit of a link goes ([`Destination`]: its location, status, caching and the
//! rule and variant it is counted by).
//!
//! A link without rules takes none of this: [`destination`] answers it from
//! the link alone, as before rules existed. A link with rules is answered `private`
//! (a shared cache must not hand one visitor's answer to another) with a `Vary` naming
//! the headers its conditions read.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use poem::Request;
use poem::http::{HeaderMap, header};
use shortener_core::rules::{self, Browser, Device, Os, Rules, VisitorFacts};
use shortener_core::{Redirect, RedirectStatus, Visitor};
use time::OffsetDateTime;

use crate::identity::{client_identity, client_ip};
use crate::state::AppState;
use crate::visit::values::Agent;

/// Query parameters looked at per condition, at most: a query is bounded by the
/// server's head limit already, this bounds the work per condition.
const MAX_QUERY_PAIRS: usize = 256;

/// Where a visit goes.
#[derive(Debug)]
pub(crate) struct Destination {
    pub location: String,
    pub status: RedirectStatus,
    /// `Cache-Control`, when the answer depends on the visitor (else the link's own).
    pub private: bool,
    /// The request headers the answer depended on, for `Vary`.
    pub vary: Option<&'static str>,
    /// What the visit is counted as by rule and by variant, for a link with rules.
    pub way: Option<(String, Option<String>)>,
    /// The place of the rule that matched, and of the split's variant.
    pub rule: Option<usize>,
    pub variant: Option<usize>,
}

/// What a visitor is, as far as rules ask: the headers, the address and the query of a
/// request, or of an imagined visitor in the dry run.
pub(crate) struct Visit<'r> {
    pub headers: &'r HeaderMap,
    /// The socket's peer; the client's address is read behind `trusted_proxies`.
    pub peer: Option<IpAddr>,
    pub query: Option<&'r str>,
    /// Person or bot, when the caller knows already (else read from the `User-Agent`
    /// if a condition asks).
    pub visitor: Option<Visitor>,
    pub now: OffsetDateTime,
}

impl<'r> Visit<'r> {
    pub fn of(request: &'r Request, visitor: Option<Visitor>, now: OffsetDateTime) -> Self {
        Self {
            headers: request.headers(),
            peer: (request.remote_addr().as_socket_addr()).map(std::net::SocketAddr::ip),
            query: request.uri().query(),
            visitor,
            now,
        }
    }
}

/// The facts of one visit, each worked out when first asked.
pub(crate) struct RequestFacts<'s, 'r> {
    state: &'s AppState,
    visit: &'s Visit<'r>,
    agent: Option<Arc<Agent>>,
    address: Option<IpAddr>,
    country: Option<Option<[u8; 2]>>,
    /// Decoded query values, kept for the answer's borrow.
    decoded: Vec<String>,
}

impl<'s, 'r> RequestFacts<'s, 'r> {
    pub fn new(state: &'s AppState, visit: &'s Visit<'r>) -> Self {
        Self {
            state,
            visit,
            agent: None,
            address: None,
            country: None,
            decoded: Vec::new(),
        }
    }

    fn agent(&mut self) -> &Agent {
        let (state, visit) = (self.state, self.visit);
        self.agent.get_or_insert_with(|| {
            let user_agent = (visit.headers.get(header::USER_AGENT))
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default();
            let visitor = (visit.visitor).unwrap_or_else(|| {
                if state.bots.is_bot(Some(user_agent)) {
                    Visitor::Bot
                } else {
                    Visitor::Person
                }
            });
            state.agents.of(user_agent, visitor)
        })
    }

    fn client(&mut self) -> IpAddr {
        let (visit, identity) = (self.visit, &self.state.serving.identity);
        *(self.address).get_or_insert_with(|| client_ip(visit.peer, visit.headers, identity))
    }
}

impl VisitorFacts for RequestFacts<'_, '_> {
    fn device(&mut self) -> Option<Device> {
        Device::parse(self.agent().device)
    }

    fn os(&mut self) -> Option<Os> {
        Os::parse(&self.agent().os)
    }

    fn browser(&mut self) -> Option<Browser> {
        match &*self.agent().browser {
            "Internet Explorer" => Some(Browser::InternetExplorer),
            "SamsungBrowser" => Some(Browser::Samsung),
            name => Browser::parse(name),
        }
    }

    fn accept_language(&mut self) -> Option<&str> {
        let value = self.visit.headers.get(header::ACCEPT_LANGUAGE)?;
        value.to_str().ok()
    }

    fn country(&mut self) -> Option<&str> {
        if self.country.is_none() {
            let address = self.client();
            self.country = Some(self.state.countries.country(address));
        }
        let code = self.country.as_ref()?.as_ref()?;
        std::str::from_utf8(code).ok()
    }

    fn query(&mut self, key: &str) -> Option<Option<&str>> {
        let query = self.visit.query?;
        let found = query.split('&').take(MAX_QUERY_PAIRS).find_map(|pair| {
            let (name, value) = match pair.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (pair, None),
            };
            (decoded(name) == key).then(|| value.map(decoded))
        })?;
        Some(match found {
            None => None,
            Some(value) => {
                self.decoded.push(value.into_owned());
                self.decoded.last().map(String::as_str)
            }
        })
    }

    fn now(&mut self) -> OffsetDateTime {
        self.visit.now
    }

    fn address(&mut self) -> Option<IpAddr> {
        Some(self.client())
    }
}

/// A query's name or value as its form encoding means it (`+` a space, `%xx` a byte).
fn decoded(text: &str) -> Cow<'_, str> {
    if !text.contains(['%', '+']) {
        return Cow::Borrowed(text);
    }
    let pair = url::form_urlencoded::parse(text.as_bytes()).next();
    Cow::Owned(pair.map(|(name, _)| name.into_owned()).unwrap_or_default())
}

/// The `Vary` of a link with `rules`.
fn vary(rules: &Rules) -> Option<&'static str> {
    let reads = rules.reads();
    match (reads.user_agent, reads.accept_language) {
        (true, true) => Some("User-Agent, Accept-Language"),
        (true, false) => Some("User-Agent"),
        (false, true) => Some("Accept-Language"),
        (false, false) => None,
    }
}

/// Where `visit` of `link` goes: for a link with rules, where the first rule that
/// holds sends it (the request's query merged in as for the link's own target);
/// otherwise the link's target.
pub(crate) fn destination(state: &AppState, link: &Redirect, visit: &Visit<'_>) -> Destination {
    let own_status = || {
        link.redirect_status()
            .unwrap_or(state.serving.redirect_status)
    };
    let Some(rules) = link.rules() else {
        return Destination {
            location: state.location(link, visit.query),
            status: own_status(),
            private: false,
            vary: None,
            way: None,
            rule: None,
            variant: None,
        };
    };
    // A split's variant is chosen by the client's network, as the rate limiter
    // counts an anonymous client.
    let identity = client_identity(visit.peer, visit.headers, &state.serving.identity);
    let mut facts = RequestFacts::new(state, visit);
    let code = link
        .full()
        .map(|link| link.code.as_str())
        .unwrap_or_default();
    let resolved = rules::resolve(rules, &mut facts, code, &identity);
    let places = resolved.map(|resolution| (resolution.rule, resolution.variant));
    let (location, status, way) = match resolved {
        Some(resolution) => {
            let forward = (link.forward_query()).unwrap_or(state.serving.forward_query);
            let location = match visit.query {
                Some(query) if forward => resolution.url.with_query(query),
                _ => resolution.url.as_str().to_owned(),
            };
            let status = resolution.redirect_status.unwrap_or_else(own_status);
            let way = (resolution.rule_value(), resolution.variant_value());
            (location, status, way)
        }
        None => (
            state.location(link, visit.query),
            own_status(),
            (rules::NO_RULE.to_owned(), None),
        ),
    };
    Destination {
        location,
        status,
        private: true,
        vary: vary(rules),
        way: Some(way),
        rule: places.map(|(rule, _)| rule),
        variant: places.and_then(|(_, variant)| variant),
    }
}
