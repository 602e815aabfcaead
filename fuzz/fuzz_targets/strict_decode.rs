//! The field-validating decoders on arbitrary bodies: the JSON decoder
//! (duplicates, unknown fields against the deployment schema), the YAML
//! duplicate-key scanner, the pruning of a decoded YAML body, the type
//! check every decoded body goes through, and the quantity canonicaliser
//! it calls (whose output must be its own canonical form).
#![no_main]

use kubeshard_core::{fieldvalidation, schema};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let deployment = schema::builtin().kind("apps", "v1", "Deployment").unwrap();
    if let Ok((mut v, _)) = fieldvalidation::decode_json(data, Some(deployment)) {
        if let Err(m) = fieldvalidation::check_types(&mut v, deployment) {
            let _ = (m.decode_message(), m.apply_message());
        }
    }
    let text = String::from_utf8_lossy(data);
    if let Some(c) = kubeshard_core::quantity::canonical(&text) {
        assert_eq!(kubeshard_core::quantity::canonical(&c).as_deref(), Some(c.as_str()));
    }
    let _ = fieldvalidation::duplicate_keys(&text);
    if let Ok(mut v) = serde_yaml::from_str::<serde_json::Value>(&text) {
        let _ = fieldvalidation::prune(&mut v, deployment);
        let _ = fieldvalidation::check_types(&mut v, deployment);
    }
});
