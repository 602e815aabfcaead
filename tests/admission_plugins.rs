//! kube's default admission plugins, each by what it does to a write:
//! ServiceAccount, DefaultTolerationSeconds, Priority, RuntimeClass,
//! TaintNodesByCondition, DefaultStorageClass, DefaultIngressClass,
//! StorageObjectInUseProtection (with the built-in protection
//! controllers), PersistentVolumeClaimResize and
//! CertificateSubjectRestriction — and that each can be turned off.

mod common;
use common::*;
use serde_json::{json, Value};

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "c", "image": "nginx"}]);
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

fn pods(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/pods")
}

#[test]
fn pods_get_their_service_account_tolerations_and_priority() {
    let s = Server::start(2);
    let ns = namespace(&s, "apps");
    let (code, p) = s.post(&pods(&ns), &pod("web", json!({})));
    assert_eq!(code, 201, "{p}");
    let spec = &p["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    // The projected credentials, mounted at kube's path.
    let volume = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"].as_str().unwrap().starts_with("kube-api-access-"))
        .expect("a kube-api-access volume");
    let sources = volume["projected"]["sources"].as_array().unwrap();
    assert_eq!(sources[0]["serviceAccountToken"]["expirationSeconds"], 3607);
    assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(
        sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );
    assert_eq!(
        spec["containers"][0]["volumeMounts"][0],
        json!({"name": volume["name"], "readOnly": true,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
    );
    // Five minutes on not-ready and unreachable nodes.
    let tolerations = spec["tolerations"].as_array().unwrap();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        assert!(
            tolerations.contains(&json!({"key": key, "operator": "Exists",
                "effect": "NoExecute", "tolerationSeconds": 300})),
            "{tolerations:?}"
        );
    }
    // No class: priority zero.
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");

    // An account that says no to automounting; its pull secrets are taken.
    let (code, sa) = s.post(
        &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        &json!({"metadata": {"name": "quiet"}, "automountServiceAccountToken": false,
            "imagePullSecrets": [{"name": "registry"}]}),
    );
    assert_eq!(code, 201, "{sa}");
    let (code, p) = s.post(
        &pods(&ns),
        &pod("quiet", json!({"serviceAccountName": "quiet"})),
    );
    assert_eq!(code, 201, "{p}");
    assert!(p["spec"]["volumes"].is_null(), "{p}");
    assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "registry"}]));
    // An account that does not exist.
    let (code, body) = s.post(
        &pods(&ns),
        &pod("lost", json!({"serviceAccountName": "nobody"})),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"lost\" is forbidden: error looking up service account apps/nobody: serviceaccount \"nobody\" not found"
    );
    // An account that limits its pods' secrets.
    s.post(
        &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        &json!({"metadata": {"name": "strict",
            "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
            "secrets": [{"name": "allowed"}]}),
    );
    let (code, body) = s.post(
        &pods(&ns),
        &pod(
            "sneaky",
            json!({"serviceAccountName": "strict",
            "volumes": [{"name": "s", "secret": {"secretName": "other"}}]}),
        ),
    );
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap().contains(
        "volume with secret.secretName=\"other\" is not allowed because service account strict does not reference that secret"
    ), "{body}");

    // Priority classes: the class's value, and no other.
    let classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let (code, pc) = s.post(
        classes,
        &json!({"metadata": {"name": "high"}, "value": 1000,
        "preemptionPolicy": "Never"}),
    );
    assert_eq!(code, 201, "{pc}");
    let (code, p) = s.post(
        &pods(&ns),
        &pod("important", json!({"priorityClassName": "high"})),
    );
    assert_eq!(code, 201, "{p}");
    assert_eq!(p["spec"]["priority"], 1000);
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");
    let (code, body) = s.post(
        &pods(&ns),
        &pod("liar", json!({"priorityClassName": "high", "priority": 5})),
    );
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap().contains(
        "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"
    ), "{body}");
    let (code, body) = s.post(
        &pods(&ns),
        &pod("nobody", json!({"priorityClassName": "missing"})),
    );
    assert_eq!(code, 403, "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .ends_with("no PriorityClass with name missing was found"));
    // One global default; pods without a class take it.
    let (code, _) = s.post(
        classes,
        &json!({"metadata": {"name": "base"}, "value": 10, "globalDefault": true}),
    );
    assert_eq!(code, 201);
    let (code, body) = s.post(
        classes,
        &json!({"metadata": {"name": "base2"}, "value": 20, "globalDefault": true}),
    );
    assert_eq!(code, 403, "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("PriorityClass base is already marked as default. Only one default can exist"));
    let p = eventually(10, "the default class in effect", || {
        let name = unique("defaulted");
        let (code, p) = s.post(&pods(&ns), &pod(&name, json!({})));
        assert_eq!(code, 201, "{p}");
        (p["spec"]["priority"] == 10).then_some(p)
    });
    assert_eq!(p["spec"]["priorityClassName"], "base");
}

#[test]
fn runtime_classes_nodes_and_default_classes() {
    let s = Server::start(1);
    let ns = namespace(&s, "rt");
    let (code, body) = s.post(&pods(&ns), &pod("p", json!({"runtimeClassName": "gvisor"})));
    assert_eq!(code, 403, "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .ends_with("pod rejected: RuntimeClass \"gvisor\" not found"));
    let (code, rc) = s.post(
        "/apis/node.k8s.io/v1/runtimeclasses",
        &json!({"metadata": {"name": "gvisor"}, "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
            "scheduling": {"nodeSelector": {"sandbox": "yes"},
                "tolerations": [{"key": "sandbox", "operator": "Exists"}]}}),
    );
    assert_eq!(code, 201, "{rc}");
    let (code, p) = s.post(
        &pods(&ns),
        &pod(
            "p",
            json!({"runtimeClassName": "gvisor",
        "nodeSelector": {"zone": "a"}}),
        ),
    );
    assert_eq!(code, 201, "{p}");
    assert_eq!(
        p["spec"]["overhead"],
        json!({"cpu": "250m", "memory": "64Mi"})
    );
    assert_eq!(
        p["spec"]["nodeSelector"],
        json!({"zone": "a", "sandbox": "yes"})
    );
    assert!(p["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .contains(&json!({"key": "sandbox", "operator": "Exists"})));
    let (code, body) = s.post(
        &pods(&ns),
        &pod(
            "q",
            json!({"runtimeClassName": "gvisor",
        "nodeSelector": {"sandbox": "no"}}),
        ),
    );
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap().contains(
        "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = yes; pod.spec.nodeSelector[sandbox] = no"));

    // A new node starts not-ready.
    let (code, node) = s.post("/api/v1/nodes", &json!({"metadata": {"name": "n1"}}));
    assert_eq!(code, 201, "{node}");
    assert_eq!(
        node["spec"]["taints"],
        json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    );

    // Default storage and ingress classes (the newest default wins).
    for (name, default) in [("old", true), ("fast", true), ("slow", false)] {
        let mut sc = json!({"metadata": {"name": name}, "provisioner": "example.com/p"});
        if default {
            sc["metadata"]["annotations"] =
                json!({"storageclass.kubernetes.io/is-default-class": "true"});
        }
        assert_eq!(s.post("/apis/storage.k8s.io/v1/storageclasses", &sc).0, 201);
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let claims = format!("/api/v1/namespaces/{ns}/persistentvolumeclaims");
    let claim = |name: &str, extra: Value| {
        let mut c = json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}});
        for (k, v) in extra.as_object().unwrap() {
            c["spec"][k] = v.clone();
        }
        c
    };
    let c = eventually(10, "the default storage class in effect", || {
        let name = unique("c");
        let (code, c) = s.post(&claims, &claim(&name, json!({})));
        assert_eq!(code, 201, "{c}");
        (c["spec"]["storageClassName"] == "fast").then_some(c)
    });
    assert_eq!(
        c["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    let (_, named) = s.post(
        &claims,
        &claim("named", json!({"storageClassName": "slow"})),
    );
    assert_eq!(named["spec"]["storageClassName"], "slow");

    let (code, ic) = s.post(
        "/apis/networking.k8s.io/v1/ingressclasses",
        &json!({"metadata": {"name": "nginx",
            "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
            "spec": {"controller": "example.com/ingress"}}),
    );
    assert_eq!(code, 201, "{ic}");
    let ingresses = format!("/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses");
    eventually(10, "the default ingress class in effect", || {
        let name = unique("i");
        let (code, i) = s.post(
            &ingresses,
            &json!({"metadata": {"name": name},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}),
        );
        assert_eq!(code, 201, "{i}");
        (i["spec"]["ingressClassName"] == "nginx").then_some(())
    });

    // Resizing: only a bound claim whose class allows expansion grows.
    let (code, _) = s.patch(
        &format!("{claims}/named/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}),
    );
    assert_eq!(code, 200);
    let (code, body) = s.patch(
        &format!("{claims}/named"),
        "application/merge-patch+json",
        &json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}}),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "persistentvolumeclaims \"named\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
    );

    // A claim a running pod mounts stays until the pod is gone.
    let (code, user) = s.post(
        &pods(&ns),
        &pod(
            "user",
            json!({"volumes": [
        {"name": "d", "persistentVolumeClaim": {"claimName": "named"}}]}),
        ),
    );
    assert_eq!(code, 201, "{user}");
    let (code, _) = s.delete(&format!("{claims}/named"));
    assert_eq!(code, 200);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (code, held) = s.get(&format!("{claims}/named"));
    assert_eq!(code, 200, "{held}");
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    let (code, _) = s.delete(&format!("{}/user?gracePeriodSeconds=0", pods(&ns)));
    assert_eq!(code, 200);
    s.wait_gone(&format!("{claims}/named"));
    // A volume goes once it is not bound.
    let (code, pv) = s.post(
        "/api/v1/persistentvolumes",
        &json!({"metadata": {"name": "pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/pv"}}}),
    );
    assert_eq!(code, 201, "{pv}");
    assert_eq!(
        pv["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );
    assert_eq!(s.delete("/api/v1/persistentvolumes/pv").0, 200);
    s.wait_gone("/api/v1/persistentvolumes/pv");
}

#[test]
fn client_certificates_for_system_masters_are_refused() {
    use base64::Engine;
    let s = Server::start(1);
    let (pem, _) = common::tls::certificate_request("root", "system:masters");
    let (code, body) = s.post(
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
        &json!({"metadata": {"name": "root"}, "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(pem),
            "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}}),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "certificatesigningrequests.certificates.k8s.io \"root\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
    );
}

#[test]
fn plugins_can_be_turned_off() {
    let s = Server::start_with(
        1,
        &["--disable-admission-plugins=ServiceAccount,DefaultTolerationSeconds,Priority,TaintNodesByCondition"],
    );
    let ns = namespace(&s, "plain");
    let (code, p) = s.post(&pods(&ns), &pod("bare", json!({})));
    assert_eq!(code, 201, "{p}");
    assert!(p["spec"]["serviceAccountName"].is_null(), "{p}");
    assert!(p["spec"]["tolerations"].is_null(), "{p}");
    assert!(p["spec"]["priority"].is_null(), "{p}");
    let (_, node) = s.post("/api/v1/nodes", &json!({"metadata": {"name": "n"}}));
    assert!(node["spec"]["taints"].is_null(), "{node}");
}

#[test]
fn optional_plugins_when_enabled() {
    let s = Server::start_with(
        1,
        &["--enable-admission-plugins=AlwaysPullImages,LimitPodHardAntiAffinityTopology"],
    );
    let ns = namespace(&s, "strict");
    let mut p = pod("cached", json!({}));
    p["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    let (code, created) = s.post(&pods(&ns), &p);
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
    let (code, body) = s.post(
        &pods(&ns),
        &pod("spread", json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "topology.kubernetes.io/zone"}]}}})),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"spread\" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed"
    );
}

#[test]
fn namespace_node_selectors_and_toleration_whitelists() {
    let s = Server::start_with(
        1,
        &["--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction"],
    );
    let (code, ns) = s.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "team-a", "annotations": {
            "scheduler.alpha.kubernetes.io/node-selector": "env=prod",
            "scheduler.alpha.kubernetes.io/defaultTolerations":
                r#"[{"key": "dedicated", "operator": "Equal", "value": "team-a", "effect": "NoSchedule"}]"#,
            "scheduler.alpha.kubernetes.io/tolerationsWhitelist":
                r#"[{"key": "dedicated", "operator": "Exists"}, {"key": "node.kubernetes.io/not-ready", "operator": "Exists"}, {"key": "node.kubernetes.io/unreachable", "operator": "Exists"}]"#}}}),
    );
    assert_eq!(code, 201, "{ns}");
    let p = eventually(10, "the namespace's annotations in effect", || {
        let (code, p) = s.post(&pods("team-a"), &pod(&unique("web"), json!({})));
        assert_eq!(code, 201, "{p}");
        (p["spec"]["nodeSelector"]["env"] == "prod").then_some(p)
    });
    assert!(p["spec"]["tolerations"].as_array().unwrap().contains(
        &json!({"key": "dedicated", "operator": "Equal", "value": "team-a", "effect": "NoSchedule"})
    ), "{p}");
    let (code, body) = s.post(
        &pods("team-a"),
        &pod("dev", json!({"nodeSelector": {"env": "dev"}})),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"dev\" is forbidden: pod node label selector conflicts with its namespace node label selector"
    );
    let (code, body) = s.post(
        &pods("team-a"),
        &pod(
            "gpu",
            json!({"tolerations": [{"key": "gpu", "operator": "Exists"}]}),
        ),
    );
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body["message"],
        "pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist"
    );
}

#[test]
fn event_rate_limits_hold_per_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission.yaml");
    std::fs::write(
        &file,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  configuration:\n    apiVersion: eventratelimit.admission.k8s.io/v1alpha1\n    kind: Configuration\n    limits:\n    - type: Namespace\n      qps: 1\n      burst: 3\n",
    )
    .unwrap();
    let config = format!("--admission-control-config-file={}", file.display());
    let s = Server::start_with(2, &["--enable-admission-plugins=EventRateLimit", &config]);
    let ns = namespace(&s, "noisy");
    let event = |name: &str| {
        json!({"metadata": {"name": name}, "reason": "Test", "message": "m", "type": "Normal",
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns}})
    };
    let events = format!("/api/v1/namespaces/{ns}/events");
    let codes: Vec<u16> = (0..4)
        .map(|i| s.post(&events, &event(&format!("e{i}"))).0)
        .collect();
    assert_eq!(codes, [201, 201, 201, 429]);
    let (code, body) = s.post(&events, &event("e5"));
    assert_eq!(code, 429, "{body}");
    assert_eq!(
        body["message"],
        "Too many requests: limit reached on type Namespace for key noisy"
    );
    // Another namespace has its own bucket.
    let other = namespace(&s, "quiet-events");
    let (code, _) = s.post(
        &format!("/api/v1/namespaces/{other}/events"),
        &json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}}),
    );
    assert_eq!(code, 201);
    // A configuration the plugin cannot use stops the server from starting.
    std::fs::write(
        &file,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  configuration:\n    kind: Configuration\n    limits: []\n",
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(binary())
        .args(["--insecure-port", "0", "--data-dir"])
        .arg(data.path())
        .arg("--enable-admission-plugins=EventRateLimit")
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("must not be empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
