//! From an etcd key back to the object it stores: which kind (by the
//! longest storage key that fits and agrees on scope), namespace, name.

use kubeshard_core::catalog::ResourceInfo;
use std::sync::Arc;

/// What the server knows of the kinds stored under each storage key.
pub trait Resolve: Send + Sync {
    /// The kind stored under `resource` (a storage key), when known.
    fn info(&self, resource: &str) -> Option<Arc<ResourceInfo>>;
    /// A stand-in for a custom resource whose definition this server has
    /// not read yet (another replica created both just now): enough to
    /// store and serve its objects until the definition arrives.
    fn unknown(&self, resource: &str, namespaced: bool) -> Arc<ResourceInfo>;
}

/// The object an etcd key names: its kind, namespace (empty when
/// cluster-scoped) and name. None for keys that hold no object this
/// server serves (kube's own bookkeeping, such as its IP ranges).
pub fn object_of(
    key: &str,
    prefix: &str,
    resolve: &dyn Resolve,
) -> Option<(Arc<ResourceInfo>, String, String)> {
    let rest = key.strip_prefix(prefix)?.strip_prefix('/')?;
    let segs: Vec<&str> = rest.split('/').collect();
    let n = segs.len();
    if n < 2 || segs.iter().any(|s| s.is_empty()) {
        return None;
    }
    let resource = |upto: usize| format!("{prefix}/{}", segs[..upto].join("/"));
    if n >= 3 {
        if let Some(info) = resolve.info(&resource(n - 2)).filter(|i| i.namespaced) {
            return Some((info, segs[n - 2].to_string(), segs[n - 1].to_string()));
        }
    }
    if let Some(info) = resolve.info(&resource(n - 1)).filter(|i| !i.namespaced) {
        return Some((info, String::new(), segs[n - 1].to_string()));
    }
    // Custom resources live at `group/plural`, and a group has a dot.
    if !segs[0].contains('.') {
        return None;
    }
    match n {
        4 => Some((
            resolve.unknown(&resource(2), true),
            segs[2].to_string(),
            segs[3].to_string(),
        )),
        3 => Some((
            resolve.unknown(&resource(2), false),
            String::new(),
            segs[2].to_string(),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::Catalog;

    struct Builtins(Arc<kubeshard_core::catalog::CatalogSnapshot>);

    impl Resolve for Builtins {
        fn info(&self, resource: &str) -> Option<Arc<ResourceInfo>> {
            self.0.by_storage_key(resource).cloned()
        }
        fn unknown(&self, _: &str, namespaced: bool) -> Arc<ResourceInfo> {
            let plural = if namespaced { "pods" } else { "nodes" };
            self.0.lookup("", "v1", plural).unwrap().clone()
        }
    }

    #[test]
    fn keys_name_kind_namespace_and_name_as_kube_lays_them_out() {
        let r = Builtins(Catalog::with_builtins().snapshot());
        let cases = [
            (
                "/registry/pods/default/web",
                Some(("pods", "default", "web")),
            ),
            ("/registry/minions/node-1", Some(("nodes", "", "node-1"))),
            (
                "/registry/services/specs/default/kubernetes",
                Some(("services", "default", "kubernetes")),
            ),
            (
                "/registry/services/endpoints/default/kubernetes",
                Some(("endpoints", "default", "kubernetes")),
            ),
            (
                "/registry/namespaces/kube-system",
                Some(("namespaces", "", "kube-system")),
            ),
            (
                "/registry/apiregistration.k8s.io/apiservices/v1.apps",
                Some(("apiservices", "", "v1.apps")),
            ),
            // A custom resource this server does not know yet.
            (
                "/registry/example.com/widgets/ns/w",
                Some(("pods", "ns", "w")),
            ),
            ("/registry/example.com/gadgets/g", Some(("nodes", "", "g"))),
            ("/registry/ranges/serviceips", None),
            ("/registry/masterleases/10.0.0.1", None),
            ("/other/pods/default/web", None),
            ("/registry/pods//web", None),
        ];
        for (key, want) in cases {
            let got = object_of(key, "/registry", &r).map(|(i, ns, n)| (i.plural.clone(), ns, n));
            let want = want.map(|(p, ns, n)| (p.to_string(), ns.to_string(), n.to_string()));
            assert_eq!(got, want, "{key}");
        }
    }
}
