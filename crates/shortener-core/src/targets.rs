//! Which targets a link may have: a pure function of the target's host and the operator's
//! rules, called by every path that writes a target (create, bulk, edit).
//!
//! Refused, in this order:
//! - the shortener's own hosts (a link to itself is a redirect loop);
//! - private addresses written as the host, unless allowed: loopback, RFC 1918, link-local,
//!   unique-local, unspecified, `localhost` and `*.localhost` (a public shortener must not
//!   become a way to point browsers, or crawlers that follow links, at an internal service);
//! - hosts of the deny list: `example.org` exactly, `*.bad.example` any host under it;
//! - look-alike hosts, unless allowed, by Unicode's own data (UTS #39, through
//!   `unicode-security`): a label that mixes scripts (`аpple.com` with a Cyrillic `а`), or
//!   a label without Latin letters that is confusable with an ASCII one (`аррӏе.com`, all
//!   Cyrillic), the common look-alikes of phishing links.
//!
//! Hosts are compared in their ASCII form (punycode, lower case, no trailing dot), which the
//! URL parser already gives; deny entries are turned into the same form when read.
//! Names are not resolved: a public name that resolves to a private address is not caught
//! here (that needs the network, and the answer can change after the check).

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::TargetUrl;

/// Why a target is refused; each says what the operator can change, where anything can.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetRefusal {
    #[error("the host `{0}` is this shortener's own: the link would redirect to itself")]
    OwnHost(String),
    #[error(
        "the host `{0}` is a private or local address, which links may not target on this service"
    )]
    Private(String),
    #[error("the host `{0}` is blocked on this service")]
    Denied(String),
    #[error("the host `{0}` mixes scripts in one label, as look-alikes of other names do")]
    MixedScript(String),
    #[error("the host `{host}` is written in letters that look like `{imitates}`")]
    LookAlike { host: String, imitates: String },
}

/// The rules a target's host must pass, but for the deny list, which changes while the
/// service runs and is passed to [`TargetRules::check`] as it stands.
#[derive(Debug, Clone, Default)]
pub struct TargetRules {
    /// The shortener's own hosts, in ASCII form, with their port ([`TargetRules::own_host`]).
    /// A target on that host and port is its own; so is one on that host on port 80 or 443
    /// when the shortener's own port is one of those (a proxy answers both, and sends the
    /// one to the other).
    pub own_hosts: Vec<(String, u16)>,
    pub allow_private: bool,
    pub allow_mixed_script: bool,
}

impl TargetRules {
    /// The host of one of the shortener's own URLs (`server.public_url`), in the form
    /// [`TargetRules::own_hosts`] holds; `None` when it has no host.
    pub fn own_host(url: &str) -> Option<(String, u16)> {
        let url = url::Url::parse(url).ok()?;
        Some((normalize(url.host_str()?), url.port_or_known_default()?))
    }

    fn is_own(&self, host: &str, port: u16) -> bool {
        let web = |port: u16| port == 80 || port == 443;
        self.own_hosts.iter().any(|(own, own_port)| {
            own == host && (*own_port == port || (web(*own_port) && web(port)))
        })
    }

    /// Checks the host of `url`.
    ///
    /// # Errors
    /// The first [`TargetRefusal`] that applies.
    pub fn check(&self, url: &TargetUrl, deny: &DenyList) -> Result<(), TargetRefusal> {
        let host = host_of(url.as_str());
        let name = normalize(host);
        if self.is_own(&name, port_of(url.as_str())) {
            return Err(TargetRefusal::OwnHost(host.to_owned()));
        }
        if !self.allow_private && is_private(&name) {
            return Err(TargetRefusal::Private(host.to_owned()));
        }
        if deny.denies(&name) {
            return Err(TargetRefusal::Denied(host.to_owned()));
        }
        if !self.allow_mixed_script {
            look_alike(host, &name)?;
        }
        Ok(())
    }
}

/// Hosts that no link may target: exact names, and `*.` suffixes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DenyList {
    exact: HashSet<String>,
    /// `bad.example` for `*.bad.example`.
    suffixes: HashSet<String>,
}

/// A deny entry that is not a host name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{entry}` is not a host name or `*.` followed by one ({why})")]
pub struct DenyEntryError {
    pub entry: String,
    pub why: String,
}

/// A line of a deny file that is not a host name. The line itself is not quoted: the
/// file may not be the operator's list at all (a path pointed at another file), and its
/// lines would then land in the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: not a host name or `*.` followed by one")]
pub struct DenyFileError {
    pub line: usize,
}

impl DenyList {
    /// Reads entries: `example.org`, `*.bad.example`, in any case, Unicode or punycode.
    ///
    /// # Errors
    /// The first entry that is not a host name.
    pub fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Self, DenyEntryError> {
        let mut list = Self::default();
        for entry in entries {
            let (suffix, name) = match entry.strip_prefix("*.") {
                Some(name) => (true, name),
                None => (false, entry),
            };
            let ascii =
                idna::domain_to_ascii(name.trim_end_matches('.')).map_err(|e| DenyEntryError {
                    entry: entry.to_owned(),
                    why: e.to_string(),
                })?;
            if ascii.is_empty() || ascii.contains(['/', ':', '*', ' ']) {
                return Err(DenyEntryError {
                    entry: entry.to_owned(),
                    why: "expected a name such as example.org".into(),
                });
            }
            if suffix {
                list.suffixes.insert(ascii);
            } else {
                list.exact.insert(ascii);
            }
        }
        Ok(list)
    }

    /// Reads a deny file: one entry per line; blank lines and `#` comments are skipped.
    ///
    /// # Errors
    /// The number of the first line that is not an entry.
    pub fn parse_file(text: &str) -> Result<Self, DenyFileError> {
        let mut list = Self::default();
        for (number, line) in text.lines().enumerate() {
            let entry = line.split('#').next().unwrap_or_default().trim();
            if entry.is_empty() {
                continue;
            }
            let one = Self::parse([entry]).map_err(|_| DenyFileError { line: number + 1 })?;
            list.exact.extend(one.exact);
            list.suffixes.extend(one.suffixes);
        }
        Ok(list)
    }

    /// Both lists in one.
    #[must_use]
    pub fn union(mut self, other: &DenyList) -> Self {
        self.exact.extend(other.exact.iter().cloned());
        self.suffixes.extend(other.suffixes.iter().cloned());
        self
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.suffixes.is_empty()
    }

    pub fn len(&self) -> usize {
        self.exact.len() + self.suffixes.len()
    }

    /// Whether the stored target `url` is denied now: the check of every redirect, cheap
    /// (the host is sliced out of the stored URL, no parse).
    pub fn denies_url(&self, url: &str) -> bool {
        !self.is_empty() && self.denies(&normalize(host_of(url)))
    }

    fn denies(&self, host: &str) -> bool {
        if self.exact.contains(host) {
            return true;
        }
        // `a.b.bad.example` is under `b.bad.example` and `bad.example`.
        let mut rest = host;
        while let Some((_, parent)) = rest.split_once('.') {
            if self.suffixes.contains(parent) {
                return true;
            }
            rest = parent;
        }
        false
    }
}

/// `url` with its host in Unicode (`https://bücher.example/`), as people read it; the
/// stored and redirected form keeps the ASCII host (`xn--bcher-kva`), which is what an
/// HTTP `Location` may carry. A URL without a punycode label is returned as it is.
pub fn unicode_form(url: &TargetUrl) -> std::borrow::Cow<'_, str> {
    let text = url.as_str();
    let host = host_of(text);
    if !host.contains("xn--") {
        return std::borrow::Cow::Borrowed(text);
    }
    let (unicode, result) = idna::domain_to_unicode(host);
    if result.is_err() {
        return std::borrow::Cow::Borrowed(text);
    }
    let start = text.find(host).unwrap_or(0);
    std::borrow::Cow::Owned(format!(
        "{}{unicode}{}",
        &text[..start],
        &text[start + host.len()..]
    ))
}

/// The host of a URL as [`TargetUrl`] serializes it (`scheme://host[:port]/...`, no
/// user-info): IPv6 hosts keep their brackets.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let end = if rest.starts_with('[') {
        rest.find(']').map_or(rest.len(), |i| i + 1)
    } else {
        rest.find([':', '/', '?', '#']).unwrap_or(rest.len())
    };
    &rest[..end]
}

/// The port of a URL as [`TargetUrl`] serializes it: written, or the scheme's default
/// (the serialization drops a default port).
fn port_of(url: &str) -> u16 {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let after_host = match authority.rfind(']') {
        Some(end) => &authority[end + 1..],
        None => authority,
    };
    match after_host
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
    {
        Some(port) => port,
        None if url.starts_with("https:") => 443,
        None => 80,
    }
}

/// Lower case without a trailing dot: `Example.ORG.` and `example.org` are one host.
fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn is_private(host: &str) -> bool {
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().is_ok_and(is_private_v6);
    }
    // The URL parser has already turned `0x7f.1` and `2130706433` into dotted form.
    host.parse::<Ipv4Addr>().is_ok_and(is_private_v4)
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        // 0.0.0.0/8 is "this network": Linux connects 0.x.y.z to the local host.
        || a == 0
        // 100.64.0.0/10, shared address space behind carrier-grade NAT.
        || (a == 100 && (64..128).contains(&b))
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_private_v4(v4);
    }
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        // fe80::/10 link-local, fc00::/7 unique-local.
        || (first & 0xffc0) == 0xfe80
        || (first & 0xfe00) == 0xfc00
}

/// Whether a host imitates another, by Unicode's security mechanisms (UTS #39): a label
/// that mixes scripts (`аpple` with a Cyrillic `а`, a Greek letter among Armenian ones),
/// or a label with no Latin letter whose skeleton, the string it is confusable with, is
/// plain ASCII (`аррӏе`, all Cyrillic, is a whole-script look-alike of `apple`). Labels
/// in one script that read as themselves pass: `bücher`, `пример`, `例え`.
fn look_alike(host: &str, name: &str) -> Result<(), TargetRefusal> {
    use unicode_security::MixedScript as _;
    if !name.contains("xn--") {
        return Ok(());
    }
    let (unicode, _) = idna::domain_to_unicode(name);
    let mut imitated = false;
    let mut skeletons = Vec::new();
    for label in unicode.split('.') {
        if label.is_ascii() {
            skeletons.push(label.to_owned());
            continue;
        }
        if !label.is_single_script() {
            return Err(TargetRefusal::MixedScript(host.to_owned()));
        }
        let skeleton: String = unicode_security::skeleton(label).collect();
        if skeleton.is_ascii() && !label.chars().any(is_latin_letter) {
            imitated = true;
        }
        skeletons.push(skeleton);
    }
    if imitated {
        return Err(TargetRefusal::LookAlike {
            host: host.to_owned(),
            imitates: skeletons.join(".").to_ascii_lowercase(),
        });
    }
    Ok(())
}

/// Latin letters, accented ones included: a Latin label that reads as ASCII
/// (`kırmızı`, with Turkish dotless i) is not a look-alike of another script.
fn is_latin_letter(c: char) -> bool {
    c.is_ascii_alphabetic()
        // Latin-1 letters, Latin Extended-A and -B, IPA, Latin Extended Additional.
        || (matches!(c, '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}') && c.is_alphabetic())
}

#[cfg(test)]
mod tests {
    //! The target rules, one case per class of refused target.

    use super::*;

    fn rules() -> TargetRules {
        TargetRules {
            own_hosts: vec![("s.example.com".into(), 443)],
            allow_private: false,
            allow_mixed_script: false,
        }
    }

    fn check(rules: &TargetRules, deny: &DenyList, url: &str) -> Result<(), TargetRefusal> {
        rules.check(&TargetUrl::parse(url).unwrap(), deny)
    }

    #[test]
    fn own_hosts_are_refused_whatever_the_case() {
        let deny = DenyList::default();
        for url in [
            "https://s.example.com/abc",
            "http://S.Example.COM:443/x",
            "https://s.example.com./x",
        ] {
            assert!(
                matches!(check(&rules(), &deny, url), Err(TargetRefusal::OwnHost(_))),
                "{url}"
            );
        }
        assert!(check(&rules(), &deny, "https://example.com/").is_ok());
        // Another port of the host is another service, but for the two of the web.
        assert!(check(&rules(), &deny, "http://s.example.com:8081/x").is_ok());
        assert!(matches!(
            check(&rules(), &deny, "http://s.example.com/x"),
            Err(TargetRefusal::OwnHost(_))
        ));
        let local = TargetRules {
            own_hosts: vec![TargetRules::own_host("http://127.0.0.1:8080").unwrap()],
            allow_private: true,
            ..rules()
        };
        assert!(matches!(
            check(&local, &deny, "http://127.0.0.1:8080/abc"),
            Err(TargetRefusal::OwnHost(_))
        ));
        assert!(check(&local, &deny, "http://127.0.0.1:9000/abc").is_ok());
        assert!(check(&local, &deny, "http://[::1]:8080/abc").is_ok());
    }

    #[test]
    fn private_addresses_are_refused_unless_allowed() {
        let deny = DenyList::default();
        for url in [
            "http://127.0.0.1/",
            "http://0x7f.1/",
            "http://2130706433/",
            "http://10.0.0.5/",
            "http://172.16.1.1/",
            "http://192.168.1.1:8080/",
            "http://169.254.169.254/latest/meta-data/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
            "http://[::1]/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:10.0.0.5]/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://api.localhost/",
        ] {
            assert!(
                matches!(check(&rules(), &deny, url), Err(TargetRefusal::Private(_))),
                "{url}"
            );
        }
        for url in [
            "http://8.8.8.8/",
            "http://172.32.0.1/",
            "http://[2001:db8::1]/",
            "http://localhost.example.com/",
        ] {
            assert!(check(&rules(), &deny, url).is_ok(), "{url}");
        }
        let open = TargetRules {
            allow_private: true,
            ..rules()
        };
        assert!(check(&open, &deny, "http://10.0.0.5/").is_ok());
    }

    #[test]
    fn deny_entries_match_exactly_or_by_suffix() {
        let deny = DenyList::parse(["Example.org", "*.bad.example", "*.bücher.example"]).unwrap();
        for url in [
            "https://example.org/x",
            "https://EXAMPLE.org./",
            "https://a.bad.example/",
            "https://a.b.bad.example:81/",
            "https://shop.bücher.example/",
            "https://shop.xn--bcher-kva.example/",
        ] {
            assert!(
                matches!(check(&rules(), &deny, url), Err(TargetRefusal::Denied(_))),
                "{url}"
            );
            assert!(
                deny.denies_url(TargetUrl::parse(url).unwrap().as_str()),
                "{url}"
            );
        }
        for url in [
            "https://www.example.org/",
            "https://bad.example/",
            "https://notbad.example/",
            "https://example.org.evil.com/",
        ] {
            assert!(check(&rules(), &deny, url).is_ok(), "{url}");
            assert!(
                !deny.denies_url(TargetUrl::parse(url).unwrap().as_str()),
                "{url}"
            );
        }
    }

    #[test]
    fn deny_files_skip_comments_and_name_the_bad_line() {
        let list =
            DenyList::parse_file("# phishing\nexample.org  # seen 2026-11\n\n*.bad.example\n")
                .unwrap();
        assert_eq!(list.len(), 2);
        let error = DenyList::parse_file("example.org\nhttp://x.example/\n").unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
        // Not quoted: a path pointed at another file must not copy its lines to the log.
        let error = DenyList::parse_file("root:x:0:0:root:/root:/bin/bash\n").unwrap_err();
        assert!(!error.to_string().contains("root"), "{error}");
        assert!(DenyList::parse(["*."]).is_err());
    }

    #[test]
    fn look_alike_hosts_are_refused_unless_allowed() {
        let deny = DenyList::default();
        // A Cyrillic `а` before Latin `pple`; a Greek omicron in `gοogle`.
        for url in ["https://\u{0430}pple.com/", "https://g\u{03BF}ogle.com/"] {
            assert!(
                matches!(
                    check(&rules(), &deny, url),
                    Err(TargetRefusal::MixedScript(_))
                ),
                "{url}"
            );
        }
        // Scripts beyond Latin, Cyrillic and Greek: an Armenian `օ` in `gօogle`.
        assert!(matches!(
            check(&rules(), &deny, "https://g\u{0585}ogle.com/"),
            Err(TargetRefusal::MixedScript(_))
        ));
        // Whole-script look-alikes: every letter Cyrillic, read as a Latin name.
        for (url, imitated) in [
            // а р р ӏ е
            (
                "https://\u{0430}\u{0440}\u{0440}\u{04CF}\u{0435}.com/",
                "apple.com",
            ),
            // р а у р а ӏ
            (
                "https://\u{0440}\u{0430}\u{0443}\u{0440}\u{0430}\u{04CF}.com/",
                "paypal.com",
            ),
        ] {
            match check(&rules(), &deny, url) {
                Err(TargetRefusal::LookAlike { imitates, .. }) => assert_eq!(imitates, imitated),
                other => panic!("{url}: {other:?}"),
            }
        }
        // One script per label that reads as itself is fine: Russian, Latin with accents
        // (Turkish dotless i too), Japanese.
        for url in [
            "https://\u{043F}\u{0440}\u{0438}\u{043C}\u{0435}\u{0440}.com/",
            "https://bücher.example/",
            "https://k\u{0131}rm\u{0131}z\u{0131}.example/",
            "https://\u{4F8B}\u{3048}.jp/",
            "https://example.com/",
        ] {
            assert!(check(&rules(), &deny, url).is_ok(), "{url}");
        }
        let open = TargetRules {
            allow_mixed_script: true,
            ..rules()
        };
        assert!(check(&open, &deny, "https://\u{0430}pple.com/").is_ok());
        let all_cyrillic = "https://\u{0430}\u{0440}\u{0440}\u{04CF}\u{0435}.com/";
        assert!(check(&open, &deny, all_cyrillic).is_ok());
    }

    #[test]
    fn urls_are_shown_with_their_host_in_unicode() {
        let url = TargetUrl::parse("https://Bücher.example:8443/xn--path?q=xn--").unwrap();
        assert_eq!(
            url.as_str(),
            "https://xn--bcher-kva.example:8443/xn--path?q=xn--"
        );
        assert_eq!(
            unicode_form(&url),
            "https://bücher.example:8443/xn--path?q=xn--"
        );
        let plain = TargetUrl::parse("https://example.com/xn--a").unwrap();
        assert_eq!(unicode_form(&plain), "https://example.com/xn--a");
    }
}
