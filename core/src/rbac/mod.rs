//! Role-based access control, evaluated in memory: the rule language
//! (`rule`), an index of roles and bindings by subject that answers a
//! decision without scanning every binding (`index`), the escalation check
//! (`covers`), ClusterRole aggregation (`aggregation`), object validation
//! (`validation`) and the policy every server starts with (`bootstrap`).
//! Pure data manipulation: the server feeds the index from its watch hub.

pub mod aggregation;
pub mod bootstrap;
pub mod covers;
pub mod index;
pub mod rule;
pub mod types;
pub mod validation;

pub use index::{Allowed, Binding, ClusterRole, RbacIndex, RbacKind};
pub use rule::rule_allows;
pub use types::{PolicyRule, RoleRef, Subject};

/// The API group of every RBAC kind.
pub const GROUP: &str = "rbac.authorization.k8s.io";
