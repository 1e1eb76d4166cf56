//! A tag over every link of the caller at once (scope `update`; every link's with
//! `admin`): renamed, or merged into another by renaming it to that one's name, or taken
//! off. Each is one statement in storage, and says how many links changed.

use std::sync::Arc;

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde_json::{Map, Value};
use shortener_core::{LinkRepository as _, Tag};

use super::auth::ApiKeyAuth;
use super::body::JsonBody;
use super::fields::{FieldError, FromJsonBody, deny_unknown, optional, string};
use super::{ApiError, ApiTags};
use crate::auth::Scope;
use crate::limit::limit_manage;
use crate::state::AppState;

/// A tag's new name.
#[derive(Object, Debug)]
#[oai(deny_unknown_fields)]
pub struct RenameTagRequest {
    /// 1 to 50 characters (no control characters, commas, quotes or backslashes), stored
    /// in lower case. A name the caller's links already use merges the two tags.
    #[oai(validator(
        max_length = 200,
        pattern = r#"^\s*[^\s\x00-\x1F\x7F-\x9F,"\\]([^\x00-\x1F\x7F-\x9F,"\\]{0,48}[^\s\x00-\x1F\x7F-\x9F,"\\])?\s*$"#
    ))]
    pub name: String,
}

impl FromJsonBody for RenameTagRequest {
    fn from_json(mut body: Map<String, Value>) -> Result<Self, FieldError> {
        let name = optional(&mut body, "name", string, "must be a string")?
            .ok_or_else(|| FieldError::new("name", "is required"))?;
        deny_unknown(&body, "a tag")?;
        Ok(Self { name })
    }
}

/// What a rename or a delete did.
#[derive(Object, Debug)]
pub struct TagChangeBody {
    /// The tag now: its new name after a rename, the deleted one after a delete.
    pub tag: String,
    /// How many of the caller's links changed.
    pub links: u64,
}

#[derive(ApiResponse, Debug)]
enum TagChangeResponse {
    #[oai(status = 200)]
    Ok(Json<TagChangeBody>),
}

/// Tags over every link of the caller.
#[derive(Debug, Default)]
pub struct TagChanges;

#[OpenApi]
impl TagChanges {
    /// Rename a tag on every link of the caller that has it (scope `update`); a link
    /// that has both names keeps one. 404 when none has it.
    #[oai(
        path = "/api/v1/tags/:tag",
        method = "patch",
        tag = "ApiTags::Links",
        operation_id = "renameTag",
        transform = "limit_manage"
    )]
    async fn rename(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(
            max_length = 200,
            pattern = r#"^\s*[^\s\x00-\x1F\x7F-\x9F,"\\]([^\x00-\x1F\x7F-\x9F,"\\]{0,48}[^\s\x00-\x1F\x7F-\x9F,"\\])?\s*$"#
        ))]
        tag: Path<String>,
        key: ApiKeyAuth,
        body: JsonBody<RenameTagRequest>,
    ) -> Result<TagChangeResponse, ApiError> {
        let key = key.require(Scope::Update)?;
        let from = parse("tag", &tag)?;
        let to = parse("name", &body.0.name)?;
        let links = (state.shortener.repository())
            .rename_tag(key.access(), &from, &to)
            .await?;
        changed(&from, links)?;
        tracing::info!(from = %from, to = %to, links, key = %key.name, "tag renamed");
        Ok(TagChangeResponse::Ok(Json(TagChangeBody {
            tag: to.to_string(),
            links,
        })))
    }

    /// Take a tag off every link of the caller that has it (scope `update`). 404 when
    /// none has it.
    #[oai(
        path = "/api/v1/tags/:tag",
        method = "delete",
        tag = "ApiTags::Links",
        operation_id = "deleteTag",
        transform = "limit_manage"
    )]
    async fn delete(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(
            max_length = 200,
            pattern = r#"^\s*[^\s\x00-\x1F\x7F-\x9F,"\\]([^\x00-\x1F\x7F-\x9F,"\\]{0,48}[^\s\x00-\x1F\x7F-\x9F,"\\])?\s*$"#
        ))]
        tag: Path<String>,
        key: ApiKeyAuth,
    ) -> Result<TagChangeResponse, ApiError> {
        let key = key.require(Scope::Update)?;
        let tag = parse("tag", &tag)?;
        let links = (state.shortener.repository())
            .delete_tag(key.access(), &tag)
            .await?;
        changed(&tag, links)?;
        tracing::info!(tag = %tag, links, key = %key.name, "tag deleted");
        Ok(TagChangeResponse::Ok(Json(TagChangeBody {
            tag: tag.to_string(),
            links,
        })))
    }
}

/// A tag named by `field`.
pub(crate) fn parse(field: &str, raw: &str) -> Result<Tag, ApiError> {
    Tag::parse(raw).map_err(|e| ApiError::bad_request(field, e))
}

/// A 404 when no link had the tag.
fn changed(tag: &Tag, links: u64) -> Result<(), ApiError> {
    if links == 0 {
        return Err(ApiError::not_found(format!(
            "tag: no link of this key has the tag `{tag}`"
        )));
    }
    Ok(())
}
