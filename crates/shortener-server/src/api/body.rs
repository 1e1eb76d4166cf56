//! [`JsonBody`]: a JSON request body read by [`FromJsonBody`], whose errors name their field.
//!
//! In the OpenAPI document it is the same as poem-openapi's `Json<T>` (the schema of `T`,
//! any `application/json` or `application/*+json` content type); only the reading differs.

use poem::{FromRequest, Request, RequestBody};
use poem_openapi::error::ContentTypeError;
use poem_openapi::payload::{Json, ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaSchemaRef, Registry};
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use serde_json::Value;

use super::fields::{FieldError, FromJsonBody};

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

impl<T: FromJsonBody + Send> ParsePayload for JsonBody<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let bytes = <Vec<u8> as FromRequest>::from_request(request, body).await?;
        if bytes.is_empty() {
            return Err(FieldError::new("body", "is required: send a JSON object").into());
        }
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|error| FieldError::new("body", format!("is not JSON: {error}")))?;
        Ok(Self(T::from_value(value)?))
    }
}

// What poem-openapi's own payloads get from its (private) `impl_apirequest_for_payload!`:
// a request body in the document, and the content type checked before reading.
impl<'a, T: FromJsonBody + Send> ApiExtractor<'a> for JsonBody<T> {
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
        match request.content_type() {
            Some(content_type) if Self::check_content_type(content_type) => {
                <Self as ParsePayload>::from_request(request, body).await
            }
            Some(content_type) => Err(ContentTypeError::NotSupported {
                content_type: content_type.to_owned(),
            }
            .into()),
            None => Err(ContentTypeError::ExpectContentType.into()),
        }
    }
}
