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
