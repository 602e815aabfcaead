use super::*;
use serde_json::json;

const LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const QNAME_ERR: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn obj(v: serde_json::Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

#[test]
fn dns1123_label() {
    for ok in ["a", "0", "a-b", "abc123", &"a".repeat(63)] {
        assert!(is_dns1123_label(ok).is_empty(), "{ok}");
    }
    assert_eq!(is_dns1123_label(""), [LABEL_ERR]);
    assert_eq!(is_dns1123_label("-a"), [LABEL_ERR]);
    assert_eq!(is_dns1123_label("a-"), [LABEL_ERR]);
    assert_eq!(is_dns1123_label("A"), [LABEL_ERR]);
    assert_eq!(is_dns1123_label("a_b"), [LABEL_ERR]);
    assert_eq!(is_dns1123_label("é"), [LABEL_ERR]);
    assert_eq!(is_dns1123_label("a.b"), ["must not contain dots"]);
    assert_eq!(
        is_dns1123_label(&"a".repeat(64)),
        ["must be no more than 63 characters"]
    );
    assert_eq!(
        is_dns1123_label(&"A".repeat(64)),
        ["must be no more than 63 characters", LABEL_ERR]
    );
}

#[test]
fn dns1123_subdomain() {
    let max = format!(
        "{}.{}.{}.{}",
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(61)
    );
    assert_eq!(max.len(), 253);
    for ok in ["a", "a.b", "a-b.c-d", "0.0", max.as_str(), &"x".repeat(100)] {
        assert!(is_dns1123_subdomain(ok).is_empty(), "{ok}");
    }
    for bad in ["", ".", "a.", ".a", "a..b", "A", "a_b", "a.-b", "日本"] {
        assert_eq!(is_dns1123_subdomain(bad), [SUBDOMAIN_ERR], "{bad}");
    }
    assert_eq!(
        is_dns1123_subdomain(&format!("{max}a")),
        ["must be no more than 253 characters"]
    );
    assert_eq!(
        is_dns1123_subdomain(&"-".repeat(254)),
        ["must be no more than 253 characters", SUBDOMAIN_ERR]
    );
}

#[test]
fn qualified_name() {
    for ok in [
        "a",
        "A",
        "a.b_c-D",
        "example.com/MyName",
        "k8s.io/x",
        &"n".repeat(63),
        &format!("{}/{}", "p".repeat(253), "n".repeat(63)),
    ] {
        assert!(is_qualified_name(ok).is_empty(), "{ok}");
    }
    assert_eq!(
        is_qualified_name(""),
        ["name part must be non-empty", QNAME_ERR]
    );
    assert_eq!(is_qualified_name("-a"), [QNAME_ERR]);
    assert_eq!(is_qualified_name("a b"), [QNAME_ERR]);
    assert_eq!(
        is_qualified_name(&"n".repeat(64)),
        ["name part must be no more than 63 characters"]
    );
    assert_eq!(is_qualified_name("/a"), ["prefix part must be non-empty"]);
    assert_eq!(
        is_qualified_name("a/"),
        ["name part must be non-empty", QNAME_ERR]
    );
    assert_eq!(
        is_qualified_name("Example.com/a"),
        [format!("prefix part {SUBDOMAIN_ERR}")]
    );
    assert_eq!(
        is_qualified_name(&format!("{}/a", "p".repeat(254))),
        ["prefix part must be no more than 253 characters"]
    );
    assert_eq!(
        is_qualified_name("a/b/c"),
        ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    );
    assert_eq!(is_qualified_name("é"), [QNAME_ERR]);
}

#[test]
fn label_value() {
    for ok in ["", "a", "A-b_c.9", &"v".repeat(63)] {
        assert!(is_valid_label_value(ok).is_empty(), "{ok:?}");
    }
    assert_eq!(is_valid_label_value("-a"), [VALUE_ERR]);
    assert_eq!(is_valid_label_value("a/b"), [VALUE_ERR]);
    assert_eq!(is_valid_label_value("é"), [VALUE_ERR]);
    assert_eq!(
        is_valid_label_value(&"v".repeat(64)),
        ["must be no more than 63 characters"]
    );
    assert_eq!(
        is_valid_label_value(&"-".repeat(64)),
        ["must be no more than 63 characters", VALUE_ERR]
    );
    // 32 two-byte chars are 64 bytes: kube counts bytes.
    assert_eq!(
        is_valid_label_value(&"é".repeat(32))[0],
        "must be no more than 63 characters"
    );
}

#[test]
fn path_segment_names() {
    assert!(is_valid_path_segment_name("anything:Goes_here").is_empty());
    assert_eq!(is_valid_path_segment_name("."), ["may not be '.'"]);
    assert_eq!(is_valid_path_segment_name(".."), ["may not be '..'"]);
    assert_eq!(
        is_valid_path_segment_name("a/b%c"),
        ["may not contain '/'", "may not contain '%'"]
    );
    assert!(is_valid_path_segment_prefix("..").is_empty());
    assert_eq!(is_valid_path_segment_prefix("a%"), ["may not contain '%'"]);
}

#[test]
fn object_meta_name_rules() {
    assert!(validate_object_meta_name("my-config.v1", NameRule::Dns1123Subdomain).is_empty());
    assert!(validate_object_meta_name("kube-system", NameRule::Dns1123Label).is_empty());
    assert!(validate_object_meta_name("Mixed:Case", NameRule::PathSegment).is_empty());

    let c = validate_object_meta_name("", NameRule::Dns1123Subdomain);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].reason, "FieldValueRequired");
    assert_eq!(c[0].field, "metadata.name");
    assert_eq!(
        c[0].message,
        "Required value: name or generateName is required"
    );

    let c = validate_object_meta_name("Bad_Name", NameRule::Dns1123Subdomain);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].field, "metadata.name");
    assert_eq!(
        c[0].message,
        format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_ERR}")
    );

    let c = validate_object_meta_name("a.b", NameRule::Dns1123Label);
    assert_eq!(
        c[0].message,
        "Invalid value: \"a.b\": must not contain dots"
    );

    let c = validate_object_meta_name("..", NameRule::PathSegment);
    assert_eq!(c[0].message, "Invalid value: \"..\": may not be '..'");

    let long = "a".repeat(254);
    let c = validate_object_meta_name(&long, NameRule::Dns1123Subdomain);
    assert_eq!(
        c[0].message,
        format!("Invalid value: \"{long}\": must be no more than 253 characters")
    );
    assert!(validate_object_meta_name(&"a".repeat(253), NameRule::Dns1123Subdomain).is_empty());
    assert!(validate_object_meta_name(&"a".repeat(63), NameRule::Dns1123Label).is_empty());
    assert_eq!(
        validate_object_meta_name(&"a".repeat(64), NameRule::Dns1123Label).len(),
        1
    );
}

#[test]
fn generate_name_prefix_rules() {
    assert!(validate_generate_name("", NameRule::Dns1123Subdomain).is_empty());
    assert!(validate_generate_name("web-", NameRule::Dns1123Subdomain).is_empty());
    assert!(validate_generate_name("web-", NameRule::Dns1123Label).is_empty());
    assert!(validate_generate_name("..", NameRule::PathSegment).is_empty());
    // A lone dash is not masked, so it stays invalid.
    let c = validate_generate_name("-", NameRule::Dns1123Subdomain);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].field, "metadata.generateName");
    assert_eq!(
        c[0].message,
        format!("Invalid value: \"-\": {SUBDOMAIN_ERR}")
    );
    // kube masks the dash together with the byte before it.
    assert!(validate_name("a.-", NameRule::Dns1123Subdomain, true).is_empty());
    assert!(validate_name("a-.-", NameRule::Dns1123Subdomain, true).is_empty());
    assert_eq!(
        validate_name("a-.-", NameRule::Dns1123Subdomain, false),
        [SUBDOMAIN_ERR]
    );
    assert_eq!(
        validate_name("é-", NameRule::Dns1123Label, true),
        [LABEL_ERR]
    );
    assert_eq!(
        validate_generate_name("Web-", NameRule::Dns1123Label)[0].message,
        format!("Invalid value: \"Web-\": {LABEL_ERR}")
    );
    assert_eq!(
        validate_generate_name("a/", NameRule::PathSegment)[0].message,
        "Invalid value: \"a/\": may not contain '/'"
    );
}

#[test]
fn generated_names() {
    for _ in 0..50 {
        let s = generate_name_suffix(&mut rand::thread_rng());
        assert_eq!(s.len(), 5);
        assert!(
            s.bytes().all(|b| GENERATED_SUFFIX_ALPHABET.contains(&b)),
            "{s}"
        );
    }
    let n = generate_name("web-", &mut rand::thread_rng());
    assert!(n.starts_with("web-") && n.len() == 9, "{n}");
    let n = generate_name(&"x".repeat(100), &mut rand::thread_rng());
    assert_eq!(n.len(), 63);
    assert!(is_dns1123_label(&n).is_empty());
    let n = generate_name(&format!("{}é", "x".repeat(57)), &mut rand::thread_rng());
    assert_eq!(n.len(), 62);
    assert!(n.starts_with(&"x".repeat(57)));
}

#[test]
fn labels_validation() {
    let ok = obj(json!({"app": "web", "example.com/tier": "", "v": "1.0"}));
    assert!(validate_labels(&ok, "metadata.labels").is_empty());

    let bad = obj(json!({"-k": "v", "k": "-v", "n": 3, "z": null}));
    let c = validate_labels(&bad, "metadata.labels");
    let msgs: Vec<&str> = c.iter().map(|c| c.message.as_str()).collect();
    assert_eq!(
        msgs,
        [
            format!("Invalid value: \"-k\": {QNAME_ERR}").as_str(),
            format!("Invalid value: \"-v\": {VALUE_ERR}").as_str(),
            "Invalid value: 3: label values must be strings",
            "Invalid value: null: label values must be strings",
        ]
    );
    assert!(c
        .iter()
        .all(|c| c.field == "metadata.labels" && c.reason == "FieldValueInvalid"));
}

#[test]
fn annotations_validation() {
    let ok = obj(json!({"Example.COM/Key": "any value at all: ünïcode", "a": ""}));
    assert!(validate_annotations(&ok, "metadata.annotations").is_empty());

    let bad = obj(json!({"a b": "x", "k": 1}));
    let c = validate_annotations(&bad, "metadata.annotations");
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].message, format!("Invalid value: \"a b\": {QNAME_ERR}"));
    assert_eq!(
        c[1].message,
        "Invalid value: 1: annotation values must be strings"
    );

    // Exactly at the limit is fine; one byte over is not.
    let at_limit = obj(json!({"k": "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES - 1)}));
    assert!(validate_annotations(&at_limit, "metadata.annotations").is_empty());
    let over = obj(json!({"k": "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES)}));
    let c = validate_annotations(&over, "metadata.annotations");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].reason, "FieldValueTooLong");
    assert_eq!(c[0].field, "metadata.annotations");
    assert_eq!(c[0].message, "Too long: may not be more than 262144 bytes");
}

#[test]
fn lowercasing_matches_go() {
    assert_eq!(go_to_lower("ABC-İ"), "abc-i");
}
