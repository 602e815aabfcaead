//! Just enough of kubeshard's on-disk format for tests to find and damage
//! records: a frame is `[len u32][crc32c u32][payload][pad to 8]`.

use std::path::{Path, PathBuf};

/// Every file of one kind ("wal-" or "snap-") under a data directory,
/// sorted by path (so by shard, then by number).
pub fn files(data_dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![data_dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// (offset, padded length) of each frame of a log segment or snapshot.
pub fn frames(path: &Path) -> Vec<(usize, usize)> {
    let buf = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= buf.len() {
        let len = u32::from_le_bytes(buf[at..at + 4].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        let padded = (8 + len).next_multiple_of(8);
        out.push((at, padded));
        at += padded;
    }
    out
}
