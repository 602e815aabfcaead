//! The filter chain in front of the handlers, in kube-apiserver's order:
//!
//! request info → authentication → audit → impersonation → flow control
//! → authorization → (timeout) → handler
//!
//! Each step is a file here. API Priority and Fairness replaces
//! `flowcontrol` in its place; webhook authentication and authorization,
//! OIDC and the authenticating proxy slot into `authn`/`authz`.

pub mod impersonation;
pub mod timeout;

use crate::context::Api;
use crate::flowcontrol;
use crate::render::response::{self, Render};
use crate::render::warnings::WebhookLatency;
use crate::request::metrics::{self, LongRunning};
use crate::request::{Query, RequestInfo};
use crate::security::{audit, authn, authz};
use crate::serving::body::{Body, Held};
use crate::serving::conn::ConnInfo;
use crate::serving::connections::ActiveRequest;
use crate::serving::cut::Cut;
use crate::storage::Storage;
use http::{HeaderValue, Request, Response};
use hyper::body::{Body as _, Incoming};
use kubeshard_core::authn::{Attributes, UserInfo, ANONYMOUS};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// The user a request acts as, for handlers that need it (reviews,
/// escalation checks, TokenRequest).
#[derive(Clone)]
pub struct RequestUser(pub Arc<UserInfo>);

const AUDIT_ID: http::HeaderName = http::HeaderName::from_static("audit-id");

/// The authorizer's view of a request.
pub fn attributes(info: &RequestInfo, query: &Query) -> Attributes {
    if info.is_resource_request {
        Attributes {
            verb: info.verb.clone(),
            resource_request: true,
            namespace: info.namespace.clone(),
            api_group: info.group.clone(),
            api_version: info.version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            name: info.name.clone(),
            path: info.path.clone(),
            // Authorizers that scope reads by field (the Node authorizer)
            // see the selector of a list, watch or deletecollection.
            field_selector: match info.verb.as_str() {
                "list" | "watch" | "deletecollection" => {
                    query.get("fieldSelector").unwrap_or("").to_string()
                }
                _ => String::new(),
            },
        }
    } else {
        Attributes::non_resource(&info.verb, &info.path)
    }
}

/// A response, and what it holds until it is sent.
pub struct Served {
    resp: Response<Body>,
    /// The flow-control slot: a response counts against the in-flight
    /// limit until it is sent, not only while it is computed.
    permit: Option<flowcontrol::Permit>,
    /// Where the sweeper cuts the response off if it is still being sent
    /// when the request's deadline passes.
    deadline: Option<Rc<crate::context::stall::Deadline>>,
    /// A watch or CONNECT counts as long-running until its stream ends.
    long_running: Option<LongRunning>,
}

/// What a response body holds until hyper drops it.
pub type Holds = (
    ActiveRequest,
    Option<flowcontrol::Permit>,
    Option<Rc<crate::context::stall::Deadline>>,
    Option<LongRunning>,
);

impl From<Response<Body>> for Served {
    fn from(resp: Response<Body>) -> Self {
        Self {
            resp,
            permit: None,
            deadline: None,
            long_running: None,
        }
    }
}

impl Served {
    pub fn into_response(self, active: ActiveRequest) -> Response<Held<Holds>> {
        let hold = (active, self.permit, self.deadline, self.long_running);
        self.resp.map(|body| Held::new(body, hold))
    }
}

/// Response bodies at least this large get a deadline: smaller ones go
/// into the socket's buffer at once.
const DEADLINE_BODY: u64 = 256 * 1024;

/// Serves one request through the chain; never fails (errors become
/// Status responses).
pub async fn serve(api: &Rc<Api>, conn: &ConnInfo, mut req: Request<Incoming>) -> Served {
    if api.config.hello.is_some() {
        return api
            .handle(req, RequestInfo::default(), Query::default())
            .await
            .into();
    }
    let started = Instant::now();
    let received = chrono::Utc::now();
    let arrived_at = api.storage().progress();
    let audit_id = req
        .headers()
        .get(AUDIT_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let query = Query::parse(req.uri().query());
    let info = RequestInfo::parse(req.method(), req.uri().path(), &query);
    let slot = metrics::Labels::of(
        &info,
        req.method(),
        &query,
        req.headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    )
    .map(|l| metrics::slot(&l));
    let attrs = attributes(&info, &query);
    let config = api.security.config.clone();
    let incoming = || audit::Incoming {
        audit_id: &audit_id,
        received,
        uri: req.uri().path_and_query().map_or("/", |p| p.as_str()),
        user_agent: req
            .headers()
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
        source_ips: source_ips(&req, conn),
    };

    let user = match authn::authenticate(&api.security, api.storage(), conn, req.headers()).await {
        Ok(u) => u,
        Err(e) => {
            let record = audit::Record::begin(
                config.audit.as_ref(),
                &UserInfo::default(),
                &attrs,
                &info,
                incoming,
            );
            let resp = response::error(&e, Render::JSON);
            return with_audit_id(finish(record, resp), &audit_id).into();
        }
    };
    if user.name != ANONYMOUS {
        conn.state.set_trusted();
    }
    let mut record = audit::Record::begin(config.audit.as_ref(), &user, &attrs, &info, incoming);
    let budget = timeout::budget(config.request_timeout, query.get("timeout"));
    // Time in flow control's queue, which the SLI latency leaves out.
    let mut queued = std::time::Duration::ZERO;
    let admitted = admitted(
        api,
        &user,
        &attrs,
        (&info, &query),
        (arrived_at, budget),
        &mut queued,
        &mut record,
        &mut req,
    )
    .await;
    let (permit, pf) = match admitted {
        Ok(a) => (a.permit, a.ids),
        Err(refused) => {
            // Refused by flow control: counted, as kube counts its drops
            // (authentication and authorization failures are not).
            if let (Some(slot), 429) = (slot, refused.error.code) {
                metrics::record(slot, 429, started.elapsed(), queued, None);
            }
            let mut resp = response::error(&refused.error, Render::JSON);
            if let Some(ids) = &refused.ids {
                flowcontrol::set_headers(&mut resp, ids);
            }
            return with_audit_id(finish(record, resp), &audit_id).into();
        }
    };
    let long_running = info.is_long_running();
    let cut = req.extensions().get::<Cut>().cloned();
    // The handler's future is boxed before it is wrapped: `limit` and
    // `catch_unwind` take their futures by value, and moving the unboxed
    // state machine copied several kilobytes per request.
    let handled = std::panic::AssertUnwindSafe(async {
        if long_running {
            // Boxed as below: inline, the handler's whole state would be
            // part of this future, which every request moves.
            Ok(Box::pin(api.handle(req, info, query)).await)
        } else {
            api.security
                .timer
                .limit(budget, Box::pin(api.handle(req, info, query)))
                .await
        }
    });
    let out = futures_lite::FutureExt::catch_unwind(handled).await;
    // A watch holds its seats only while it starts (the handler has sent
    // its initial state by now); its stream then runs without them.
    let permit = if long_running { None } else { permit };
    let mut resp = match out {
        Ok(Ok(resp)) => resp,
        Ok(Err(timeout)) => response::error(&timeout, Render::JSON),
        Err(panic) => {
            if let Some(r) = record.take() {
                r.panicked();
            }
            std::panic::resume_unwind(panic);
        }
    };
    // A response still being sent when the request's time is up is cut
    // off, as kube-apiserver's timeout filter kills a handler that is
    // still writing: a client that does not read cannot hold its slot
    // (and the buffers behind it) for longer than any request may take.
    let deadline = match cut {
        Some(cut)
            if !long_running
                && (resp
                    .body()
                    .size_hint()
                    .exact()
                    .is_some_and(|n| n >= DEADLINE_BODY)
                    || resp
                        .extensions()
                        .get::<crate::serving::body::Unbounded>()
                        .is_some()) =>
        {
            Some(api.stalls.deadline(cut, started + budget))
        }
        _ => None,
    };
    if let Some(ids) = &pf {
        flowcontrol::set_headers(&mut resp, ids);
    }
    let code = resp.status().as_u16();
    let waited = queued
        + resp
            .extensions()
            .get::<WebhookLatency>()
            .map_or(std::time::Duration::ZERO, |w| w.0);
    let long_running = match slot {
        Some(slot) if long_running && resp.status().is_success() => {
            Some(LongRunning::start(slot, code, started, waited))
        }
        Some(slot) => {
            let size = resp.body().size_hint().exact();
            metrics::record(slot, code, started.elapsed(), waited, size);
            None
        }
        None => None,
    };
    Served {
        resp: with_audit_id(finish(record, resp), &audit_id),
        permit,
        deadline,
        long_running,
    }
}

/// Impersonation, flow control and authorization, in that order. On
/// success the request carries the user it acts as, and the flow-control
/// permit is returned to be held until the handler is done.
#[allow(clippy::too_many_arguments)]
async fn admitted(
    api: &Api,
    user: &Arc<UserInfo>,
    attrs: &Attributes,
    (info, query): (&RequestInfo, &Query),
    (arrived_at, budget): (u64, std::time::Duration),
    queued: &mut std::time::Duration,
    record: &mut Option<audit::Record>,
    req: &mut Request<Incoming>,
) -> Result<flowcontrol::Admitted, flowcontrol::Refused> {
    let acting = match impersonation::apply(api, user, req.headers(), arrived_at).await? {
        Some(as_user) => {
            if let Some(r) = record.as_mut() {
                r.set_impersonated(&as_user);
            }
            as_user
        }
        None => user.clone(),
    };
    let queue_from = Instant::now();
    let admitted = flowcontrol::admit(api, &acting, info, query, budget).await;
    *queued = queue_from.elapsed();
    let admitted = admitted?;
    let decision = authz::authorize(&api.security, &api.exec.hub, &acting, attrs, arrived_at).await;
    if let Some(r) = record.as_mut() {
        match &decision {
            Ok(d) => {
                r.annotate("authorization.k8s.io/decision", "allow");
                r.annotate("authorization.k8s.io/reason", &d.reason(&acting));
            }
            Err(_) => r.annotate("authorization.k8s.io/decision", "forbid"),
        }
    }
    if let Err(error) = decision {
        // Flow control let it through: its response names the flow.
        return Err(flowcontrol::Refused {
            error,
            ids: admitted.ids,
        });
    }
    req.extensions_mut().insert(RequestUser(acting));
    if let Some(sink) = record.as_ref().and_then(|r| r.body.clone()) {
        req.extensions_mut().insert(sink);
    }
    Ok(admitted)
}

fn finish(record: Option<audit::Record>, resp: Response<Body>) -> Response<Body> {
    match record {
        Some(r) => r.finish(resp),
        None => resp,
    }
}

fn with_audit_id(mut resp: Response<Body>, id: &str) -> Response<Body> {
    if let Ok(mut v) = HeaderValue::from_str(id) {
        // Unique per response: HTTP/2's header compression would otherwise
        // add every id to its table, evicting useful entries and comparing
        // each new id with all the old ones (~5% of an h2 create's
        // instructions). Sensitive values are sent literally.
        v.set_sensitive(true);
        resp.headers_mut().insert(AUDIT_ID, v);
    }
    resp
}

/// The client's addresses as kube reports them: X-Forwarded-For, then
/// X-Real-Ip, then the connection's peer.
fn source_ips(req: &Request<Incoming>, conn: &ConnInfo) -> Vec<String> {
    let mut ips: Vec<String> = req
        .headers()
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| s.parse::<std::net::IpAddr>().is_ok())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if let Some(real) = req
        .headers()
        .get("x-real-ip")
        .and_then(|v| v.to_str().ok())
        .filter(|s| s.parse::<std::net::IpAddr>().is_ok())
    {
        if !ips.iter().any(|i| i == real) {
            ips.push(real.to_string());
        }
    }
    if let Some(peer) = conn.peer.map(|p| p.ip().to_string()) {
        if !ips.contains(&peer) {
            ips.push(peer);
        }
    }
    ips
}
