//! The objects a workload writes, and the few fields it reads back.
//!
//! ConfigMaps carry their payload in `data.payload` (what real ConfigMaps
//! look like); any other kind carries it in an annotation, which every
//! kind accepts. Reading back avoids a full JSON parse where the answer is
//! the first `resourceVersion` of the text (an object's or a list's own,
//! since `metadata` precedes the payload and nothing else uses that key).

use crate::cli::LoadArgs;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use memchr::memmem::Finder;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::sync::LazyLock;

/// Label every object of a run carries, valued with the run's prefix.
pub const RUN_LABEL: &str = "kubeshard-bench/run";
/// Annotation changed by every update, so no write is a no-op.
pub const SEQ_ANNOTATION: &str = "kubeshard-bench/seq";
const PAYLOAD_ANNOTATION: &str = "kubeshard-bench/payload";

/// A collection and how to make objects for it.
#[derive(Debug, Clone)]
pub struct Resource {
    /// e.g. /api/v1/namespaces/default/configmaps
    pub collection: String,
    pub api_version: String,
    pub kind: String,
    template: Option<Arc<Value>>,
    payload: Arc<str>,
    /// The payload as a JSON string, escaped once per run.
    payload_json: Arc<[u8]>,
}

impl Resource {
    /// From `--resource`/`--kind`/`--template`/`--object-size`, defaulting
    /// to the namespace's ConfigMaps.
    pub fn from_args(load: &LoadArgs) -> Result<Resource> {
        let collection = match &load.resource {
            Some(r) => r.trim_end_matches('/').to_string(),
            None => format!("/api/v1/namespaces/{}/configmaps", load.namespace),
        };
        let template = match &load.template {
            Some(p) => {
                let v: Value = serde_json::from_slice(
                    &std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
                )
                .context("template is not JSON")?;
                if !v.is_object() {
                    bail!("template must be a JSON object");
                }
                Some(Arc::new(v))
            }
            None => None,
        };
        Resource::new(
            &collection,
            load.kind.as_deref(),
            template,
            load.object_size,
        )
    }

    pub fn new(
        collection: &str,
        kind: Option<&str>,
        template: Option<Arc<Value>>,
        size: usize,
    ) -> Result<Resource> {
        let parts: Vec<&str> = collection.trim_matches('/').split('/').collect();
        let (api_version, plural) = match parts.as_slice() {
            ["api", v, .., plural] => (v.to_string(), *plural),
            ["apis", g, v, .., plural] => (format!("{g}/{v}"), *plural),
            _ => bail!("{collection:?} is not a collection path (/api/v1/… or /apis/G/V/…)"),
        };
        let payload = "x".repeat(size);
        Ok(Resource {
            collection: collection.to_string(),
            api_version,
            kind: kind.map_or_else(|| kind_of(plural), str::to_string),
            template,
            payload_json: serde_json::to_vec(&payload)
                .expect("a string serializes")
                .into(),
            payload: payload.into(),
        })
    }

    fn is_configmap(&self) -> bool {
        self.api_version == "v1" && self.kind == "ConfigMap"
    }

    /// The path of one object.
    pub fn item(&self, name: &str) -> String {
        format!("{}/{}", self.collection, name)
    }

    /// A new object named `name` with `labels`, and the payload.
    pub fn object(&self, name: &str, labels: &[(&str, &str)]) -> Value {
        let mut obj = self.object_without_data(name, labels);
        if self.is_configmap() {
            // A template's own data keys stay, beside the payload.
            if !obj["data"].is_object() {
                obj["data"] = json!({});
            }
            obj["data"]["payload"] = Value::String(self.payload.to_string());
        }
        obj
    }

    /// [`Resource::object`] but for a ConfigMap's `data`.
    fn object_without_data(&self, name: &str, labels: &[(&str, &str)]) -> Value {
        let mut obj = match &self.template {
            Some(t) => (**t).clone(),
            None => json!({"apiVersion": self.api_version, "kind": self.kind}),
        };
        let meta = obj
            .as_object_mut()
            .expect("templates are objects")
            .entry("metadata")
            .or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        meta["name"] = Value::String(name.to_string());
        let lbl = meta
            .as_object_mut()
            .expect("checked")
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        for (k, v) in labels {
            lbl[*k] = Value::String(v.to_string());
        }
        if !self.is_configmap() && !self.payload.is_empty() {
            set_annotation(&mut obj, PAYLOAD_ANNOTATION, &self.payload);
        }
        obj
    }

    /// [`Resource::object`] as request bytes. A ConfigMap's payload, most
    /// of the body, is spliced in already escaped: copying it into the
    /// object and escaping it again per request was half of the load
    /// generator's CPU in a create run, on the cores the server shares.
    pub fn body(&self, name: &str, labels: &[(&str, &str)]) -> Bytes {
        let mut obj = self.object_without_data(name, labels);
        // Anything but a ConfigMap is already the whole object.
        let Some(map) = obj.as_object_mut().filter(|_| self.is_configmap()) else {
            return Bytes::from(serde_json::to_vec(&obj).expect("serializable"));
        };
        let data = map.shift_remove("data");
        let mut buf = serde_json::to_vec(&obj).expect("serializable");
        buf.pop(); // the object's closing brace
        if buf.len() > 1 {
            buf.push(b',');
        }
        buf.extend_from_slice(br#""data":"#);
        match data.filter(|d| d.as_object().is_some_and(|m| !m.is_empty())) {
            // The template's keys, then the payload.
            Some(d) => {
                buf.extend(serde_json::to_vec(&d).expect("serializable"));
                buf.pop();
                buf.push(b',');
            }
            None => buf.push(b'{'),
        }
        buf.extend_from_slice(br#""payload":"#);
        buf.extend_from_slice(&self.payload_json);
        buf.extend_from_slice(b"}}");
        Bytes::from(buf)
    }

    /// The object for a PUT carrying `rv`, changed by `seq`.
    pub fn update_body(&self, name: &str, labels: &[(&str, &str)], rv: u64, seq: u64) -> Bytes {
        let mut obj = self.object(name, labels);
        obj["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        set_annotation(&mut obj, SEQ_ANNOTATION, &seq.to_string());
        Bytes::from(serde_json::to_vec(&obj).expect("serializable"))
    }
}

/// Sets `metadata.annotations[key]`.
pub fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    let meta = &mut obj["metadata"];
    if !meta["annotations"].is_object() {
        meta["annotations"] = Value::Object(Map::new());
    }
    meta["annotations"][key] = Value::String(value.to_string());
}

/// A GET response turned into the next PUT: same object, `seq` annotation.
pub fn modified(get_body: &[u8], seq: u64) -> Option<Bytes> {
    let mut obj: Value = serde_json::from_slice(get_body).ok()?;
    set_annotation(&mut obj, SEQ_ANNOTATION, &seq.to_string());
    Some(Bytes::from(serde_json::to_vec(&obj).ok()?))
}

/// The Kind served at a plural, for the common built-ins; otherwise the
/// plural singularized and capitalized (pass --kind when that is wrong).
pub fn kind_of(plural: &str) -> String {
    let known = [
        ("configmaps", "ConfigMap"),
        ("secrets", "Secret"),
        ("serviceaccounts", "ServiceAccount"),
        ("leases", "Lease"),
        ("pods", "Pod"),
        ("nodes", "Node"),
        ("namespaces", "Namespace"),
        ("services", "Service"),
        ("endpoints", "Endpoints"),
        ("events", "Event"),
        ("deployments", "Deployment"),
        ("replicasets", "ReplicaSet"),
        ("statefulsets", "StatefulSet"),
        ("daemonsets", "DaemonSet"),
    ];
    if let Some((_, k)) = known.iter().find(|(p, _)| *p == plural) {
        return k.to_string();
    }
    let singular = plural.strip_suffix('s').unwrap_or(plural);
    let mut c = singular.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The first `"resourceVersion":"N"` of a JSON text.
pub fn resource_version(body: &[u8]) -> Option<u64> {
    static KEY: Key = LazyLock::new(|| Finder::new(b"\"resourceVersion\""));
    let v = string_field(body, &KEY)?;
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// The value of the first `"type":"…"` (a watch event's type).
pub fn event_type(body: &[u8]) -> Option<&[u8]> {
    static KEY: Key = LazyLock::new(|| Finder::new(b"\"type\""));
    string_field(body, &KEY)
}

/// A quoted key's searcher, built once: a watcher looks up two keys in
/// every event it receives, and building the searcher cost more than the
/// search.
type Key = LazyLock<Finder<'static>>;

/// The string value after the first occurrence of `key` (a quoted key).
fn string_field<'a>(body: &'a [u8], key: &Finder<'_>) -> Option<&'a [u8]> {
    let at = key.find(body)? + key.needle().len();
    let rest = &body[at..];
    let rest = skip_ws(rest).strip_prefix(b":")?;
    let rest = skip_ws(rest).strip_prefix(b"\"")?;
    let end = memchr::memchr(b'"', rest)?;
    Some(&rest[..end])
}

fn skip_ws(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

/// What a list page says about itself.
#[derive(Debug, Deserialize)]
pub struct ListHead {
    #[serde(default)]
    pub metadata: ListMeta,
    #[serde(default)]
    pub items: Vec<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ListMeta {
    #[serde(rename = "resourceVersion", default)]
    pub resource_version: String,
    #[serde(rename = "continue", default)]
    pub continue_token: Option<String>,
}

/// Percent-encodes a query parameter value.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configmap_body_has_the_payload_in_data() {
        let r = Resource::new("/api/v1/namespaces/default/configmaps", None, None, 100).unwrap();
        let o = r.object("a", &[("x", "y")]);
        assert_eq!(o["kind"], "ConfigMap");
        assert_eq!(o["apiVersion"], "v1");
        assert_eq!(o["metadata"]["labels"]["x"], "y");
        assert_eq!(o["data"]["payload"].as_str().unwrap().len(), 100);
    }

    #[test]
    fn bodies_are_the_objects() {
        let template =
            Arc::new(json!({"metadata": {"annotations": {"a": "b"}}, "data": {"old": "x"}}));
        for (collection, template) in [
            ("/api/v1/namespaces/default/configmaps", None),
            ("/api/v1/namespaces/default/configmaps", Some(template)),
            ("/apis/coordination.k8s.io/v1/namespaces/n/leases", None),
        ] {
            let r = Resource::new(collection, None, template, 64).unwrap();
            let labels = [("x", "y"), ("q", "\"quoted\"")];
            let body: Value = serde_json::from_slice(&r.body("a", &labels)).unwrap();
            assert_eq!(body, r.object("a", &labels), "{collection}");
            if r.is_configmap() && r.template.is_some() {
                assert_eq!(body["data"]["old"], "x", "a template's data keys stay");
                assert_eq!(body["data"]["payload"].as_str().unwrap().len(), 64);
            }
        }
    }

    #[test]
    fn other_kinds_carry_it_in_an_annotation() {
        let r = Resource::new(
            "/apis/coordination.k8s.io/v1/namespaces/n/leases",
            None,
            None,
            10,
        )
        .unwrap();
        assert_eq!(
            (r.api_version.as_str(), r.kind.as_str()),
            ("coordination.k8s.io/v1", "Lease")
        );
        let o = r.object("l", &[]);
        assert_eq!(
            o["metadata"]["annotations"][PAYLOAD_ANNOTATION]
                .as_str()
                .unwrap()
                .len(),
            10
        );
        assert_eq!(
            r.item("l"),
            "/apis/coordination.k8s.io/v1/namespaces/n/leases/l"
        );
        let b: Value = serde_json::from_slice(&r.update_body("l", &[], 7, 9)).unwrap();
        assert_eq!(b["metadata"]["resourceVersion"], "7");
        assert_eq!(b["metadata"]["annotations"][SEQ_ANNOTATION], "9");
        assert!(Resource::new("/nope", None, None, 1).is_err());
        assert_eq!(kind_of("widgets"), "Widget");
    }

    #[test]
    fn scans_resource_version_and_type() {
        let ev = br#"{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1234"},"data":{}}}"#;
        assert_eq!(resource_version(ev), Some(1234));
        assert_eq!(event_type(ev), Some(&b"MODIFIED"[..]));
        assert_eq!(
            resource_version(br#"{"metadata": {"resourceVersion" : "5"}}"#),
            Some(5)
        );
        assert_eq!(resource_version(b"{}"), None);
    }

    #[test]
    fn list_head() {
        let l: ListHead = serde_json::from_slice(
            br#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"9","continue":"abc"},"items":[{"a":1},{"b":[2]}]}"#,
        )
        .unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!(l.metadata.continue_token.as_deref(), Some("abc"));
        assert_eq!(query_escape("a=b,c in (d)"), "a%3Db%2Cc%20in%20%28d%29");
    }
}
