use super::apply;
use super::pod::pull_policy;
use serde_json::json;

#[test]
fn pod_defaults() {
    let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "nginx",
        "ports": [{"containerPort": 80}],
        "resources": {"limits": {"cpu": "1"}},
        "livenessProbe": {"httpGet": {"port": 80}},
        "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
        "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}});
    apply("", "Pod", &mut pod);
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["securityContext"], json!({}));
    assert_eq!(spec["enableServiceLinks"], true);
    let c = &spec["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(c["resources"]["requests"], json!({"cpu": "1"}));
    let mut bare = json!({"spec": {"containers": [{"name": "b", "image": "x"}]}});
    apply("", "Pod", &mut bare);
    assert_eq!(bare["spec"]["containers"][0]["resources"], json!({}));
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
    assert_eq!(spec["volumes"][1]["secret"]["defaultMode"], 420);
}

#[test]
fn explicit_values_win() {
    let mut pod = json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "x", "imagePullPolicy": "Never"}]}});
    apply("", "Pod", &mut pod);
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Never");
}

#[test]
fn image_pull_policy_follows_the_tag() {
    assert_eq!(pull_policy("nginx"), "Always");
    assert_eq!(pull_policy("nginx:latest"), "Always");
    assert_eq!(pull_policy("nginx:1.25"), "IfNotPresent");
    assert_eq!(pull_policy("registry:5000/team/app"), "Always");
    assert_eq!(pull_policy("registry:5000/team/app:v2"), "IfNotPresent");
    assert_eq!(pull_policy("nginx@sha256:abcd"), "IfNotPresent");
    assert_eq!(pull_policy("nginx:latest@sha256:abcd"), "Always");
}

#[test]
fn deployment_defaults() {
    let mut d = json!({"spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "a", "image": "nginx:1"}]}}}});
    apply("apps", "Deployment", &mut d);
    let spec = &d["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    let t = &spec["template"]["spec"];
    assert_eq!(t["restartPolicy"], "Always");
    assert!(
        t.get("enableServiceLinks").is_none(),
        "only pods get service links"
    );
    assert_eq!(t["containers"][0]["imagePullPolicy"], "IfNotPresent");
    let mut r = json!({"spec": {"strategy": {"type": "Recreate"}}});
    apply("apps", "Deployment", &mut r);
    assert_eq!(r["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn service_defaults() {
    let mut s = json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}});
    apply("", "Service", &mut s);
    let spec = &s["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(
        spec["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    assert_eq!(spec["ports"][1]["targetPort"], "dns");
    assert!(spec.get("externalTrafficPolicy").is_none());
    let mut lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 1}]}});
    apply("", "Service", &mut lb);
    assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    let mut en = json!({"spec": {"type": "ExternalName", "externalName": "x.example"}});
    apply("", "Service", &mut en);
    assert!(en["spec"].get("internalTrafficPolicy").is_none());
}

#[test]
fn other_kinds() {
    let mut e = json!({"subsets": [{"ports": [{"port": 1}]}]});
    apply("", "Endpoints", &mut e);
    assert_eq!(e["subsets"][0]["ports"][0]["protocol"], "TCP");
    let mut n = json!({"status": {"capacity": {"cpu": "2"}}});
    apply("", "Node", &mut n);
    assert_eq!(n["status"]["allocatable"], json!({"cpu": "2"}));
    let mut cm = json!({"data": {}});
    apply("", "ConfigMap", &mut cm);
    assert_eq!(cm, json!({"data": {}}));
}

#[test]
fn namespaces_are_labelled_with_their_name() {
    let mut ns = json!({"metadata": {"name": "team-a"}});
    apply("", "Namespace", &mut ns);
    assert_eq!(
        ns["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": "team-a"})
    );
    // A client cannot change or drop it.
    let mut changed = json!({"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "x", "a": "b"}}});
    apply("", "Namespace", &mut changed);
    assert_eq!(
        changed["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": "team-a", "a": "b"})
    );
    let mut nameless = json!({"metadata": {"generateName": "t-"}});
    apply("", "Namespace", &mut nameless);
    assert!(nameless["metadata"].get("labels").is_none());
}

#[test]
fn autoscaler_defaults() {
    let mut bare = json!({"spec": {"maxReplicas": 3}});
    apply("autoscaling", "HorizontalPodAutoscaler", &mut bare);
    assert_eq!(bare["spec"]["minReplicas"], 1);
    assert_eq!(
        bare["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    assert!(bare["spec"].get("behavior").is_none());
    let mut given = json!({"spec": {"minReplicas": 2, "maxReplicas": 3,
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
    apply("autoscaling", "HorizontalPodAutoscaler", &mut given);
    let b = &given["spec"]["behavior"];
    assert_eq!(given["spec"]["minReplicas"], 2);
    assert_eq!(b["scaleDown"]["stabilizationWindowSeconds"], 60);
    assert_eq!(b["scaleDown"]["selectPolicy"], "Max");
    assert_eq!(b["scaleDown"]["policies"][0]["type"], "Percent");
    assert_eq!(b["scaleUp"]["stabilizationWindowSeconds"], 0);
    assert_eq!(b["scaleUp"]["policies"].as_array().unwrap().len(), 2);
}

#[test]
fn flowcontrol_defaults() {
    let mut fs = json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}});
    apply("flowcontrol.apiserver.k8s.io", "FlowSchema", &mut fs);
    assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
    let mut kept = json!({"spec": {"matchingPrecedence": 500}});
    apply("flowcontrol.apiserver.k8s.io", "FlowSchema", &mut kept);
    assert_eq!(kept["spec"]["matchingPrecedence"], 500);
    let mut plc = json!({"spec": {"type": "Limited", "limited": {"limitResponse": {
        "type": "Queue", "queuing": {"queues": 0}}}}});
    apply(
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        &mut plc,
    );
    let l = &plc["spec"]["limited"];
    assert_eq!(l["nominalConcurrencyShares"], 30);
    assert_eq!(l["lendablePercent"], 0);
    assert_eq!(
        l["limitResponse"]["queuing"],
        json!({"queues": 64, "handSize": 8, "queueLengthLimit": 50})
    );
    let mut exempt = json!({"spec": {"type": "Exempt", "exempt": {}}});
    apply(
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        &mut exempt,
    );
    assert_eq!(
        exempt["spec"]["exempt"],
        json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
    );
}

#[test]
fn webhooks_policies_and_claims_get_kubes_defaults() {
    let mut hooks = json!({"webhooks": [{"name": "a.example.com",
        "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "timeoutSeconds": 3}]});
    apply(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        &mut hooks,
    );
    let h = &hooks["webhooks"][0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["namespaceSelector"], json!({}));
    assert_eq!(h["objectSelector"], json!({}));
    assert_eq!(h["timeoutSeconds"], 3, "what was given stays");
    assert_eq!(h["reinvocationPolicy"], "Never");
    assert_eq!(h["rules"][0]["scope"], "*");
    assert_eq!(h["clientConfig"]["service"]["port"], 443);
    let mut validating = json!({"webhooks": [{"name": "v.example.com"}]});
    apply(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        &mut validating,
    );
    assert!(validating["webhooks"][0]
        .get("reinvocationPolicy")
        .is_none());

    let mut policy =
        json!({"spec": {"matchConstraints": {"resourceRules": [{"resources": ["deployments"]}]}}});
    apply(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        &mut policy,
    );
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        policy["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(
        policy["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
        "*"
    );

    let mut claim = json!({"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
        {"name": "all", "exactly": {"deviceClassName": "x", "allocationMode": "All"}},
        {"name": "any", "firstAvailable": [{"name": "big", "deviceClassName": "x"}]}]}}});
    apply("resource.k8s.io", "ResourceClaim", &mut claim);
    let r = &claim["spec"]["devices"]["requests"];
    assert_eq!(r[0]["exactly"]["allocationMode"], "ExactCount");
    assert_eq!(r[0]["exactly"]["count"], 1);
    assert!(r[1]["exactly"].get("count").is_none());
    assert_eq!(r[2]["firstAvailable"][0]["count"], 1);
}
