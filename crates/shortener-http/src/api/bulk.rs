//! What a bulk create answers (a result per item, each with its own status) and what it
//! costs (a token of the `create` policy per item, taken in one decision); the operation
//! itself is with the other creates in [`super::links`].

use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};

use super::body;
use super::fields::BulkRequest;
use super::{ApiError, LinkBody, Problem};
use crate::limit::limit_by_body;

/// The outcome of one item of a bulk create.
#[derive(Object, Debug)]
pub struct BulkResult {
    /// What a create of this item alone would have answered: 201, 200 for a link found
    /// with `find_if_exists`, or a 4xx/5xx.
    pub status: u16,
    /// The link, when created.
    #[oai(skip_serializing_if_is_none)]
    pub link: Option<LinkBody>,
    /// Why not, naming the field (prefixed with the item: `links[3].url`).
    #[oai(skip_serializing_if_is_none)]
    pub problem: Option<Problem>,
}

impl BulkResult {
    pub(super) fn from_outcome(index: usize, outcome: Result<(LinkBody, u16), ApiError>) -> Self {
        match outcome {
            Ok((link, status)) => Self {
                status,
                link: Some(link),
                problem: None,
            },
            Err(error) => {
                let mut problem = error.problem().clone();
                // `url: ...` becomes `links[3].url: ...`; a detail about the item as a
                // whole becomes `links[3]: ...`.
                let names_field = problem.detail.split_once(": ").is_some_and(|(field, _)| {
                    field.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                });
                problem.detail = if names_field {
                    format!("links[{index}].{}", problem.detail)
                } else {
                    format!("links[{index}]: {}", problem.detail)
                };
                Self {
                    status: problem.status,
                    link: None,
                    problem: Some(problem),
                }
            }
        }
    }
}

/// The outcomes of a bulk create, in the order of the request.
#[derive(Object, Debug)]
pub struct BulkResults {
    pub results: Vec<BulkResult>,
}

#[derive(ApiResponse, Debug)]
pub(super) enum BulkResponse {
    /// Every item was tried; each result has its own status.
    #[oai(status = 200)]
    Ok(Json<BulkResults>),
}

/// Limits `POST /api/v1/links/bulk` with the `create` policy, at one token per link of
/// the body, taken in one decision: all of them or none.
pub(super) fn limit_bulk(endpoint: impl poem::Endpoint) -> impl poem::Endpoint {
    limit_by_body(endpoint, &["create"], |request| {
        Box::pin(bulk_cost(request))
    })
}

/// Reads a bulk create's body, once, for its rate-limit cost (one token per item of
/// `links`, valid or not) and for the operation, which takes the same value.
///
/// # Errors
/// What the operation would answer for a body it cannot read (400, 415).
async fn bulk_cost(request: &mut Request) -> poem::Result<usize> {
    let bulk: BulkRequest = body::take(request).await?;
    let count = bulk.links.len();
    body::hand_over(request, bulk);
    Ok(count)
}
