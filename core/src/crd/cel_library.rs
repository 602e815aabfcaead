//! kube's CEL library functions that rules commonly use and CEL itself
//! lacks: list aggregates (`isSorted`, `sum`, `min`, `max`), sets
//! (`sets.contains`, `sets.equivalent`, `sets.intersects`), regex
//! (`find`, `findAll`), `indexOf`/`lastIndexOf` on lists, and quantities (`quantity`, `isQuantity` and the
//! comparisons and conversions kube's Quantity type has); URLs, IPs and
//! CIDRs ([`super::cel_network`]) and named formats
//! ([`super::cel_format`]).

use cel::common::types::{CelInt, DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::extractors::{Arguments, This};
use cel::objects::Opaque;
use cel::{Context, Env, ExecutionError, Value as Cel};
use std::cmp::Ordering;
use std::sync::Arc;

/// Declares the library on the root context.
pub fn register(ctx: &mut Context<'static, 'static>) {
    let add = |name: &str, r: Result<(), cel::DeclarationError>| {
        if let Err(e) = r {
            panic!("CEL library function {name}: {e:?}");
        }
    };
    super::cel_network::register(ctx, &add);
    super::cel_format::register(ctx, &add);
    super::cel_semver::register(ctx, &add);
    super::cel_comprehensions::register(ctx, &add);
    super::cel_objects::register(ctx, &add);
    super::cel_authz::register(ctx, &add);
    add(
        "isSorted",
        ctx.add_function("isSorted", |This(l): This<Arc<Vec<Cel>>>| {
            l.windows(2)
                .all(|w| compare(&w[0], &w[1]) != Some(Ordering::Greater))
        }),
    );
    add(
        "sum",
        ctx.add_function("sum", |This(l): This<Arc<Vec<Cel>>>| sum(&l)),
    );
    add(
        "min",
        ctx.add_function("min", |This(l): This<Arc<Vec<Cel>>>| {
            extreme(&l, Ordering::Less)
        }),
    );
    add(
        "max",
        ctx.add_function("max", |This(l): This<Arc<Vec<Cel>>>| {
            extreme(&l, Ordering::Greater)
        }),
    );
    add(
        "sets.contains",
        ctx.add_function("sets.contains", |a: Arc<Vec<Cel>>, b: Arc<Vec<Cel>>| {
            b.iter().all(|x| a.contains(x))
        }),
    );
    add(
        "sets.equivalent",
        ctx.add_function("sets.equivalent", |a: Arc<Vec<Cel>>, b: Arc<Vec<Cel>>| {
            b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x))
        }),
    );
    add(
        "sets.intersects",
        ctx.add_function("sets.intersects", |a: Arc<Vec<Cel>>, b: Arc<Vec<Cel>>| {
            a.iter().any(|x| b.contains(x))
        }),
    );
    add(
        "find",
        ctx.add_function("find", |This(s): This<Arc<String>>, re: Arc<String>| {
            let re = regex(&re)?;
            Ok::<_, ExecutionError>(Cel::String(Arc::new(
                re.find(&s)
                    .map_or(String::new(), |m| m.as_str().to_string()),
            )))
        }),
    );
    add(
        "findAll",
        ctx.add_function(
            "findAll",
            |This(s): This<Arc<String>>, Arguments(args): Arguments| {
                let re = match args.first() {
                    Some(Cel::String(r)) => regex(r)?,
                    _ => {
                        return Err(ExecutionError::function_error(
                            "findAll",
                            "expected a regular expression",
                        ))
                    }
                };
                let limit = match args.get(1) {
                    Some(Cel::Int(n)) if *n >= 0 => *n as usize,
                    _ => usize::MAX,
                };
                Ok(Cel::List(Arc::new(
                    re.find_iter(&s)
                        .take(limit)
                        .map(|m| Cel::String(Arc::new(m.as_str().to_string())))
                        .collect(),
                )))
            },
        ),
    );
    add(
        "isQuantity",
        ctx.add_function("isQuantity", |This(s): This<Arc<String>>| {
            parse(&s).is_some()
        }),
    );
    add(
        "quantity",
        ctx.add_function("quantity", |s: Arc<String>| {
            parse(&s).map(|q| Cel::Opaque(Arc::new(q))).ok_or_else(|| {
                ExecutionError::function_error("quantity", format!("invalid quantity: {s}"))
            })
        }),
    );
    add(
        "isLessThan",
        ctx.add_function(
            "isLessThan",
            |This(a): This<Arc<dyn Opaque>>, b: Arc<dyn Opaque>| {
                Ok::<_, ExecutionError>(ordering(&a, &b)? == Ordering::Less)
            },
        ),
    );
    add(
        "isGreaterThan",
        ctx.add_function(
            "isGreaterThan",
            |This(a): This<Arc<dyn Opaque>>, b: Arc<dyn Opaque>| {
                Ok::<_, ExecutionError>(ordering(&a, &b)? == Ordering::Greater)
            },
        ),
    );
    add(
        "compareTo",
        ctx.add_function(
            "compareTo",
            |This(a): This<Arc<dyn Opaque>>, b: Arc<dyn Opaque>| {
                Ok::<_, ExecutionError>(ordering(&a, &b)? as i64)
            },
        ),
    );
    add(
        "sign",
        ctx.add_function("sign", |This(a): This<Arc<dyn Opaque>>| {
            Ok::<_, ExecutionError>(qty(&a)?.0.signum() as i64)
        }),
    );
    add(
        "isInteger",
        ctx.add_function("isInteger", |This(a): This<Arc<dyn Opaque>>| {
            Ok::<_, ExecutionError>(qty(&a)?.0 % NANO == 0)
        }),
    );
    add(
        "asInteger",
        ctx.add_function("asInteger", |This(a): This<Arc<dyn Opaque>>| {
            let n = qty(&a)?.0;
            if n % NANO != 0 {
                return Err(ExecutionError::function_error(
                    "asInteger",
                    "cannot convert value to integer",
                ));
            }
            i64::try_from(n / NANO).map_err(|_| {
                ExecutionError::function_error("asInteger", "cannot convert value to integer")
            })
        }),
    );
    add(
        "asApproximateFloat",
        ctx.add_function("asApproximateFloat", |This(a): This<Arc<dyn Opaque>>| {
            Ok::<_, ExecutionError>(qty(&a)?.0 as f64 / NANO as f64)
        }),
    );
}

const NANO: i128 = 1_000_000_000;

/// A quantity, in billionths (kube compares quantities by value).
#[derive(Debug, PartialEq, Eq)]
struct Quantity(i128);

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn parse(s: &str) -> Option<Quantity> {
    crate::quantity::nanos(&serde_json::Value::String(s.to_string())).map(Quantity)
}

/// Two quantities' or two versions' order.
fn ordering(a: &Arc<dyn Opaque>, b: &Arc<dyn Opaque>) -> Result<Ordering, ExecutionError> {
    if let (Some(a), Some(b)) = (a.downcast_ref::<Quantity>(), b.downcast_ref::<Quantity>()) {
        return Ok(a.0.cmp(&b.0));
    }
    super::cel_semver::compare(&**a, &**b).ok_or_else(|| {
        ExecutionError::function_error("compareTo", "no such overload: values of different types")
    })
}

/// kube's `indexOf` and `lastIndexOf` on lists (CEL's strings extension
/// has them on strings): the first or last position of an element equal
/// to the argument, or -1.
pub fn extend(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_member_overload(
        "indexOf",
        "list_indexOf",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_lastIndexOf",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(args, false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(args, true)
}

fn position<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    last: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, wanted]: [CowVal<'b, 'v>; 2] = args
        .try_into()
        .map_err(|a: Vec<_>| ExecutionError::invalid_argument_count(2, a.len()))?;
    let items = list
        .as_iterable()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: list.get_type().name().to_owned(),
            want: "list".to_owned(),
        })?;
    let mut found = -1i64;
    let mut iter = items.iter();
    let mut i = 0i64;
    while let Some(item) = iter.next() {
        if item.equals(wanted.as_ref()) {
            found = i;
            if !last {
                break;
            }
        }
        i += 1;
    }
    Ok(CowVal::owned(CelInt::from(found)))
}

fn qty(v: &Arc<dyn Opaque>) -> Result<&Quantity, ExecutionError> {
    v.downcast_ref::<Quantity>()
        .ok_or_else(|| ExecutionError::function_error("quantity", "not a quantity"))
}

fn regex(re: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(re).map_err(|e| ExecutionError::function_error("regex", e.to_string()))
}

fn compare(a: &Cel, b: &Cel) -> Option<Ordering> {
    a.partial_cmp(b)
}

fn sum(l: &[Cel]) -> Result<Cel, ExecutionError> {
    let mut acc = match l.first() {
        None => return Ok(Cel::Int(0)),
        Some(first) => first.clone(),
    };
    for x in &l[1..] {
        acc = match (&acc, x) {
            (Cel::Int(a), Cel::Int(b)) => Cel::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Cel::UInt(a), Cel::UInt(b)) => Cel::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Cel::Float(a), Cel::Float(b)) => Cel::Float(a + b),
            (Cel::Duration(a), Cel::Duration(b)) => Cel::Duration(*a + *b),
            _ => {
                return Err(ExecutionError::function_error(
                    "sum",
                    "list elements must be numbers of one type",
                ))
            }
        };
    }
    Ok(acc)
}

fn extreme(l: &[Cel], wanted: Ordering) -> Result<Cel, ExecutionError> {
    let mut best = l
        .first()
        .ok_or_else(|| ExecutionError::function_error("min/max", "list is empty"))?;
    for x in &l[1..] {
        match compare(x, best) {
            Some(o) if o == wanted => best = x,
            Some(_) => {}
            None => {
                return Err(ExecutionError::function_error(
                    "min/max",
                    "list elements are not comparable",
                ))
            }
        }
    }
    Ok(best.clone())
}
