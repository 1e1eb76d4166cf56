//! Requests as a client of the service builds them: descriptors from `(key, value)`
//! entries. For the service's callers here (the benchmark's client, the tests).

use crate::descriptor_proto::RateLimitDescriptor;
use crate::descriptor_proto::rate_limit_descriptor::Entry;
use crate::proto::RateLimitRequest;

/// A descriptor of these entries, in order, with no override or addend.
pub fn descriptor(entries: &[(&str, &str)]) -> RateLimitDescriptor {
    RateLimitDescriptor {
        entries: entries
            .iter()
            .map(|(key, value)| Entry {
                key: (*key).to_owned(),
                value: (*value).to_owned(),
            })
            .collect(),
        ..RateLimitDescriptor::default()
    }
}

/// A request for `domain` with one descriptor per entry list, hits_addend 0 (one hit).
pub fn request(domain: &str, descriptors: &[&[(&str, &str)]]) -> RateLimitRequest {
    RateLimitRequest {
        domain: domain.to_owned(),
        descriptors: descriptors
            .iter()
            .map(|entries| descriptor(entries))
            .collect(),
        hits_addend: 0,
    }
}
