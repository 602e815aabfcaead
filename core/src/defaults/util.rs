//! Small helpers for writing defaults into JSON objects.

use serde_json::{Map, Value};

/// Sets `key` when it is absent or null.
pub fn set(obj: &mut Value, key: &str, value: impl Into<Value>) {
    if let Some(m) = obj.as_object_mut() {
        set_in(m, key, value);
    }
}

pub fn set_in(m: &mut Map<String, Value>, key: &str, value: impl Into<Value>) {
    match m.get(key) {
        None | Some(Value::Null) => {
            m.insert(key.to_string(), value.into());
        }
        _ => {}
    }
}

/// The object under `key`, created empty when absent (None when `obj` is
/// not an object or the key holds a non-object).
pub fn child<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let m = obj.as_object_mut()?;
    if matches!(m.get(key), None | Some(Value::Null)) {
        m.insert(key.to_string(), Value::Object(Map::new()));
    }
    m.get_mut(key).filter(|v| v.is_object())
}

/// Each object of the list under `key`, if there is one.
pub fn each<'a>(obj: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|v| v.is_object())
}

pub fn str_of<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}
