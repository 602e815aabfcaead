//! `kubeshard-bench metrics-server`: a small extension API server in the
//! shape of metrics-server, for the aggregation layer's tests and
//! benchmarks. It serves `metrics.k8s.io/v1beta1` NodeMetrics and
//! PodMetrics (get, list, watch) with its own discovery and OpenAPI
//! documents, over HTTPS on loopback, and trusts only the front proxy: a
//! client certificate signed by `--requestheader-client-ca` (with an
//! allowed CommonName) is required, and the user comes from the
//! `X-Remote-*` headers. It answers every request with what it saw —
//! `X-Seen-User`, `X-Seen-Groups`, `X-Seen-Extra`, `X-Seen-Proxy` (the
//! verified certificate's CommonName) — so a test can check what the
//! aggregator sent.

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use hyper::{Request, Response, StatusCode};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde::Serialize;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const GROUP_VERSION: &str = "metrics.k8s.io/v1beta1";
const PREFIX: &str = "/apis/metrics.k8s.io/v1beta1";

#[derive(Debug, Clone, Args, Serialize)]
pub struct MetricsServerArgs {
    /// Loopback port to listen on (0: a free one, see --port-file).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Write the port listened on to this file once serving.
    #[arg(long)]
    pub port_file: Option<PathBuf>,
    /// Serving certificate (PEM).
    #[arg(long)]
    pub cert: PathBuf,
    /// Its key (PEM).
    #[arg(long)]
    pub key: PathBuf,
    /// CA bundle the front proxy's client certificate must chain to.
    #[arg(long)]
    pub requestheader_client_ca: PathBuf,
    /// CommonNames the front proxy's certificate may carry (empty: any).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// Nodes to report metrics for.
    #[arg(long, value_delimiter = ',')]
    pub nodes: Vec<String>,
    /// Also report nodes `node-0` … `node-<N-1>` (benchmarks read them).
    #[arg(long, default_value_t = 0)]
    pub generated_nodes: usize,
    /// Pods to report metrics for, as `namespace/name`.
    #[arg(long, value_delimiter = ',')]
    pub pods: Vec<String>,
    /// How often a watch gets a MODIFIED event per node ("0s": as fast as
    /// the connection takes them, for throughput benchmarks).
    #[arg(long, default_value = "1s", value_parser = crate::cli::parse_duration)]
    pub watch_interval: Duration,
    /// The user of a request that names none (benchmarks reading the
    /// server directly); without it such requests are refused.
    #[arg(long)]
    pub default_user: Option<String>,
}

struct Server {
    args: MetricsServerArgs,
    nodes: Vec<String>,
}

/// Serves until killed.
pub async fn serve(args: &MetricsServerArgs) -> Result<()> {
    let (certs, key) = crate::tls::serving_identity(&args.cert, &args.key)?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(&args.requestheader_client_ca)
        .context("reading --requestheader-client-ca")?
    {
        roots.add(ca.context("parsing --requestheader-client-ca")?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let port = listener.local_addr()?.port();
    if let Some(f) = &args.port_file {
        let tmp = f.with_extension("tmp");
        std::fs::write(&tmp, port.to_string())?;
        std::fs::rename(&tmp, f)?;
    }
    eprintln!("metrics-server: serving on 127.0.0.1:{port}");
    let mut nodes = args.nodes.clone();
    nodes.extend((0..args.generated_nodes).map(|i| format!("node-{i}")));
    let server = Arc::new(Server {
        args: args.clone(),
        nodes,
    });
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let (acceptor, server) = (acceptor.clone(), server.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let proxy = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(|c| common_name(c.as_ref()));
            let service = hyper::service::service_fn(move |req| {
                let (server, proxy) = (server.clone(), proxy.clone());
                async move { Ok::<_, hyper::Error>(server.handle(req, proxy)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .with_upgrades()
                .await;
        });
    }
}

/// The subject CommonName of a DER certificate.
fn common_name(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let cn = cert.subject().iter_common_name().next()?.as_str().ok()?;
    Some(cn.to_string())
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

fn json_response(status: StatusCode, v: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(v.to_string())).boxed())
        .expect("a valid response")
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    json_response(
        code,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": reason, "code": code.as_u16()}),
    )
}

impl Server {
    fn handle(
        &self,
        mut req: Request<hyper::body::Incoming>,
        proxy: Option<String>,
    ) -> Response<Body> {
        let allowed = &self.args.requestheader_allowed_names;
        let proxy_ok = proxy
            .as_ref()
            .is_some_and(|cn| allowed.is_empty() || allowed.contains(cn));
        let h = req.headers();
        let values = |name: &str| -> Vec<String> {
            h.get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_string)
                .collect()
        };
        let user = values("x-remote-user")
            .into_iter()
            .next()
            .or_else(|| self.args.default_user.clone());
        let groups = values("x-remote-group");
        let mut extra: Vec<String> = h
            .iter()
            .filter_map(|(k, v)| {
                let key = k.as_str().strip_prefix("x-remote-extra-")?;
                Some(format!("{key}={}", v.to_str().ok()?))
            })
            .collect();
        extra.sort();
        let authorization: String = values("authorization").join(",").chars().take(16).collect();
        let wants_echo = upgrade_to_echo(&req);
        let mut resp = match (&user, proxy_ok) {
            (_, false) => status(
                StatusCode::UNAUTHORIZED,
                "Unauthorized",
                "a front proxy certificate with an allowed name is required",
            ),
            (None, true) => status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized"),
            (Some(_), true) if wants_echo => echo(&mut req),
            (Some(_), true) => self.route(&req),
        };
        let headers = resp.headers_mut();
        for (name, value) in [
            ("x-seen-user", user.unwrap_or_default()),
            ("x-seen-groups", groups.join(",")),
            ("x-seen-extra", extra.join(";")),
            ("x-seen-proxy", proxy.unwrap_or_default()),
            ("x-seen-authorization", authorization),
        ] {
            if let Ok(v) = value.parse() {
                headers.insert(name, v);
            }
        }
        resp
    }

    fn route(&self, req: &Request<hyper::body::Incoming>) -> Response<Body> {
        let path = req.uri().path().trim_end_matches('/');
        let query = req.uri().query().unwrap_or("");
        let watch = query
            .split('&')
            .any(|kv| kv == "watch=true" || kv == "watch=1");
        if req.method() != hyper::Method::GET {
            return status(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            );
        }
        match path {
            "/apis" => return json_response(StatusCode::OK, &group_list()),
            "/apis/metrics.k8s.io" => return json_response(StatusCode::OK, &group()),
            PREFIX => return json_response(StatusCode::OK, &resource_list()),
            "/openapi/v2" => return json_response(StatusCode::OK, &openapi_v2()),
            "/openapi/v3" => return json_response(StatusCode::OK, &openapi_v3_index()),
            "/openapi/v3/apis/metrics.k8s.io/v1beta1" => {
                return json_response(StatusCode::OK, &openapi_v3())
            }
            _ => {}
        }
        let Some(rest) = path.strip_prefix(PREFIX) else {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource",
            );
        };
        let parts: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
        match parts.as_slice() {
            ["nodes"] if watch => self.watch_nodes(),
            ["nodes"] => json_response(StatusCode::OK, &self.node_list()),
            ["nodes", name] => match self.nodes.iter().find(|n| n == name) {
                Some(n) => json_response(StatusCode::OK, &node_metrics(n)),
                None => not_found("nodes", name),
            },
            ["pods"] => json_response(StatusCode::OK, &self.pod_list(None)),
            ["namespaces", ns, "pods"] => json_response(StatusCode::OK, &self.pod_list(Some(ns))),
            ["namespaces", ns, "pods", name] => {
                let key = format!("{ns}/{name}");
                match self.args.pods.iter().find(|p| **p == key) {
                    Some(_) => json_response(StatusCode::OK, &pod_metrics(ns, name)),
                    None => not_found("pods", name),
                }
            }
            _ => status(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource",
            ),
        }
    }

    fn node_list(&self) -> Value {
        json!({"kind": "NodeMetricsList", "apiVersion": GROUP_VERSION, "metadata": {},
               "items": self.nodes.iter().map(|n| node_metrics(n)).collect::<Vec<_>>()})
    }

    fn pod_list(&self, namespace: Option<&str>) -> Value {
        let items: Vec<Value> = self
            .args
            .pods
            .iter()
            .filter_map(|p| p.split_once('/'))
            .filter(|(ns, _)| namespace.is_none_or(|want| want == *ns))
            .map(|(ns, name)| pod_metrics(ns, name))
            .collect();
        json!({"kind": "PodMetricsList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items})
    }

    /// Every node ADDED, then MODIFIED every --watch-interval, until the
    /// client goes.
    fn watch_nodes(&self) -> Response<Body> {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
        let (nodes, interval) = (self.nodes.clone(), self.args.watch_interval);
        tokio::spawn(async move {
            let event = |t: &str, n: &str| {
                let mut line = json!({"type": t, "object": node_metrics(n)}).to_string();
                line.push('\n');
                Bytes::from(line)
            };
            for n in &nodes {
                if tx.send(event("ADDED", n)).await.is_err() {
                    return;
                }
            }
            loop {
                if !interval.is_zero() {
                    tokio::time::sleep(interval).await;
                }
                for n in &nodes {
                    if tx.send(event("MODIFIED", n)).await.is_err() {
                        return;
                    }
                }
                if nodes.is_empty() && interval.is_zero() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        Response::builder()
            .header("content-type", "application/json")
            .body(Events(rx).boxed())
            .expect("a valid response")
    }
}

/// A request to switch to the `echo` protocol (what the tests use to see
/// an upgrade pass through the aggregator).
fn upgrade_to_echo(req: &Request<hyper::body::Incoming>) -> bool {
    req.headers()
        .get(hyper::header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"echo"))
}

/// Switches protocols and sends back every byte received.
fn echo(req: &mut Request<hyper::body::Incoming>) -> Response<Body> {
    let upgraded = hyper::upgrade::on(req);
    tokio::spawn(async move {
        if let Ok(up) = upgraded.await {
            let (mut r, mut w) = tokio::io::split(hyper_util::rt::TokioIo::new(up));
            let _ = tokio::io::copy(&mut r, &mut w).await;
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(hyper::header::CONNECTION, "Upgrade")
        .header(hyper::header::UPGRADE, "echo")
        .body(Full::new(Bytes::new()).boxed())
        .expect("a valid response")
}

/// Watch events as they are produced, as a streamed body.
struct Events(tokio::sync::mpsc::Receiver<Bytes>);

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.get_mut()
            .0
            .poll_recv(cx)
            .map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

fn not_found(resource: &str, name: &str) -> Response<Body> {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("{resource}.metrics.k8s.io {name:?} not found"),
    )
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn node_metrics(name: &str) -> Value {
    json!({"kind": "NodeMetrics", "apiVersion": GROUP_VERSION,
           "metadata": {"name": name, "creationTimestamp": now()},
           "timestamp": now(), "window": "10s",
           "usage": {"cpu": "250m", "memory": "512Mi"}})
}

fn pod_metrics(namespace: &str, name: &str) -> Value {
    json!({"kind": "PodMetrics", "apiVersion": GROUP_VERSION,
           "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now()},
           "timestamp": now(), "window": "10s",
           "containers": [{"name": "main", "usage": {"cpu": "10m", "memory": "20Mi"}}]})
}

fn group() -> Value {
    let v = json!({"groupVersion": GROUP_VERSION, "version": "v1beta1"});
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": "metrics.k8s.io",
           "versions": [v.clone()], "preferredVersion": v})
}

fn group_list() -> Value {
    let mut g = group();
    g.as_object_mut().map(|o| {
        o.remove("kind");
        o.remove("apiVersion")
    });
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [g]})
}

fn resource_list() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
           "resources": [
               {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics",
                "verbs": ["get", "list", "watch"]},
               {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics",
                "verbs": ["get", "list", "watch"]}]})
}

const NODE_METRICS: &str = "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics";
const POD_METRICS: &str = "io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics";

fn schemas() -> Value {
    let usage = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let meta = json!({"type": "object"});
    json!({
        NODE_METRICS: {"type": "object", "description": "resource usage metrics of a node",
            "required": ["timestamp", "window", "usage"],
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": meta, "timestamp": {"type": "string", "format": "date-time"},
                "window": {"type": "string"}, "usage": usage},
            "x-kubernetes-group-version-kind": [{"group": "metrics.k8s.io", "version": "v1beta1", "kind": "NodeMetrics"}]},
        POD_METRICS: {"type": "object", "description": "resource usage metrics of a pod",
            "required": ["timestamp", "window", "containers"],
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": meta, "timestamp": {"type": "string", "format": "date-time"},
                "window": {"type": "string"},
                "containers": {"type": "array", "items": {"type": "object",
                    "properties": {"name": {"type": "string"}, "usage": usage}}}},
            "x-kubernetes-group-version-kind": [{"group": "metrics.k8s.io", "version": "v1beta1", "kind": "PodMetrics"}]},
    })
}

fn get_operation(reference: &str, definition: &str, id: &str) -> Value {
    json!({"get": {"operationId": id, "produces": ["application/json"],
        "responses": {"200": {"description": "OK", "schema": {"$ref": format!("{reference}{definition}")}}}}})
}

fn openapi_v2() -> Value {
    let r = "#/definitions/";
    json!({"swagger": "2.0", "info": {"title": "metrics-server", "version": "v0.8.0"},
        "paths": {
            "/apis/metrics.k8s.io/v1beta1/nodes/{name}": get_operation(r, NODE_METRICS, "readMetricsV1beta1NodeMetrics"),
            "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{name}": get_operation(r, POD_METRICS, "readMetricsV1beta1NamespacedPodMetrics"),
        },
        "definitions": schemas()})
}

fn openapi_v3() -> Value {
    let r = "#/components/schemas/";
    json!({"openapi": "3.0.0", "info": {"title": "metrics-server", "version": "v0.8.0"},
        "paths": {
            "/apis/metrics.k8s.io/v1beta1/nodes/{name}": get_operation(r, NODE_METRICS, "readMetricsV1beta1NodeMetrics"),
            "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{name}": get_operation(r, POD_METRICS, "readMetricsV1beta1NamespacedPodMetrics"),
        },
        "components": {"schemas": schemas()}})
}

fn openapi_v3_index() -> Value {
    json!({"paths": {"apis/metrics.k8s.io/v1beta1": {
        "serverRelativeURL": "/openapi/v3/apis/metrics.k8s.io/v1beta1?hash=0"}}})
}
