//! [`JsonBody`]: a JSON request body read by [`FromJsonBody`], whose errors name their field.
//!
//! In the OpenAPI document it is the same as poem-openapi's `Json<T>` (the schema of `T`,
//! any `application/json` or `application/*+json` content type); only the reading differs.
//!
//! A body is read once. Where a middleware needs the typed body before the operation
//! (the rate limit of a bulk create counts its links), it reads it with [`take`] and hands
//! the value on with [`hand_over`]; the operation's [`JsonBody`] then takes that value
//! instead of reading again, so the count and the creates come from one parse.

use std::sync::{Arc, Mutex};

use poem::{FromRequest, Request, RequestBody};
use poem_openapi::error::ContentTypeError;
use poem_openapi::payload::{Json, ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaSchemaRef, Registry};
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};

use super::fields::{FieldError, FromJsonBody};
use super::json;

/// A request body of type `T`, read from JSON.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: FromJsonBody> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = <Json<T> as Payload>::CONTENT_TYPE;

    fn check_content_type(content_type: &str) -> bool {
        <Json<T> as Payload>::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: FromJsonBody + Send + 'static> ParsePayload for JsonBody<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        if let Some(parsed) = request.extensions().get::<Parsed<T>>()
            && let Some(value) = parsed.0.lock().ok().and_then(|mut slot| slot.take())
        {
            return Ok(Self(value));
        }
        let bytes = <Vec<u8> as FromRequest>::from_request(request, body).await?;
        Ok(Self(parse(&bytes)?))
    }
}

/// Reads a body of type `T` from its bytes: the one parse of every JSON request body.
///
/// # Errors
/// A [`FieldError`]: `body` when it is empty or not JSON, the key when one is given twice,
/// else the field that `T` refuses.
pub fn parse<T: FromJsonBody>(bytes: &[u8]) -> Result<T, FieldError> {
    if bytes.is_empty() {
        return Err(FieldError::new("body", "is required: send a JSON object"));
    }
    T::from_value(json::parse(bytes)?)
}

/// Reads the body of `request` as a `T`, checking its content type as the operation would.
///
/// # Errors
/// The error the operation itself would answer: 415 for another content type, 400 for a
/// body that [`parse`] refuses.
pub async fn take<T: FromJsonBody>(request: &mut Request) -> poem::Result<T> {
    check_content_type::<T>(request)?;
    let bytes = request.take_body().into_vec().await?;
    Ok(parse(&bytes)?)
}

/// 415 unless `request` says its body is JSON, as poem-openapi's own payloads check.
fn check_content_type<T: FromJsonBody>(request: &Request) -> Result<(), ContentTypeError> {
    match request.content_type() {
        Some(content_type) if JsonBody::<T>::check_content_type(content_type) => Ok(()),
        Some(content_type) => Err(ContentTypeError::NotSupported {
            content_type: content_type.to_owned(),
        }),
        None => Err(ContentTypeError::ExpectContentType),
    }
}

/// Leaves a body read by [`take`] for the operation's [`JsonBody`], which takes it.
pub fn hand_over<T: Send + 'static>(request: &mut Request, value: T) {
    request
        .extensions_mut()
        .insert(Parsed(Arc::new(Mutex::new(Some(value)))));
}

/// A body read before the operation; `Clone` as request extensions must be.
struct Parsed<T>(Arc<Mutex<Option<T>>>);

impl<T> Clone for Parsed<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

// What poem-openapi's own payloads get from its (private) `impl_apirequest_for_payload!`:
// a request body in the document, and the content type checked before reading.
impl<'a, T: FromJsonBody + Send + 'static> ApiExtractor<'a> for JsonBody<T> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];

    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        <Self as Payload>::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            content: vec![MetaMediaType {
                content_type: <Self as Payload>::CONTENT_TYPE,
                schema: <Self as Payload>::schema_ref(),
            }],
            required: <Self as ParsePayload>::IS_REQUIRED,
        })
    }

    async fn from_request(
        request: &'a Request,
        body: &mut RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        check_content_type::<T>(request)?;
        <Self as ParsePayload>::from_request(request, body).await
    }
}
