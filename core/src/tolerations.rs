//! Tolerations as kube's admission plugins combine them: one toleration
//! covers another when every taint the other tolerates it tolerates too;
//! merging keeps only the broadest of those, and a whitelist allows a
//! toleration that one of its entries covers.

use serde_json::Value;

fn field<'a>(t: &'a Value, k: &str) -> &'a str {
    t.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Whether `ss` tolerates everything `t` does.
pub fn covers(ss: &Value, t: &Value) -> bool {
    if ss == t {
        return true;
    }
    let op = |x: &Value| match field(x, "operator") {
        "" => "Equal".to_string(),
        o => o.to_string(),
    };
    if field(t, "key") != field(ss, "key") && (!field(ss, "key").is_empty() || op(ss) != "Exists") {
        return false;
    }
    if field(t, "effect") != field(ss, "effect") && !field(ss, "effect").is_empty() {
        return false;
    }
    if field(ss, "effect") == "NoExecute" {
        if let Some(limit) = ss.get("tolerationSeconds").and_then(Value::as_i64) {
            match t.get("tolerationSeconds").and_then(Value::as_i64) {
                Some(s) if s <= limit => {}
                _ => return false,
            }
        }
    }
    match op(ss).as_str() {
        "Equal" => op(t) == "Equal" && field(t, "value") == field(ss, "value"),
        "Exists" => true,
        _ => false,
    }
}

/// `first` then `second`, without the tolerations another one covers.
pub fn merge(first: &[Value], second: &[Value]) -> Vec<Value> {
    let all: Vec<&Value> = first.iter().chain(second).collect();
    let mut merged: Vec<Value> = Vec::new();
    for (i, t) in all.iter().enumerate() {
        if merged.iter().any(|m| covers(m, t)) {
            continue;
        }
        if all[i + 1..].iter().any(|t2| t2 != t && covers(t2, t)) {
            continue;
        }
        merged.push((*t).clone());
    }
    merged
}

/// Whether every toleration is covered by some whitelist entry (an empty
/// whitelist allows everything).
pub fn allowed_by(tolerations: &[Value], whitelist: &[Value]) -> bool {
    whitelist.is_empty()
        || tolerations
            .iter()
            .all(|t| whitelist.iter().any(|w| covers(w, t)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn broader_tolerations_cover_narrower_ones() {
        let any_key = json!({"operator": "Exists"});
        let gpu =
            json!({"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"});
        assert!(covers(&any_key, &gpu));
        assert!(!covers(&gpu, &any_key));
        let short = json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60});
        let long = json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 600});
        assert!(covers(&long, &short));
        assert!(!covers(&short, &long));
        let one = |t: &Value| vec![t.clone()];
        assert_eq!(merge(&one(&gpu), &one(&any_key)), one(&any_key));
        assert_eq!(merge(&one(&gpu), &one(&gpu)), one(&gpu));
        assert!(allowed_by(
            &one(&gpu),
            &[json!({"key": "gpu", "operator": "Exists"})]
        ));
        assert!(!allowed_by(
            &[gpu],
            &[json!({"key": "other", "operator": "Exists"})]
        ));
    }
}
