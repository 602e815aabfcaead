//! Label and field selectors as accepted in `labelSelector=` /
//! `fieldSelector=` query parameters and `metav1.LabelSelector` objects.

pub mod fields;
pub mod labels;

pub use fields::{FieldRequirement, FieldSelector, Fields};
pub use labels::{LabelSelector, Labels, Operator, Requirement};
