//! A checked configuration ([`Settings`]): every value of [`Config`] checked once, and
//! what the checks parse kept in its domain type: the backends (see `backends`), the
//! policies, the API keys' digests and the code generator. Nothing is parsed twice.

use std::collections::BTreeMap;
use std::time::Duration;

use figment::Figment;
use shortener_core::{
    Algorithm, AlphabetCodeGenerator, DenyList, Owner, Policy, RedirectStatus, TargetRules,
};

use super::{Config, ConfigError, LimiterKind, PolicyConfig};
use shortener_backends::{RedisLimiter, Storage};
use shortener_http::auth::{ApiKeyEntry, ApiKeys, Policies, Scope, Scopes};
use shortener_http::domains::Domains;
use shortener_http::identity::IdentityConfig;
use shortener_http::serving::Serving;
use shortener_http::targets::Targets;

/// The longest `links.redirect_max_age_secs`: a year, as RFC 9111 caches cap it.
const MAX_REDIRECT_AGE_SECS: u64 = 31_536_000;

/// A configuration that passed its checks, with what the checks parsed kept for use, and
/// the raw [`Config`] it came from as `config` (named, not dereferenced to: a reader sees
/// which of the two a value is read from).
#[derive(Debug)]
pub struct Settings {
    pub config: Config,
    /// The links' store, from `[storage]`.
    pub storage: Storage,
    /// `algorithm` of `[limiter]`, for the Redis and the memory limiter alike.
    pub algorithm: Algorithm,
    /// The Redis limiter of `[limiter]`; `None` under `kind = "memory"`.
    pub redis: Option<RedisLimiter>,
    pub policies: Policies,
    pub api_keys: ApiKeys,
    pub generator: AlphabetCodeGenerator,
    /// The target rules of `[links]`, with the deny list as read at start.
    pub targets: Targets,
    /// What requests read of the configuration.
    pub serving: Serving,
    /// The country database of `visits.geoip_db`, read at start.
    pub countries: shortener_http::geoip::Countries,
    /// What the loading had to say without refusing: envoyproxy/ratelimit's variables
    /// that change nothing here. Printed before the service starts.
    pub warnings: Vec<String>,
}

impl Config {
    /// Checks every value, and keeps what the checks parse.
    /// `user` is the file and the environment without the built-in defaults: what the
    /// user wrote, for the keys that only some backend kinds take.
    pub(super) fn check(self, user: &Figment) -> Result<Settings, ConfigError> {
        self.check_values()?;
        let storage = self.storage.resolve(user)?;
        let redis = self.limiter.resolve(user)?;
        let generator = AlphabetCodeGenerator::new(&self.codes.alphabet, self.codes.length)
            .map_err(|e| {
                let key = if e == shortener_core::CodeGeneratorConfigError::Length {
                    "codes.length"
                } else {
                    "codes.alphabet"
                };
                ConfigError(format!("invalid value for key `{key}`: {e}"))
            })?;
        let policies = self.parse_policies()?;
        let api_keys = self.parse_api_keys()?;
        let domains = super::domains::parse(&self.server.public_url, &self.domains)?;
        let targets = self.parse_targets(&domains)?;
        let countries = if self.visits.geoip_db.is_empty() {
            shortener_http::geoip::Countries::default()
        } else {
            shortener_http::geoip::Countries::open(self.visits.geoip_db.clone().into())
                .map_err(|e| ConfigError(format!("invalid value for key `visits.geoip_db`: {e}")))?
        };
        let Some(redirect_status) = RedirectStatus::from_code(self.server.redirect_status) else {
            return Err(ConfigError(
                "invalid value for key `server.redirect_status`: must be 301, 302, 307 or 308"
                    .to_owned(),
            ));
        };
        Ok(Settings {
            warnings: Vec::new(),
            serving: self.serving(redirect_status, domains),
            targets,
            countries,
            algorithm: self.limiter.algorithm(),
            config: self,
            storage,
            redis,
            policies,
            api_keys,
            generator,
        })
    }

    /// What requests read, parsed; `server.redirect_status` was checked already.
    fn serving(&self, redirect_status: RedirectStatus, domains: Domains) -> Serving {
        Serving {
            public_url: self.server.public_url.trim_end_matches('/').to_owned(),
            domains,
            redirect_status,
            case_insensitive_aliases: self.links.case_insensitive_aliases,
            redirect_max_age_secs: self.links.redirect_max_age_secs,
            forward_query: self.links.forward_query,
            request_metrics: self.server.request_metrics,
            log_requests: self.log.requests,
            max_body_bytes: self.server.max_body_bytes,
            request_timeout: Duration::from_millis(self.server.request_timeout_ms),
            shutdown_timeout: Duration::from_millis(self.server.shutdown_timeout_ms),
            shutdown_delay: Duration::from_millis(self.server.shutdown_delay_ms),
            ops_listener: self.server.ops_bind.is_some(),
            identity: IdentityConfig {
                trusted_proxies: self.server.trusted_proxies.clone(),
                header: self.server.client_ip_header,
                ipv4_prefix: self.limiter.ipv4_prefix,
                ipv6_prefix: self.limiter.ipv6_prefix,
            },
            algorithm: self.limiter.algorithm(),
            tracking: shortener_http::visit::values::Tracking {
                referrer: self.visits.track_referrer,
                country: self.visits.track_country && !self.visits.geoip_db.is_empty(),
                agent: self.visits.track_agent,
                respect_do_not_track: self.visits.respect_do_not_track,
            },
            flush_values_every: self.visits.flush_values_secs,
            shlink: self.compat.shlink,
            kutt: self.compat.kutt,
            yourls: self.compat.yourls,
            cors_origins: self.server.cors_origins.clone(),
        }
    }

    fn parse_policies(&self) -> Result<Policies, ConfigError> {
        let shared = self.limiter.kind == LimiterKind::Redis;
        let default = self
            .limiter
            .policies
            .iter()
            .map(|(name, policy)| {
                let key = format!("limiter.policies.{name}");
                Ok((name.clone(), parse_policy(&key, name, policy, shared)?))
            })
            .collect::<Result<_, ConfigError>>()?;
        let mut tiers = BTreeMap::new();
        for (tier, policies) in &self.limiter.tiers {
            let parsed = policies
                .iter()
                .map(|(name, policy)| {
                    let key = format!("limiter.tiers.{tier}.{name}");
                    Ok((name.clone(), parse_policy(&key, name, policy, shared)?))
                })
                .collect::<Result<_, ConfigError>>()?;
            tiers.insert(tier.clone(), parsed);
        }
        Ok(Policies::new(default, tiers))
    }

    /// The target rules; links to any served domain are the service's own (a loop).
    fn parse_targets(&self, domains: &Domains) -> Result<Targets, ConfigError> {
        let links = &self.links;
        let bad =
            |key: &str, why: String| ConfigError(format!("invalid value for key `{key}`: {why}"));
        let rules = TargetRules {
            own_hosts: (domains.sites().iter())
                .filter_map(|site| TargetRules::own_host(&site.base_url))
                .collect(),
            allow_private: links.allow_private_targets,
            allow_mixed_script: links.allow_mixed_script_hosts,
        };
        let configured = DenyList::parse(links.deny_hosts.iter().map(String::as_str))
            .map_err(|e| bad("links.deny_hosts", e.to_string()))?;
        let file = if links.deny_hosts_file.is_empty() {
            None
        } else {
            let path = std::path::PathBuf::from(&links.deny_hosts_file);
            let text = shortener_http::watched::read_text(&path).map_err(|e| {
                bad(
                    "links.deny_hosts_file",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            let list = DenyList::parse_file(&text)
                .map_err(|e| bad("links.deny_hosts_file", format!("{}: {e}", path.display())))?;
            Some((path, list))
        };
        Ok(Targets::new(rules, configured, file))
    }

    fn parse_api_keys(&self) -> Result<ApiKeys, ConfigError> {
        let bad = |key: String, why: String| {
            Err(ConfigError(format!("invalid value for key `{key}`: {why}")))
        };
        let mut entries: Vec<ApiKeyEntry> = Vec::new();
        for (index, key) in self.api_keys.iter().enumerate() {
            let name = match Owner::parse(&key.name) {
                Ok(name) => name,
                Err(e) => return bad(format!("api_keys[{index}].name"), e.to_string()),
            };
            let Ok(digest) = <[u8; 32]>::try_from(hex::decode(&key.sha256).unwrap_or_default())
            else {
                return bad(
                    format!("api_keys[{index}].sha256"),
                    "must be 64 hex digits (a SHA-256)".into(),
                );
            };
            if let Some(tier) = &key.tier
                && !self.limiter.tiers.contains_key(tier)
            {
                return bad(
                    format!("api_keys[{index}].tier"),
                    format!("tier `{tier}` is not defined in limiter.tiers"),
                );
            }
            let scopes = match &key.scopes {
                None => Scopes::OWN_LINKS,
                Some(names) => {
                    let mut scopes = Vec::new();
                    for name in names {
                        let Some(scope) = Scope::parse(name) else {
                            return bad(
                                format!("api_keys[{index}].scopes"),
                                format!(
                                    "unknown scope `{name}`; expected create, read, update, delete or admin"
                                ),
                            );
                        };
                        scopes.push(scope);
                    }
                    scopes.into_iter().collect()
                }
            };
            // Two entries with one name would share their links and their quota; two
            // with one digest would make the key mean whichever comes last.
            for (earlier, other) in entries.iter().enumerate() {
                if other.name == name {
                    return bad(
                        format!("api_keys[{index}].name"),
                        format!("`{name}` is also the name of api_keys[{earlier}]"),
                    );
                }
                if other.same_digest(&digest) {
                    return bad(
                        format!("api_keys[{index}].sha256"),
                        format!(
                            "is also the digest of api_keys[{earlier}] (`{}`)",
                            other.name
                        ),
                    );
                }
            }
            entries.push(ApiKeyEntry::new(name, key.tier.clone(), scopes, digest));
        }
        Ok(ApiKeys::new(entries))
    }

    fn check_values(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| {
            Err(ConfigError(format!("invalid value for key `{key}`: {why}")))
        };
        self.visits.check().map_err(ConfigError)?;
        if let Err(error) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            return bad("log.level", &format!("not a log filter: {error}"));
        }
        super::domains::check_public_url(&self.server.public_url)?;
        super::domains::check_cors_origins(&self.server.cors_origins)?;
        if self.links.redirect_max_age_secs > MAX_REDIRECT_AGE_SECS {
            return bad(
                "links.redirect_max_age_secs",
                "must be at most 31536000 (a year)",
            );
        }
        if self.server.max_body_bytes < 256 {
            return bad("server.max_body_bytes", "must be at least 256");
        }
        for (key, value) in [
            (
                "server.header_read_timeout_ms",
                self.server.header_read_timeout_ms,
            ),
            ("server.request_timeout_ms", self.server.request_timeout_ms),
            ("server.idle_timeout_ms", self.server.idle_timeout_ms),
            (
                "server.keep_alive_timeout_ms",
                self.server.keep_alive_timeout_ms,
            ),
        ] {
            if !(1..=3_600_000).contains(&value) {
                return bad(key, "must be between 1 and 3600000 (one hour)");
            }
        }
        if !(1..=1_000_000).contains(&self.server.max_connections) {
            return bad("server.max_connections", "must be between 1 and 1000000");
        }
        if !(1..=1_000_000).contains(&self.server.max_connections_per_client) {
            return bad(
                "server.max_connections_per_client",
                "must be between 1 and 1000000",
            );
        }
        if !(1_000..=604_800_000).contains(&self.server.max_connection_age_ms) {
            return bad(
                "server.max_connection_age_ms",
                "must be between 1000 (a second) and 604800000 (a week)",
            );
        }
        if self.storage.statement_timeout_ms > 3_600_000 {
            return bad(
                "storage.statement_timeout_ms",
                "must be between 0 (the server's own) and 3600000 (one hour)",
            );
        }
        if !(100..=600_000).contains(&self.server.shutdown_timeout_ms) {
            return bad(
                "server.shutdown_timeout_ms",
                "must be between 100 and 600000",
            );
        }
        if self.server.shutdown_delay_ms * 2 > self.server.shutdown_timeout_ms {
            return bad(
                "server.shutdown_delay_ms",
                "must be at most half of server.shutdown_timeout_ms (the drain, the visit flush and the close need the rest)",
            );
        }
        if !(19..=1_048_576).contains(&self.links.password_memory_mb) {
            return bad(
                "links.password_memory_mb",
                "must be between 19 (one password hash) and 1048576",
            );
        }
        if !(1..=65_536).contains(&self.storage.sqlite_wal_max_mb) {
            return bad("storage.sqlite_wal_max_mb", "must be between 1 and 65536");
        }
        if self.limiter.timeout_ms == 0 || self.limiter.timeout_ms > 60_000 {
            return bad("limiter.timeout_ms", "must be between 1 and 60000");
        }
        if self.limiter.breaker_failures == 0 || self.limiter.breaker_failures > 1000 {
            return bad("limiter.breaker_failures", "must be between 1 and 1000");
        }
        if !(1..=1024).contains(&self.limiter.redis_pool_size) {
            return bad("limiter.redis_pool_size", "must be between 1 and 1024");
        }
        if self.limiter.nodes == 0 || self.limiter.nodes > 100_000 {
            return bad("limiter.nodes", "must be between 1 and 100000");
        }
        if self.limiter.ipv4_prefix > 32 {
            return bad("limiter.ipv4_prefix", "must be between 0 and 32");
        }
        if self.limiter.ipv6_prefix > 128 {
            return bad("limiter.ipv6_prefix", "must be between 0 and 128");
        }
        Ok(())
    }
}

/// The policy at `key`; lease terms only when the limiter is `shared` (Redis): a node's
/// own limiter decides every request in memory already.
fn parse_policy(
    key: &str,
    name: &str,
    policy: &PolicyConfig,
    shared: bool,
) -> Result<Policy, ConfigError> {
    if !matches!(
        name,
        "create" | "redirect" | "lookup" | "manage" | "unlock" | "unlock_link"
    ) {
        return Err(ConfigError(format!(
            "unknown key `{key}`: policies are `create`, `redirect`, `lookup`, `manage`, `unlock` and `unlock_link`"
        )));
    }
    let parsed = Policy::new(name, policy.capacity, policy.refill_per_sec)
        .map_err(|e| ConfigError(format!("invalid value for key `{key}`: {e}")))?;
    match (policy.lease, policy.lease_ms) {
        (None, None) => Ok(parsed),
        (None, Some(_)) => Err(ConfigError(format!(
            "key `{key}.lease_ms` needs `{key}.lease`"
        ))),
        (Some(_), _) if name.starts_with("unlock") => Err(ConfigError(format!(
            "key `{key}.lease`: an unlock attempt takes a token of two buckets at once (the client's and the link's), which leases do not serve"
        ))),
        (Some(_), _) if !shared => Err(ConfigError(format!(
            "key `{key}.lease` is for limiter.kind = \"redis\": the memory limiter decides every request in memory already"
        ))),
        (Some(tokens), lease_ms) => parsed
            .with_lease(tokens, lease_ms.unwrap_or(100).saturating_mul(1_000))
            .map_err(|e| ConfigError(format!("invalid value for key `{key}.lease`: {e}"))),
    }
}
