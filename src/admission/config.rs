//! `--enable-admission-plugins`, `--disable-admission-plugins` and
//! `--admission-control-config-file` (an `AdmissionConfiguration`: per
//! plugin, a configuration inline or in a file of its own), resolved once
//! at start into what every executor's chain is built from.

use super::plugins;
use crate::features::Features;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, clap::Args)]
pub struct AdmissionFlags {
    /// Admission plugins to enable besides the defaults (kube's names; they
    /// run in kube's order whatever the order here).
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,

    /// Admission plugins to disable, defaults included.
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,

    /// An AdmissionConfiguration (YAML or JSON) with per-plugin
    /// configuration.
    #[arg(long)]
    pub admission_control_config_file: Option<PathBuf>,
}

/// The chain every executor builds: which plugins, in order, and the
/// configurations of those that take one (read and checked at start).
#[derive(Debug, Clone, Default)]
pub struct AdmissionConfig {
    pub plugins: Vec<&'static str>,
    pub configurations: HashMap<String, Value>,
    /// EventRateLimit's buckets: one set for the server, shared by every
    /// executor's chain.
    pub event_rate_limit: Option<super::event_rate_limit::Limits>,
    /// The webhook plugins' metrics, shared by every executor's chain.
    pub webhook_metrics: std::sync::Arc<super::webhooks::metrics::WebhookMetrics>,
}

impl AdmissionConfig {
    pub fn from_flags(f: &AdmissionFlags, features: &Features) -> Result<Self, String> {
        let mut plugins =
            plugins::resolve(&f.enable_admission_plugins, &f.disable_admission_plugins)?;
        // On by default, as in kube, but inert unless its kinds are served.
        if !features.serve_admission_v1beta1 {
            plugins.retain(|p| *p != super::policies::mutating::NAME);
        }
        let mut configurations = match &f.admission_control_config_file {
            Some(path) => read_configuration(path)?,
            None => HashMap::new(),
        };
        let missing = plugins::missing_defaults(&f.disable_admission_plugins);
        if !missing.is_empty() {
            tracing::info!(
                plugins = %missing.join(","),
                "admission plugins kube enables by default that kubeshard does not have yet"
            );
        }
        tracing::info!(plugins = %plugins.join(","), "admission chain");
        configurations.retain(|name, _| {
            let takes = plugins::CONFIGURABLE.contains(&name.as_str());
            if !takes {
                tracing::warn!(
                    plugin = %name,
                    "--admission-control-config-file: this plugin takes no configuration here; ignored"
                );
            }
            takes
        });
        for (name, v) in &configurations {
            plugins::check_configuration(name, v)
                .map_err(|e| format!("--admission-control-config-file: {name}: {e}"))?;
        }
        if plugins.contains(&super::recorder::NAME) {
            super::recorder::TestRecorder::open(configurations.get(super::recorder::NAME))?;
        }
        let event_rate_limit = if plugins.contains(&super::event_rate_limit::NAME) {
            let cfg = configurations.get(super::event_rate_limit::NAME).ok_or(
                "EventRateLimit needs its configuration in --admission-control-config-file",
            )?;
            Some(
                super::event_rate_limit::Limits::parse(cfg)
                    .map_err(|e| format!("--admission-control-config-file: EventRateLimit: {e}"))?,
            )
        } else {
            None
        };
        Ok(Self {
            plugins,
            configurations,
            event_rate_limit,
            webhook_metrics: Default::default(),
        })
    }
}

/// The configurations of an AdmissionConfiguration, by plugin name.
fn read_configuration(path: &Path) -> Result<HashMap<String, Value>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--admission-control-config-file {}: {e}", path.display()))?;
    parse_configuration(&text, path.parent().unwrap_or(Path::new(".")))
        .map_err(|e| format!("--admission-control-config-file {}: {e}", path.display()))
}

fn parse_configuration(text: &str, dir: &Path) -> Result<HashMap<String, Value>, String> {
    let doc: Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if kind != "AdmissionConfiguration"
        || !matches!(
            api_version,
            "apiserver.config.k8s.io/v1"
                | "apiserver.config.k8s.io/v1alpha1"
                | "apiserver.k8s.io/v1alpha1"
        )
    {
        return Err(format!(
            "expected an AdmissionConfiguration of apiserver.config.k8s.io/v1, got kind {kind:?} of {api_version:?}"
        ));
    }
    let mut out = HashMap::new();
    for p in doc
        .get("plugins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if !plugins::is_known(name) {
            return Err(format!("unknown admission plugin {name:?}"));
        }
        let configuration = match (
            p.get("path").and_then(Value::as_str),
            p.get("configuration"),
        ) {
            (Some(file), _) => {
                let file = dir.join(file);
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| format!("plugin {name}: {}: {e}", file.display()))?;
                serde_yaml::from_str(&text).map_err(|e| format!("plugin {name}: {e}"))?
            }
            (None, Some(inline)) => inline.clone(),
            (None, None) => continue,
        };
        out.insert(name.to_string(), configuration);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_configuration_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::write(dir.join("erl.yaml"), "kind: Configuration\nlimits: []\n").unwrap();
        let text = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: erl.yaml\n- name: PodSecurity\n  configuration:\n    defaults:\n      enforce: restricted\n- name: LimitRanger\n";
        let got = parse_configuration(text, &dir).unwrap();
        assert_eq!(got["EventRateLimit"]["kind"], "Configuration");
        assert_eq!(got["PodSecurity"]["defaults"]["enforce"], "restricted");
        assert!(!got.contains_key("LimitRanger"));
        assert!(parse_configuration("kind: Other\n", &dir)
            .unwrap_err()
            .contains("AdmissionConfiguration"));
        let bad = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: Nope\n";
        assert!(parse_configuration(bad, &dir)
            .unwrap_err()
            .contains("unknown admission plugin"));
    }
}
