use super::*;

fn json(e: &ApiError) -> String {
    String::from_utf8(e.to_status_json()).unwrap()
}

fn parsed(e: &ApiError) -> serde_json::Value {
    serde_json::from_slice(&e.to_status_json()).unwrap()
}

#[test]
fn qualified_names() {
    assert_eq!(qualified_resource("", "configmaps"), "configmaps");
    assert_eq!(
        qualified_resource("apps", "deployments"),
        "deployments.apps"
    );
    assert_eq!(qualified_kind("apps", "Deployment"), "Deployment.apps");
}

#[test]
fn not_found_body_matches_kube_byte_for_byte() {
    let e = ApiError::not_found("", "configmaps", "x");
    assert_eq!(
        json(&e),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
    );
    assert_eq!(e.to_string(), "configmaps \"x\" not found");
    let e = ApiError::not_found("apps", "deployments", "web");
    assert_eq!(e.message, "deployments.apps \"web\" not found");
    assert_eq!(parsed(&e)["details"]["group"], "apps");
}

#[test]
fn already_exists_and_conflicts() {
    let e = ApiError::already_exists("", "configmaps", "x");
    assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(e.message, "configmaps \"x\" already exists");

    let e = ApiError::conflict_stale("", "configmaps", "x");
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        e.message,
        "Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let e = ApiError::conflict("apps", "deployments", "d", "boom");
    assert_eq!(
        e.message,
        "Operation cannot be fulfilled on deployments.apps \"d\": boom"
    );

    let e = ApiError::generate_name_conflict("", "configmaps", "x-abcde", 1);
    assert_eq!(
        e.message,
        "configmaps \"x-abcde\" already exists, the server was not able to generate a unique name for the object"
    );
    assert_eq!(parsed(&e)["details"]["retryAfterSeconds"], 1);
}

#[test]
fn invalid_single_and_aggregated() {
    let one = vec![field_invalid("metadata.name", "A", "bad")];
    let e = ApiError::invalid("", "ConfigMap", "A", one);
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "ConfigMap \"A\" is invalid: metadata.name: Invalid value: \"A\": bad"
    );
    assert_eq!(
        json(&e),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"A\" is invalid: metadata.name: Invalid value: \"A\": bad","reason":"Invalid","details":{"name":"A","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"A\": bad","field":"metadata.name"}]},"code":422}"#
    );

    let many = vec![
        field_required("data", ""),
        field_forbidden("spec.x", "no"),
        field_required("data", ""),
    ];
    let e = ApiError::invalid("apps", "Deployment", "d", many);
    assert_eq!(
        e.message,
        "Deployment.apps \"d\" is invalid: [data: Required value, spec.x: Forbidden: no]"
    );
    assert_eq!(e.details.as_ref().unwrap().causes.len(), 3);

    let e = ApiError::invalid("", "ConfigMap", "x", vec![]);
    assert_eq!(e.message, "ConfigMap \"x\" is invalid");
    assert_eq!(
        parsed(&e)["details"],
        serde_json::json!({"name": "x", "kind": "ConfigMap"})
    );
}

#[test]
fn method_and_media_type_errors() {
    let e = ApiError::method_not_supported("", "bindings", "list");
    assert_eq!((e.code, e.reason.as_str()), (405, "MethodNotAllowed"));
    assert_eq!(
        e.message,
        "list is not supported on resources of kind \"bindings\""
    );
    assert_eq!(
        parsed(&e)["details"],
        serde_json::json!({"kind": "bindings"})
    );

    let e = ApiError::not_acceptable(&["application/json", "application/yaml"]);
    assert_eq!((e.code, e.reason.as_str()), (406, "NotAcceptable"));
    assert_eq!(
        e.message,
        "only the following media types are accepted: application/json, application/yaml"
    );
    assert!(parsed(&e).get("details").is_none());

    let e = ApiError::unsupported_media_type(&[
        "application/json-patch+json",
        "application/merge-patch+json",
    ]);
    assert_eq!((e.code, e.reason.as_str()), (415, "UnsupportedMediaType"));
    assert_eq!(
        e.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json"
    );
}

#[test]
fn simple_constructors() {
    let cases = [
        (ApiError::bad_request("nope"), 400, "BadRequest", "nope"),
        (
            ApiError::unauthorized("Unauthorized"),
            401,
            "Unauthorized",
            "Unauthorized",
        ),
        (
            ApiError::unauthorized(""),
            401,
            "Unauthorized",
            "not authorized",
        ),
        (
            ApiError::request_entity_too_large("limit is 3145728"),
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        ),
        (
            ApiError::resource_expired("too old"),
            410,
            "Expired",
            "too old",
        ),
        (
            ApiError::too_old_resource_version(5, 10),
            410,
            "Expired",
            "too old resource version: 5 (10)",
        ),
        (ApiError::gone("gone"), 410, "Gone", "gone"),
        (
            ApiError::service_unavailable("later"),
            503,
            "ServiceUnavailable",
            "later",
        ),
        (
            ApiError::internal("disk on fire"),
            500,
            "InternalError",
            "Internal error occurred: disk on fire",
        ),
        (
            ApiError::timeout("slow", 0),
            504,
            "Timeout",
            "Timeout: slow",
        ),
        (
            ApiError::too_many_requests("busy", 1),
            429,
            "TooManyRequests",
            "busy",
        ),
        (ApiError::new(418, "", "teapot"), 418, "", "teapot"),
    ];
    for (e, code, reason, msg) in cases {
        assert_eq!(
            (e.code, e.reason.as_str(), e.message.as_str()),
            (code, reason, msg)
        );
    }
}

#[test]
fn details_presence_follows_kube() {
    // Timeout always carries details, empty when there is no retry hint.
    assert!(json(&ApiError::timeout("x", 0)).contains(r#""details":{},"code":504"#));
    assert!(json(&ApiError::timeout("x", 3)).contains(r#""details":{"retryAfterSeconds":3}"#));
    assert!(
        json(&ApiError::too_many_requests("x", 2)).contains(r#""details":{"retryAfterSeconds":2}"#)
    );
    assert!(!json(&ApiError::bad_request("x")).contains("details"));
    assert_eq!(
        json(&ApiError::internal("x")),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: x","reason":"InternalError","details":{"causes":[{"message":"x"}]},"code":500}"#
    );
    // Empty reason and message are omitted like Go's omitempty.
    assert_eq!(
        json(&ApiError::new(500, "", "")),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500}"#
    );
}

#[test]
fn too_large_resource_version_matches_storage_error() {
    let e = ApiError::too_large_resource_version(10, 5, 1);
    assert_eq!(
        json(&e),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 10, current: 5","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#
    );
}

#[test]
fn server_timeout() {
    let e = ApiError::server_timeout("", "pods", "get", 2);
    assert_eq!((e.code, e.reason.as_str()), (500, "ServerTimeout"));
    assert_eq!(
        e.message,
        "The get operation against pods could not be completed at this time, please try again."
    );
    assert_eq!(
        parsed(&e)["details"],
        serde_json::json!({"name": "get", "kind": "pods", "retryAfterSeconds": 2})
    );
}

#[test]
fn forbidden_variants() {
    let reason = forbidden_resource_reason("system:anonymous", "get", "", "configmaps", "default");
    assert_eq!(
        reason,
        "User \"system:anonymous\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    let e = ApiError::forbidden("", "configmaps", "x", &reason);
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        e.message,
        format!("configmaps \"x\" is forbidden: {reason}")
    );

    let reason = forbidden_resource_reason("bob", "list", "apps", "deployments/scale", "");
    assert_eq!(
        reason,
        "User \"bob\" cannot list resource \"deployments/scale\" in API group \"apps\" at the cluster scope"
    );
    let e = ApiError::forbidden("apps", "deployments", "", &reason);
    assert_eq!(
        e.message,
        format!("deployments.apps is forbidden: {reason}")
    );

    let reason = forbidden_path_reason("bob", "get", "/a<b>&c");
    assert_eq!(reason, "User \"bob\" cannot get path \"/a&lt;b&gt;&amp;c\"");
    let e = ApiError::forbidden("", "", "", &reason);
    assert_eq!(e.message, format!("forbidden: {reason}"));
    assert!(json(&e).contains(r#""details":{},"code":403"#));
}

#[test]
fn success_status() {
    assert_eq!(
        String::from_utf8(success_status_json("", "configmaps", "x", "u-1")).unwrap(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"x","kind":"configmaps","uid":"u-1"}}"#
    );
    assert_eq!(
        String::from_utf8(success_status_json("apps", "deployments", "d", "")).unwrap(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"d","group":"apps","kind":"deployments"}}"#
    );
}

#[test]
fn json_escaping_is_go_compatible() {
    let e = ApiError::bad_request("<a> & \"b\" \\ \n\t\r\u{8}\u{c}\u{1}\u{2028}\u{2029} é \u{7f}");
    let body = json(&e);
    assert!(
        body.contains(
            r#""message":"\u003ca\u003e \u0026 \"b\" \\ \n\t\r\b\f\u0001\u2028\u2029 é "#
        ),
        "{body}"
    );
    assert_eq!(parsed(&e)["message"], e.message.as_str());
}

#[test]
fn go_quote_matches_strconv_quote() {
    assert_eq!(go_quote("x"), "\"x\"");
    assert_eq!(go_quote(""), "\"\"");
    assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
    assert_eq!(
        go_quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"),
        r#""\a\b\f\n\r\t\v""#
    );
    assert_eq!(go_quote("\u{0}\u{1f}\u{7f}"), r#""\x00\x1f\x7f""#);
    assert_eq!(go_quote("é日本🎉"), "\"é日本🎉\"");
    assert_eq!(
        go_quote("\u{85}\u{a0}\u{200b}\u{feff}"),
        r#""\u0085\u00a0\u200b\ufeff""#
    );
    assert_eq!(
        go_quote("\u{e000}\u{10fffd}\u{e0001}"),
        r#""\ue000\U0010fffd\U000e0001""#
    );
    assert_eq!(go_quote("\u{fffe}\u{fdd0}"), r#""\ufffe\ufdd0""#);
}

#[test]
fn aggregate_messages_folds_like_kube() {
    assert_eq!(aggregate_messages(&[]), None);
    assert_eq!(aggregate_messages(&["a".into()]), Some("a".into()));
    assert_eq!(
        aggregate_messages(&["a".into(), "a".into()]),
        Some("a".into())
    );
    assert_eq!(
        aggregate_messages(&["a".into(), "b".into(), "a".into()]),
        Some("[a, b]".into())
    );
}

#[test]
fn field_error_helpers() {
    let c = field_invalid("metadata.name", "Bad", "detail");
    assert_eq!(
        (c.reason.as_str(), c.field.as_str(), c.message.as_str()),
        (
            "FieldValueInvalid",
            "metadata.name",
            "Invalid value: \"Bad\": detail"
        )
    );
    assert_eq!(field_invalid("f", "v", "").message, "Invalid value: \"v\"");
    assert_eq!(
        field_invalid_raw("f", "3", "too big").message,
        "Invalid value: 3: too big"
    );
    let c = field_required("metadata.name", "name or generateName is required");
    assert_eq!(c.reason, "FieldValueRequired");
    assert_eq!(
        c.message,
        "Required value: name or generateName is required"
    );
    assert_eq!(field_required("x", "").message, "Required value");
    let c = field_not_supported("spec.type", "Foo", &["A", "B"]);
    assert_eq!(c.reason, "FieldValueNotSupported");
    assert_eq!(
        c.message,
        "Unsupported value: \"Foo\": supported values: \"A\", \"B\""
    );
    assert_eq!(
        field_not_supported("f", "x", &[]).message,
        "Unsupported value: \"x\""
    );
    let c = field_too_long("metadata.annotations", 262144);
    assert_eq!(c.reason, "FieldValueTooLong");
    assert_eq!(c.message, "Too long: may not be more than 262144 bytes");
    assert_eq!(
        field_too_long("f", 1).message,
        "Too long: may not be more than 1 byte"
    );
    let c = field_forbidden("spec", "");
    assert_eq!(
        (c.reason.as_str(), c.message.as_str()),
        ("FieldValueForbidden", "Forbidden")
    );
    let c = field_duplicate("spec.ports[1]", "80");
    assert_eq!(
        (c.reason.as_str(), c.message.as_str()),
        ("FieldValueDuplicate", "Duplicate value: \"80\"")
    );
    let c = field_not_found("spec.x", "y");
    assert_eq!(
        (c.reason.as_str(), c.message.as_str()),
        ("FieldValueNotFound", "Not found: \"y\"")
    );
    assert_eq!(c.error_string(), "spec.x: Not found: \"y\"");
}

#[test]
fn derived_serialize_skips_empty_fields() {
    let c = StatusCause {
        reason: "R".into(),
        ..StatusCause::default()
    };
    assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"reason":"R"}"#);
    let d = StatusDetails {
        name: "n".into(),
        retry_after_seconds: Some(0),
        ..StatusDetails::default()
    };
    assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"name":"n"}"#);
    let d = StatusDetails {
        retry_after_seconds: Some(4),
        ..StatusDetails::default()
    };
    assert_eq!(
        serde_json::to_string(&d).unwrap(),
        r#"{"retryAfterSeconds":4}"#
    );
}

#[test]
fn error_trait_is_usable() {
    let e: Box<dyn std::error::Error> = Box::new(ApiError::gone("bye"));
    assert_eq!(e.to_string(), "bye");
}
