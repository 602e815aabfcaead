//! A webhook's `clientConfig` and where it leads: a URL as written, or a
//! Service's ready EndpointSlice address for the Service port named.

use super::endpoint;
use crate::context::Api;
use crate::proxy::dial::Endpoint;
use crate::proxy::endpoints;
use crate::storage::Storage;
use kubeshard_core::meta;
use serde_json::Value;

/// Where a webhook is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An `https://` URL (validated when the configuration was written).
    Url(String),
    Service {
        namespace: String,
        name: String,
        port: u16,
        /// Starts with `/` (empty path: `/`).
        path: String,
    },
}

/// A webhook client configuration (`clientConfig` of CRD conversion and
/// admission webhooks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    pub target: Target,
    /// PEM roots the webhook's certificate must chain to; empty: the
    /// system's roots.
    pub ca_bundle: Vec<u8>,
}

impl ClientConfig {
    /// From its JSON form (`caBundle` base64, as the API carries it).
    pub fn parse(v: &Value) -> Result<Self, String> {
        use base64::Engine;
        let ca_bundle = match v.get("caBundle").and_then(Value::as_str) {
            Some(b) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("caBundle: {e}"))?,
            None => Vec::new(),
        };
        // A bundle of white space is no bundle (kube).
        let ca_bundle = if ca_bundle.iter().all(u8::is_ascii_whitespace) {
            Vec::new()
        } else {
            ca_bundle
        };
        let target = if let Some(url) = v.get("url").and_then(Value::as_str) {
            Target::Url(url.to_string())
        } else if let Some(svc) = v.get("service") {
            let path = meta::str_at(svc, "/path");
            let crate::aggregated::ServiceRef {
                namespace,
                name,
                port,
            } = crate::aggregated::ServiceRef::parse(svc);
            Target::Service {
                namespace,
                name,
                port,
                path: if path.is_empty() {
                    "/".into()
                } else {
                    path.to_string()
                },
            }
        } else {
            return Err("clientConfig names neither a url nor a service".into());
        };
        Ok(Self { target, ca_bundle })
    }
}

impl ClientConfig {
    /// The same webhook called with `query` (kube's admission calls carry
    /// `?timeout=<n>s`).
    pub fn with_query(&self, query: &str) -> ClientConfig {
        let add = |p: &str| {
            let sep = if p.contains('?') { '&' } else { '?' };
            format!("{p}{sep}{query}")
        };
        let target = match &self.target {
            Target::Url(u) => Target::Url(add(u)),
            Target::Service {
                namespace,
                name,
                port,
                path,
            } => Target::Service {
                namespace: namespace.clone(),
                name: name.clone(),
                port: *port,
                path: add(path),
            },
        };
        ClientConfig {
            target,
            ca_bundle: self.ca_bundle.clone(),
        }
    }
}

/// The endpoint to dial, the name its certificate must carry, and the
/// request path.
pub(super) async fn resolve(
    api: &Api,
    cfg: &ClientConfig,
) -> Result<(Endpoint, String, String), String> {
    match &cfg.target {
        Target::Url(url) => {
            let uri: http::Uri = url.parse().map_err(|e| format!("invalid url: {e}"))?;
            if uri.scheme_str() != Some("https") {
                return Err("only https URLs are called".into());
            }
            let host = uri
                .host()
                .unwrap_or("")
                .trim_matches(['[', ']'])
                .to_string();
            let port = uri.port_u16().unwrap_or(443);
            let path = uri
                .path_and_query()
                .map_or("/".to_string(), |p| p.as_str().to_string());
            Ok((endpoint(host.clone(), port), host, path))
        }
        Target::Service {
            namespace,
            name,
            port,
            path,
        } => {
            let (host, target_port) = service_endpoint(api, namespace, name, *port).await?;
            Ok((
                endpoint(host, target_port),
                format!("{name}.{namespace}.svc"),
                path.clone(),
            ))
        }
    }
}

/// A ready endpoint of Service `namespace/name` behind its port `port`
/// (kube's endpoint service resolver), chosen at random among them.
async fn service_endpoint(
    api: &Api,
    namespace: &str,
    name: &str,
    port: u16,
) -> Result<(String, u16), String> {
    let services = api.builtin("", "services").map_err(|e| e.message)?;
    let service = api
        .storage()
        .get(&services.storage_key, namespace, name)
        .await
        .map_err(|e| format!("{e:?}"))?
        .map(|o| o.to_value())
        .ok_or_else(|| format!("service \"{name}\" not found"))?;
    if meta::str_at(&service, "/spec/type") == "ExternalName" {
        let host = meta::str_at(&service, "/spec/externalName");
        return Ok((host.to_string(), port));
    }
    let port_name = endpoints::port_name(&service, port)
        .ok_or_else(|| format!("no service port {port} found for service \"{name}\""))?;
    let slices_info = api
        .builtin("discovery.k8s.io", "endpointslices")
        .map_err(|e| e.message)?;
    let slices: Vec<Value> = crate::storage::list_in(api.storage(), &slices_info, namespace)
        .await
        .map_err(|e| e.message)?
        .iter()
        .map(|s| s.to_value())
        .filter(|s| endpoints::of_service(s, name))
        .collect();
    let mut candidates = endpoints::ready(&slices, &port_name);
    if candidates.is_empty() {
        return Err(format!("no endpoints available for service \"{name}\""));
    }
    Ok(candidates.swap_remove(rand::random::<usize>() % candidates.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn client_configs_parse_as_kube_reads_them() {
        let url = ClientConfig::parse(&json!({"url": "https://127.0.0.1:9443/convert"})).unwrap();
        assert_eq!(
            url.target,
            Target::Url("https://127.0.0.1:9443/convert".into())
        );
        assert!(url.ca_bundle.is_empty());
        let svc = ClientConfig::parse(&json!({
            "service": {"namespace": "ns", "name": "conv"},
            "caBundle": "ICAK"
        }))
        .unwrap();
        assert_eq!(
            svc.target,
            Target::Service {
                namespace: "ns".into(),
                name: "conv".into(),
                port: 443,
                path: "/".into()
            }
        );
        assert!(svc.ca_bundle.is_empty(), "white space is no bundle");
        assert_eq!(svc.display_url(), "https://conv.ns.svc:443/");
        assert!(ClientConfig::parse(&json!({})).is_err());
        assert!(ClientConfig::parse(&json!({"url": "https://x", "caBundle": "%%"})).is_err());
    }
}
