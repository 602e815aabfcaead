//! Serving a service-backed group version: the request, authenticated
//! and authorized here, goes on to an endpoint of the APIService's
//! Service as the front proxy — the proxy client certificate, and the
//! user (after impersonation) in `X-Remote-*` headers — with its body
//! and the answer streamed through, and an upgrade passed on as a
//! tunnel. Errors are plain text, as kube-aggregator writes them.

use super::{transport, Remote};
use crate::context::Api;
use crate::filters::RequestUser;
use crate::proxy::forward::{self, Forwarded};
use crate::security::authn::request_header::identity_headers;
use crate::serving::body::Body;
use http::{HeaderMap, Request, Response, StatusCode};
use hyper::body::Incoming;
use kubeshard_core::authn::UserInfo;

/// Answers `req` from `remote`.
pub async fn serve(api: &Api, req: Request<Incoming>, remote: &Remote) -> Response<Body> {
    if !remote.available {
        return text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    let Some(user) = req.extensions().get::<RequestUser>().map(|u| u.0.clone()) else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
    };
    let Some(target) = transport::pick(remote) else {
        return text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    };
    let ep = &target.endpoint;
    let upgrade = match forward::check_upgrade(&req) {
        Ok(u) => u,
        Err(e) => return text(StatusCode::BAD_REQUEST, &e.message),
    };
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let out = match forward::outgoing(req, &path, &ep.authority(), |h| {
        as_user(h, &user, api);
    }) {
        Ok(o) => o,
        Err(e) => return text(StatusCode::BAD_REQUEST, &e.message),
    };
    let unreachable = |e: &dyn std::fmt::Display| {
        // The controller looks at the APIService again now rather than
        // at its next round.
        api.config.aggregator.recheck(&remote.name);
        text(StatusCode::SERVICE_UNAVAILABLE, &e.to_string())
    };
    if upgrade {
        let stream = match transport::connect(api, remote, ep).await {
            Ok(s) => s,
            Err(e) => return unreachable(&e),
        };
        return forward::exchange(stream, out, &forward::PROXIED)
            .await
            .unwrap_or_else(|e| text(StatusCode::SERVICE_UNAVAILABLE, &e.message));
    }
    let key = &target.key;
    let mut out = out;
    // A kept connection the backend closed meanwhile fails before the
    // request is sent: then once more on a new one.
    for fresh in [false, true] {
        let mut sender = match transport::sender(api, remote, ep, key, fresh).await {
            Ok(s) => s,
            Err(e) => return unreachable(&e),
        };
        let answer = match sender.try_send_request(out).await {
            Ok(a) => a,
            Err(mut e) => match e.take_message() {
                Some(unsent) if !fresh => {
                    out = unsent;
                    continue;
                }
                _ => return unreachable(e.error()),
            },
        };
        let (head, body) = answer.into_parts();
        let resp = forward::response_head(&head, false);
        let key = key.clone();
        let body = Forwarded::on_end(body, move || transport::give_back(key, sender));
        return resp
            // Its time is the request's, however long the body.
            .extension(crate::serving::body::Unbounded)
            .body(Body::Stream(Box::pin(body)))
            .unwrap_or_else(|e| text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()));
    }
    text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable")
}

/// Names `user` in the proxied request's headers, after removing any
/// identity headers the client sent (which must never reach the
/// extension server as ours): `X-Remote-*` never passes
/// `forward::outgoing`; the request-header names configured otherwise
/// go here.
fn as_user(headers: &mut HeaderMap, user: &UserInfo, api: &Api) {
    let configured = api.security.config.front_proxy.request_header.as_ref();
    let names: Vec<http::HeaderName> = headers
        .keys()
        .filter(|n| {
            let n = n.as_str();
            configured.is_some_and(|rh| {
                rh.username_headers
                    .iter()
                    .chain(&rh.group_headers)
                    .chain(&rh.uid_headers)
                    .any(|h| h.as_str() == n)
                    || rh.extra_prefixes.iter().any(|p| n.starts_with(p.as_str()))
            })
        })
        .cloned()
        .collect();
    for n in names {
        headers.remove(n);
    }
    identity_headers(user, headers);
}

/// A plain-text answer, as kube-aggregator writes its errors.
fn text(status: StatusCode, message: &str) -> Response<Body> {
    crate::render::response::plain(status, format!("{message}\n"))
}
