//! The protobuf form of `/openapi/v2` (gnostic's `openapi.v2.Document`),
//! which client-go's `OpenAPISchema()` — and so kubectl's v2 code paths
//! and tools such as Helm — ask for. Rendered from the JSON document.
//!
//! Field numbers are those of gnostic's OpenAPIv2.proto. Only what a
//! Kubernetes document uses is encoded; proto3 zero values are omitted.

use serde_json::Value;

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.varint(u64::from(field << 3 | 2));
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn str_of(&mut self, field: u32, v: &Value, key: &str) {
        if let Some(s) = v.get(key).and_then(Value::as_str) {
            self.string(field, s);
        }
    }

    fn strings(&mut self, field: u32, v: &Value, key: &str) {
        for s in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = s.as_str() {
                self.bytes(field, s.as_bytes());
            }
        }
    }

    fn boolean(&mut self, field: u32, b: bool) {
        if b {
            self.varint(u64::from(field << 3));
            self.varint(1);
        }
    }

    fn message(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }
}

/// A `NamedAny` (vendor extension or default): the value as YAML text.
fn named_any(name: &str, value: &Value) -> Msg {
    let mut any = Msg::default();
    any.string(2, &serde_yaml::to_string(value).unwrap_or_default());
    let mut m = Msg::default();
    m.string(1, name);
    m.message(2, any);
    m
}

fn extensions(out: &mut Msg, field: u32, v: &Value) {
    for (k, ext) in v.as_object().into_iter().flatten() {
        if k.starts_with("x-") {
            out.message(field, named_any(k, ext));
        }
    }
}

fn schema(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.str_of(1, v, "$ref");
    m.str_of(2, v, "format");
    m.str_of(4, v, "description");
    if let Some(d) = v.get("default") {
        let mut any = Msg::default();
        any.string(2, &serde_yaml::to_string(d).unwrap_or_default());
        m.message(5, any);
    }
    m.boolean(16, v.get("uniqueItems") == Some(&Value::Bool(true)));
    m.strings(19, v, "required");
    match v.get("additionalProperties") {
        Some(Value::Object(_)) => {
            let mut a = Msg::default();
            a.message(1, schema(&v["additionalProperties"]));
            m.message(21, a);
        }
        Some(Value::Bool(b)) => {
            let mut a = Msg::default();
            a.boolean(2, *b);
            m.message(21, a);
        }
        _ => {}
    }
    match v.get("type") {
        Some(Value::String(t)) => {
            let mut ty = Msg::default();
            ty.string(1, t);
            m.message(22, ty);
        }
        Some(Value::Array(_)) => {
            let mut ty = Msg::default();
            ty.strings(1, v, "type");
            m.message(22, ty);
        }
        _ => {}
    }
    if let Some(items) = v.get("items").filter(|i| i.is_object()) {
        let mut it = Msg::default();
        it.message(1, schema(items));
        m.message(23, it);
    }
    for s in v
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(24, schema(s));
    }
    if let Some(props) = v.get("properties").and_then(Value::as_object) {
        let mut p = Msg::default();
        for (name, s) in props {
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, schema(s));
            p.message(1, named);
        }
        m.message(25, p);
    }
    extensions(&mut m, 31, v);
    m
}

fn parameter(p: &Value) -> Msg {
    let location = p.get("in").and_then(Value::as_str).unwrap_or("");
    let mut param = Msg::default();
    if location == "body" {
        let mut body = Msg::default();
        body.str_of(1, p, "description");
        body.str_of(2, p, "name");
        body.string(3, location);
        body.boolean(4, p.get("required") == Some(&Value::Bool(true)));
        if let Some(s) = p.get("schema") {
            body.message(5, schema(s));
        }
        param.message(1, body);
    } else {
        // Query and path sub-schemas share their first fields; they differ
        // in where type and uniqueItems sit.
        let (which, type_field, unique_field) = match location {
            "path" => (4, 5, 19),
            _ => (3, 6, 20),
        };
        let mut sub = Msg::default();
        sub.boolean(1, p.get("required") == Some(&Value::Bool(true)));
        sub.string(2, location);
        sub.str_of(3, p, "description");
        sub.str_of(4, p, "name");
        sub.str_of(type_field, p, "type");
        sub.boolean(
            unique_field,
            p.get("uniqueItems") == Some(&Value::Bool(true)),
        );
        let mut non_body = Msg::default();
        non_body.message(which, sub);
        param.message(2, non_body);
    }
    let mut item = Msg::default();
    item.message(1, param);
    item
}

fn parameters(out: &mut Msg, field: u32, v: &Value) {
    for p in v
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.message(field, parameter(p));
    }
}

fn operation(op: &Value) -> Msg {
    let mut m = Msg::default();
    m.strings(1, op, "tags");
    m.str_of(3, op, "description");
    m.str_of(5, op, "operationId");
    m.strings(6, op, "produces");
    m.strings(7, op, "consumes");
    parameters(&mut m, 8, op);
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        let mut rs = Msg::default();
        for (code, r) in responses {
            let mut resp = Msg::default();
            resp.str_of(1, r, "description");
            if let Some(s) = r.get("schema") {
                let mut item = Msg::default();
                item.message(1, schema(s));
                resp.message(2, item);
            }
            let mut value = Msg::default();
            value.message(1, resp);
            let mut named = Msg::default();
            named.string(1, code);
            named.message(2, value);
            rs.message(1, named);
        }
        m.message(9, rs);
    }
    m.strings(10, op, "schemes");
    extensions(&mut m, 13, op);
    m
}

fn path_item(v: &Value) -> Msg {
    let mut m = Msg::default();
    for (method, field) in [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("patch", 8),
    ] {
        if let Some(op) = v.get(method) {
            m.message(field, operation(op));
        }
    }
    parameters(&mut m, 9, v);
    extensions(&mut m, 10, v);
    m
}

/// The protobuf encoding of a swagger 2.0 JSON document.
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut d = Msg::default();
    d.str_of(1, doc, "swagger");
    if let Some(info) = doc.get("info") {
        let mut i = Msg::default();
        i.str_of(1, info, "title");
        i.str_of(2, info, "version");
        d.message(2, i);
    }
    let mut paths = Msg::default();
    for (p, item) in doc
        .get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let mut named = Msg::default();
        named.string(1, p);
        named.message(2, path_item(item));
        paths.message(2, named);
    }
    d.message(8, paths);
    let mut defs = Msg::default();
    for (name, s) in doc
        .get("definitions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let mut named = Msg::default();
        named.string(1, name);
        named.message(2, schema(s));
        defs.message(1, named);
    }
    d.message(9, defs);
    for req in doc
        .get("security")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut r = Msg::default();
        for (name, scopes) in req.as_object().into_iter().flatten() {
            let mut arr = Msg::default();
            for s in scopes
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                arr.bytes(1, s.as_bytes());
            }
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, arr);
            r.message(1, named);
        }
        d.message(12, r);
    }
    if let Some(defs) = doc.get("securityDefinitions").and_then(Value::as_object) {
        let mut sd = Msg::default();
        for (name, def) in defs {
            let mut key = Msg::default();
            key.str_of(1, def, "type");
            key.str_of(2, def, "name");
            key.str_of(3, def, "in");
            key.str_of(4, def, "description");
            let mut item = Msg::default();
            item.message(2, key);
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, item);
            sd.message(1, named);
        }
        d.message(13, sd);
    }
    d.0
}
