//! kube-apiserver's `--feature-gates` and `--runtime-config`, for what
//! kubeshard has behind them: MutatingAdmissionPolicy, beta and off by
//! default in kube 1.34, served at admissionregistration.k8s.io/v1beta1
//! only when its gate is on and that version is enabled (kube serves no
//! beta API unless asked). Gates and versions kubeshard does not have are
//! accepted with a warning, so kube's command lines carry over.

use clap::Args;
use std::collections::BTreeMap;

/// The group/version MutatingAdmissionPolicy is served at.
pub const ADMISSION_V1BETA1: &str = "admissionregistration.k8s.io/v1beta1";

#[derive(Args, Debug, Clone, Default)]
pub struct FeatureFlags {
    /// kube's feature gates, `Name=true|false,…`. Known:
    /// MutatingAdmissionPolicy (default false).
    #[arg(long, value_delimiter = ',')]
    pub feature_gates: Vec<String>,

    /// API versions to serve beyond the defaults, `group/version=true|false,…`
    /// (kube's flag). Known: admissionregistration.k8s.io/v1beta1 (the
    /// mutating admission policy kinds, with their gate on).
    #[arg(long, value_delimiter = ',')]
    pub runtime_config: Vec<String>,
}

/// What the gates and the runtime configuration turn on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Features {
    /// The MutatingAdmissionPolicy plugin runs.
    pub mutating_admission_policy: bool,
    /// Its kinds are served (the gate, and the v1beta1 version, on).
    pub serve_admission_v1beta1: bool,
}

fn pairs(items: &[String], flag: &str) -> Result<BTreeMap<String, bool>, String> {
    let mut out = BTreeMap::new();
    for item in items.iter().filter(|i| !i.trim().is_empty()) {
        let (key, value) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (item.trim(), "true"),
        };
        let on = value.parse::<bool>().map_err(|_| {
            format!("--{flag}: invalid value of {key}: {value}, err: not a boolean")
        })?;
        out.insert(key.to_string(), on);
    }
    Ok(out)
}

impl Features {
    pub fn from_flags(f: &FeatureFlags) -> Result<Self, String> {
        let mut features = Features::default();
        for (gate, on) in pairs(&f.feature_gates, "feature-gates")? {
            match gate.as_str() {
                "MutatingAdmissionPolicy" => features.mutating_admission_policy = on,
                other => tracing::warn!(
                    gate = other,
                    "--feature-gates: kubeshard has no such gate; ignored"
                ),
            }
        }
        let mut v1beta1 = false;
        for (version, on) in pairs(&f.runtime_config, "runtime-config")? {
            match version.as_str() {
                ADMISSION_V1BETA1 => v1beta1 = on,
                "api/all" | "api/beta" => v1beta1 = on,
                other => tracing::warn!(
                    version = other,
                    "--runtime-config: kubeshard has nothing behind this; ignored"
                ),
            }
        }
        features.serve_admission_v1beta1 = features.mutating_admission_policy && v1beta1;
        if features.mutating_admission_policy && !v1beta1 {
            tracing::warn!(
                "MutatingAdmissionPolicy is on but {ADMISSION_V1BETA1} is not served: add --runtime-config={ADMISSION_V1BETA1}=true"
            );
        }
        Ok(features)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(gates: &[&str], runtime: &[&str]) -> Result<Features, String> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        Features::from_flags(&FeatureFlags {
            feature_gates: s(gates),
            runtime_config: s(runtime),
        })
    }

    #[test]
    fn the_gate_and_the_version_both_serve_the_kinds() {
        assert_eq!(features(&[], &[]).unwrap(), Features::default());
        let gate_only = features(
            &["MutatingAdmissionPolicy=true", "SomethingElse=false"],
            &[],
        )
        .unwrap();
        assert!(gate_only.mutating_admission_policy && !gate_only.serve_admission_v1beta1);
        let both = features(
            &["MutatingAdmissionPolicy=true"],
            &["admissionregistration.k8s.io/v1beta1=true"],
        )
        .unwrap();
        assert!(both.serve_admission_v1beta1);
        assert!(
            !features(&[], &["api/all=true"])
                .unwrap()
                .serve_admission_v1beta1
        );
        assert!(features(&["MutatingAdmissionPolicy=maybe"], &[]).is_err());
    }
}
