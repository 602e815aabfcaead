//! Turning stored bytes into responses in the negotiated encoding. JSON is
//! served as stored (no re-encoding); YAML, `pretty` and Table are derived.

use super::negotiation::Output;
use super::table;
use crate::serving::body::Body;
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use std::collections::VecDeque;
use std::sync::Arc;

/// How to render a response.
#[derive(Debug, Clone, Copy)]
pub struct Render {
    pub output: Output,
    pub pretty: bool,
}

impl Render {
    pub const JSON: Render = Render {
        output: Output::Json,
        pretty: false,
    };
}

fn content_type(output: Output) -> &'static str {
    match output {
        Output::Yaml => "application/yaml",
        Output::Table => "application/json;as=Table;v=v1;g=meta.k8s.io",
        Output::Json => "application/json",
    }
}

/// A response from JSON bytes, converted when the client asked for more
/// than plain JSON.
pub fn json_bytes(status: StatusCode, json: Body, render: Render) -> Response<Body> {
    let output = if render.output == Output::Table {
        Output::Json
    } else {
        render.output
    };
    let body = match (output, render.pretty) {
        (Output::Json, false) => json,
        (out, _) => match json.collect_now().map(|b| reencode(&b, out)) {
            Some(Ok(b)) => Body::full(b),
            _ => {
                return error(
                    &ApiError::internal("response re-encoding failed"),
                    Render::JSON,
                )
            }
        },
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(output)),
    );
    resp
}

fn reencode(json: &[u8], output: Output) -> Result<Vec<u8>, String> {
    let v: serde_json::Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    match output {
        Output::Yaml => serde_yaml::to_string(&v)
            .map(String::into_bytes)
            .map_err(|e| e.to_string()),
        _ => serde_json::to_vec_pretty(&v).map_err(|e| e.to_string()),
    }
}

/// One stored object, in the negotiated form.
pub fn object(
    status: StatusCode,
    info: &ResourceInfo,
    obj: &Arc<StoredObject>,
    render: Render,
) -> Response<Body> {
    if render.output == Output::Table {
        let t = table::for_objects(info, std::slice::from_ref(obj), None, "");
        return table_response(status, t, render.pretty);
    }
    json_bytes(status, Body::full(obj.bytes.clone()), render)
}

pub fn table_response(
    status: StatusCode,
    table: serde_json::Value,
    pretty: bool,
) -> Response<Body> {
    let bytes = if pretty {
        serde_json::to_vec_pretty(&table)
    } else {
        serde_json::to_vec(&table)
    }
    .expect("a Value always serializes");
    let mut resp = Response::new(Body::full(bytes));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(Output::Table)),
    );
    resp
}

/// List metadata a list response carries.
#[derive(Debug, Default)]
pub struct ListMeta {
    pub resource_version: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// A list: the stored objects' bytes joined without copying them.
pub fn list(
    info: &ResourceInfo,
    items: &[Arc<StoredObject>],
    meta: &ListMeta,
    render: Render,
) -> Response<Body> {
    if render.output == Output::Table {
        let t = table::for_objects(
            info,
            items,
            meta.continue_token.as_deref(),
            &meta.resource_version.to_string(),
        );
        return table_response(StatusCode::OK, t, render.pretty);
    }
    let mut md = serde_json::Map::new();
    md.insert(
        "resourceVersion".into(),
        meta.resource_version.to_string().into(),
    );
    if let Some(c) = &meta.continue_token {
        md.insert("continue".into(), c.clone().into());
    }
    if let Some(r) = meta.remaining {
        md.insert("remainingItemCount".into(), r.into());
    }
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
        serde_json::Value::from(info.list_kind.as_str()),
        serde_json::Value::from(info.api_version()),
        serde_json::Value::Object(md)
    );
    let mut chunks = VecDeque::with_capacity(items.len() * 2 + 2);
    chunks.push_back(Bytes::from(head));
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            chunks.push_back(Bytes::from_static(b","));
        }
        chunks.push_back(item.bytes.clone());
    }
    chunks.push_back(Bytes::from_static(b"]}"));
    json_bytes(StatusCode::OK, Body::chunks(chunks), render)
}

/// A metav1.Status error response.
pub fn error(err: &ApiError, render: Render) -> Response<Body> {
    let status = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let render = Render {
        output: if render.output == Output::Yaml {
            Output::Yaml
        } else {
            Output::Json
        },
        ..render
    };
    let mut resp = json_bytes(status, Body::full(err.to_status_json()), render);
    if let Some(secs) = err.details.as_ref().and_then(|d| d.retry_after_seconds) {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}
