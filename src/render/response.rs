//! Turning stored bytes into responses in the negotiated encoding. JSON is
//! served as stored (no re-encoding); protobuf is encoded once per stored
//! object and kept with it; YAML, `pretty` and Table are derived.

use super::negotiation::Output;
use super::table::{self, Shape};
use crate::serving::body::Body;
use crate::serving::joined::JoinedList;
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use kubeshard_core::table::{IncludeObject, TableMeta};
use std::sync::Arc;

/// How to render a response.
#[derive(Debug, Clone, Copy)]
pub struct Render {
    pub output: Output,
    pub pretty: bool,
    /// What Table rows carry (`includeObject`).
    pub include: IncludeObject,
}

impl Render {
    pub const JSON: Render = Render {
        output: Output::Json,
        pretty: false,
        include: IncludeObject::Metadata,
    };

    /// For bodies that are never transformed (Status, Scale): YAML or
    /// protobuf when asked for, JSON otherwise.
    pub fn plain(self) -> Render {
        Render {
            output: match self.output {
                Output::Yaml => Output::Yaml,
                o if o.is_protobuf() => Output::Protobuf,
                _ => Output::Json,
            },
            ..self
        }
    }
}

/// A response from JSON bytes, converted when the client asked for more
/// than plain JSON.
pub fn json_bytes(status: StatusCode, json: Body, render: Render) -> Response<Body> {
    let mut output = render.plain().output;
    let body = match (output, render.pretty) {
        (Output::Json, false) => json.newline_terminated(),
        (Output::Protobuf, _) => match json.collect_now().map(|b| protobuf_of_json(&b)) {
            Some(Ok(b)) => Body::full(b),
            // A body of a kind with no protobuf form (a custom resource's
            // computed answer): the client listed JSON too, as clients do.
            Some(Err(json)) => {
                output = Output::Json;
                Body::full(json)
            }
            None => {
                return error(
                    &ApiError::internal("response re-encoding failed"),
                    Render::JSON,
                )
            }
        },
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
        HeaderValue::from_static(output.content_type()),
    );
    resp
}

/// The protobuf form of a JSON body, or the JSON back when it has none.
fn protobuf_of_json(json: &[u8]) -> Result<Bytes, Vec<u8>> {
    let encoded = serde_json::from_slice(json)
        .ok()
        .and_then(|v| kubeshard_core::protobuf::encode_object(&v).ok());
    encoded
        .map(|e| e.into_object())
        .ok_or_else(|| json.to_vec())
}

/// The error for an object that has no protobuf form, or whose value its
/// kind's schema cannot hold.
pub fn protobuf_failed(e: String) -> ApiError {
    ApiError::internal(&format!("unable to encode as protobuf: {e}"))
}

/// A stored object's protobuf form, or the error that it has none.
fn protobuf_of(obj: &StoredObject) -> Result<&kubeshard_cache::Protobuf, ApiError> {
    obj.protobuf().map_err(protobuf_failed)
}

fn reencode(json: &[u8], output: Output) -> Result<Vec<u8>, String> {
    let v: serde_json::Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    match output {
        Output::Yaml => serde_yaml::to_string(&v)
            .map(String::into_bytes)
            .map_err(|e| e.to_string()),
        _ => serde_json::to_vec_pretty(&v)
            .map(|mut b| {
                b.push(b'\n');
                b
            })
            .map_err(|e| e.to_string()),
    }
}

/// One stored object, in the negotiated form.
pub fn object(
    status: StatusCode,
    info: &ResourceInfo,
    obj: &Arc<StoredObject>,
    render: Render,
) -> Response<Body> {
    if render.output.is_transformed() {
        let body = table::transform(info, std::slice::from_ref(obj), render, Shape::Object, true);
        return transformed_response(status, body, render);
    }
    if !info.reads_as_stored_at(obj.revision) {
        return match converted_json(info, obj.json_slice()) {
            Ok(json) => json_bytes(status, Body::full(json), render),
            Err(e) => error(&e, render),
        };
    }
    if render.output == Output::Protobuf {
        return match protobuf_of(obj) {
            Ok(p) => with_type(status, Body::full(p.object()), Output::Protobuf),
            Err(e) => error(&e, render),
        };
    }
    json_bytes(status, Body::full(obj.json()), render)
}

fn with_type(status: StatusCode, body: Body, output: Output) -> Response<Body> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(output.content_type()),
    );
    resp
}

/// Objects computed on request (not stored): one, or a list of them, in
/// the negotiated form.
pub fn computed(
    info: &ResourceInfo,
    objects: &[serde_json::Value],
    one: bool,
    render: Render,
) -> Response<Body> {
    if render.output.is_transformed() {
        let meta = TableMeta::default();
        let shape = if one {
            Shape::Object
        } else {
            Shape::List(&meta)
        };
        let body = table::transform_values(info, objects, render, shape, true);
        return transformed_response(StatusCode::OK, body, render);
    }
    let body = if one {
        objects.first().cloned().unwrap_or_default()
    } else {
        serde_json::json!({"kind": info.list_kind, "apiVersion": info.api_version(), "metadata": {}, "items": objects})
    };
    let bytes = serde_json::to_vec(&body).expect("a Value always serializes");
    json_bytes(StatusCode::OK, Body::full(bytes), render)
}

/// A stored object's JSON at the version `info` serves (Tables and
/// metadata views are built from the stored form: printers read it).
pub fn converted_json(info: &ResourceInfo, stored: &[u8]) -> Result<Vec<u8>, ApiError> {
    let mut v: serde_json::Value = serde_json::from_slice(stored)
        .map_err(|e| ApiError::internal(&format!("stored object unreadable: {e}")))?;
    read_form(info, &mut v)?;
    Ok(serde_json::to_vec(&v).expect("a Value always serializes"))
}

/// A stored object as `info` serves it: converted to its version and,
/// for a custom resource, defaulted by its schema (kube defaults every
/// read from storage).
fn read_form(info: &ResourceInfo, v: &mut serde_json::Value) -> Result<(), ApiError> {
    let webhook = info.custom.as_ref().is_some_and(|c| c.webhook.is_some());
    if webhook && kubeshard_core::meta::str_at(v, "/apiVersion") != info.api_version() {
        // Converted by the handler (asynchronously) before it got here;
        // rewriting apiVersion would pass one version's fields off as
        // another's.
        return Err(ApiError::internal(
            "a custom resource was not converted by its conversion webhook",
        ));
    }
    kubeshard_core::conversion::convert(v, &info.group, &info.version)?;
    if let Some(rules) = &info.custom {
        rules.default_read(v);
    }
    Ok(())
}

/// Stored objects as the version `info` serves them.
fn converted(
    info: &ResourceInfo,
    items: &[Arc<StoredObject>],
) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    items
        .iter()
        .map(|o| {
            if info.reads_as_stored_at(o.revision) {
                return Ok(o.clone());
            }
            let mut v = o.to_value();
            read_form(info, &mut v)?;
            Ok(Arc::new(StoredObject::encode(info, &v, o.revision)))
        })
        .collect()
}

/// A list's items at the version `info` serves (shared as they are when
/// that is how they are stored). Taken by value: copying a large list's
/// handles would cost a pass of reference counts over every object, and
/// another to drop them.
fn served(
    info: &ResourceInfo,
    items: Vec<Arc<StoredObject>>,
) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    if info.reads_as_stored() {
        Ok(items)
    } else {
        converted(info, &items)
    }
}

/// A Table or PartialObjectMetadata body, or the error transforming gave.
fn transformed_response(
    status: StatusCode,
    body: Result<serde_json::Value, ApiError>,
    render: Render,
) -> Response<Body> {
    let body = match body {
        Ok(b) => b,
        Err(e) => return error(&e, render),
    };
    if render.output.is_protobuf() {
        return match kubeshard_core::protobuf::encode_object(&body) {
            Ok(e) => with_type(status, Body::full(e.into_object()), render.output),
            Err(e) => error(&protobuf_failed(e), render),
        };
    }
    let mut bytes = if render.pretty {
        serde_json::to_vec_pretty(&body)
    } else {
        serde_json::to_vec(&body)
    }
    .expect("a Value always serializes");
    bytes.push(b'\n');
    let mut resp = Response::new(Body::full(bytes));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(render.output.content_type()),
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
    items: Vec<Arc<StoredObject>>,
    meta: &ListMeta,
    render: Render,
) -> Response<Body> {
    if render.output.is_transformed() {
        let list = TableMeta {
            resource_version: meta.resource_version.to_string(),
            continue_token: meta.continue_token.clone(),
            remaining: meta.remaining,
        };
        let body = table::transform(info, &items, render, Shape::List(&list), true);
        return transformed_response(StatusCode::OK, body, render);
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
    if render.output == Output::Protobuf {
        return protobuf_list(info, items, &serde_json::Value::Object(md), render);
    }
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
        serde_json::Value::from(info.list_kind.as_str()),
        serde_json::Value::from(info.api_version()),
        serde_json::Value::Object(md)
    );
    let items = match served(info, items) {
        Ok(items) => items,
        Err(e) => return error(&e, render),
    };
    let list = JoinedList::new(Bytes::from(head), items);
    json_bytes(StatusCode::OK, Body::list(list), render)
}

/// A list in protobuf: every item's encoding (made now if it was never
/// asked for, and kept), framed around borrowed slices like the JSON list.
fn protobuf_list(
    info: &ResourceInfo,
    items: Vec<Arc<StoredObject>>,
    md: &serde_json::Value,
    render: Render,
) -> Response<Body> {
    let items = match served(info, items) {
        Ok(items) => items,
        Err(e) => return error(&e, render),
    };
    let mut lens = Vec::with_capacity(items.len());
    for o in &items {
        match protobuf_of(o) {
            Ok(p) => lens.push(p.raw().len()),
            Err(e) => return error(&e, render),
        }
    }
    let frame = kubeshard_core::protobuf::list_frame(
        &info.api_version(),
        &info.list_kind,
        md,
        lens.into_iter(),
    );
    match frame {
        Ok(f) => {
            let list = JoinedList::protobuf(Bytes::from(f.head), items, f.tail);
            with_type(StatusCode::OK, Body::list(list), Output::Protobuf)
        }
        Err(e) => error(&protobuf_failed(e), render),
    }
}

/// A plain-text answer (an empty log).
pub fn text(body: &str) -> Response<Body> {
    let mut resp = Response::new(Body::full(body.to_string()));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain"),
    );
    resp
}

/// A plain-text answer as Go's `http.Error` writes one (health checks,
/// the aggregator's errors): UTF-8, not to be sniffed.
pub fn plain(status: StatusCode, body: String) -> Response<Body> {
    let mut resp = Response::new(Body::full(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        "x-content-type-options",
        http::HeaderValue::from_static("nosniff"),
    );
    resp
}

/// The `Success` Status (201) a create-only subresource answers with
/// (a pod's binding, an eviction).
pub fn created_success(render: Render) -> Response<Body> {
    let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Success", "code": 201});
    let bytes = serde_json::to_vec(&status).expect("a Value always serializes");
    json_bytes(StatusCode::CREATED, Body::full(bytes), render.plain())
}

/// A metav1.Status error response.
pub fn error(err: &ApiError, render: Render) -> Response<Body> {
    let status = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    // Nothing the client accepts could be produced: kube answers in JSON.
    let render = if err.code == 406 {
        Render::JSON
    } else {
        render
    };
    let mut resp = json_bytes(status, Body::full(err.to_status_json()), render.plain());
    if let Some(secs) = err.details.as_ref().and_then(|d| d.retry_after_seconds) {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}
