//! The domains a node serves ([`Domains`]): the default one, the host of
//! `server.public_url`, and each `[[domains]]` of the configuration, with where their `/`
//! and their unknown codes go.
//!
//! A redirect's domain is the request's `Host` (as a proxy forwards it). With one domain,
//! every host serves it, as a single-domain install always did; with more, a host that
//! is not one of them is answered 404. The API names a domain by its host in an optional
//! `domain` field or parameter; without one, it means the default domain.

use poem::Request;
use poem::http::header;
use shortener_core::{Domain, ParseError, ShortCode, TargetUrl};

use crate::http::header_text;

/// The host a request names: the authority of its target when the target is in
/// absolute form (`GET http://go.example.org/abc HTTP/1.1`, which RFC 9112 says wins over
/// `Host`) or over HTTP/2 (`:authority`), else its `Host` header.
pub(crate) fn request_host(request: &Request) -> Option<&str> {
    (request.uri().authority().map(|at| at.as_str()))
        .or_else(|| header_text(request, &header::HOST))
}

/// A host as its name (without a trailing dot: `go.example.org.` is `go.example.org`)
/// and its port, if it names one.
fn split_port(host: &str) -> (&str, Option<&str>) {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port))
            if !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!name.contains(':') || name.ends_with(']')) =>
        {
            (name, Some(port))
        }
        _ => (host, None),
    };
    (name.strip_suffix('.').unwrap_or(name), port)
}

/// One domain as the configuration describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub domain: Domain,
    /// The host as requests name it (`go.example.org`, `127.0.0.1:8080`), lower case.
    pub host: String,
    /// Where short URLs of this domain start, without a trailing slash.
    pub base_url: String,
    /// Where `/` redirects instead of showing the page.
    pub root_redirect: Option<TargetUrl>,
    /// Where an unknown code redirects instead of the 404 problem.
    pub not_found_url: Option<TargetUrl>,
}

/// The domains a node serves; the first is the default one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domains {
    sites: Vec<Site>,
    /// `server.public_url`'s scheme and `://`, for the short URLs of other domains.
    scheme: String,
}

impl Domains {
    /// The default domain of `public_url` (an http(s) URL, checked by the caller), with
    /// its own settings, then the others.
    pub fn new(public_url: &str, default: Site, others: Vec<Site>) -> Self {
        let mut sites = vec![default];
        sites.extend(others);
        Self {
            sites,
            scheme: Self::base_url_for(public_url, ""),
        }
    }

    /// The host of `public_url` (with its port when it names one), lower case.
    pub fn host_of(public_url: &str) -> String {
        let after_scheme = public_url
            .split_once("://")
            .map_or(public_url, |(_, rest)| rest);
        let authority = after_scheme
            .split(['/', '?', '#'])
            .next()
            .unwrap_or_default();
        authority.to_ascii_lowercase()
    }

    /// The default domain's site.
    pub(crate) fn default_site(&self) -> &Site {
        &self.sites[0]
    }

    /// Every site, the default first.
    pub fn sites(&self) -> &[Site] {
        &self.sites
    }

    /// The site a request's `Host` names: its exact host, or its name without the port
    /// for a site configured without one. With a single domain, that one, whatever the
    /// host; `None` when no configured domain has this host.
    pub(crate) fn by_host(&self, host: Option<&str>) -> Option<&Site> {
        if self.sites.len() == 1 {
            return self.sites.first();
        }
        let (name, port) = split_port(host?);
        let exact = (self.sites.iter()).find(|site| {
            let (site_name, site_port) = split_port(&site.host);
            site_name.eq_ignore_ascii_case(name) && site_port == port
        });
        // A port the site's host does not name: the site of the name alone.
        exact.or_else(|| {
            port?;
            (self.sites.iter()).find(|site| site.host.eq_ignore_ascii_case(name))
        })
    }

    /// The domain an API caller names: the default one when `name` is absent or empty or
    /// the default host; any other host as it is, served here or not (links imported onto
    /// a domain that is not configured can still be read and edited).
    ///
    /// # Errors
    /// When `name` is not a host name.
    pub fn named(&self, name: Option<&str>) -> Result<Domain, ParseError> {
        let Some(name) = name.filter(|name| !name.is_empty()) else {
            return Ok(Domain::default());
        };
        let domain = Domain::parse(name)?;
        Ok(match self.find(&domain) {
            Some(site) => site.domain.clone(),
            None => domain,
        })
    }

    /// As [`Domains::named`], for a new link: the domain must be one this node serves.
    ///
    /// # Errors
    /// When `name` is not a host name or not one of the configured domains.
    pub fn served(&self, name: Option<&str>) -> Result<Domain, ParseError> {
        let domain = self.named(name)?;
        if domain.is_default() || self.find(&domain).is_some() {
            Ok(domain)
        } else {
            Err(ParseError(format!(
                "'{}' is not a domain this service serves (add it to [[domains]])",
                domain.as_str()
            )))
        }
    }

    /// The host of `domain` as clients see it: the default domain's host for it.
    pub fn host<'a>(&'a self, domain: &'a Domain) -> &'a str {
        if domain.is_default() {
            &self.default_site().host
        } else {
            domain.as_str()
        }
    }

    /// The short URL of `code` on `domain`.
    pub fn short_url(&self, domain: &Domain, code: &ShortCode) -> String {
        match self.find(domain) {
            Some(site) => format!("{}/{code}", site.base_url),
            None => format!("{}{}/{code}", self.scheme, domain.as_str()),
        }
    }

    /// The base URL of a site on `host`, as the default one's scheme has it.
    pub fn base_url_for(public_url: &str, host: &str) -> String {
        let scheme = public_url
            .split_once("://")
            .map_or("https", |(scheme, _)| scheme);
        format!("{scheme}://{host}")
    }

    /// The site of `domain`: the first for the default domain, else the one of its host
    /// (the default site's too, so that its host names the default domain).
    fn find(&self, domain: &Domain) -> Option<&Site> {
        if domain.is_default() {
            return self.sites.first();
        }
        (self.sites.iter()).find(|site| site.host == domain.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(domain: Domain, host: &str) -> Site {
        Site {
            domain,
            host: host.to_owned(),
            base_url: format!("https://{host}"),
            root_redirect: None,
            not_found_url: None,
        }
    }

    fn two() -> Domains {
        let go = Domain::parse("go.example.org").unwrap();
        Domains::new(
            "https://s.example.com:8443/",
            site(Domain::default(), "s.example.com:8443"),
            vec![site(go, "go.example.org")],
        )
    }

    #[test]
    fn the_public_url_names_the_default_host() {
        assert_eq!(
            Domains::host_of("https://S.example.com:8443/x"),
            "s.example.com:8443"
        );
        assert_eq!(Domains::host_of("http://127.0.0.1:8080"), "127.0.0.1:8080");
    }

    #[test]
    fn the_host_picks_the_site_and_one_domain_serves_every_host() {
        let domains = two();
        let host = |raw| domains.by_host(raw).map(|site| site.host.as_str());
        assert_eq!(host(Some("go.example.org")), Some("go.example.org"));
        assert_eq!(host(Some("GO.example.org:80")), Some("go.example.org"));
        assert_eq!(host(Some("s.example.com:8443")), Some("s.example.com:8443"));
        assert_eq!(host(Some("s.example.com")), None);
        assert_eq!(host(Some("other.example")), None);
        // A trailing dot is the same host, with a port or without.
        assert_eq!(host(Some("go.example.org.")), Some("go.example.org"));
        assert_eq!(host(Some("go.example.org.:80")), Some("go.example.org"));
        assert_eq!(
            host(Some("s.example.com.:8443")),
            Some("s.example.com:8443")
        );
        assert_eq!(split_port("[::1]:8080"), ("[::1]", Some("8080")));
        assert_eq!(split_port("[::1]"), ("[::1]", None));
        assert_eq!(host(None), None);
        let one = Domains::new(
            "http://127.0.0.1:1",
            site(Domain::default(), "127.0.0.1:1"),
            vec![],
        );
        assert!(one.by_host(Some("anything")).is_some());
    }

    #[test]
    fn the_api_names_domains_by_host() {
        let domains = two();
        assert!(domains.named(None).unwrap().is_default());
        assert!(
            domains
                .named(Some("S.example.com:8443"))
                .unwrap()
                .is_default()
        );
        assert_eq!(
            domains.served(Some("go.example.org")).unwrap().as_str(),
            "go.example.org"
        );
        assert!(domains.named(Some("gone.example")).is_ok());
        assert!(domains.served(Some("gone.example")).is_err());
        assert!(domains.named(Some("not a host")).is_err());
        let code = ShortCode::parse("abc").unwrap();
        let go = Domain::parse("go.example.org").unwrap();
        assert_eq!(domains.short_url(&go, &code), "https://go.example.org/abc");
        assert_eq!(
            domains.short_url(&Domain::default(), &code),
            "https://s.example.com:8443/abc"
        );
        let gone = Domain::parse("gone.example").unwrap();
        assert_eq!(domains.short_url(&gone, &code), "https://gone.example/abc");
        assert_eq!(domains.host(&Domain::default()), "s.example.com:8443");
    }
}
