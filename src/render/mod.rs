//! What a response looks like: content negotiation (JSON, YAML,
//! protobuf, Table, PartialObjectMetadata), the bodies of objects, lists
//! and Status errors, and warnings. Below the filters and the handlers,
//! so both answer the same way.

pub mod negotiation;
pub mod response;
pub mod table;
pub mod warnings;
