//! Who an anonymous request is, for the rate limiter: a pure function from the socket
//! peer, the request headers and the configuration to the identity a bucket is keyed by.
//!
//! Not the API-key identity (`limit.rs` takes that from `X-API-Key` before asking here),
//! and not a parser of every forwarding syntax: only the one header named by
//! `server.client_ip_header` is read, and only when the socket peer is a trusted proxy.
//!
//! The rules, and why each cannot be turned into a fresh bucket by the client:
//! - Proxies (nginx `$proxy_add_x_forwarded_for`, HAProxy) *append* the address of their
//!   own peer and pass what the client wrote through untouched. So the chain is read from
//!   the right: trusted hops are skipped and the first untrusted hop is the client. Every
//!   entry to the left of it was written by that client and is never looked at.
//! - An entry that does not parse (`unknown`, an obfuscated `_hidden`, junk) also ends the
//!   walk, and the identity is then *the hop to its right* (the trusted proxy that reported
//!   it, or the socket peer when it is the right-most entry). That hop was checked to be
//!   trusted, its address is not chosen by whoever wrote the junk, so writing different
//!   junk never yields a different bucket. Taking the junk's literal text instead would
//!   give a client on a trusted address a fresh bucket per request; skipping it (as a
//!   naive parser does) would hand the decision to whatever the client wrote further left.
//! - The header is split on `,` bytes without regard to quotes: a quoted string left open
//!   by the client (`for="1.2.3.4`) cannot swallow the entry a proxy appends to the same
//!   line. Lines are taken in order, as RFC 9110 §5.3 combines them.
//! - When every hop is trusted, the left-most is the client (a request from inside).
//! - IPv4-mapped IPv6 addresses count as IPv4, and an address is widened to its network
//!   (`limiter.ipv4_prefix`, `limiter.ipv6_prefix`): one IPv6 /64 is one subscriber.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use poem::http::HeaderMap;
use serde::{Deserialize, Serialize};

/// The forwarding header believed from a trusted proxy (`server.client_ip_header`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientIpHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2`
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client;proto=https, for=proxy1`
    Forwarded,
    /// `X-Real-IP: client` (set, not appended, by the proxy)
    XRealIp,
}

impl ClientIpHeader {
    fn name(self) -> &'static str {
        match self {
            Self::XForwardedFor => "x-forwarded-for",
            Self::Forwarded => "forwarded",
            Self::XRealIp => "x-real-ip",
        }
    }
}

/// What `client_identity` needs of the configuration, built once at start.
#[derive(Debug, Clone)]
pub struct IdentityConfig {
    pub trusted_proxies: Vec<IpNet>,
    pub header: ClientIpHeader,
    /// 0..=32
    pub ipv4_prefix: u8,
    /// 0..=128
    pub ipv6_prefix: u8,
}

/// One entry of a forwarding chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hop {
    Ip(IpAddr),
    Unparseable,
}

/// The limiter identity of an anonymous request: its client's network, written as an
/// address (`203.0.113.9`, full-length prefixes) or a CIDR (`2001:db8:1:2::/64`).
///
/// `peer` is the socket peer (`None` for a non-IP listener, taken as `0.0.0.0`).
pub(crate) fn client_identity(
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    config: &IdentityConfig,
) -> String {
    network(client_ip(peer, headers, config), config)
}

/// The client's address, before widening to its network.
pub fn client_ip(peer: Option<IpAddr>, headers: &HeaderMap, config: &IdentityConfig) -> IpAddr {
    let peer = peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |ip| ip.to_canonical());
    let trusted = |ip: &IpAddr| config.trusted_proxies.iter().any(|net| net.contains(ip));
    if !trusted(&peer) {
        return peer;
    }
    let chain = chain(headers, config.header);
    // The hop to the right of the one being looked at: who reported it.
    let mut reporter = peer;
    for hop in chain.iter().rev() {
        match *hop {
            Hop::Ip(ip) if trusted(&ip) => reporter = ip,
            Hop::Ip(ip) => return ip,
            Hop::Unparseable => return reporter,
        }
    }
    // Every hop trusted (or no header): the left-most, which is `reporter` by now.
    reporter
}

/// The entries of every line of `header`, in order.
fn chain(headers: &HeaderMap, header: ClientIpHeader) -> Vec<Hop> {
    let mut chain = Vec::new();
    for line in headers.get_all(header.name()) {
        // Bytes, not `to_str`: a non-ASCII byte in what the client wrote must spoil only
        // its own entry, not the one a proxy appended to the same line.
        for entry in line.as_bytes().split(|&byte| byte == b',') {
            let text = std::str::from_utf8(entry).unwrap_or("\u{fffd}").trim();
            let node = match header {
                ClientIpHeader::Forwarded => forwarded_for(text),
                ClientIpHeader::XForwardedFor | ClientIpHeader::XRealIp => Some(text),
            };
            // An empty entry, or a `Forwarded` element without `for=`, names no address:
            // unparseable like junk, so it too ends the walk.
            chain.push(node.and_then(parse_node).map_or(Hop::Unparseable, Hop::Ip));
        }
    }
    chain
}

/// The value of the `for` parameter of one `Forwarded` element, unquoted.
fn forwarded_for(element: &str) -> Option<&str> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim().eq_ignore_ascii_case("for").then(|| {
            let value = value.trim();
            value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value)
        })
    })
}

/// `ip`, `ip:port`, `[v6]`, `[v6]:port`; the port may be digits or an RFC 7239
/// obfuscated `_token`. Anything else is `None`.
fn parse_node(node: &str) -> Option<IpAddr> {
    let port_ok = |port: &str| {
        (!port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()))
            || (port.len() > 1
                && port.starts_with('_')
                && port[1..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)))
    };
    let ip = if let Some(rest) = node.strip_prefix('[') {
        let (address, after) = rest.split_once(']')?;
        match after.strip_prefix(':') {
            Some(port) if port_ok(port) => {}
            None if after.is_empty() => {}
            _ => return None,
        }
        IpAddr::V6(address.parse().ok()?)
    } else if let Ok(ip) = node.parse::<IpAddr>() {
        ip
    } else {
        // Only IPv4 may carry a port without brackets; `2001:db8::1:80` parsed above.
        let (address, port) = node.rsplit_once(':')?;
        if !port_ok(port) {
            return None;
        }
        IpAddr::V4(address.parse().ok()?)
    };
    Some(ip.to_canonical())
}

/// `ip` widened to its configured network; a full-length prefix is written as the bare
/// address, so the default keeps the keys it always had.
fn network(ip: IpAddr, config: &IdentityConfig) -> String {
    let ip = ip.to_canonical();
    let net = match ip {
        IpAddr::V4(v4) if config.ipv4_prefix < 32 => {
            return match Ipv4Net::new(v4, config.ipv4_prefix) {
                Ok(net) => v4_text(net.trunc().addr(), Some(config.ipv4_prefix)),
                // A prefix out of range is refused by config validation.
                Err(_) => v4_text(v4, None),
            };
        }
        IpAddr::V4(v4) => return v4_text(v4, None),
        IpAddr::V6(v6) if config.ipv6_prefix < 128 => {
            Ipv6Net::new(v6, config.ipv6_prefix).map(|n| IpNet::V6(n.trunc()))
        }
        _ => return ip.to_string(),
    };
    // A prefix out of range is refused by config validation; fall back to the address.
    net.map_or_else(|_| ip.to_string(), |net| net.to_string())
}

/// `ip` as `Display` writes it (`192.0.2.7`), or its network with `prefix`
/// (`192.0.2.0/24`), written by hand: `Display` pads through a buffer, a cost every
/// limited request paid. See `cargo xtask bench --only http` (the Redis `redirect`
/// policy rows) in docs/BENCHMARKS.md.
fn v4_text(ip: Ipv4Addr, prefix: Option<u8>) -> String {
    let mut text = String::with_capacity(18);
    let mut number = itoa::Buffer::new();
    for (at, octet) in ip.octets().into_iter().enumerate() {
        if at > 0 {
            text.push('.');
        }
        text.push_str(number.format(octet));
    }
    if let Some(prefix) = prefix {
        text.push('/');
        text.push_str(number.format(prefix));
    }
    text
}

#[cfg(test)]
mod tests {
    //! Client identity from the peer and the forwarding headers: forged chains, and the
    //! networks addresses widen to.

    use poem::http::HeaderValue;

    use super::*;

    const XFF: ClientIpHeader = ClientIpHeader::XForwardedFor;
    const FWD: ClientIpHeader = ClientIpHeader::Forwarded;
    const REAL: ClientIpHeader = ClientIpHeader::XRealIp;

    /// Header lines as sent: (name, raw value bytes).
    type Lines<'a> = &'a [(&'static str, &'a [u8])];
    /// (what the row shows, socket peer, configured header, lines, expected identity)
    type Case<'a> = (&'a str, &'a str, ClientIpHeader, Lines<'a>, &'a str);

    fn identity(peer: &str, header: ClientIpHeader, lines: Lines, prefixes: (u8, u8)) -> String {
        let trusted: Vec<IpNet> = vec![
            "10.0.0.0/8".parse().unwrap(),
            "2001:db8:ffff::/48".parse().unwrap(),
        ];
        let mut headers = HeaderMap::new();
        for (name, value) in lines {
            headers.append(*name, HeaderValue::from_bytes(value).unwrap());
        }
        let config = IdentityConfig {
            trusted_proxies: trusted,
            header,
            ipv4_prefix: prefixes.0,
            ipv6_prefix: prefixes.1,
        };
        client_identity(Some(peer.parse().unwrap()), &headers, &config)
    }

    /// Each row: what a forging client sends through a trusted proxy that appended (or set)
    /// the client's real address, and the identity it must still get.
    #[test]
    fn forged_chains_resolve_to_the_address_the_proxy_saw() {
        let full = (32, 128);
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("untrusted peer: headers ignored", "198.51.100.7", XFF,
                &[("x-forwarded-for", b"1.2.3.4")], "198.51.100.7"),
            ("untrusted peer: every header ignored", "198.51.100.7", FWD,
                &[("forwarded", b"for=1.2.3.4"), ("x-real-ip", b"1.2.3.4")], "198.51.100.7"),
            ("honest chain", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"203.0.113.9, 10.0.0.3")], "203.0.113.9"),
            ("forged leftmost entries", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1, 2.2.2.2, 203.0.113.9")], "203.0.113.9"),
            ("forged Forwarded is not read when the header is X-Forwarded-For", "10.0.0.2", XFF,
                &[("forwarded", b"for=\"[2001:db8::7]\""), ("x-forwarded-for", b"203.0.113.9")],
                "203.0.113.9"),
            ("forged X-Real-IP is not read either", "10.0.0.2", XFF,
                &[("x-real-ip", b"1.1.1.1"), ("x-forwarded-for", b"203.0.113.9")], "203.0.113.9"),
            ("forged X-Forwarded-For is not read when the header is Forwarded", "10.0.0.2", FWD,
                &[("x-forwarded-for", b"1.1.1.1"), ("forwarded", b"for=203.0.113.9")],
                "203.0.113.9"),
            ("no header from a trusted peer: the peer", "10.0.0.2", XFF, &[], "10.0.0.2"),
            ("all hops trusted: the leftmost", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"10.9.9.9, 10.0.0.3")], "10.9.9.9"),
            ("junk left of the client is never reached", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"unknown, 203.0.113.9")], "203.0.113.9"),
            ("junk reached: the trusted hop that reported it", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1, junk, 10.0.0.5")], "10.0.0.5"),
            ("other junk, same bucket", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"2.2.2.2, _hidden, 10.0.0.5")], "10.0.0.5"),
            ("junk right-most: the socket peer", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1, unknown")], "10.0.0.2"),
            ("empty entry is junk", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1, , 10.0.0.5")], "10.0.0.5"),
            ("non-ASCII byte spoils only its own entry", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1\xff, 203.0.113.9")], "203.0.113.9"),
            ("ip:port", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1, 203.0.113.9:4711")], "203.0.113.9"),
            ("[v6]:port", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1, [2001:db8::9]:4711")], "2001:db8::9"),
            ("bad port is junk, not the address", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1, 203.0.113.9:http, 10.0.0.5")], "10.0.0.5"),
            ("two lines, in order", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1"), ("x-forwarded-for", b"203.0.113.9")],
                "203.0.113.9"),
            ("two lines, trusted hop on the second", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"1.1.1.1, 203.0.113.9"), ("x-forwarded-for", b"10.0.0.3")],
                "203.0.113.9"),
            ("IPv4-mapped counts as IPv4", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"::ffff:203.0.113.9")], "203.0.113.9"),
            ("IPv4-mapped peer is trusted as IPv4", "::ffff:10.0.0.2", XFF,
                &[("x-forwarded-for", b"203.0.113.9")], "203.0.113.9"),
            ("IPv4-mapped peer untrusted", "::ffff:198.51.100.7", XFF, &[], "198.51.100.7"),
            ("Forwarded quoted [v6]:port", "10.0.0.2", FWD,
                &[("forwarded", b"for=\"[2001:db8::1]:4711\";proto=https")], "2001:db8::1"),
            ("Forwarded forged leftmost element", "10.0.0.2", FWD,
                &[("forwarded", b"for=1.1.1.1, For=\"203.0.113.9\";proto=https")], "203.0.113.9"),
            ("Forwarded open quote cannot swallow the proxy's element", "10.0.0.2", FWD,
                &[("forwarded", b"for=\"1.1.1.1, for=203.0.113.9")], "203.0.113.9"),
            ("Forwarded for=unknown reached: the reporter", "10.0.0.2", FWD,
                &[("forwarded", b"for=1.1.1.1, for=unknown, for=10.0.0.5")], "10.0.0.5"),
            ("Forwarded element without for= is junk", "10.0.0.2", FWD,
                &[("forwarded", b"for=1.1.1.1, proto=https")], "10.0.0.2"),
            ("Forwarded obfuscated port", "10.0.0.2", FWD,
                &[("forwarded", b"for=\"203.0.113.9:_abc\"")], "203.0.113.9"),
            ("Forwarded two lines", "10.0.0.2", FWD,
                &[("forwarded", b"for=1.1.1.1"), ("forwarded", b"for=203.0.113.9")],
                "203.0.113.9"),
            ("X-Real-IP", "10.0.0.2", REAL, &[("x-real-ip", b"203.0.113.9")], "203.0.113.9"),
            ("X-Real-IP junk: the peer", "10.0.0.2", REAL, &[("x-real-ip", b"nonsense")], "10.0.0.2"),
            ("trusted IPv6 proxy hop skipped", "10.0.0.2", XFF,
                &[("x-forwarded-for", b"2001:db8:1::5, 2001:db8:ffff::1")], "2001:db8:1::5"),
        ];
        for (name, peer, header, lines, expected) in cases {
            assert_eq!(identity(peer, *header, lines, full), *expected, "{name}");
        }
    }

    #[test]
    fn addresses_widen_to_their_configured_network() {
        let xff = |value: &'static [u8], prefixes| {
            identity("10.0.0.2", XFF, &[("x-forwarded-for", value)], prefixes)
        };
        assert_eq!(xff(b"2001:db8:1:2:aaaa::1", (32, 64)), "2001:db8:1:2::/64");
        assert_eq!(xff(b"2001:db8:1:2:ffff::9", (32, 64)), "2001:db8:1:2::/64");
        assert_eq!(xff(b"2001:db8:1:3::1", (32, 64)), "2001:db8:1:3::/64");
        assert_eq!(xff(b"2001:db8:1:2::1", (32, 48)), "2001:db8:1::/48");
        assert_eq!(xff(b"2001:db8:1:2::1", (32, 128)), "2001:db8:1:2::1");
        assert_eq!(xff(b"203.0.113.9", (32, 64)), "203.0.113.9");
        assert_eq!(xff(b"203.0.113.9", (24, 64)), "203.0.113.0/24");
        assert_eq!(xff(b"::ffff:203.0.113.9", (24, 64)), "203.0.113.0/24");
        assert_eq!(xff(b"203.0.113.9", (0, 0)), "0.0.0.0/0");
        assert_eq!(xff(b"2001:db8::1", (0, 0)), "::/0");
        // A trusted peer itself as the client is widened too.
        assert_eq!(
            identity("2001:db8:ffff::1", XFF, &[], (32, 64)),
            "2001:db8:ffff::/64"
        );
    }

    #[test]
    fn node_syntax() {
        for (node, parsed) in [
            ("203.0.113.9", Some("203.0.113.9")),
            ("203.0.113.9:80", Some("203.0.113.9")),
            ("203.0.113.9:_x1", Some("203.0.113.9")),
            ("[2001:db8::1]", Some("2001:db8::1")),
            ("[2001:db8::1]:443", Some("2001:db8::1")),
            ("2001:db8::1", Some("2001:db8::1")),
            ("[::ffff:1.2.3.4]:1", Some("1.2.3.4")),
            ("203.0.113.9:", None),
            ("203.0.113.9:123456", None),
            ("203.0.113.9:8o", None),
            ("[2001:db8::1]x", None),
            ("[2001:db8::1", None),
            ("[203.0.113.9]", None),
            ("unknown", None),
            ("_hidden", None),
            ("", None),
            ("1.2.3.4.5", None),
        ] {
            assert_eq!(
                parse_node(node).map(|ip| ip.to_string()).as_deref(),
                parsed,
                "{node}"
            );
        }
    }

    proptest::proptest! {
        /// The hand-written IPv4 text is `Display`'s, for an address and for a network.
        #[test]
        fn ipv4_text_is_what_display_writes(octets: [u8; 4], prefix in 0u8..=32) {
            let ip = Ipv4Addr::from(octets);
            proptest::prop_assert_eq!(v4_text(ip, None), ip.to_string());
            let net = Ipv4Net::new(ip, prefix).unwrap().trunc();
            proptest::prop_assert_eq!(v4_text(net.addr(), Some(prefix)), net.to_string());
        }
    }
}
