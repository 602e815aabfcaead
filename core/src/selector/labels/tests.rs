use super::*;
use serde_json::json;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
    Requirement {
        key: key.into(),
        op,
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

fn parse_ok(s: &str) -> LabelSelector {
    match LabelSelector::parse(s) {
        Ok(sel) => sel,
        Err(e) => panic!("{s:?} failed: {e}"),
    }
}

fn parse_err(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(sel) => panic!("{s:?} unexpectedly parsed as {sel:?}"),
        Err(e) => e,
    }
}

const KEY_REGEX_ERR: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_REGEX_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

#[test]
fn parses_every_operator() {
    let cases: &[(&str, Requirement)] = &[
        ("a=1", req("a", Operator::Equals, &["1"])),
        ("a==1", req("a", Operator::DoubleEquals, &["1"])),
        ("a!=1", req("a", Operator::NotEquals, &["1"])),
        ("a in (2,1,1)", req("a", Operator::In, &["1", "2"])),
        ("a notin (x)", req("a", Operator::NotIn, &["x"])),
        ("a", req("a", Operator::Exists, &[])),
        ("!a", req("a", Operator::DoesNotExist, &[])),
        ("a>5", req("a", Operator::GreaterThan, &["5"])),
        ("a<5", req("a", Operator::LessThan, &["5"])),
    ];
    for (input, want) in cases {
        assert_eq!(
            parse_ok(input).requirements(),
            std::slice::from_ref(want),
            "{input}"
        );
        assert_eq!(
            parse_ok(input).to_string().replace("(2,1,1)", "(1,2)"),
            input.replace("(2,1,1)", "(1,2)")
        );
    }
}

#[test]
fn whitespace_and_sorting() {
    let s = parse_ok("  z = 1 ,\ty\tin\t( b , a ) ,\r\n!x  ");
    assert_eq!(s.to_string(), "!x,y in (a,b),z=1");
    assert_eq!(s.requirements().len(), 3);
}

#[test]
fn empty_values() {
    assert_eq!(
        parse_ok("a=").requirements(),
        &[req("a", Operator::Equals, &[""])]
    );
    assert_eq!(
        parse_ok("a=,b").requirements()[0],
        req("a", Operator::Equals, &[""])
    );
    assert_eq!(
        parse_ok("a in ()").requirements(),
        &[req("a", Operator::In, &[""])]
    );
    assert_eq!(
        parse_ok("a in (,)").requirements(),
        &[req("a", Operator::In, &[""])]
    );
    assert_eq!(
        parse_ok("a in (,x)").requirements(),
        &[req("a", Operator::In, &["", "x"])]
    );
    assert_eq!(
        parse_ok("a in (x,)").requirements(),
        &[req("a", Operator::In, &["", "x"])]
    );
    assert_eq!(
        parse_ok("a in (x,,y)").requirements(),
        &[req("a", Operator::In, &["", "x", "y"])]
    );
    assert_eq!(
        parse_ok("x in (foo,,baz),y,z notin ()").to_string(),
        "x in (,baz,foo),y,z notin ()"
    );
}

#[test]
fn keywords_as_keys_and_values() {
    assert_eq!(
        parse_ok("in in (in,notin)").requirements(),
        &[req("in", Operator::In, &["in", "notin"])]
    );
    assert_eq!(
        parse_ok("notin=in").requirements(),
        &[req("notin", Operator::Equals, &["in"])]
    );
    assert_eq!(
        parse_ok("notin").requirements(),
        &[req("notin", Operator::Exists, &[])]
    );
}

#[test]
fn empty_input_is_everything() {
    for s in ["", "   ", "\t\n"] {
        let sel = parse_ok(s);
        assert!(sel.is_empty());
        assert!(sel.matches(&labels(&[])));
        assert_eq!(sel.to_string(), "");
    }
    assert!(LabelSelector::everything().is_empty());
}

#[test]
fn nothing_matches_nothing() {
    let n = LabelSelector::nothing();
    assert!(!n.is_empty());
    assert!(n.matches_nothing());
    assert!(!n.matches(&labels(&[])));
    assert_eq!(n.to_string(), "");
}

#[test]
fn syntax_errors() {
    let cases = [
        ("a=1,", "found '', expected: identifier after ','"),
        ("a=1,=", "found '=', expected: identifier after ','"),
        (
            ",a",
            "found ',', expected: !, identifier, or 'end of string'",
        ),
        (
            "=a",
            "found '=', expected: !, identifier, or 'end of string'",
        ),
        (
            "!=a",
            "found '!=', expected: !, identifier, or 'end of string'",
        ),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "a gt 1",
            "unable to parse requirement: found 'gt', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("a=1 b", "found 'b', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        (
            "!",
            "unable to parse requirement: found '', expected: identifier",
        ),
        (
            "!!a",
            "unable to parse requirement: found '!', expected: identifier",
        ),
        (
            "a in",
            "unable to parse requirement: found '' expected: '('",
        ),
        (
            "a in b",
            "unable to parse requirement: found 'b' expected: '('",
        ),
        (
            "a in (b",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "a in (b c)",
            "unable to parse requirement: found 'c', expected: ',' or ')'",
        ),
        (
            "a in (=)",
            "unable to parse requirement: found '=', expected: ',', ')' or identifier",
        ),
        (
            "a in (b,=)",
            "unable to parse requirement: found '=', expected: ',', or identifier",
        ),
        (
            "a===b",
            "unable to parse requirement: found '=', expected: identifier",
        ),
        (
            "a=(",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        ("a in (b))", "found ')', expected: ',' or 'end of string'"),
    ];
    for (input, want) in cases {
        assert_eq!(parse_err(input), want, "input {input:?}");
    }
}

#[test]
fn key_validation_errors() {
    assert_eq!(
        parse_err("a/b/c ?=? def"),
        "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    );
    assert_eq!(
        parse_err("app:monolith"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": {KEY_REGEX_ERR}"
        )
    );
    let long = "k".repeat(64);
    assert_eq!(
        parse_err(&long),
        format!("unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 characters")
    );
    let ok = "k".repeat(63);
    assert_eq!(parse_ok(&ok).requirements()[0].key, ok);
    let prefix = format!("{}/k", "p".repeat(253));
    assert_eq!(parse_ok(&prefix).requirements()[0].key, prefix);
}

#[test]
fn long_and_malformed_key_reports_both_problems_joined_by_semicolon() {
    let key = format!("-{}", "k".repeat(63));
    assert_eq!(
        parse_err(&key),
        format!("unable to parse requirement: <nil>: Invalid value: \"{key}\": name part must be no more than 63 characters; {KEY_REGEX_ERR}")
    );
}

#[test]
fn value_validation_errors() {
    assert_eq!(
        parse_err("x=-bad"),
        format!(
            "unable to parse requirement: values[0][x]: Invalid value: \"-bad\": {VALUE_REGEX_ERR}"
        )
    );
    assert_eq!(
        parse_err("x in (ok,-bad)"),
        format!(
            "unable to parse requirement: values[0][x]: Invalid value: \"-bad\": {VALUE_REGEX_ERR}"
        )
    );
    let long = "v".repeat(64);
    assert_eq!(
        parse_err(&format!("x={long}")),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 characters")
    );
    assert!(LabelSelector::parse(&format!("x={}", "v".repeat(63))).is_ok());
}

#[test]
fn integer_operator_errors() {
    assert_eq!(
        parse_err("x>a"),
        "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
    assert_eq!(
        parse_err("x<-1"),
        format!(
            "unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE_REGEX_ERR}"
        )
    );
    assert_eq!(
        parse_err("x>-a"),
        format!("unable to parse requirement: [values[0]: Invalid value: \"-a\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-a\": {VALUE_REGEX_ERR}]")
    );
    assert_eq!(
        parse_err("x>"),
        "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}

#[test]
fn unicode_input() {
    assert_eq!(
        parse_err("é=1"),
        format!("unable to parse requirement: <nil>: Invalid value: \"é\": {KEY_REGEX_ERR}")
    );
    assert_eq!(
        parse_err("a=日本"),
        format!(
            "unable to parse requirement: values[0][a]: Invalid value: \"日本\": {VALUE_REGEX_ERR}"
        )
    );
    assert_eq!(
        parse_err("a\u{200b}"),
        format!("unable to parse requirement: <nil>: Invalid value: \"a\\u200b\": {KEY_REGEX_ERR}")
    );
}

#[test]
fn nul_byte_handling_follows_kube() {
    // At the start of a token a NUL reads as end of input...
    assert_eq!(parse_ok("a=1 \0 garbage ((").to_string(), "a=1");
    assert_eq!(
        parse_err("a=1, \0b"),
        "found '', expected: identifier after ','"
    );
    // ...and right after a symbol it is swallowed with the symbol.
    assert_eq!(parse_ok("a=1,\0b").to_string(), "a=1,b");
    // ...inside a word it only ends that word.
    assert_eq!(parse_ok("a\0,b").to_string(), "a,b");
    assert_eq!(
        parse_err("a\0b"),
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    );
}

#[test]
fn matching_semantics() {
    let l = labels(&[("env", "prod"), ("tier", "web"), ("n", "10"), ("empty", "")]);
    let yes = [
        "env=prod",
        "env==prod",
        "env!=dev",
        "missing!=x",
        "env in (dev,prod)",
        "env notin (dev)",
        "missing notin (x)",
        "env",
        "!missing",
        "n>9",
        "n<11",
        "empty=",
        "empty in ()",
        "env,tier=web",
    ];
    let no = [
        "env=dev",
        "missing=x",
        "env!=prod",
        "env in (dev)",
        "missing in (x)",
        "env notin (prod)",
        "missing",
        "!env",
        "n>10",
        "n<10",
        "missing>1",
        "env>1",
        "env=prod,tier=db",
        "empty!=",
    ];
    for s in yes {
        assert!(parse_ok(s).matches(&l), "{s} should match");
    }
    for s in no {
        assert!(!parse_ok(s).matches(&l), "{s} should not match");
    }
}

#[test]
fn labels_impls() {
    let sel = parse_ok("a=1,!b");
    let v: Vec<(String, String)> = vec![("c".into(), "3".into()), ("a".into(), "1".into())];
    assert!(sel.matches(&v));
    assert!(sel.matches(v.as_slice()));
    let h: HashMap<String, String> = v.iter().cloned().collect();
    assert!(sel.matches(&h));
    let with_b: Vec<(String, String)> = vec![("b".into(), "".into()), ("a".into(), "1".into())];
    assert!(!sel.matches(&with_b));
}

#[test]
fn requires_exact_match() {
    let s = parse_ok("a=1,b in (x),c in (x,y),d!=1,e");
    assert_eq!(s.requires_exact_match("a"), Some("1"));
    assert_eq!(s.requires_exact_match("b"), Some("x"));
    assert_eq!(s.requires_exact_match("c"), None);
    assert_eq!(s.requires_exact_match("d"), None);
    assert_eq!(s.requires_exact_match("e"), None);
    assert_eq!(s.requires_exact_match("z"), None);
}

#[test]
fn requirement_new_errors() {
    assert_eq!(
        Requirement::new("a", Operator::In, vec![]).unwrap_err(),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        Requirement::new("a", Operator::Exists, vec!["x".into()]).unwrap_err(),
        "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
    );
    assert_eq!(
        Requirement::new("a", Operator::Equals, vec!["x".into(), "y".into()]).unwrap_err(),
        "values: Invalid value: []string{\"x\", \"y\"}: exact-match compatibility requires one single value"
    );
    assert_eq!(
        Requirement::new("a", Operator::GreaterThan, vec!["1".into(), "2".into()]).unwrap_err(),
        "values: Invalid value: []string{\"1\", \"2\"}: for 'Gt', 'Lt' operators, exactly one value is required"
    );
    assert_eq!(
        Requirement::new("-a", Operator::Exists, vec![]).unwrap_err(),
        format!("key: Invalid value: \"-a\": {KEY_REGEX_ERR}")
    );
    let r = Requirement::new(
        "a",
        Operator::NotIn,
        vec!["b".into(), "a".into(), "b".into()],
    )
    .unwrap();
    assert_eq!(r.values, ["a", "b"]);
    assert_eq!(r.to_string(), "a notin (a,b)");
    assert_eq!(Operator::GreaterThan.as_str(), "gt");
    assert_eq!(Operator::DoesNotExist.as_str(), "!");
}

#[test]
fn from_metav1_selectors() {
    assert!(LabelSelector::from_metav1(&json!(null))
        .unwrap()
        .matches_nothing());
    assert!(LabelSelector::from_metav1(&json!({})).unwrap().is_empty());
    assert!(
        LabelSelector::from_metav1(&json!({"matchLabels": {}, "matchExpressions": []}))
            .unwrap()
            .is_empty()
    );
    let sel = LabelSelector::from_metav1(&json!({
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "c", "operator": "In", "values": ["y", "x"]},
            {"key": "d", "operator": "NotIn", "values": ["z"]},
            {"key": "e", "operator": "Exists"},
            {"key": "f", "operator": "DoesNotExist", "values": null},
        ]
    }))
    .unwrap();
    assert_eq!(sel.to_string(), "a=1,b=2,c in (x,y),d notin (z),e,!f");
    assert!(sel.matches(&labels(&[("a", "1"), ("b", "2"), ("c", "x"), ("e", "")])));
    assert!(!sel.matches(&labels(&[
        ("a", "1"),
        ("b", "2"),
        ("c", "x"),
        ("e", ""),
        ("f", "")
    ])));
}

#[test]
fn from_metav1_errors() {
    assert_eq!(
        LabelSelector::from_metav1(
            &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
        )
        .unwrap_err(),
        "\"Gt\" is not a valid label selector operator"
    );
    assert_eq!(
        LabelSelector::from_metav1(&json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).unwrap_err(),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        LabelSelector::from_metav1(&json!({"matchLabels": {"a": "-x"}})).unwrap_err(),
        format!("values[0][a]: Invalid value: \"-x\": {VALUE_REGEX_ERR}")
    );
    assert!(LabelSelector::from_metav1(&json!({"matchLabels": {"a": 1}})).is_err());
    assert!(LabelSelector::from_metav1(&json!({"matchLabels": []})).is_err());
    assert!(LabelSelector::from_metav1(&json!({"matchExpressions": {}})).is_err());
    assert!(LabelSelector::from_metav1(&json!({"matchExpressions": [1]})).is_err());
    assert!(LabelSelector::from_metav1(&json!({"matchExpressions": [{"key": 1}]})).is_err());
    assert!(LabelSelector::from_metav1(
        &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]})
    )
    .is_err());
    assert!(LabelSelector::from_metav1(
        &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]})
    )
    .is_err());
    assert!(LabelSelector::from_metav1(&json!("a=b")).is_err());
}
