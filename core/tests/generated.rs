//! The generated tables in this crate are exactly what their generators
//! make from their pinned inputs today: a hand edit, or a generator change
//! whose output was not committed, fails here. The inputs are fetched as
//! the generators' own instructions say (a crate through cargo, a wheel
//! through pip) and cached (cargo's registry, target/generator-inputs).

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The unpacked source of crate `name-version` in cargo's registry,
/// fetched (not built) through a throwaway manifest when missing.
fn crate_source(name: &str, version: &str, features: &str) -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let find = || {
        std::fs::read_dir(home.join("registry/src"))
            .ok()?
            .flatten()
            .map(|d| d.path().join(format!("{name}-{version}")))
            .find(|p| p.is_dir())
    };
    if let Some(found) = find() {
        return found;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        format!(
            "[package]\nname = \"fetch-inputs\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n{name} = {{ version = \"={version}\", features = [{features}] }}\n\n[workspace]\n"
        ),
    )
    .unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(cargo)
        .arg("fetch")
        .arg("--manifest-path")
        .arg(dir.path().join("Cargo.toml")));
    find().unwrap_or_else(|| panic!("{name}-{version} is not in {}", home.display()))
}

fn assert_same(generated: &Path, committed: &Path) {
    let want = std::fs::read_to_string(committed).unwrap();
    let got = std::fs::read_to_string(generated).unwrap();
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{} differs from what its generator makes now (first at line {}); re-run the generator and commit",
            committed.display(),
            line + 1
        );
    }
}

#[test]
fn the_protobuf_schema_table_is_regenerated_identically() {
    let root = workspace();
    let k8s_pb = crate_source("k8s-pb", "0.9.0", "");
    let k8s_openapi = crate_source("k8s-openapi", "0.26.1", "\"v1_34\"");
    let out = tempfile::NamedTempFile::new().unwrap();
    run(Command::new("python3")
        .current_dir(&root)
        .arg("core/tools/gen_protobuf_schema.py")
        .arg("--k8s-pb")
        .arg(&k8s_pb)
        .arg("--k8s-openapi")
        .arg(&k8s_openapi)
        .arg("--out")
        .arg(out.path()));
    assert_same(
        out.path(),
        &root.join("core/src/protobuf/schema_generated.rs"),
    );
}

#[test]
fn the_schema_merge_facts_are_regenerated_identically() {
    let root = workspace();
    let inputs = root.join("target/generator-inputs");
    let venv = inputs.join("venv");
    if !venv.join("bin/pip").exists() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    }
    let wheel = inputs.join("kubernetes_validate-1.37.0-py3-none-any.whl");
    if !wheel.exists() {
        run(Command::new(venv.join("bin/pip"))
            .args(["download", "-q", "--no-deps", "-d"])
            .arg(&inputs)
            .arg("kubernetes-validate==1.37.0"));
    }
    let out = tempfile::NamedTempFile::new().unwrap();
    run(Command::new("python3")
        .current_dir(&root)
        .arg("core/tools/gen_schema_facts.py")
        .arg(&wheel)
        .arg("--out")
        .arg(out.path()));
    assert_same(out.path(), &root.join("core/src/schema/facts_generated.rs"));
}
