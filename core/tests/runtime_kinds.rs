//! A kind built at runtime (as a CRD will be) owns everything it carries —
//! selectable fields, scale paths, initial status, JSONPath printer
//! columns, its own schema, a storage version apart from the served one —
//! and registering and unregistering it over and over leaks nothing: the
//! heap returns to where it was.
//!
//! The heap is counted by this test binary's allocator, so this file holds
//! one test (nextest runs each in its own process as well).

use kubeshard_core::catalog::{
    field_path, Catalog, Printer, ResourceInfo, ScaleSelector, ScaleSpec, SchemaSource,
    SelectableField,
};
use kubeshard_core::schema::{SchemaRegistry, REF_PREFIX};
use kubeshard_core::table::{self, ColumnSpec, CustomColumns};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A widget kind, served at v1beta1 and stored at v1, with everything a
/// CRD can give a kind.
fn widget(n: usize) -> ResourceInfo {
    let base = Catalog::with_builtins()
        .snapshot()
        .lookup("apps", "v1", "deployments")
        .unwrap()
        .as_ref()
        .clone();
    let (group, version, kind) = ("example.com", "v1beta1", "Widget");
    let definition = format!("com.example.{version}.{kind}");
    let defs = BTreeMap::from([(
        definition.clone(),
        json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"$ref": format!("{REF_PREFIX}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")},
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"}, "color": {"type": "string"}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}),
    )]);
    let kinds = HashMap::from([(
        (group.to_string(), version.to_string(), kind.to_string()),
        definition,
    )]);
    let columns = CustomColumns::new(vec![ColumnSpec {
        name: "Color".into(),
        kind: "string".into(),
        format: String::new(),
        description: "The widget's color.".into(),
        priority: 0,
        json_path: ".spec.color".into(),
    }])
    .unwrap();
    let mut info = ResourceInfo {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        plural: format!("widgets{n}"),
        singular: "widget".into(),
        short_names: vec!["wd".into()],
        categories: vec!["all".into()],
        selectable_fields: vec![SelectableField {
            label: "spec.color".into(),
            path: field_path(&["spec", "color"]),
            absent: "".into(),
            stored_label: "spec.color".into(),
        }],
        printer: Printer::Columns(Arc::new(columns)),
        scale: Some(ScaleSpec {
            spec_replicas: field_path(&["spec", "replicas"]),
            status_replicas: field_path(&["status", "replicas"]),
            selector: ScaleSelector::String(field_path(&["status", "selector"])),
        }),
        storage_key: Arc::from(format!("{group}/widgets{n}")),
        storage_group: group.into(),
        storage_version: "v1".into(),
        schema_source: SchemaSource::Own(Arc::new(SchemaRegistry::new(defs, kinds))),
        ..base
    };
    info.strategy.initial_status = Some(json!({"replicas": 0}));
    info
}

/// Registers a widget kind, serves one object with it the way the server
/// would (schema, table row), and unregisters it.
fn round(catalog: &Catalog, n: usize) {
    catalog.register(widget(n));
    {
        let snapshot = catalog.snapshot();
        let info = snapshot
            .lookup("example.com", "v1beta1", &format!("widgets{n}"))
            .unwrap();
        assert_ne!(info.storage_version, info.version);
        let schema = info.schema().expect("the kind's own schema");
        assert!(schema.field("spec").is_some());
        let obj = json!({"metadata": {"name": "w"}, "spec": {"color": "blue"}});
        let row = table::row(&info.printer, &obj, chrono::Utc::now());
        assert_eq!(row.cells, vec![json!("w"), json!("blue")]);
        assert!(info.supports_field("spec.color"));
    }
    catalog.unregister("example.com", "v1beta1", &format!("widgets{n}"));
    assert!(catalog
        .snapshot()
        .lookup("example.com", "v1beta1", &format!("widgets{n}"))
        .is_none());
}

#[test]
fn registering_and_unregistering_a_runtime_kind_leaks_nothing() {
    let catalog = Catalog::with_builtins();
    // Warm up: the built-in schema registry and other lazily built state.
    for n in 0..5 {
        round(&catalog, n);
    }
    let baseline = LIVE.load(Ordering::Relaxed);
    for n in 0..300 {
        round(&catalog, n % 7);
    }
    let grown = LIVE.load(Ordering::Relaxed) - baseline;
    // A leak of one catalog entry per round would be tens of kilobytes.
    assert!(
        grown.abs() < 4096,
        "the heap grew by {grown} bytes over 300 register/unregister rounds"
    );
}
