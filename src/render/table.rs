//! Table and metadata-only responses: stored objects decoded and rendered
//! by `kubeshard_core::table` in the form the client negotiated.

use super::negotiation::Output;
use super::response::Render;
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use kubeshard_core::table::{self, TableMeta, TableOptions};
use serde_json::Value;
use std::sync::Arc;

/// Whether the response is about one object or a list.
#[derive(Clone, Copy)]
pub enum Shape<'a> {
    Object,
    List(&'a TableMeta),
}

/// The transformed body of a response (`render.output` must be a
/// transformation). `headers`: include Table column definitions.
pub fn transform(
    info: &ResourceInfo,
    items: &[Arc<StoredObject>],
    render: Render,
    shape: Shape<'_>,
    headers: bool,
) -> Result<Value, ApiError> {
    let values: Vec<Value> = items.iter().map(|o| o.to_value()).collect();
    transform_values(info, &values, render, shape, headers)
}

/// [`transform`] of objects that are not stored (computed on request).
pub fn transform_values(
    info: &ResourceInfo,
    values: &[Value],
    render: Render,
    shape: Shape<'_>,
    headers: bool,
) -> Result<Value, ApiError> {
    let now = chrono::Utc::now();
    let object_meta = || TableMeta {
        resource_version: values
            .first()
            .map(|v| meta::resource_version(v).to_string())
            .unwrap_or_default(),
        ..Default::default()
    };
    match (render.output, shape) {
        (Output::Table(version), shape) => {
            let opts = TableOptions {
                version,
                include: render.include,
                headers,
            };
            let list = match shape {
                Shape::Object => object_meta(),
                Shape::List(m) => m.clone(),
            };
            Ok(table::table(info, values, &opts, &list, now))
        }
        (Output::PartialObject(v, _), Shape::Object) => Ok(table::partial_object(
            values.first().unwrap_or(&Value::Null),
            v,
        )),
        (Output::PartialList(v, _), Shape::List(m)) => Ok(table::partial_list(values, v, m)),
        (Output::PartialObject(..), Shape::List(_)) => Err(not_acceptable(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            info.list_kind
        ))),
        (Output::PartialList(..), Shape::Object) => {
            Err(not_a_list_error("PartialObjectMetadataList", &info.kind))
        }
        (Output::Json | Output::Yaml | Output::Protobuf, _) => {
            Err(ApiError::internal("not a transformed output"))
        }
    }
}

/// 406 for a list rendering asked of something that is not a list.
pub fn not_a_list_error(asked: &str, kind: &str) -> ApiError {
    not_acceptable(format!(
        "you requested {asked}, but the requested object is not a list ({kind})"
    ))
}

fn not_acceptable(message: String) -> ApiError {
    ApiError::new(406, "NotAcceptable", message)
}
