//! What a request tells of its visit ([`crate::visit::values::Visit`]), and the counting
//! of an admitted visit's values.

use poem::Request;
use poem::http::{HeaderName, header};
use shortener_core::{Dimension, LinkKey, Visitor};
use time::OffsetDateTime;

use crate::http::header_text;
use crate::state::AppState;
use crate::visit::values::{Visit, referrer};

/// Global Privacy Control's header, honoured as `DNT` is.
const SEC_GPC: HeaderName = HeaderName::from_static("sec-gpc");

impl AppState {
    /// What `request` tells of its visit.
    pub(crate) fn visit<'r>(&self, request: &'r Request) -> Visit<'r> {
        let headers = request.headers();
        let flag = |name: &HeaderName| {
            headers
                .get(name)
                .is_some_and(|value| value.as_bytes() == b"1")
        };
        let user_agent = header_text(request, &header::USER_AGENT);
        Visit {
            visitor: if self.bots.is_bot(user_agent) {
                Visitor::Bot
            } else {
                Visitor::Person
            },
            referer: Some(header_text(request, &header::REFERER)),
            user_agent,
            client: self.serving.tracking.country.then(|| {
                let peer = (request.remote_addr().as_socket_addr()).map(std::net::SocketAddr::ip);
                crate::identity::client_ip(peer, headers, &self.serving.identity)
            }),
            // Read only when it counts: two header look-ups per redirect otherwise.
            do_not_track: self.serving.tracking.respect_do_not_track
                && (flag(&header::DNT) || flag(&SEC_GPC)),
        }
    }

    /// Counts the values of an admitted `visit` of `key`, as `[visits]` says, and the
    /// rule and variant that sent it (`way`), for a link with rules. Those two say what
    /// the link did, not who the visitor is, and are counted whatever `[visits]` says.
    pub(crate) fn count_values(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
        visit: &Visit<'_>,
        way: Option<&(String, Option<String>)>,
    ) {
        if let Some((rule, variant)) = way {
            let mut values = [(Dimension::Rule, rule.as_str()), (Dimension::Variant, "")];
            let count = match variant {
                Some(variant) => {
                    values[1].1 = variant;
                    2
                }
                None => 1,
            };
            self.shortener.count_values(key, now, &values[..count]);
        }
        let tracking = self.serving.tracking;
        if tracking.respect_do_not_track && visit.do_not_track {
            return;
        }
        let referrer = match visit.referer {
            Some(referer) if tracking.referrer => Some(referrer(referer)),
            _ => None,
        };
        let agent = (tracking.agent).then(|| {
            self.agents
                .of(visit.user_agent.unwrap_or_default(), visit.visitor)
        });
        let country = (visit.client)
            .filter(|_| tracking.country)
            .and_then(|ip| self.countries.country(ip));
        let mut values: [(Dimension, &str); 5] = [(Dimension::Referrer, ""); 5];
        let mut count = 0;
        if let Some(code) = &country
            && let Ok(code) = std::str::from_utf8(code)
        {
            values[count] = (Dimension::Country, code);
            count += 1;
        }
        if let Some(referrer) = &referrer {
            values[count] = (Dimension::Referrer, referrer);
            count += 1;
        }
        if let Some(agent) = &agent {
            values[count] = (Dimension::Browser, &agent.browser);
            values[count + 1] = (Dimension::Os, &agent.os);
            values[count + 2] = (Dimension::Device, agent.device);
            count += 3;
        }
        self.shortener.count_values(key, now, &values[..count]);
    }
}
