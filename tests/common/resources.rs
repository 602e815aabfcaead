//! The resources a server serves, as discovery lists them, and one valid
//! manifest for each (tests/fixtures/resources.yaml).

use super::Server;
use serde_json::Value;
use std::collections::BTreeMap;

pub struct Served {
    pub key: String,
    /// The collection (in namespace `default` when namespaced).
    pub path: String,
    pub kind: String,
    pub api_version: String,
}

/// Every resource with create and get, as discovery lists it.
pub fn served(s: &Server) -> Vec<Served> {
    let mut lists = vec![("core".to_string(), "v1".to_string(), "/api/v1".to_string())];
    let (_, groups) = s.get("/apis");
    for g in groups["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            let gv = v["groupVersion"].as_str().unwrap();
            let (group, version) = gv.split_once('/').unwrap();
            lists.push((group.into(), version.into(), format!("/apis/{gv}")));
        }
    }
    let mut out = Vec::new();
    for (group, version, base) in lists {
        let (code, list) = s.get(&base);
        assert_eq!(code, 200, "{base}");
        for r in list["resources"].as_array().unwrap() {
            let name = r["name"].as_str().unwrap();
            let verbs: Vec<&str> = r["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if name.contains('/') || !verbs.contains(&"create") || !verbs.contains(&"get") {
                continue;
            }
            let path = if r["namespaced"] == true {
                format!("{base}/namespaces/default/{name}")
            } else {
                format!("{base}/{name}")
            };
            out.push(Served {
                key: format!("{group}/{version}/{name}"),
                path,
                kind: r["kind"].as_str().unwrap().into(),
                api_version: base
                    .trim_start_matches("/apis/")
                    .trim_start_matches("/api/")
                    .into(),
            });
        }
    }
    out
}

pub fn fixtures() -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/resources.yaml"),
    )
    .unwrap();
    serde_yaml::from_str(&text).unwrap()
}
