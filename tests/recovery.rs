//! Recovery of the write-ahead log and snapshots: a restart restores the
//! same objects and resourceVersions and keeps counting; a torn tail is cut
//! off, damage in acknowledged data stops the start unless --repair, a
//! missing snapshot is survived when the log still reaches back, a changed
//! shard count re-distributes the keys, two servers never share a data
//! directory, and a full disk fails writes without taking reads down.

mod common;
use common::wal::{files, frames};
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

fn create(s: &Server, ns: &str, name: &str, payload: usize) -> (u16, Value) {
    s.post(
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        &json!({"metadata": {"name": name}, "data": {"v": name, "pad": "p".repeat(payload)}}),
    )
}

fn fill(s: &Server, ns: &str, prefix: &str, n: usize, payload: usize) {
    for i in 0..n {
        let (code, body) = create(s, ns, &format!("{prefix}{i}"), payload);
        assert_eq!(code, 201, "{body}");
    }
}

/// name → resourceVersion of every ConfigMap, and the list revision.
fn state(s: &Server) -> (BTreeMap<String, u64>, u64) {
    // kube-system's ConfigMaps are the server's own, rewritten at start.
    let (code, list) =
        s.get("/api/v1/configmaps?fieldSelector=metadata.namespace%21%3Dkube-system");
    assert_eq!(code, 200, "{list}");
    let versions = list["items"].as_array().unwrap().iter().map(rv);
    let items = keys(&list).into_iter().zip(versions).collect();
    (items, rv(&list))
}

fn start(shards: usize, data: &Path, extra: &[&str]) -> Server {
    Server::launch(shards, data, extra).unwrap_or_else(|log| panic!("start failed: {log}"))
}

#[test]
fn restart_restores_objects_and_versions_and_keeps_counting() {
    let data = tempfile::tempdir().unwrap();
    let mut s = start(2, data.path(), &[]);
    namespace(&s, "a");
    fill(&s, "a", "cm", 30, 100);
    let (code, _) = s.delete("/api/v1/namespaces/a/configmaps/cm3");
    assert_eq!(code, 200);
    let (before, rev_before) = state(&s);
    s.stop();
    let s = start(2, data.path(), &[]);
    let (after, rev_after) = state(&s);
    assert_eq!(after, before);
    assert_eq!(rev_after, rev_before);
    let (code, created) = create(&s, "a", "next", 1);
    assert_eq!(code, 201);
    assert!(rv(&created) > rev_before);
    // A watch resumed from before the restart gets exactly what followed.
    let mut w = s.watch(&format!(
        "/api/v1/namespaces/a/configmaps?watch=1&resourceVersion={rev_before}&timeoutSeconds=2"
    ));
    let ev = w.next_event().unwrap();
    assert_eq!(ev["type"], "ADDED", "{ev}");
    assert_eq!(ev["object"]["metadata"]["name"], "next");
}

#[test]
fn history_survives_a_restart_for_watches_and_lists() {
    let data = tempfile::tempdir().unwrap();
    let mut s = start(2, data.path(), &[]);
    namespace(&s, "h");
    let (_, first) = create(&s, "h", "one", 1);
    let from = rv(&first);
    fill(&s, "h", "more", 5, 1);
    let (code, _) = s.delete("/api/v1/namespaces/h/configmaps/one");
    assert_eq!(code, 200);
    s.kill();
    let s = start(2, data.path(), &[]);
    // Every change after `from`, in order: no silent gap.
    let mut w = s.watch(&format!(
        "/api/v1/namespaces/h/configmaps?watch=1&resourceVersion={from}&timeoutSeconds=1"
    ));
    let events: Vec<(String, String)> = std::iter::from_fn(|| w.next_event())
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    let mut want: Vec<(String, String)> = (0..5)
        .map(|i| ("ADDED".into(), format!("more{i}")))
        .collect();
    want.push(("DELETED".into(), "one".into()));
    assert_eq!(events, want);
    // A list at an exact revision from before the restart.
    let (code, list) = s.get(&format!(
        "/api/v1/namespaces/h/configmaps?resourceVersion={from}&resourceVersionMatch=Exact"
    ));
    assert_eq!(code, 200, "{list}");
    assert_eq!(names(&list), vec!["one"]);
}

#[test]
fn a_torn_tail_is_cut_off_with_a_log_line() {
    let data = tempfile::tempdir().unwrap();
    let mut s = start(1, data.path(), &[]);
    namespace(&s, "t");
    fill(&s, "t", "cm", 10, 100);
    let (before, _) = state(&s);
    s.kill();
    // A write the crash interrupted: a frame header promising more bytes
    // than made it to disk, right after the last good record.
    let seg = files(data.path(), "wal-").pop().unwrap();
    let (off, len) = *frames(&seg).last().unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let end = off + len;
    let torn = [
        &900u32.to_le_bytes()[..],
        &0x1234_5678u32.to_le_bytes(),
        &[7u8; 100],
    ]
    .concat();
    bytes[end..end + torn.len()].copy_from_slice(&torn);
    std::fs::write(&seg, &bytes).unwrap();
    let mut s = start(1, data.path(), &[]);
    assert!(s.log().contains("torn record"), "{}", s.log());
    assert_eq!(state(&s).0, before);
    fill(&s, "t", "after", 3, 1);
    let (after, _) = state(&s);
    s.stop();
    // The cut is permanent: the next start is clean.
    let s = start(1, data.path(), &[]);
    assert!(!s.log().contains("torn record"), "{}", s.log());
    assert_eq!(state(&s).0, after);
}

#[test]
fn a_corrupt_record_stops_the_start_unless_repair() {
    let data = tempfile::tempdir().unwrap();
    let mut s = start(1, data.path(), &[]);
    namespace(&s, "c");
    fill(&s, "c", "cm", 10, 100);
    s.kill();
    let seg = files(data.path(), "wal-").pop().unwrap();
    let fr = frames(&seg);
    // Damage the 4th record of 15 (header, 4 namespaces, 10 ConfigMaps):
    // acknowledged records follow it.
    let (off, len) = fr[fr.len() - 7];
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[off + len / 2] ^= 0x40;
    std::fs::write(&seg, &bytes).unwrap();
    let err = Server::launch(1, data.path(), &[])
        .err()
        .expect("start must fail");
    assert!(err.contains(&seg.display().to_string()), "{err}");
    assert!(err.contains(&format!("offset {off}")), "{err}");
    assert!(err.contains("--repair"), "{err}");
    // Nothing was changed by the refused start.
    assert_eq!(std::fs::read(&seg).unwrap(), bytes);
    let s = start(1, data.path(), &["--repair"]);
    assert!(s.log().contains("--repair"), "{}", s.log());
    let (objs, _) = state(&s);
    let want: Vec<String> = (0..3).map(|i| format!("c/cm{i}")).collect();
    assert_eq!(
        objs.keys().cloned().collect::<Vec<_>>(),
        want,
        "what preceded the damage is kept, the rest dropped"
    );
}

/// Writes until the server has taken at least `n` snapshots more than it
/// had (its bootstrap writes — the RBAC policy — may take some already).
fn write_until_snapshots(s: &Server, n: usize) {
    namespace(s, "s");
    let base = s.log().matches("snapshot written").count();
    let mut i = 0;
    while s.log().matches("snapshot written").count() < base + n {
        fill(s, "s", &format!("b{i}-"), 20, 2000);
        i += 1;
        assert!(i < 500, "no snapshots were written: {}", s.log());
    }
}

#[test]
fn snapshots_bound_the_log_and_a_missing_one_is_survived() {
    let data = tempfile::tempdir().unwrap();
    let small = ["--snapshot-after", "64Ki", "--wal-segment-kib", "64"];
    let mut s = start(1, data.path(), &small);
    write_until_snapshots(&s, 3);
    let (before, rev) = state(&s);
    let snaps = files(data.path(), "snap-");
    assert!(snaps.len() <= 2, "old snapshots are removed: {snaps:?}");
    let segments = files(data.path(), "wal-");
    let logged: u64 = segments
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(
        logged < 4 << 20,
        "the log is trimmed behind the snapshots: {logged} bytes in {segments:?}"
    );
    s.kill();
    // The newest snapshot is gone: the older one and the log still cover.
    std::fs::remove_file(snaps.last().unwrap()).unwrap();
    let mut s = start(1, data.path(), &small);
    assert_eq!(state(&s), (before.clone(), rev));
    s.kill();
    // Every snapshot gone while the log no longer reaches back: refused...
    for p in files(data.path(), "snap-") {
        std::fs::remove_file(p).unwrap();
    }
    let err = Server::launch(1, data.path(), &small)
        .err()
        .expect("start must fail");
    assert!(err.contains("no usable snapshot"), "{err}");
    // ...unless --repair, which serves what the log still has.
    let s = start(1, data.path(), &["--repair"]);
    let (left, _) = state(&s);
    assert!(
        !left.is_empty() && left.len() < before.len(),
        "{} of {}",
        left.len(),
        before.len()
    );
    for (k, r) in &left {
        assert_eq!(before.get(k), Some(r), "{k} came back different");
    }
}

#[test]
fn a_changed_shard_count_redistributes_keys() {
    let data = tempfile::tempdir().unwrap();
    let mut s = start(2, data.path(), &[]);
    namespace(&s, "r");
    fill(&s, "r", "cm", 40, 10);
    let (before, rev) = state(&s);
    s.stop();
    for shards in [3, 1, 4] {
        let mut s = start(shards, data.path(), &[]);
        assert!(s.log().contains("re-distributing"), "{}", s.log());
        assert_eq!(state(&s), (before.clone(), rev), "with {shards} shards");
        // Every key is where the new layout routes it: GETs find them all.
        for name in before.keys() {
            let (ns, n) = name.split_once('/').unwrap();
            let (code, _) = s.get(&format!("/api/v1/namespaces/{ns}/configmaps/{n}"));
            assert_eq!(code, 200, "{name} with {shards} shards");
        }
        s.stop();
    }
    let mut s = start(4, data.path(), &[]);
    assert!(
        !s.log().contains("re-distributing"),
        "same count: no re-distribution"
    );
    let (code, c) = create(&s, "r", "new", 1);
    assert_eq!(code, 201);
    assert!(rv(&c) > rev);
    s.stop();
}

#[test]
fn two_servers_never_share_a_data_directory() {
    let data = tempfile::tempdir().unwrap();
    let s = start(1, data.path(), &[]);
    let err = Server::launch(1, data.path(), &[])
        .err()
        .expect("second server must fail");
    assert!(err.contains("in use by another kubeshard"), "{err}");
    assert!(err.contains(&s.pid().to_string()), "{err}");
}

/// Connections the server closed itself sit in TIME_WAIT on its port for
/// a minute after it stops; a restart on the same port must not be
/// refused because of them, while a port somebody listens on still is.
#[test]
fn a_restart_takes_its_port_back_at_once() {
    use std::io::{Read, Write};
    let data = tempfile::tempdir().unwrap();
    // A port below the kernel's ephemeral range (32768 and up), which is
    // where the other tests' servers and every outgoing connection get
    // theirs: nobody else takes it while this server is down.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u16;
    let (mut s, port) = (0..20)
        .find_map(|i| {
            let port = (20_000 + (seed.wrapping_add(i * 613)) % 12_000).to_string();
            Server::launch(1, data.path(), &["--insecure-port", &port])
                .ok()
                .map(|s| (s, port))
        })
        .expect("no free port below the ephemeral range");
    for _ in 0..3 {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        c.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        c.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    s.kill();
    let again = start(1, data.path(), &["--insecure-port", &port]);
    assert_eq!(again.port, s.port);
    let other = tempfile::tempdir().unwrap();
    let err = Server::launch(1, other.path(), &["--insecure-port", &port])
        .err()
        .expect("a port in use must be refused");
    assert!(err.contains("in use"), "{err}");
}

#[test]
fn bad_storage_flags_are_refused() {
    let data = tempfile::tempdir().unwrap();
    let err = Server::launch(1, data.path(), &["--fsync", "sometimes"])
        .err()
        .unwrap();
    assert!(err.contains("unknown fsync policy"), "{err}");
    for policy in ["none", "interval:5ms"] {
        let dir = tempfile::tempdir().unwrap();
        // Only the test's writes: the service-account controller's would
        // land at times of their own.
        let flags = ["--fsync", policy, "--controllers=-serviceaccount"];
        let mut s = start(2, dir.path(), &flags);
        namespace(&s, "p");
        fill(&s, "p", "cm", 5, 10);
        let before = state(&s);
        s.kill();
        let s = start(2, dir.path(), &flags);
        assert_eq!(
            state(&s),
            before,
            "--fsync={policy} survives a crash of the process"
        );
    }
}

/// A small filesystem that can fill up: a tmpfs mount when the test may
/// mount one (root in a sandbox that allows it), else None.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(bytes: u64) -> Option<Self> {
        let dir = tempfile::tempdir().ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Self { dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_full_disk_fails_writes_keeps_reads_and_recovers() {
    let disk = SmallDisk::mount(24 << 20);
    let fault_file = tempfile::tempdir().unwrap();
    let (data, filler, extra) = match &disk {
        Some(d) => (
            d.dir.path().join("data"),
            d.dir.path().join("filler"),
            vec![],
        ),
        None => {
            eprintln!("cannot mount a tmpfs here: using the injected disk-full fault");
            let f = fault_file.path().join("full");
            (
                fault_file.path().join("data"),
                f.clone(),
                vec![
                    "--inject-disk-full-file".to_string(),
                    f.display().to_string(),
                ],
            )
        }
    };
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let mut s = start(2, &data, &extra);
    namespace(&s, "f");
    fill(&s, "f", "ok", 5, 100);
    let (before, _) = state(&s);
    // Fill the disk.
    if disk.is_some() {
        let _ = std::fs::write(&filler, vec![0u8; 64 << 20]);
    } else {
        std::fs::write(&filler, b"").unwrap();
    }
    let mut refused = 0;
    for i in 0..200 {
        let (code, body) = create(&s, "f", &format!("big{i}"), 512 << 10);
        if code == 201 {
            continue;
        }
        assert!(code == 503 || code == 500, "{code}: {body}");
        assert_eq!(body["kind"], "Status", "{body}");
        refused += 1;
        if refused == 3 {
            break;
        }
    }
    assert_eq!(refused, 3, "the disk never filled up");
    // Reads still work, and nothing refused became visible.
    let (now, _) = state(&s);
    for (k, r) in &before {
        assert_eq!(now.get(k), Some(r));
    }
    let (code, _) = s.get("/api/v1/namespaces/f/configmaps/ok1");
    assert_eq!(code, 200);
    // Space returns: writes work again.
    std::fs::remove_file(&filler).unwrap();
    let (code, body) = create(&s, "f", "after", 10);
    assert_eq!(code, 201, "{body}");
    let (final_state, rev) = state(&s);
    s.kill();
    let s = start(2, &data, &extra);
    assert_eq!(
        state(&s),
        (final_state, rev),
        "what was refused never comes back"
    );
}

/// Storage keys follow kube's etcd layout under `--etcd-prefix`: the log
/// holds `<prefix>/<resource>` paths, objects written under one prefix
/// are not seen under another, and are all there again under theirs.
#[test]
fn the_storage_prefix_places_every_key() {
    let data = tempfile::tempdir().unwrap();
    let mut s = start(1, data.path(), &["--etcd-prefix=/tenant-a"]);
    namespace(&s, "p");
    let (code, body) = create(&s, "p", "one", 1);
    assert_eq!(code, 201, "{body}");
    s.stop();
    let logged: Vec<u8> = files(data.path(), "wal-")
        .iter()
        .flat_map(|f| std::fs::read(f).unwrap())
        .collect();
    let holds = |needle: &str| logged.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(
        holds("/tenant-a/configmaps"),
        "the log names kube's key path"
    );
    assert!(holds("/tenant-a/namespaces"));
    assert!(
        !holds("/registry/"),
        "nothing is stored under the default prefix"
    );

    let mut s = start(1, data.path(), &["--etcd-prefix=/tenant-b"]);
    let (code, _) = s.get("/api/v1/namespaces/p/configmaps/one");
    assert_eq!(code, 404);
    let (code, _) = s.get("/api/v1/namespaces/p");
    assert_eq!(code, 404);
    s.stop();

    let s = start(1, data.path(), &["--etcd-prefix=/tenant-a/"]);
    let (code, got) = s.get("/api/v1/namespaces/p/configmaps/one");
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["data"]["v"], "one");
}

#[test]
fn a_relative_storage_prefix_is_refused_at_start() {
    let data = tempfile::tempdir().unwrap();
    let log = Server::launch(1, data.path(), &["--etcd-prefix=registry"])
        .err()
        .expect("the server refuses a relative prefix");
    assert!(log.contains("must start with /"), "{log}");
}
