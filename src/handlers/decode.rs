//! Reading and decoding request bodies, with kube's limits and messages.

use crate::render::negotiation::{self, Input};
use http::{header, Request};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use serde_json::Value;

/// kube-apiserver's default request body limit (3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// The whole body, refusing anything over [`MAX_BODY`] with 413 and a body
/// that ends early (connection dropped mid-body) with 400.
pub async fn read_body(req: Request<Incoming>) -> Result<(Input, Vec<u8>), ApiError> {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let input = negotiation::input(ct.as_deref())?;
    let audit = req
        .extensions()
        .get::<crate::security::audit::RequestBodySink>()
        .cloned();
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    // Marked read only once it was, to its end: a body drained only in
    // part leaves hyper closing the connection, and the answer must say so.
    let read = crate::serving::unread::BodyRead::of(&req);
    let done = || read.iter().for_each(|r| r.done());
    let mut body = req.into_body();
    if declared.is_some_and(|len| len > MAX_BODY) {
        if drain(&mut body).await {
            done();
        }
        return Err(too_large());
    }
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::bad_request(format!("error reading request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > MAX_BODY {
                if drain(&mut body).await {
                    done();
                }
                return Err(too_large());
            }
            out.extend_from_slice(&data);
        }
    }
    done();
    if let Some(sink) = audit {
        sink.put(ct.as_deref(), &out);
    }
    Ok((input, out))
}

/// Reads and discards what the client is still sending (bounded), so it
/// finishes writing and can read the error; closing with unread data would
/// reset the connection and lose the response. Whether it got to the end.
async fn drain(body: &mut Incoming) -> bool {
    const DRAIN_LIMIT: usize = 4 * MAX_BODY;
    let mut seen = 0;
    loop {
        match body.frame().await {
            None => return true,
            Some(Err(_)) => return false,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    seen += data.len();
                    if seen > DRAIN_LIMIT {
                        return false;
                    }
                }
            }
        }
    }
}

/// What a patch or an apply produced must not be larger than a body a
/// client may send, unless it is no larger than the object was: merging
/// could otherwise grow an object past any bound, one request at a time,
/// while an object that defaulting made large stays patchable. Measured
/// without encoding it.
pub fn check_result_size(obj: &Value, old_len: usize) -> Result<(), ApiError> {
    match kubeshard_core::patch::json::encoded_len_within(obj, MAX_BODY.max(old_len)) {
        Some(_) => Ok(()),
        None => Err(ApiError::request_entity_too_large(&format!(
            "the patched object is larger than the limit of {MAX_BODY} bytes"
        ))),
    }
}

fn too_large() -> ApiError {
    ApiError::request_entity_too_large(&format!("limit is {MAX_BODY}"))
}

/// Parses a JSON or YAML body into an object.
pub fn parse_object(input: Input, body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = match input {
        Input::Protobuf => kubeshard_core::protobuf::decode_object(body).map_err(|e| {
            ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
        })?,
        Input::Yaml | Input::ApplyPatch => serde_yaml::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?,
        _ => serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
        })?,
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    Ok(v)
}

/// Checks (and fills in when absent) apiVersion and kind against the
/// endpoint, as kube's decoder does with the endpoint's defaults.
pub fn check_type(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let expected_version = info.api_version();
    let map = obj.as_object_mut().expect("checked by parse_object");
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), expected_version.clone().into());
        }
        Some(v) if v == expected_version => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected_version})"
            )))
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), info.kind.clone().into());
        }
        Some(k) if k == info.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )))
        }
    }
    Ok(())
}

/// The body of a create-only subresource (a pod's Binding or Eviction):
/// an object of `kind` in one of `api_versions` (either may be left out),
/// named as the URL names it.
pub fn read_subresource_body(
    input: Input,
    body: &[u8],
    api_versions: &[&str],
    kind: &str,
    url_name: &str,
) -> Result<Value, ApiError> {
    let obj = parse_object(input, body)?;
    let field = |f: &str| obj.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let (v, k) = (field("apiVersion"), field("kind"));
    if !(v.is_empty() || api_versions.contains(&v.as_str())) || !(k.is_empty() || k == kind) {
        return Err(ApiError::bad_request(format!(
            "the body of the request is not a {} {kind} (apiVersion {v:?}, kind {k:?})",
            api_versions[0]
        )));
    }
    if kubeshard_core::meta::name(&obj) != url_name {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in {kind} object"
        )));
    }
    Ok(obj)
}
