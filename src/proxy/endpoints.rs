//! Where a Service's traffic goes, read from its objects as kube's
//! endpoint resolvers read them: the name of the Service port that
//! serves a port number, and the ready addresses its EndpointSlices give
//! for that port name. Webhook calls and the aggregator's proxy both
//! reach Services this way (a cluster IP leads nowhere on this machine).

use kubeshard_core::meta;
use serde_json::Value;

/// The name of `service`'s port `port` (`""` for an unnamed one), if it
/// has that port.
pub fn port_name(service: &Value, port: u16) -> Option<String> {
    meta::array_at(service, "/spec/ports")
        .iter()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
        .map(|p| meta::str_at(p, "/name").to_string())
}

/// Whether `slice` is one of Service `name`'s EndpointSlices.
pub fn of_service(slice: &Value, name: &str) -> bool {
    meta::str_at(slice, "/metadata/labels/kubernetes.io~1service-name") == name
}

/// Ready (or not said to be unready) addresses of `slices` with the
/// port named `port_name`, and that port's number.
pub fn ready(slices: &[Value], port_name: &str) -> Vec<(String, u16)> {
    let mut out = Vec::new();
    for slice in slices {
        let Some(port) = meta::array_at(slice, "/ports")
            .iter()
            .find(|p| meta::str_at(p, "/name") == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok())
        else {
            continue;
        };
        for ep in meta::array_at(slice, "/endpoints") {
            if ep.pointer("/conditions/ready").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            for addr in meta::array_at(ep, "/addresses")
                .iter()
                .filter_map(Value::as_str)
            {
                out.push((addr.to_string(), port));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ready_addresses_of_the_named_port() {
        let slices = [
            json!({"ports": [{"name": "https", "port": 8443}], "endpoints": [
                {"addresses": ["10.0.0.1"]},
                {"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
                {"addresses": ["10.0.0.3"], "conditions": {"ready": true}},
            ]}),
            json!({"ports": [{"name": "metrics", "port": 9000}], "endpoints": [
                {"addresses": ["10.0.0.9"]},
            ]}),
        ];
        assert_eq!(
            ready(&slices, "https"),
            [
                ("10.0.0.1".to_string(), 8443),
                ("10.0.0.3".to_string(), 8443)
            ]
        );
        assert!(ready(&slices, "grpc").is_empty());
        let svc = json!({"spec": {"ports": [{"name": "https", "port": 443}, {"port": 80}]}});
        assert_eq!(port_name(&svc, 443).as_deref(), Some("https"));
        assert_eq!(port_name(&svc, 80).as_deref(), Some(""));
        assert_eq!(port_name(&svc, 8080), None);
    }
}
