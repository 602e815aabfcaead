//! Hash-map keys borrowed from JSON values, so strategic merge patch can
//! index list items by merge key (or by value) instead of scanning.
//!
//! `serde_json::Value` is not `Hash`. [`ValueKey`] hashes consistently with
//! `Value`'s `PartialEq`: numbers hash as `serde_json::Number` does (which
//! already gives `0.0` and `-0.0` one hash, as they compare equal), arrays
//! in order, and objects regardless of key order — with `preserve_order` a
//! `Map` is an `IndexMap`, whose equality ignores order. An object's hash is
//! the wrapping sum of its entries' hashes under a per-process random key,
//! so an attacker who controls merge keys cannot precompute collisions.

use serde_json::Value;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::OnceLock;

/// A `Value` as a `HashMap`/`HashSet` key; equal iff the values are `==`.
#[derive(Clone, Copy, Debug)]
pub(super) struct ValueKey<'a>(pub &'a Value);

impl PartialEq for ValueKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for ValueKey<'_> {}

impl Hash for ValueKey<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        hash_value(self.0, h);
    }
}

fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => {
            h.write_u8(1);
            b.hash(h);
        }
        Value::Number(n) => {
            h.write_u8(2);
            n.hash(h);
        }
        Value::String(s) => {
            h.write_u8(3);
            s.hash(h);
        }
        Value::Array(a) => {
            h.write_u8(4);
            h.write_usize(a.len());
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(m) => {
            h.write_u8(5);
            h.write_usize(m.len());
            let entries = entry_hasher();
            let sum = m.iter().fold(0u64, |acc, (k, v)| {
                acc.wrapping_add(entries.hash_one((k.as_str(), ValueKey(v))))
            });
            h.write_u64(sum);
        }
    }
}

/// The keyed hasher of object entries: random per process (SipHash, like
/// std's maps), fixed for its lifetime so equal objects hash alike.
fn entry_hasher() -> &'static RandomState {
    static STATE: OnceLock<RandomState> = OnceLock::new();
    STATE.get_or_init(RandomState::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn hash_of(v: &Value) -> u64 {
        // One fixed state: equal keys must hash alike under any state.
        static STATE: OnceLock<RandomState> = OnceLock::new();
        STATE.get_or_init(RandomState::new).hash_one(ValueKey(v))
    }

    #[test]
    fn equal_values_hash_alike() {
        let a = json!({"a": 1, "b": [1, {"x": null, "y": "z"}]});
        let b = json!({"b": [1, {"y": "z", "x": null}], "a": 1});
        assert_eq!(a, b);
        assert_eq!(hash_of(&a), hash_of(&b));
        let (pz, nz) = (json!(0.0), json!(-0.0));
        assert_eq!(pz, nz);
        assert_eq!(hash_of(&pz), hash_of(&nz));
        assert_ne!(json!(1), json!(1.0));
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-2i64..3).prop_map(Value::from),
            prop_oneof![Just(0.0f64), Just(-0.0), Just(1.0), Just(0.5)].prop_map(Value::from),
            "[ab]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec(("[ab]", inner), 0..3)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                // The same entries in another order.
                prop::collection::vec(("[ab]", Just(Value::Null)), 0..3)
                    .prop_map(|kv| { Value::Object(kv.into_iter().rev().collect()) }),
            ]
        })
    }

    proptest! {
        #[test]
        fn hash_is_consistent_with_eq(a in arb_value(), b in arb_value()) {
            if a == b {
                prop_assert_eq!(hash_of(&a), hash_of(&b));
            }
            prop_assert_eq!(ValueKey(&a) == ValueKey(&b), a == b);
        }
    }
}
