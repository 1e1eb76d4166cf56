//! What one `ShouldRateLimit` request may carry ([`RequestBounds`]), checked before
//! anything is matched or sent to the limiter.

use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitRequest;
use tonic::Status;

/// The most one `ShouldRateLimit` request may carry, so that no request makes Redis (and
/// so every pod on it) work long or keep a large key: the cost of a script call grows
/// with its descriptors, and a descriptor's entries are its Redis key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestBounds {
    /// Descriptors per request (`rls.max_descriptors`).
    pub descriptors: usize,
    /// Entries per descriptor (`rls.max_entries`).
    pub entries: usize,
    /// Bytes of an entry's key plus its value (`rls.max_entry_bytes`).
    pub entry_bytes: usize,
}

impl Default for RequestBounds {
    fn default() -> Self {
        Self {
            descriptors: 64,
            entries: 16,
            entry_bytes: 1024,
        }
    }
}

impl RequestBounds {
    /// The first bound `request` passes, named as `INVALID_ARGUMENT` says it.
    pub(crate) fn check(&self, request: &RateLimitRequest) -> Result<(), Status> {
        if request.descriptors.len() > self.descriptors {
            return Err(Status::invalid_argument(format!(
                "descriptors: {} in one request, at most {} (rls.max_descriptors)",
                request.descriptors.len(),
                self.descriptors
            )));
        }
        for (index, descriptor) in request.descriptors.iter().enumerate() {
            if descriptor.entries.len() > self.entries {
                return Err(Status::invalid_argument(format!(
                    "descriptors[{index}].entries: {} entries, at most {} (rls.max_entries)",
                    descriptor.entries.len(),
                    self.entries
                )));
            }
            for (entry_index, entry) in descriptor.entries.iter().enumerate() {
                let bytes = entry.key.len() + entry.value.len();
                if bytes > self.entry_bytes {
                    return Err(Status::invalid_argument(format!(
                        "descriptors[{index}].entries[{entry_index}]: key and value of {bytes} bytes, at most {} (rls.max_entry_bytes)",
                        self.entry_bytes
                    )));
                }
            }
        }
        Ok(())
    }
}
