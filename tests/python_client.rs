//! The official Python `kubernetes` client, from PyPI in a venv this test
//! creates, runs an informer (list + watch with bookmarks, server-side
//! timeouts and a forced 410) and must end equal to the server's state.

mod common;
use common::python::python;
use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn python_informer_stays_in_sync_through_timeouts_bookmarks_and_410() {
    let py = python();
    let s = Server::start_with(
        2,
        &[
            "--watch-history-max-events",
            "20",
            "--watch-bookmark-interval",
            "300ms",
        ],
    );
    let ns = namespace(&s, "py");
    for i in 0..5 {
        s.post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap(&format!("seed-{i}"), json!({})),
        );
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/informer.py");
    let dir = tempfile::tempdir().unwrap();
    let resume = dir.path().join("resume");
    let mut child = Command::new(&py)
        .arg(&script)
        .args([
            "--host",
            &s.base,
            "--namespace",
            &ns,
            "--seconds",
            "6",
            "--pause-after",
            "2",
            "--resume-file",
            resume.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The informer says when it pauses; its other stderr is kept for the
    // failure message.
    let (paused_tx, paused) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
            let line = line.unwrap_or_default();
            if line == "paused" {
                let _ = paused_tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // Writes throughout; while the informer is paused, a burst three times
    // the history window, so its next watch gets a 410. Writing stops
    // 1.5 s after it resumes, so it can catch up before its end.
    let write = |i: usize| {
        let name = format!("cm-{}", i % 15);
        match i % 4 {
            0 | 1 => {
                s.post(
                    &format!("/api/v1/namespaces/{ns}/configmaps"),
                    &configmap(&name, json!({"n": i.to_string()})),
                );
            }
            2 => {
                let (code, cur) = s.get(&format!("/api/v1/namespaces/{ns}/configmaps/{name}"));
                if code == 200 {
                    let mut next = cur.clone();
                    next["data"]["k"] = json!(i.to_string());
                    s.put(&format!("/api/v1/namespaces/{ns}/configmaps/{name}"), &next);
                }
            }
            _ => {
                s.delete(&format!("/api/v1/namespaces/{ns}/configmaps/{name}"));
            }
        }
    };
    let started = Instant::now();
    let mut resumed: Option<Instant> = None;
    let mut i = 0;
    while resumed.is_none_or(|r| r.elapsed() < Duration::from_millis(1500)) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the informer never paused"
        );
        if resumed.is_none() && paused.try_recv().is_ok() {
            for b in 0..60 {
                s.post(
                    &format!("/api/v1/namespaces/{ns}/configmaps"),
                    &configmap(&format!("burst-{b}"), json!({})),
                );
            }
            std::fs::write(&resume, b"").unwrap();
            resumed = Some(Instant::now());
        }
        write(i);
        i += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(out.status.success(), "informer failed: {stderr}");
    let result: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let (_, list) = s.get(&format!("/api/v1/namespaces/{ns}/configmaps"));
    let server: serde_json::Map<String, Value> = keys(&list)
        .into_iter()
        .zip(list["items"].as_array().unwrap())
        .map(|(k, i)| (k, i["metadata"]["resourceVersion"].clone()))
        .collect();
    assert_eq!(
        result["cache"],
        Value::Object(server),
        "stats: {}",
        result["stats"]
    );
    let stats = &result["stats"];
    assert!(stats["sessions"].as_u64().unwrap() >= 3, "{stats}");
    assert!(stats["bookmarks"].as_u64().unwrap() >= 1, "{stats}");
    assert!(
        stats["relists_after_410"].as_u64().unwrap() >= 1,
        "the pause forced a 410: {stats}"
    );
    assert!(stats["events"].as_u64().unwrap() > 10, "{stats}");
}
