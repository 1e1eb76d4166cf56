//! `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` over the `MultiRateLimiter`
//! port: a request's descriptors are matched against the limits, and every enforced one
//! is decided in one all-or-nothing call, so a request refused by one descriptor spends
//! nothing of the others.

use std::sync::Arc;
use std::time::{Duration, Instant};

use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    Code, DescriptorStatus, RateLimit,
};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use envoy_types::pb::google::protobuf::Duration as ProtoDuration;
use shortener_core::{Decision, Demand, LimiterError, MultiRateLimiter, WindowCounter};
use tonic::{Request, Response, Status};

pub use crate::bounds::RequestBounds;
use crate::limits::{Entry, Matched, Unit};
use crate::reload::LimitsHandle;
pub use crate::settings::{ServiceSettings, WhenUnavailable};
use crate::windows::Wanted;

/// The histogram of a `ShouldRateLimit` decision's time, in seconds.
pub const DECISION_SECONDS: &str = "shortener_rls_decision_seconds";

/// The counter of calls the limiter could not decide (theirs, by their Prometheus name).
pub const REDIS_ERRORS: &str = "ratelimit_service_call_should_rate_limit_redis_error";

/// The rate limit service, generic over the limiter it decides with.
#[derive(Debug)]
pub struct RateLimitServer<L> {
    limiter: Arc<L>,
    limits: Arc<LimitsHandle>,
    settings: ServiceSettings,
}

/// One descriptor of a request, as matched.
enum Slot {
    /// No limit applies (no match, or replaced by another's `replaces`).
    Free,
    Unlimited,
    /// A limit of 0: always over.
    Zero(Matched),
    /// Decided by the limiter: which list its demand is in, and where.
    Limited(Matched, List, usize),
}

/// How a limited descriptor is decided.
#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    /// With the request's other enforced descriptors, all or nothing.
    Enforced,
    /// Alone, never refusing the request (`shadow_mode`).
    Shadowed,
    /// Alone, before the enforced ones (`quota_mode`): over its limit it refuses the
    /// request only when every quota descriptor of the request is over.
    Quota,
}

impl<L> RateLimitServer<L> {
    pub fn new(limiter: Arc<L>, limits: Arc<LimitsHandle>, settings: ServiceSettings) -> Self {
        Self {
            limiter,
            limits,
            settings,
        }
    }
}

impl<L: MultiRateLimiter + WindowCounter> RateLimitServer<L> {
    /// One `ShouldRateLimit` decision.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for an empty domain, no descriptors, a negative hit or a
    /// request past [`RequestBounds`];
    /// `UNAVAILABLE` when the limiter cannot decide under [`WhenUnavailable::Error`].
    pub async fn decide(&self, request: &RateLimitRequest) -> Result<RateLimitResponse, Status> {
        let started = Instant::now();
        if request.domain.is_empty() {
            return Err(Status::invalid_argument(
                "rate limit domain must not be empty",
            ));
        }
        if request.descriptors.is_empty() {
            return Err(Status::invalid_argument(
                "rate limit descriptor list must not be empty",
            ));
        }
        self.settings.bounds.check(request)?;
        let limits = self.limits.current();
        let domain = request.domain.as_str();
        if limits.is_broken(domain) {
            return self.broken(request);
        }
        let mut matched = Vec::with_capacity(request.descriptors.len());
        let mut hits = Vec::with_capacity(request.descriptors.len());
        for (index, descriptor) in request.descriptors.iter().enumerate() {
            if descriptor.is_negative_hits {
                return Err(Status::invalid_argument(format!(
                    "descriptors[{index}].is_negative_hits: returning tokens is not supported"
                )));
            }
            let entries: Vec<Entry<'_>> = descriptor
                .entries
                .iter()
                .map(|entry| Entry {
                    key: &entry.key,
                    value: &entry.value,
                })
                .collect();
            let overriding = descriptor.limit.and_then(|limit| {
                Unit::from_proto(limit.unit).map(|unit| (limit.requests_per_unit, unit))
            });
            matched.push(limits.find(domain, &entries, overriding));
            hits.push(descriptor.hits_addend.map_or_else(
                || u64::from(request.hits_addend.max(1)),
                |addend| addend.value,
            ));
        }
        let replaced: Vec<String> = matched
            .iter()
            .flatten()
            .flat_map(|m| m.limit.replaces.iter().cloned())
            .collect();
        let (mut enforced, mut shadowed, mut quota) = (Vec::new(), Vec::new(), Vec::new());
        let slots: Vec<Slot> = matched
            .into_iter()
            .zip(&hits)
            .map(|(found, &cost)| match found {
                None => Slot::Free,
                Some(m) if m.limit.unlimited => Slot::Unlimited,
                Some(m) if !m.limit.name.is_empty() && replaced.contains(&m.limit.name) => {
                    Slot::Free
                }
                Some(m) => match &m.limit.policy {
                    None => Slot::Zero(m),
                    Some(policy) => {
                        let demand = Demand {
                            identity: m.identity.clone(),
                            policy: policy.clone(),
                            cost,
                            debt: 0,
                            algorithm: m.limit.algorithm,
                        };
                        let wanted = Wanted::new(demand, &m, &self.settings.windows);
                        let which = self.list_of(&m);
                        let list = match which {
                            List::Shadowed => &mut shadowed,
                            List::Quota => &mut quota,
                            List::Enforced => &mut enforced,
                        };
                        list.push(wanted);
                        Slot::Limited(m, which, list.len() - 1)
                    }
                },
            })
            .collect();
        // Quota descriptors first, each alone: when every one is over (a limit of 0 is),
        // the request is refused and its enforced descriptors must spend nothing.
        let quota_results = futures_util::future::join_all(
            quota
                .iter()
                .map(|demand| self.decide_all(domain, std::slice::from_ref(demand))),
        )
        .await;
        let zero_in = |wanted: List| {
            (slots.iter())
                .filter(move |slot| matches!(slot, Slot::Zero(m) if self.list_of(m) == wanted))
        };
        let quota_zeros = zero_in(List::Quota).count();
        let quota_refused = (quota_results.iter())
            .filter(|result| {
                result
                    .as_ref()
                    .map_or(true, |decisions| !decisions[0].allowed)
            })
            .count();
        let quota_total = quota_zeros + quota.len();
        let all_quota_over = quota_total > 0 && quota_zeros + quota_refused == quota_total;
        // A limit of 0 refuses the request: the others are only read (cost 0), not taken.
        let zero_enforced = zero_in(List::Enforced).next().is_some();
        if zero_enforced || all_quota_over {
            for wanted in &mut enforced {
                wanted.read_only();
            }
        }
        // Without shadowed demands (the usual request) there is one call to await; joining
        // it with an empty join would copy its large future for nothing.
        let (enforced_result, shadow_results) = if shadowed.is_empty() {
            (self.decide_all(domain, &enforced).await, Vec::new())
        } else {
            tokio::join!(
                self.decide_all(domain, &enforced),
                futures_util::future::join_all(
                    shadowed
                        .iter()
                        .map(|demand| self.decide_all(domain, std::slice::from_ref(demand)))
                )
            )
        };
        let enforced_decisions = match enforced_result {
            Ok(decisions) => Some(decisions),
            Err(error) => {
                // Their `should_rate_limit.redis_error`: a call the limiter could not decide.
                metrics::counter!(REDIS_ERRORS).increment(1);
                if self.settings.when_unavailable == WhenUnavailable::Error {
                    return Err(Status::unavailable(format!(
                        "rate limiter unavailable: {error}"
                    )));
                }
                None
            }
        };
        let mut over = false;
        let mut statuses = Vec::with_capacity(slots.len());
        // Whether each status refuses the request by itself (for the response headers).
        let mut refusing = Vec::with_capacity(slots.len());
        for (slot, &cost) in slots.iter().zip(&hits) {
            let mut refuses = false;
            let status = match slot {
                Slot::Free => DescriptorStatus {
                    code: Code::Ok.into(),
                    ..DescriptorStatus::default()
                },
                Slot::Unlimited => DescriptorStatus {
                    code: Code::Ok.into(),
                    limit_remaining: u32::MAX,
                    ..DescriptorStatus::default()
                },
                Slot::Zero(m) => {
                    let never = Decision {
                        allowed: false,
                        limit: 0,
                        remaining: 0,
                        retry_after_us: None,
                        reset_after_us: 0,
                    };
                    crate::metrics::record(domain, m, cost, &never, self.settings.near_limit_ratio);
                    refuses = self.list_of(m) == List::Enforced;
                    status(
                        m,
                        !m.limit.shadow_mode,
                        0,
                        m.limit.unit.seconds() * 1_000_000,
                    )
                }
                Slot::Limited(m, which, at) => {
                    let decision = match which {
                        List::Shadowed => shadow_results[*at].as_ref().ok().map(|d| d[0]),
                        List::Quota => quota_results[*at].as_ref().ok().map(|d| d[0]),
                        List::Enforced => enforced_decisions.as_ref().map(|d| d[*at]),
                    };
                    // Without a decision: over the limit, nothing left (fail_closed), or
                    // admitted (fail_open and local, should their fallback not decide).
                    let decision = decision.unwrap_or(Decision {
                        allowed: self.settings.when_unavailable == WhenUnavailable::Allow,
                        limit: u64::from(m.limit.requests_per_unit),
                        remaining: 0,
                        retry_after_us: None,
                        reset_after_us: m.limit.unit.seconds() * 1_000_000,
                    });
                    crate::metrics::record(
                        domain,
                        m,
                        cost,
                        &decision,
                        self.settings.near_limit_ratio,
                    );
                    let wait_us = if decision.allowed {
                        decision.reset_after_us
                    } else {
                        decision
                            .retry_after_us
                            .unwrap_or(m.limit.unit.seconds() * 1_000_000)
                    };
                    let code_over = !decision.allowed && !m.limit.shadow_mode;
                    refuses = code_over && *which == List::Enforced;
                    status(m, code_over, decision.remaining, wait_us)
                }
            };
            over |= refuses;
            statuses.push(status);
            refusing.push(refuses);
        }
        let response_headers_to_add = (self.settings.response_headers.as_ref())
            .map(|names| crate::headers::closest(names, &statuses, &refusing))
            .unwrap_or_default();
        over |= all_quota_over;
        if over && self.settings.shadow_mode {
            over = false;
            metrics::counter!("ratelimit_service_global_shadow_mode").increment(1);
        }
        // The `metadata:` of the limits whose descriptors passed (shadowed ones too).
        let dynamic_metadata = self.settings.dynamic_metadata.then(|| {
            let passed = (slots.iter().zip(&statuses)).filter_map(|(slot, status)| {
                let matched = match slot {
                    Slot::Zero(m) | Slot::Limited(m, ..) => m,
                    Slot::Free | Slot::Unlimited => return None,
                };
                (status.code() != Code::OverLimit)
                    .then_some(matched.limit.metadata.as_ref())
                    .flatten()
            });
            crate::metadata::response(request, passed)
        });
        metrics::histogram!(DECISION_SECONDS).record(started.elapsed().as_secs_f64());
        Ok(RateLimitResponse {
            overall_code: if over { Code::OverLimit } else { Code::Ok }.into(),
            statuses,
            response_headers_to_add,
            dynamic_metadata,
            ..RateLimitResponse::default()
        })
    }

    /// The answer for a domain whose limits file did not load: as the limiter's errors.
    fn broken(&self, request: &RateLimitRequest) -> Result<RateLimitResponse, Status> {
        let over = match self.settings.when_unavailable {
            WhenUnavailable::Error => {
                return Err(Status::unavailable(format!(
                    "the limits file of domain `{}` did not load",
                    request.domain
                )));
            }
            WhenUnavailable::OverLimit => !self.settings.shadow_mode,
            WhenUnavailable::Allow => false,
        };
        let code = if over { Code::OverLimit } else { Code::Ok };
        Ok(RateLimitResponse {
            overall_code: code.into(),
            statuses: (request.descriptors.iter())
                .map(|_| DescriptorStatus {
                    code: code.into(),
                    ..DescriptorStatus::default()
                })
                .collect(),
            ..RateLimitResponse::default()
        })
    }

    /// How the limit a descriptor matched is decided: shadow mode wins over quota mode
    /// (the descriptor's own, or the service's `QUOTA_MODE`).
    fn list_of(&self, m: &Matched) -> List {
        if m.limit.shadow_mode {
            List::Shadowed
        } else if m.limit.quota_mode || self.settings.quota_mode {
            List::Quota
        } else {
            List::Enforced
        }
    }

    /// One decision per wanted limit: the fixed windows counted as theirs, the others all
    /// or nothing (no call for nothing wanted).
    async fn decide_all(
        &self,
        domain: &str,
        wanted: &[Wanted],
    ) -> Result<Vec<Decision>, LimiterError> {
        let spending = self.settings.windows.spending;
        crate::windows::decide(&*self.limiter, domain, wanted, spending).await
    }
}

fn status(m: &Matched, over: bool, remaining: u64, wait_us: u64) -> DescriptorStatus {
    let wait = Duration::from_micros(wait_us);
    DescriptorStatus {
        code: if over { Code::OverLimit } else { Code::Ok }.into(),
        current_limit: Some(RateLimit {
            name: m.limit.name.clone(),
            requests_per_unit: m.limit.requests_per_unit,
            unit: m.limit.unit.proto(),
        }),
        limit_remaining: u32::try_from(remaining).unwrap_or(u32::MAX),
        duration_until_reset: Some(ProtoDuration {
            seconds: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(wait.subsec_nanos()).unwrap_or(0),
        }),
        ..DescriptorStatus::default()
    }
}

#[tonic::async_trait]
impl<L: MultiRateLimiter + WindowCounter> RateLimitService for RateLimitServer<L> {
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        self.decide(request.get_ref()).await.map(Response::new)
    }
}
