//! Two of kube's optional pod plugins, off unless
//! `--enable-admission-plugins` names them: AlwaysPullImages (every
//! container, and every image volume, pulls its image on each start, so
//! a pod cannot use an image cached on its node without the credentials
//! to pull it) and LimitPodHardAntiAffinityTopology (required pod
//! anti-affinity only by node).

use super::{Attributes, Mutating, Operation, Outcome, Validating};
use kubeshard_core::meta;
use kubeshard_core::status::{field_not_supported, ApiError};
use serde_json::{json, Value};

pub const ALWAYS_PULL_IMAGES: &str = "AlwaysPullImages";
pub const ANTI_AFFINITY: &str = "LimitPodHardAntiAffinityTopology";

const CONTAINER_KINDS: &[&str] = &["initContainers", "containers", "ephemeralContainers"];

pub struct AlwaysPullImages;

/// Whether an update brings no image the pod did not run already (such
/// an update is left alone).
fn no_new_images(new: &Value, old: &Value) -> bool {
    let images = |pod: &Value| -> Vec<String> {
        CONTAINER_KINDS
            .iter()
            .flat_map(|k| meta::array_at(pod, &format!("/spec/{k}")))
            .map(|c| meta::str_at(c, "/image").to_string())
            .collect()
    };
    let old = images(old);
    images(new).iter().all(|i| old.contains(i))
}

fn applies(a: &Attributes<'_>, new: Option<&Value>) -> bool {
    match (a.operation, new, a.old_object) {
        (Operation::Create, Some(_), _) => true,
        (Operation::Update, Some(new), Some(old)) => !no_new_images(new, old),
        _ => false,
    }
}

impl Mutating for AlwaysPullImages {
    fn name(&self) -> &'static str {
        ALWAYS_PULL_IMAGES
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.addresses("", "pods") && matches!(a.operation, Operation::Create | Operation::Update)
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        let Some(pod) = object else {
            return Outcome::Ready(Ok(()));
        };
        if !applies(a, Some(pod)) {
            return Outcome::Ready(Ok(()));
        }
        for k in CONTAINER_KINDS {
            if let Some(list) = pod
                .pointer_mut(&format!("/spec/{k}"))
                .and_then(Value::as_array_mut)
            {
                for c in list.iter_mut().filter(|c| c.is_object()) {
                    c["imagePullPolicy"] = json!("Always");
                }
            }
        }
        if let Some(volumes) = pod
            .pointer_mut("/spec/volumes")
            .and_then(Value::as_array_mut)
        {
            for v in volumes.iter_mut() {
                if let Some(image) = v.get_mut("image").filter(|i| i.is_object()) {
                    image["pullPolicy"] = json!("Always");
                }
            }
        }
        Outcome::Ready(Ok(()))
    }
}

impl Validating for AlwaysPullImages {
    fn name(&self) -> &'static str {
        ALWAYS_PULL_IMAGES
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        Mutating::handles(self, a)
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        let Some(pod) = object.filter(|p| applies(a, Some(p))) else {
            return Outcome::Ready(Ok(()));
        };
        let mut errors = Vec::new();
        for k in CONTAINER_KINDS {
            for (i, c) in meta::array_at(pod, &format!("/spec/{k}"))
                .iter()
                .enumerate()
            {
                let policy = meta::str_at(c, "/imagePullPolicy");
                if policy != "Always" {
                    errors.push(field_not_supported(
                        &format!("spec.{k}[{i}].imagePullPolicy"),
                        policy,
                        &["Always"],
                    ));
                }
            }
        }
        for (i, v) in meta::array_at(pod, "/spec/volumes").iter().enumerate() {
            if v.get("image").is_some_and(Value::is_object) {
                let policy = meta::str_at(v, "/image/pullPolicy");
                if policy != "Always" {
                    errors.push(field_not_supported(
                        &format!("spec.volumes[{i}].image.pullPolicy"),
                        policy,
                        &["Always"],
                    ));
                }
            }
        }
        let texts: Vec<String> = errors
            .iter()
            .map(|e| format!("pods {:?} is forbidden: {}", a.name, e.error_string()))
            .collect();
        Outcome::Ready(match texts.len() {
            0 => Ok(()),
            1 => Err(ApiError::forbidden(
                "",
                "pods",
                a.name,
                &errors[0].error_string(),
            )),
            _ => Err(ApiError::new(
                403,
                "Forbidden",
                format!("[{}]", texts.join(", ")),
            )),
        })
    }
}

pub struct AntiAffinityTopology;

impl Validating for AntiAffinityTopology {
    fn name(&self) -> &'static str {
        ANTI_AFFINITY
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.addresses("", "pods") && matches!(a.operation, Operation::Create | Operation::Update)
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        let terms = object.map_or(&[][..], |p| {
            meta::array_at(
                p,
                "/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution",
            )
        });
        let bad = terms
            .iter()
            .map(|t| meta::str_at(t, "/topologyKey"))
            .find(|k| *k != "kubernetes.io/hostname");
        Outcome::Ready(match bad {
            None => Ok(()),
            Some(key) => Err(ApiError::forbidden(
                "",
                "pods",
                a.name,
                &format!("affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey {key} but only key kubernetes.io/hostname is allowed"),
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_without_new_images_are_left_alone() {
        let old = json!({"spec": {"containers": [{"name": "a", "image": "x"}]}});
        let same = json!({"spec": {"containers": [{"name": "a", "image": "x"}], "activeDeadlineSeconds": 5}});
        assert!(no_new_images(&same, &old));
        let other = json!({"spec": {"containers": [{"name": "a", "image": "y"}]}});
        assert!(!no_new_images(&other, &old));
    }
}
