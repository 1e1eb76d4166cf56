//! `[[domains]]`: the hosts a node serves besides the default one of `server.public_url`,
//! each with where its `/` and its unknown codes go.

use serde::{Deserialize, Serialize};
use shortener_core::{Domain, TargetUrl};

use super::ConfigError;
use shortener_http::domains::{Domains, Site};

/// One `[[domains]]` entry. An entry whose `host` is the default domain's (that of
/// `server.public_url`) sets the default domain's `root_redirect` and `not_found_url`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DomainConfig {
    /// The host requests name (`go.example.org`; a port only where clients use one).
    pub host: String,
    /// Where `/` on this host redirects; unset: the web page.
    pub root_redirect: Option<String>,
    /// Where an unknown code on this host redirects; unset: the 404 problem.
    pub not_found_url: Option<String>,
}

/// Checks `server.cors_origins`: `*`, or origins as browsers send them in `Origin`
/// (`https://app.example.org`, a port only where it is not the scheme's): lower case, no
/// path, no trailing slash.
pub(super) fn check_cors_origins(origins: &[String]) -> Result<(), ConfigError> {
    for origin in origins {
        let host = (origin.strip_prefix("https://"))
            .or_else(|| origin.strip_prefix("http://"))
            .unwrap_or_default();
        let forbidden = |c: char| "/?#@ ".contains(c) || c.is_control() || c.is_uppercase();
        if origin != "*" && (host.is_empty() || host.contains(forbidden)) {
            return Err(ConfigError(format!(
                "invalid value for key `server.cors_origins`: `{origin}` is not an origin \
                 (`https://app.example.org`, lower case, without a path), nor `*`"
            )));
        }
    }
    Ok(())
}

/// Checks `server.public_url`: an http(s) URL that starts every short URL, so nothing
/// that would ride along in each (a user name and password, a query, a fragment).
pub(super) fn check_public_url(public_url: &str) -> Result<(), ConfigError> {
    let bad = |why: &str| {
        Err(ConfigError(format!(
            "invalid value for key `server.public_url`: {why}"
        )))
    };
    let public_url = public_url.trim_end_matches('/');
    if !(public_url.starts_with("http://") || public_url.starts_with("https://"))
        || public_url.len() < 9
    {
        return bad("must be an http(s) URL");
    }
    let after_scheme = public_url.split_once("://").map_or("", |(_, rest)| rest);
    let authority = after_scheme.split('/').next().unwrap_or_default();
    let spaces = |c: char| c.is_whitespace() || c.is_control();
    for (found, why) in [
        (
            authority.contains('@'),
            "must not carry a user name or password",
        ),
        (public_url.contains('?'), "must not have a query"),
        (public_url.contains('#'), "must not have a fragment"),
        (
            public_url.chars().any(spaces),
            "must not contain spaces or control characters",
        ),
    ] {
        if found {
            return bad(why);
        }
    }
    Ok(())
}

/// The default domain of `public_url` (checked already) and those of `[[domains]]`.
///
/// # Errors
/// A host that is not a host name or is listed twice, or a URL that is not one, naming
/// the key (`domains[1].host`).
pub(super) fn parse(public_url: &str, entries: &[DomainConfig]) -> Result<Domains, ConfigError> {
    let public_url = public_url.trim_end_matches('/');
    let default_host = Domains::host_of(public_url);
    let mut default = Site {
        domain: Domain::default(),
        host: default_host.clone(),
        base_url: public_url.to_owned(),
        root_redirect: None,
        not_found_url: None,
    };
    let (mut others, mut default_listed): (Vec<Site>, bool) = (Vec::new(), false);
    for (at, entry) in entries.iter().enumerate() {
        let bad = |field: &str, why: String| {
            ConfigError(format!(
                "invalid value for key `domains[{at}].{field}`: {why}"
            ))
        };
        let url = |field: &str, value: &Option<String>| {
            (value.as_deref())
                .map(TargetUrl::parse)
                .transpose()
                .map_err(|e| bad(field, e.0))
        };
        let domain = Domain::parse(&entry.host).map_err(|e| bad("host", e.0))?;
        let (root_redirect, not_found_url) = (
            url("root_redirect", &entry.root_redirect)?,
            url("not_found_url", &entry.not_found_url)?,
        );
        let twice = || bad("host", format!("'{}' is listed twice", entry.host));
        if domain.as_str() == default_host {
            if std::mem::replace(&mut default_listed, true) {
                return Err(twice());
            }
            default.root_redirect = root_redirect;
            default.not_found_url = not_found_url;
        } else if others.iter().any(|site| site.domain == domain) {
            return Err(twice());
        } else {
            others.push(Site {
                base_url: Domains::base_url_for(public_url, domain.as_str()),
                host: domain.as_str().to_owned(),
                domain,
                root_redirect,
                not_found_url,
            });
        }
    }
    Ok(Domains::new(public_url, default, others))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(host: &str, root_redirect: Option<&str>) -> DomainConfig {
        DomainConfig {
            host: host.to_owned(),
            root_redirect: root_redirect.map(str::to_owned),
            not_found_url: None,
        }
    }

    #[test]
    fn domains_are_parsed_and_each_bad_one_is_named() {
        let entries = [
            entry("Go.Example.org", None),
            entry("s.example.com", Some("https://example.com/")),
        ];
        let domains = parse("https://S.example.com/", &entries).unwrap();
        let sites = domains.sites();
        let hosts: Vec<&str> = sites.iter().map(|site| site.host.as_str()).collect();
        assert_eq!(hosts, ["s.example.com", "go.example.org"]);
        assert!(
            sites[0].domain.is_default(),
            "the default domain comes first"
        );
        let root = sites[0].root_redirect.as_ref().map(TargetUrl::as_str);
        assert_eq!(
            root,
            Some("https://example.com/"),
            "an entry of the default host sets it"
        );
        assert_eq!(sites[1].base_url, "https://go.example.org");
        for (entries, key) in [
            (vec![entry("not a host", None)], "domains[0].host"),
            (
                vec![entry("a.example", Some("nope"))],
                "domains[0].root_redirect",
            ),
            (
                vec![entry("a.example", None), entry("A.example", None)],
                "domains[1].host",
            ),
            (
                vec![entry("s.example.com", None), entry("s.example.com", None)],
                "domains[1].host",
            ),
        ] {
            let error = parse("https://s.example.com", &entries).unwrap_err().0;
            assert!(error.contains(key), "{key} in {error}");
        }
    }
}
