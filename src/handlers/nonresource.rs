//! Non-resource endpoints: discovery, version and health.

use super::{not_found_path, Api, HandlerResult};
use crate::discovery;
use crate::request::{Query, RequestInfo};
use crate::serving::body::Body;
use crate::storage::{Storage, StorageResult};
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use kubeshard_core::status::ApiError;
use std::rc::Rc;

fn json(status: StatusCode, body: Vec<u8>, content_type: &'static str) -> Response<Body> {
    let mut resp = Response::new(Body::full(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

use crate::render::response::plain as text;

pub async fn handle(
    api: &Rc<Api>,
    req: &Request<Incoming>,
    info: &RequestInfo,
    query: &Query,
) -> HandlerResult {
    if req.method() != http::Method::GET && req.method() != http::Method::HEAD {
        return Err(ApiError::method_not_supported(
            "",
            "",
            req.method().as_str(),
        ));
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let path = info.path.trim_end_matches('/');
    let catalog = api.catalog.current();
    let routes = api.config.aggregator.routes();
    let aggregated = discovery::wants_aggregated(accept);
    match path {
        "/healthz" | "/livez" | "/readyz" => Ok(health(api, path, query)),
        p if p.starts_with("/healthz/")
            || p.starts_with("/livez/")
            || p.starts_with("/readyz/") =>
        {
            let check = p.rsplit('/').next().unwrap_or("");
            match check {
                "ping" | "log" => Ok(text(StatusCode::OK, "ok".into())),
                "shards" if api.is_ready() || !p.starts_with("/readyz") => {
                    Ok(text(StatusCode::OK, "ok".into()))
                }
                "shards" => Ok(text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "shards not ready".into(),
                )),
                "etcd" | "etcd-readiness" => match api.storage().store_healthy() {
                    None => Err(not_found_path()),
                    Some(true) => Ok(text(StatusCode::OK, "ok".into())),
                    Some(false) => Ok(text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "etcd does not answer".into(),
                    )),
                },
                _ => Err(not_found_path()),
            }
        }
        "/openapi/v3" => Ok(json(
            StatusCode::OK,
            crate::openapi::documents(&catalog, &routes)
                .v3_index
                .clone(),
            "application/json",
        )),
        "/openapi/v2" => crate::openapi::v2_response(&catalog, &routes, accept)
            .map(|(b, content_type)| json(StatusCode::OK, b, content_type)),
        p if p.starts_with("/openapi/v3/") => crate::openapi::v3_document_for(
            &crate::openapi::documents(&catalog, &routes),
            &p["/openapi/v3/".len()..],
        )
        .map(|b| json(StatusCode::OK, b, "application/json"))
        .ok_or_else(not_found_path),
        "/metrics" => {
            let stats = api.shards().stats().await.or_status()?;
            let mut body = crate::metrics::render(&stats, api.storage().progress());
            // The limiters' gauges go before the OpenMetrics terminator.
            // With APF on, its series carry the in-flight gauge.
            let mut gauges = match crate::flowcontrol::metrics::render() {
                apf if apf.is_empty() => {
                    crate::security::maxinflight::metrics(&api.security.config.inflight)
                }
                apf => apf,
            };
            gauges.push_str(&crate::serving::connections::metrics(
                &api.config.conn_limit,
            ));
            gauges.push_str(&api.config.admission.webhook_metrics.render());
            gauges.push_str(&crate::aggregator::metrics::render(&routes));
            gauges.push_str(&crate::request::metrics::render());
            gauges.push_str(&crate::metrics::storage_objects(&stats, &catalog));
            let at = body.rfind("# EOF").unwrap_or(body.len());
            body.insert_str(at, &gauges);
            let format = crate::metrics::Format::negotiate(Some(accept));
            if format == crate::metrics::Format::Text {
                body = crate::metrics::to_prometheus_text(&body);
            }
            let mut resp = text(StatusCode::OK, body);
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(format.content_type()),
            );
            Ok(resp)
        }
        "/version" => Ok(json(
            StatusCode::OK,
            discovery::version_info(env!("CARGO_PKG_VERSION")),
            "application/json",
        )),
        "/api" if aggregated => Ok(json(
            StatusCode::OK,
            discovery::aggregated_discovery(&catalog, &routes, true),
            discovery::AGGREGATED_CONTENT_TYPE,
        )),
        "/api" => Ok(json(
            StatusCode::OK,
            discovery::api_versions(&api.config.advertise_address()),
            "application/json",
        )),
        "/apis" if aggregated => Ok(json(
            StatusCode::OK,
            discovery::aggregated_discovery(&catalog, &routes, false),
            discovery::AGGREGATED_CONTENT_TYPE,
        )),
        "/apis" => Ok(json(
            StatusCode::OK,
            discovery::api_group_list(&catalog, &routes),
            "application/json",
        )),
        _ if info.api_prefix == "api" && info.group.is_empty() => {
            discovery::api_resource_list(&catalog, "", &info.version)
                .map(|b| json(StatusCode::OK, b, "application/json"))
                .ok_or_else(not_found_path)
        }
        _ if info.version.is_empty() && !info.group.is_empty() && path.starts_with("/apis/") => {
            discovery::api_group(&catalog, &routes, &info.group)
                .map(|b| json(StatusCode::OK, b, "application/json"))
                .ok_or_else(not_found_path)
        }
        _ if info.api_prefix == "apis" => {
            discovery::api_resource_list(&catalog, &info.group, &info.version)
                .map(|b| json(StatusCode::OK, b, "application/json"))
                .ok_or_else(not_found_path)
        }
        _ => Err(not_found_path()),
    }
}

/// kube's health endpoints: "ok", or with `?verbose` one line per check.
fn health(api: &Api, path: &str, query: &Query) -> Response<Body> {
    let ready_path = path == "/readyz";
    let shards_ok = !ready_path || api.is_ready();
    let mut checks = vec![("ping", true), ("log", true)];
    // kube's checks of its store: `etcd` everywhere, and on /readyz
    // `etcd-readiness` too.
    if let Some(etcd) = api.storage().store_healthy() {
        checks.push(("etcd", etcd));
        if ready_path {
            checks.push(("etcd-readiness", etcd));
        }
    }
    checks.push(("shards", shards_ok));
    let healthy = checks.iter().all(|(_, ok)| *ok);
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    let name = &path[1..];
    if query.get("verbose").is_some() || !healthy {
        let mut out = String::new();
        for (check, ok) in checks {
            if ok {
                out.push_str(&format!("[+]{check} ok\n"));
            } else {
                out.push_str(&format!("[-]{check} failed: reason withheld\n"));
            }
        }
        if healthy {
            out.push_str(&format!("{name} check passed\n"));
        } else {
            out.push_str(&format!("{name} check failed\n"));
        }
        return text(status, out);
    }
    text(status, "ok".into())
}
