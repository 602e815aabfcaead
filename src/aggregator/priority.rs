//! kube-aggregator's priorities for the built-in groups: where a group
//! goes in discovery (`groupPriorityMinimum`, higher first) and which of
//! its versions is preferred (`versionPriority`, higher first). The same
//! numbers go into the local APIServices, so an extension server's
//! APIService places its group among them as it would in kube.

/// Groups kube does not list (CRD groups) get these.
pub const CRD_GROUP_PRIORITY: i64 = 1000;
pub const CRD_VERSION_PRIORITY: i64 = 100;

/// (group, groupPriorityMinimum, [(version, versionPriority)]).
type Row = (&'static str, i64, &'static [(&'static str, i64)]);

const TABLE: &[Row] = &[
    ("", 18000, &[("v1", 1)]),
    ("apiregistration.k8s.io", 18000, &[("v1", 15)]),
    ("apps", 17800, &[("v1", 15)]),
    ("events.k8s.io", 17750, &[("v1", 15), ("v1beta1", 5)]),
    (
        "authentication.k8s.io",
        17700,
        &[("v1", 15), ("v1beta1", 9), ("v1alpha1", 1)],
    ),
    ("authorization.k8s.io", 17600, &[("v1", 15)]),
    (
        "autoscaling",
        17500,
        &[("v2", 30), ("v1", 15), ("v2beta1", 9), ("v2beta2", 1)],
    ),
    (
        "batch",
        17400,
        &[("v1", 15), ("v1beta1", 9), ("v2alpha1", 9)],
    ),
    (
        "certificates.k8s.io",
        17300,
        &[("v1", 15), ("v1beta1", 9), ("v1alpha1", 1)],
    ),
    ("networking.k8s.io", 17200, &[("v1", 15), ("v1beta1", 9)]),
    ("policy", 17100, &[("v1", 15), ("v1beta1", 9)]),
    ("rbac.authorization.k8s.io", 17000, &[("v1", 15)]),
    (
        "storage.k8s.io",
        16800,
        &[("v1", 15), ("v1beta1", 9), ("v1alpha1", 1)],
    ),
    ("apiextensions.k8s.io", 16700, &[("v1", 15)]),
    (
        "admissionregistration.k8s.io",
        16700,
        &[("v1", 15), ("v1beta1", 12), ("v1alpha1", 9)],
    ),
    ("scheduling.k8s.io", 16600, &[("v1", 15), ("v1alpha2", 2)]),
    (
        "coordination.k8s.io",
        16500,
        &[("v1", 15), ("v1beta1", 13), ("v1alpha2", 12)],
    ),
    (
        "node.k8s.io",
        16300,
        &[("v1", 15), ("v1beta1", 9), ("v1alpha1", 1)],
    ),
    ("discovery.k8s.io", 16200, &[("v1", 15), ("v1beta1", 12)]),
    (
        "resource.k8s.io",
        16200,
        &[("v1", 21), ("v1beta2", 15), ("v1beta1", 9), ("v1alpha3", 1)],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        16100,
        &[
            ("v1", 21),
            ("v1beta3", 18),
            ("v1beta2", 15),
            ("v1beta1", 12),
            ("v1alpha1", 9),
        ],
    ),
    ("internal.apiserver.k8s.io", 16000, &[("v1alpha1", 9)]),
    ("storagemigration.k8s.io", 15800, &[("v1beta1", 9)]),
];

/// A local group version's (groupPriorityMinimum, versionPriority): the
/// table's, or a CRD group's.
pub fn local(group: &str, version: &str) -> (i64, i64) {
    match TABLE.iter().find(|(g, ..)| *g == group) {
        Some((_, gp, versions)) => {
            let vp = versions
                .iter()
                .find(|(v, _)| *v == version)
                .map_or(CRD_VERSION_PRIORITY, |(_, p)| *p);
            (*gp, vp)
        }
        None => (CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY),
    }
}

/// Whether `group` is one of kube's built-in groups.
pub fn is_builtin(group: &str) -> bool {
    TABLE.iter().any(|(g, ..)| *g == group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_and_crds() {
        assert_eq!(local("apps", "v1"), (17800, 15));
        assert_eq!(local("autoscaling", "v2"), (17500, 30));
        assert_eq!(local("stable.example.com", "v1"), (1000, 100));
        assert!(is_builtin(""));
        assert!(!is_builtin("metrics.k8s.io"));
    }
}
