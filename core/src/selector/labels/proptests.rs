//! Property tests: the parser plus `matches` against a tiny reference
//! evaluator, and `Display` -> `parse` round trips.

use super::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum RefOp {
    Eq,
    EqEq,
    Ne,
    In,
    NotIn,
    Exists,
    NotExists,
    Gt,
    Lt,
}

#[derive(Debug, Clone)]
struct RefReq {
    key: String,
    op: RefOp,
    values: Vec<String>,
}

fn ref_key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "example.com/d", "in"]).prop_map(String::from)
}

fn ref_value() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["", "1", "2", "10", "x", "in", "notin", "A.b_c-9"])
        .prop_map(String::from)
}

fn ref_int() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["0", "1", "2", "10", "007"]).prop_map(String::from)
}

fn ref_req() -> impl Strategy<Value = RefReq> {
    let one = |op: RefOp| {
        (ref_key(), ref_value()).prop_map(move |(key, v)| RefReq {
            key,
            op: op.clone(),
            values: vec![v],
        })
    };
    let many = |op: RefOp| {
        (ref_key(), prop::collection::vec(ref_value(), 1..4)).prop_map(move |(key, values)| {
            RefReq {
                key,
                op: op.clone(),
                values,
            }
        })
    };
    let none = |op: RefOp| {
        ref_key().prop_map(move |key| RefReq {
            key,
            op: op.clone(),
            values: vec![],
        })
    };
    let int = |op: RefOp| {
        (ref_key(), ref_int()).prop_map(move |(key, v)| RefReq {
            key,
            op: op.clone(),
            values: vec![v],
        })
    };
    prop_oneof![
        one(RefOp::Eq),
        one(RefOp::EqEq),
        one(RefOp::Ne),
        many(RefOp::In),
        many(RefOp::NotIn),
        none(RefOp::Exists),
        none(RefOp::NotExists),
        int(RefOp::Gt),
        int(RefOp::Lt),
    ]
}

/// Spells a requirement the way a user might, independent of Display.
fn spell(r: &RefReq) -> String {
    let v = |i: usize| r.values[i].clone();
    match r.op {
        RefOp::Eq => format!("{} = {}", r.key, v(0)),
        RefOp::EqEq => format!("{}=={}", r.key, v(0)),
        RefOp::Ne => format!("{} !={}", r.key, v(0)),
        RefOp::In => format!("{} in ( {} )", r.key, r.values.join(" , ")),
        RefOp::NotIn => format!("{}  notin ({})", r.key, r.values.join(",")),
        RefOp::Exists => r.key.clone(),
        RefOp::NotExists => format!("! {}", r.key),
        RefOp::Gt => format!("{}>{}", r.key, v(0)),
        RefOp::Lt => format!("{} < {}", r.key, v(0)),
    }
}

fn int_of(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn reference_matches(reqs: &[RefReq], l: &BTreeMap<String, String>) -> bool {
    reqs.iter().all(|r| {
        let have = l.get(&r.key);
        let listed = |v: &String| r.values.contains(v);
        match r.op {
            RefOp::Eq | RefOp::EqEq | RefOp::In => matches!(have, Some(v) if listed(v)),
            RefOp::Ne | RefOp::NotIn => !matches!(have, Some(v) if listed(v)),
            RefOp::Exists => have.is_some(),
            RefOp::NotExists => have.is_none(),
            RefOp::Gt | RefOp::Lt => match (have.and_then(|v| int_of(v)), int_of(&r.values[0])) {
                (Some(a), Some(b)) => {
                    if matches!(r.op, RefOp::Gt) {
                        a > b
                    } else {
                        a < b
                    }
                }
                _ => false,
            },
        }
    })
}

fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(ref_key(), prop_oneof![ref_value(), ref_int()], 0..5)
}

proptest! {
    #[test]
    fn matches_agrees_with_reference(
        reqs in prop::collection::vec(ref_req(), 0..5),
        l in label_map(),
    ) {
        let text: Vec<String> = reqs.iter().map(spell).collect();
        let sel = LabelSelector::parse(&text.join(" , ")).unwrap();
        prop_assert_eq!(sel.requirements().len(), reqs.len());
        prop_assert_eq!(sel.matches(&l), reference_matches(&reqs, &l));
    }

    #[test]
    fn display_round_trips(reqs in prop::collection::vec(ref_req(), 0..5)) {
        let text: Vec<String> = reqs.iter().map(spell).collect();
        let sel = LabelSelector::parse(&text.join(",")).unwrap();
        let shown = sel.to_string();
        let back = LabelSelector::parse(&shown).unwrap();
        prop_assert_eq!(&back, &sel);
        prop_assert_eq!(back.to_string(), shown);
    }

    #[test]
    fn never_panics(s in "\\PC{0,40}") {
        let _ = LabelSelector::parse(&s);
    }

    #[test]
    fn never_panics_on_selector_alphabet(s in "[a-c!=<>(), \t\0é0-9-]{0,30}|(in|notin|[a-c ,()!=])*") {
        if let Ok(sel) = LabelSelector::parse(&s) {
            prop_assert_eq!(LabelSelector::parse(&sel.to_string()), Ok(sel));
        }
    }
}
