//! The filter chain in front of the handlers. Today: request info. The
//! security issue adds authentication, audit, impersonation, flow control
//! and authorization here, in kube-apiserver's order.

pub mod requestinfo;
