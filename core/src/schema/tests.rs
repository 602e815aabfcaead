use super::*;

fn pod_spec() -> Schema<'static> {
    builtin().named("io.k8s.api.core.v1.PodSpec").unwrap()
}

#[test]
fn merge_keys_come_from_the_facts() {
    let (containers, meta) = pod_spec().field("containers").unwrap();
    assert!(meta.merge);
    assert_eq!(meta.merge_key.as_deref(), Some("name"));
    assert_eq!(
        containers.list_type(),
        Some(&ListType::Map(vec!["name".into()]))
    );
    let container = containers.items().unwrap();
    let (ports, meta) = container.field("ports").unwrap();
    assert_eq!(meta.merge_key.as_deref(), Some("containerPort"));
    assert_eq!(
        ports.list_type(),
        Some(&ListType::Map(vec![
            "containerPort".into(),
            "protocol".into()
        ]))
    );
    let (tolerations, meta) = pod_spec().field("tolerations").unwrap();
    assert!(!meta.merge);
    assert_eq!(tolerations.list_type(), Some(&ListType::Atomic));
    let (_, volumes) = pod_spec().field("volumes").unwrap();
    assert!(volumes.merge && volumes.retain_keys);
}

#[test]
fn kinds_resolve_to_objects_with_typed_leaves() {
    let reg = builtin();
    let dep = reg.kind("apps", "v1", "Deployment").unwrap();
    let (spec, _) = dep.field("spec").unwrap();
    let (strategy, meta) = spec.field("strategy").unwrap();
    assert!(meta.retain_keys);
    let (ru, _) = strategy.field("rollingUpdate").unwrap();
    let (surge, _) = ru.field("maxSurge").unwrap();
    assert_eq!(surge.node(), &Node::IntOrString);
    let (replicas, _) = spec.field("replicas").unwrap();
    assert_eq!(replicas.node(), &Node::Scalar(Scalar::Int32));
    let (template, _) = spec.field("template").unwrap();
    let (pod_spec, _) = template.field("spec").unwrap();
    let (grace, _) = pod_spec.field("terminationGracePeriodSeconds").unwrap();
    assert_eq!(grace.node(), &Node::Scalar(Scalar::Integer));
    let container = pod_spec.field("containers").unwrap().0.items().unwrap();
    match container.node() {
        Node::Object(o) => assert_eq!(o.name.as_deref(), Some("io.k8s.api.core.v1.Container")),
        other => panic!("{other:?}"),
    }
    let (resources, _) = container.field("resources").unwrap();
    let limits = resources.field("limits").unwrap().0;
    assert_eq!(limits.member("cpu").unwrap().0.node(), &Node::Quantity);
    let (selector, _) = spec.field("selector").unwrap();
    assert!(selector.is_atomic_map());
    let (md, _) = dep.field("metadata").unwrap();
    let (labels, _) = md.field("labels").unwrap();
    assert!(matches!(labels.node(), Node::Map(_)));
    let (mf, _) = md.field("managedFields").unwrap();
    let (fields_v1, _) = mf.items().unwrap().field("fieldsV1").unwrap();
    assert!(fields_v1.is_untyped());
    assert!(reg.kind("", "v1", "Nope").is_none());
    // kube does not require metadata on kinds.
    let def = &reg.definitions()["io.k8s.api.apps.v1.Deployment"];
    assert!(def.get("required").is_none());
}

#[test]
fn every_fact_names_a_field_that_exists_when_its_definition_is_loaded() {
    let defs = builtin().definitions();
    for (def, field, _) in facts::all() {
        let Some(d) = defs.get(*def) else { continue };
        if !field.is_empty() {
            assert!(
                d["properties"].get(*field).is_some(),
                "{def}.{field} is not in k8s-openapi's schema"
            );
        }
    }
}

/// Kinds are found by borrowed names: every registered kind's schema and
/// definition come back from (group, version, kind), and nothing else does.
#[test]
fn every_kind_is_found_by_its_names() {
    let r = builtin();
    for (gvk, def) in r.kinds() {
        assert_eq!(
            r.kind_definition(&gvk.0, &gvk.1, &gvk.2),
            Some(def),
            "{gvk:?}"
        );
        assert!(r.kind(&gvk.0, &gvk.1, &gvk.2).is_some(), "{gvk:?}");
    }
    assert!(r.kind("apps", "v1", "ConfigMap").is_none());
    assert_eq!(r.kind_definition("", "v2", "ConfigMap"), None);
}
