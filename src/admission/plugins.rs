//! kube-apiserver's admission plugins by name, in the fixed order the
//! chain runs them, which of them are on by default, and which kubeshard
//! implements. `--enable-admission-plugins` adds to the defaults,
//! `--disable-admission-plugins` takes away; the order is always kube's,
//! whatever order the flags name them in.

use super::certificates::{self, SignerPermission};
use super::config::AdmissionConfig;
use super::default_class::{self, DefaultClass};
use super::event_rate_limit::{self, EventRateLimit};
use super::limit_ranger::{self, LimitRanger};
use super::namespace_labels::NamespaceLabels;
use super::node_restriction::{self, NodeRestriction};
use super::optional::{self, AlwaysPullImages, AntiAffinityTopology};
use super::pod_security::{self, PodSecurity};
use super::policies::mutating::MutatingPolicies;
use super::policies::{self, Policies};
use super::priority::{self, Priority};
use super::recorder::{self, TestRecorder};
use super::resource_quota::{self, ResourceQuota};
use super::runtime_class::{self, RuntimeClass};
use super::scheduling::{self, NodeSelector, Tolerations};
use super::service_account::{self, ServiceAccount};
use super::storage_protection::{self, ClaimResize, StorageProtection};
use super::subject_restriction::{self, SubjectRestriction};
use super::tolerations::{self, DefaultTolerationSeconds, TaintNodesByCondition};
use super::webhooks::{self, MutatingWebhooks, ValidatingWebhooks};
use super::{Admission, AlwaysAdmit, AlwaysDeny, NamespaceLifecycle};
use crate::informer::Informers;
use crate::security::Security;
use kubeshard_core::keys::KeyLayout;
use kubeshard_shards::ExecutorContext;
use std::rc::Rc;

/// kube 1.34's plugins, in the order its chain runs them.
pub const ORDERED: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// The plugins kube enables when no flag says otherwise.
pub const DEFAULT_ON: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "TaintNodesByCondition",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
];

/// The plugins kubeshard has.
pub const IMPLEMENTED: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "LimitPodHardAntiAffinityTopology",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// Plugins only debug builds have, for the test suite (see
/// [`super::recorder`]); they run after kube's.
pub const TEST_ONLY: &[&str] = if cfg!(debug_assertions) {
    &[super::recorder::NAME]
} else {
    &[]
};

/// Every plugin name the flags accept, in chain order.
fn known() -> impl Iterator<Item = &'static str> {
    ORDERED.iter().chain(TEST_ONLY).copied()
}

/// Whether `name` is a plugin the flags and the configuration file accept.
pub fn is_known(name: &str) -> bool {
    known().any(|k| k == name)
}

/// The implemented plugins that read a configuration from
/// `--admission-control-config-file` (none yet: the ones that do —
/// EventRateLimit, PodSecurity, ResourceQuota, the webhooks — arrive with
/// the admission issue).
pub const CONFIGURABLE: &[&str] = &[
    super::recorder::NAME,
    super::pod_security::NAME,
    super::scheduling::NODE_SELECTOR,
    super::scheduling::TOLERATIONS,
    super::event_rate_limit::NAME,
];

/// Checks a plugin's configuration when the file is read (a bad one
/// stops the server from starting, as kube's does).
pub fn check_configuration(name: &str, v: &serde_json::Value) -> Result<(), String> {
    match name {
        super::pod_security::NAME => super::pod_security::Config::parse(v).map(drop),
        super::scheduling::NODE_SELECTOR => {
            super::scheduling::NodeSelector::parse_config(Some(v)).map(drop)
        }
        _ => Ok(()),
    }
}

/// The plugins to run, in kube's order: the defaults plus `enable` minus
/// `disable`. A plugin named in a flag must be one of kube's; one that is
/// on but not implemented here is an error when a flag asked for it and
/// left out (with the others like it, see [`missing_defaults`]) when it is
/// only a default.
pub fn resolve(enable: &[String], disable: &[String]) -> Result<Vec<&'static str>, String> {
    for name in enable.iter().chain(disable) {
        if !is_known(name) {
            return Err(format!("admission plugin {name:?} is not a known plugin"));
        }
    }
    if let Some(both) = enable.iter().find(|n| disable.contains(n)) {
        return Err(format!(
            "admission plugin {both:?} is both enabled and disabled"
        ));
    }
    for name in enable {
        if !IMPLEMENTED.contains(&name.as_str()) && !TEST_ONLY.contains(&name.as_str()) {
            return Err(format!(
                "admission plugin {name:?} is not implemented by kubeshard yet"
            ));
        }
    }
    Ok(known()
        .filter(|p| {
            let on = DEFAULT_ON.contains(p) || enable.iter().any(|e| e == p);
            let have = IMPLEMENTED.contains(p) || TEST_ONLY.contains(p);
            on && !disable.iter().any(|d| d == p) && have
        })
        .collect())
}

/// Default-on plugins that kubeshard does not have yet (logged at start).
pub fn missing_defaults(disable: &[String]) -> Vec<&'static str> {
    DEFAULT_ON
        .iter()
        .copied()
        .filter(|p| !IMPLEMENTED.contains(p) && !disable.iter().any(|d| d == p))
        .collect()
}

/// One executor's chain, with each plugin's state started on it.
/// What plugins are built from on each executor.
pub struct PluginInit<'a> {
    pub ctx: &'a Rc<ExecutorContext>,
    /// This executor's informers (plugins keep caches of what they read).
    pub informers: &'a Rc<Informers>,
    /// Where the kinds plugins read are stored.
    pub keys: &'a KeyLayout,
    /// This executor's authorizers (plugins that ask permission questions).
    pub security: &'a Rc<Security>,
}

pub fn build(config: &AdmissionConfig, init: &PluginInit<'_>) -> Admission {
    let mut chain = Admission::default();
    // The webhook plugins and PodSecurity read namespace labels: one
    // cache for all.
    let mut namespace_labels = None;
    let mut labels = || {
        namespace_labels
            .get_or_insert_with(|| NamespaceLabels::start(init))
            .clone()
    };
    for name in &config.plugins {
        match *name {
            "NamespaceLifecycle" => {
                chain = chain.with_mutating(Rc::new(NamespaceLifecycle::start(init)));
            }
            "AlwaysAdmit" => chain = chain.with_mutating(Rc::new(AlwaysAdmit)),
            limit_ranger::NAME => {
                let p = Rc::new(LimitRanger::start(init));
                chain = chain.with_mutating(p.clone()).with_validating(p);
            }
            service_account::NAME => {
                chain = chain.with_mutating(Rc::new(ServiceAccount::start(init)));
            }
            tolerations::TAINT_NODES_BY_CONDITION => {
                chain = chain.with_mutating(Rc::new(TaintNodesByCondition));
            }
            optional::ALWAYS_PULL_IMAGES => {
                let p = Rc::new(AlwaysPullImages);
                chain = chain.with_mutating(p.clone()).with_validating(p);
            }
            optional::ANTI_AFFINITY => {
                chain = chain.with_validating(Rc::new(AntiAffinityTopology));
            }
            pod_security::NAME => {
                chain = chain.with_validating(Rc::new(PodSecurity::start(
                    config.configurations.get(pod_security::NAME),
                    labels(),
                )));
            }
            scheduling::NODE_SELECTOR => {
                let p = Rc::new(NodeSelector::start(
                    config.configurations.get(scheduling::NODE_SELECTOR),
                    labels(),
                ));
                chain = chain.with_mutating(p.clone()).with_validating(p);
            }
            scheduling::TOLERATIONS => {
                let p = Rc::new(Tolerations::start(
                    config.configurations.get(scheduling::TOLERATIONS),
                    labels(),
                ));
                chain = chain.with_mutating(p.clone()).with_validating(p);
            }
            event_rate_limit::NAME => {
                let limits = config
                    .event_rate_limit
                    .clone()
                    .expect("parsed with the configuration");
                chain = chain.with_validating(Rc::new(EventRateLimit::new(limits)));
            }
            priority::NAME => {
                let p = Rc::new(Priority::start(init));
                chain = chain.with_mutating(p.clone()).with_validating(p);
            }
            tolerations::DEFAULT_TOLERATION_SECONDS => {
                chain = chain.with_mutating(Rc::new(DefaultTolerationSeconds));
            }
            default_class::STORAGE => {
                chain = chain.with_mutating(Rc::new(DefaultClass::storage(init)));
            }
            default_class::INGRESS => {
                chain = chain.with_mutating(Rc::new(DefaultClass::ingress(init)));
            }
            storage_protection::PROTECTION => {
                chain = chain.with_mutating(Rc::new(StorageProtection));
            }
            storage_protection::RESIZE => {
                chain = chain.with_validating(Rc::new(ClaimResize::start(init)));
            }
            runtime_class::NAME => {
                chain = chain.with_mutating(Rc::new(RuntimeClass::start(init)));
            }
            subject_restriction::NAME => {
                chain = chain.with_validating(Rc::new(SubjectRestriction));
            }
            certificates::APPROVAL => {
                chain = chain.with_validating(Rc::new(SignerPermission::approval(init)));
            }
            certificates::SIGNING => {
                chain = chain.with_validating(Rc::new(SignerPermission::signing(init)));
            }
            node_restriction::NAME => {
                chain = chain.with_mutating(Rc::new(NodeRestriction::new(init)));
            }
            // Inert, as in kube 1.34 with its default feature gates: the
            // kind the first judges (ClusterTrustBundle) is not served, and
            // the second acts only under PodTopologyLabelsAdmission.
            "ClusterTrustBundleAttest" | "PodTopologyLabels" => {}
            policies::mutating::NAME => {
                chain = chain.with_mutating(Rc::new(MutatingPolicies::start(init, labels())));
            }
            webhooks::MUTATING => {
                chain = chain.with_mutating(Rc::new(MutatingWebhooks::start(
                    init,
                    labels(),
                    config.webhook_metrics.clone(),
                )));
            }
            policies::NAME => {
                chain = chain.with_validating(Rc::new(Policies::start(init, labels())));
            }
            webhooks::VALIDATING => {
                chain = chain.with_validating(Rc::new(ValidatingWebhooks::start(
                    init,
                    labels(),
                    config.webhook_metrics.clone(),
                )));
            }
            resource_quota::NAME => {
                chain = chain.with_validating(Rc::new(ResourceQuota::start(init)));
            }
            "AlwaysDeny" => chain = chain.with_validating(Rc::new(AlwaysDeny)),
            recorder::NAME => {
                let r = Rc::new(
                    TestRecorder::open(config.configurations.get(recorder::NAME))
                        .expect("opened once at start"),
                );
                chain = chain.with_mutating(r.clone()).with_validating(r);
            }
            other => unreachable!("{other} was checked to be implemented"),
        }
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_follow_kube() {
        let defaults = [
            "NamespaceLifecycle",
            "LimitRanger",
            "ServiceAccount",
            "TaintNodesByCondition",
            "PodSecurity",
            "Priority",
            "DefaultTolerationSeconds",
            "DefaultStorageClass",
            "StorageObjectInUseProtection",
            "PersistentVolumeClaimResize",
            "RuntimeClass",
            "CertificateApproval",
            "CertificateSigning",
            "ClusterTrustBundleAttest",
            "CertificateSubjectRestriction",
            "DefaultIngressClass",
            "PodTopologyLabels",
            "MutatingAdmissionPolicy",
            "MutatingAdmissionWebhook",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionWebhook",
            "ResourceQuota",
        ];
        assert_eq!(resolve(&[], &[]).unwrap(), defaults);
        assert_eq!(
            resolve(&[], &names(&["NamespaceLifecycle"])).unwrap(),
            defaults[1..]
        );
        assert!(resolve(&names(&["Bogus"]), &[])
            .unwrap_err()
            .contains("not a known plugin"));
        assert_eq!(
            resolve(&names(&["AlwaysDeny"]), &[]).unwrap(),
            [&defaults[..], &["AlwaysDeny"]].concat()
        );
        assert!(resolve(&names(&["ImagePolicyWebhook"]), &[])
            .unwrap_err()
            .contains("not implemented"));
        assert!(resolve(
            &names(&["NamespaceLifecycle"]),
            &names(&["NamespaceLifecycle"])
        )
        .unwrap_err()
        .contains("both"));
        let without: Vec<&str> = defaults
            .iter()
            .copied()
            .filter(|p| *p != "PodTopologyLabels")
            .collect();
        assert_eq!(
            resolve(&[], &names(&["PodTopologyLabels"])).unwrap(),
            without
        );
        // Every plugin kube 1.34 turns on is here.
        assert!(missing_defaults(&[]).is_empty());
    }

    #[test]
    fn the_order_is_kubes_and_defaults_are_kubes_plugins() {
        for p in DEFAULT_ON.iter().chain(IMPLEMENTED) {
            assert!(ORDERED.contains(p), "{p}");
        }
        let pos = |p: &str| ORDERED.iter().position(|o| *o == p).unwrap();
        assert!(pos("NamespaceLifecycle") < pos("LimitRanger"));
        assert!(pos("MutatingAdmissionWebhook") < pos("ValidatingAdmissionWebhook"));
        assert!(pos("ResourceQuota") < pos("AlwaysDeny"));
    }
}
