//! REST handlers: one generic code path for every catalog entry, one file
//! per verb (the shape of k8s.io/apiserver's endpoints/handlers).

mod apply;
pub mod authapi;
mod binding;
mod component_status;
mod connect;
mod create;
mod decode;
mod delete;
mod eviction;
mod fields;
mod get;
mod list;
pub mod managers;
mod namespaces;
pub use namespaces::bootstrap;
mod nonresource;
mod patch;
mod scale;
pub(crate) mod update;
mod watch;

pub use crate::context::Api;
use crate::render::negotiation;
use crate::render::response::{self, Render};
use crate::request::{Query, RequestInfo};
use crate::serving::body::Body;
use http::{header, Request, Response};
use hyper::body::Incoming;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use kubeshard_core::table::IncludeObject;
use std::rc::Rc;
use std::sync::Arc;

/// A resource request after routing: the catalog entry and the request.
pub struct ResourceRequest {
    pub info: RequestInfo,
    pub resource: Arc<ResourceInfo>,
    /// The storage version a request at another version converts to
    /// (None: `resource` is stored as served). An Option, not a second
    /// handle on `resource`: cloning the shared `Arc` costs an atomic
    /// on the hot path every executor contends for.
    pub storage: Option<Arc<ResourceInfo>>,
    pub query: Query,
    pub render: Render,
    /// How to cut the response off (its HTTP/2 stream, or its
    /// connection), so a stalled watch can be ended.
    pub conn: Option<crate::serving::cut::Cut>,
    /// Who the request acts as (after impersonation).
    pub user: Arc<kubeshard_core::authn::UserInfo>,
}

pub type HandlerResult = Result<Response<Body>, ApiError>;

impl ResourceRequest {
    /// The entry objects are stored through.
    pub fn stored(&self) -> &Arc<ResourceInfo> {
        self.storage.as_ref().unwrap_or(&self.resource)
    }
}

impl Api {
    /// Serves one request that passed the filter chain (which parsed its
    /// info and query); never fails (errors become Status responses).
    pub async fn handle(
        self: &Rc<Self>,
        req: Request<Incoming>,
        info: RequestInfo,
        query: Query,
    ) -> Response<Body> {
        if let Some(hello) = &self.config.hello {
            return Response::new(Body::full(hello.clone()));
        }
        // A group version an extension server serves goes there, whatever
        // it is (its discovery document included), as it was asked for.
        if self.config.aggregator.any() && info.api_prefix == "apis" && !info.version.is_empty() {
            if let Some(remote) = self.config.aggregator.route(&info.group, &info.version) {
                return Box::pin(crate::aggregator::proxy::serve(self, req, &remote)).await;
            }
        }
        let accept = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok());
        let output = negotiation::output(accept, true);
        let pretty = query.flag("pretty");
        let include = query.get("includeObject").unwrap_or("");
        let render = Render {
            output: *output.as_ref().unwrap_or(&negotiation::Output::Json),
            pretty,
            include: IncludeObject::parse(include).unwrap_or_default(),
        };
        let bad_include = matches!(render.output, negotiation::Output::Table(_))
            && IncludeObject::parse(include).is_none();
        let result = match output {
            Err(e) if info.is_resource_request => Err(e),
            _ if bad_include && info.is_resource_request => Err(ApiError::bad_request(format!(
                "unrecognized includeObject value: {}",
                kubeshard_core::status::go_quote(include)
            ))),
            _ if !info.is_resource_request => nonresource::handle(self, &req, &info, &query).await,
            _ => self.handle_resource(req, info, query, render).await,
        };
        result.unwrap_or_else(|e| response::error(&e, render))
    }

    async fn handle_resource(
        self: &Rc<Self>,
        req: Request<Incoming>,
        info: RequestInfo,
        query: Query,
        render: Render,
    ) -> HandlerResult {
        let catalog = self.catalog.current();
        let resource = catalog
            .lookup(&info.group, &info.version, &info.resource)
            .cloned()
            .ok_or_else(not_found_path)?;
        // A custom resource has no protobuf form: negotiated again without.
        let render = if resource.custom.is_some() && render.output == negotiation::Output::Protobuf
        {
            let accept = req
                .headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok());
            Render {
                output: negotiation::output(accept, false)?,
                ..render
            }
        } else {
            render
        };
        // A deprecated custom resource version warns on every request.
        if let Some(warning) = resource.custom.as_ref().and_then(|c| c.warning.clone()) {
            let served =
                Box::pin(self.serve_resource(req, info, query, render, resource, &catalog)).await;
            let resp = served.unwrap_or_else(|e| response::error(&e, render));
            let warnings = crate::render::warnings::Warnings::default();
            warnings.extend([warning]);
            return Ok(warnings.apply(resp));
        }
        self.serve_resource(req, info, query, render, resource, &catalog)
            .await
    }

    async fn serve_resource(
        self: &Rc<Self>,
        req: Request<Incoming>,
        info: RequestInfo,
        query: Query,
        render: Render,
        resource: Arc<ResourceInfo>,
        catalog: &kubeshard_core::catalog::CatalogSnapshot,
    ) -> HandlerResult {
        let storage = if resource.is_storage_version() {
            None
        } else {
            let stored = catalog
                .storage_for(&resource)
                .ok_or_else(|| ApiError::internal("the storage version is not served"))?;
            Some(stored.clone())
        };
        if !info.subresource.is_empty() && !resource.has_subresource(&info.subresource) {
            return Err(not_found_path());
        }
        // Only a proxy has a path past its subresource.
        if info.past_subresource && info.subresource != "proxy" {
            return Err(not_found_path());
        }
        // Tables and metadata-only views exist for kinds that can be
        // listed; a review kind answers only in its own encodings.
        if render.output.is_transformed() && !resource.supports("list") {
            return Err(ApiError::not_acceptable(negotiation::PRODUCIBLE));
        }
        if component_status::serves(&resource) {
            // Boxed, as the other rare handlers below: a large future kept
            // inline would grow this one, which every request moves.
            return Box::pin(component_status::serve(self, &info, &resource, render)).await;
        }
        if authapi::serves(&info, &resource) {
            return Box::pin(authapi::serve(self, req, &info, &resource, render)).await;
        }
        if !resource.namespaced && !info.namespace.is_empty() && info.resource != "namespaces" {
            return Err(not_found_path());
        }
        let verb = info.verb.as_str();
        let known = matches!(
            verb,
            "get"
                | "list"
                | "watch"
                | "create"
                | "update"
                | "patch"
                | "delete"
                | "deletecollection"
        );
        let allowed = match info.subresource.as_str() {
            "" => {
                resource.supports(verb)
                    // A terminating CRD's kind answers creates with its 403.
                    || (verb == "create" && resource.custom.is_some())
            }
            s if connect::serves(s, verb).is_some() => connect::serves(s, verb) == Some(true),
            "finalize" => verb == "update",
            "binding" | "eviction" => verb == "create",
            _ => matches!(verb, "get" | "update" | "patch"),
        };
        if !known || !allowed {
            return Err(ApiError::method_not_supported(
                &resource.group,
                &resource.plural,
                verb,
            ));
        }
        // A namespaced write addressed without a namespace has no object to
        // name; kube answers 404 for the missing route.
        if resource.namespaced && info.namespace.is_empty() && !matches!(verb, "list" | "watch") {
            return Err(not_found_path());
        }
        let conn = req.extensions().get::<crate::serving::cut::Cut>().cloned();
        let user = req
            .extensions()
            .get::<crate::filters::RequestUser>()
            .map(|u| u.0.clone())
            .unwrap_or_default();
        let rr = ResourceRequest {
            info,
            resource,
            storage,
            query,
            render,
            conn,
            user,
        };
        if rr.resource.group.is_empty() && rr.resource.plural == "bindings" {
            return binding::bind_collection(self, &rr, req).await;
        }
        match rr.info.subresource.as_str() {
            "scale" => return scale::serve(self, &rr, req).await,
            "finalize" => return namespaces::finalize(self, &rr, req).await,
            "binding" => return binding::bind(self, &rr, req).await,
            "eviction" => return Box::pin(eviction::evict(self, &rr, req)).await,
            s if connect::serves(s, "get").is_some() => {
                return Box::pin(connect::serve(self, &rr, req)).await
            }
            _ => {}
        }
        match rr.info.verb.as_str() {
            "get" => get::get(self, &rr).await,
            "list" => list::list(self, &rr).await,
            "watch" => watch::watch(self, &rr).await,
            "create" => create::create(self, &rr, req).await,
            "update" => update::update(self, &rr, req).await,
            "patch" => patch::patch(self, &rr, req).await,
            "delete" => delete::delete(self, &rr, req).await,
            "deletecollection" => delete::delete_collection(self, &rr, req).await,
            _ => unreachable!("verbs checked above"),
        }
    }
}

/// kube's 404 for a path no handler serves.
pub fn not_found_path() -> ApiError {
    let mut e = ApiError::not_found("", "", "");
    e.message = "the server could not find the requested resource".into();
    e.details = Some(Box::default());
    e
}
