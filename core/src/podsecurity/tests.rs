use super::*;
use serde_json::json;

fn restricted() -> LevelVersion {
    LevelVersion {
        level: Level::Restricted,
        version: Version::latest(),
    }
}

fn baseline() -> LevelVersion {
    LevelVersion {
        level: Level::Baseline,
        version: Version::latest(),
    }
}

fn check(policy: &LevelVersion, pod: Value) -> String {
    describe(&evaluate(policy, &PodView::of(&pod)))
}

#[test]
fn a_bare_container_fails_restricted_as_kube_says() {
    let pod = json!({"spec": {"containers": [{"name": "c", "image": "x"}]}});
    assert_eq!(
        check(&restricted(), pod.clone()),
        "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    assert_eq!(check(&baseline(), pod), "");
}

#[test]
fn a_compliant_pod_passes_restricted() {
    let pod = json!({"spec": {
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "securityContext": {"allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
        "volumes": [{"name": "cfg", "configMap": {"name": "x"}}]}});
    assert_eq!(check(&restricted(), pod), "");
}

#[test]
fn baseline_checks_word_their_details_as_kube() {
    let pod = json!({"metadata": {"annotations": {
            "container.apparmor.security.beta.kubernetes.io/e": "unconfined"}},
        "spec": {
        "hostNetwork": true, "hostIPC": true,
        "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"},
            {"name": "net.ipv4.tcp_syncookies", "value": "1"}],
            "seLinuxOptions": {"type": "spc_t"}},
        "containers": [
            {"name": "a", "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_TIME", "NET_ADMIN"]}},
                "ports": [{"containerPort": 1, "hostPort": 20}]},
            {"name": "b", "securityContext": {"procMount": "Unmasked"},
                "ports": [{"containerPort": 2, "hostPort": 10}],
                "livenessProbe": {"httpGet": {"host": "localhost", "port": 8080}}}],
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}]}});
    assert_eq!(
        check(&baseline(), pod),
        "forbidden AppArmor profile (annotation must not set AppArmor profile type to \"container.apparmor.security.beta.kubernetes.io/e=\"unconfined\"\"), \
non-default capabilities (container \"a\" must not include \"NET_ADMIN\", \"SYS_TIME\" in securityContext.capabilities.add), \
host namespaces (hostNetwork=true, hostIPC=true), \
hostPath volumes (volume \"root\"), \
hostPort (containers \"a\", \"b\" use hostPorts 10, 20), \
probe or lifecycle host (container \"b\" uses probe or lifecycle host \"localhost\"), \
privileged (container \"a\" must not set securityContext.privileged=true), \
procMount (container \"b\" must not set securityContext.procMount to \"Unmasked\"), \
seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type \"spc_t\"), \
forbidden sysctls (kernel.msgmax)"
    );
}

#[test]
fn restricted_volume_and_user_checks() {
    let pod = json!({"spec": {
        "securityContext": {"runAsNonRoot": true, "runAsUser": 0, "seccompProfile": {"type": "Localhost"}},
        "containers": [{"name": "c", "securityContext": {"allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": false}}],
        "volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}, {"name": "h", "hostPath": {"path": "/"}}]}});
    assert_eq!(
        check(&restricted(), pod),
        "restricted volume types (volumes \"n\", \"h\" use restricted volume types \"hostPath\", \"nfs\"), \
runAsNonRoot != true (container \"c\" must not set securityContext.runAsNonRoot=false), \
runAsUser=0 (pod must not set runAsUser=0)"
    );
}

#[test]
fn levels_and_versions_parse_as_kube() {
    assert_eq!(Level::parse("restricted"), Some(Level::Restricted));
    assert_eq!(Level::parse("Restricted"), None);
    assert_eq!(Version::parse("v1.30").unwrap().minor, 30);
    assert_eq!(Version::parse("v1.99").unwrap().minor, LATEST_MINOR);
    assert_eq!(Version::parse("v1.99").unwrap().text, "v1.99");
    for bad in ["v1.05", "v2.0", "1.30", "v1.", "latest "] {
        assert!(Version::parse(bad).is_none(), "{bad}");
    }
    // Before 1.34 probe hosts were not checked.
    let probe = json!({"spec": {"containers": [{"name": "c",
        "readinessProbe": {"tcpSocket": {"host": "10.0.0.1", "port": 1}}}]}});
    let old = LevelVersion {
        level: Level::Baseline,
        version: Version::parse("v1.33").unwrap(),
    };
    assert_eq!(check(&old, probe.clone()), "");
    assert!(check(&baseline(), probe).starts_with("probe or lifecycle host"));
}
