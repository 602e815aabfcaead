//! Where durable state lives in the data directory, and the lock that keeps
//! two servers out of one directory.
//!
//! ```text
//! <data-dir>/LOCK                      flock()ed while a server runs
//! <data-dir>/STATE                     "generation G\nshards N\n" (replaced atomically)
//! <data-dir>/gen-G/shard-K/wal-<seq>.log    log segments
//! <data-dir>/gen-G/shard-K/snap-<rev>.snap  snapshots
//! ```
//!
//! A generation is one shard layout. Restarting with a different shard count
//! writes the recovered state as a new generation, switches STATE to it, and
//! only then removes the old one, so a crash in between loses nothing.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The shard layout the data directory currently holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub generation: u64,
    pub shards: usize,
}

/// An exclusive hold on a data directory, released when dropped (or when
/// the process dies, however it dies: the kernel drops flock locks).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    pub fn acquire(dir: &Path) -> Result<Self, String> {
        fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create data directory {}: {e}", dir.display()))?;
        let path = dir.join("LOCK");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let holder = fs::read_to_string(&path).unwrap_or_default();
            return Err(format!(
                "data directory {} is in use by another kubeshard (pid {}); two servers must never share one",
                dir.display(),
                holder.trim()
            ));
        }
        file.set_len(0).map_err(|e| e.to_string())?;
        let _ = write!(file, "{}", std::process::id());
        Ok(Self { _file: file })
    }
}

pub fn read_state(dir: &Path) -> Result<Option<State>, String> {
    let path = dir.join("STATE");
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut generation = None;
    let mut shards = None;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("generation", v)) => generation = v.trim().parse().ok(),
            Some(("shards", v)) => shards = v.trim().parse().ok(),
            _ => {}
        }
    }
    match (generation, shards) {
        (Some(generation), Some(shards)) if shards > 0 => Ok(Some(State { generation, shards })),
        _ => Err(format!(
            "{} is damaged ({text:?}): expected \"generation G\" and \"shards N\" lines",
            path.display()
        )),
    }
}

/// Replaces STATE atomically (write, fsync, rename, fsync the directory).
pub fn write_state(dir: &Path, state: State) -> io::Result<()> {
    let tmp = dir.join("STATE.tmp");
    let mut f = File::create(&tmp)?;
    writeln!(
        f,
        "generation {}\nshards {}",
        state.generation, state.shards
    )?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join("STATE"))?;
    sync_dir(dir)
}

pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

pub fn generation_dir(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("gen-{generation}"))
}

/// One shard's directory within a generation.
#[derive(Debug, Clone)]
pub struct ShardDir {
    pub path: PathBuf,
    pub shard: usize,
}

/// Files of one shard, each list sorted ascending by its number.
#[derive(Debug, Default)]
pub struct ShardFiles {
    /// (sequence number, path)
    pub segments: Vec<(u64, PathBuf)>,
    /// (revision, path)
    pub snapshots: Vec<(u64, PathBuf)>,
}

impl ShardDir {
    pub fn new(generation_dir: &Path, shard: usize) -> Self {
        Self {
            path: generation_dir.join(format!("shard-{shard}")),
            shard,
        }
    }

    pub fn segment_path(&self, seq: u64) -> PathBuf {
        self.path.join(format!("wal-{seq:016}.log"))
    }

    pub fn snapshot_path(&self, revision: u64) -> PathBuf {
        self.path.join(format!("snap-{revision:020}.snap"))
    }

    /// A snapshot being written: never read, removed at the next start.
    pub fn snapshot_tmp_path(&self, revision: u64) -> PathBuf {
        self.path.join(format!("snap-{revision:020}.tmp"))
    }

    pub fn list(&self) -> io::Result<ShardFiles> {
        let mut files = ShardFiles::default();
        let entries = match fs::read_dir(&self.path) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(files),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Some(n) = numbered(&name, "wal-", ".log") {
                files.segments.push((n, entry.path()));
            } else if let Some(n) = numbered(&name, "snap-", ".snap") {
                files.snapshots.push((n, entry.path()));
            } else if name.ends_with(".tmp") {
                // An unfinished snapshot from a crash: worthless.
                let _ = fs::remove_file(entry.path());
            }
        }
        files.segments.sort();
        files.snapshots.sort();
        Ok(files)
    }
}

fn numbered(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    name.strip_prefix(prefix)?
        .strip_suffix(suffix)?
        .parse()
        .ok()
}

/// The shard directories a generation holds.
pub fn shard_dirs(generation_dir: &Path, shards: usize) -> Vec<ShardDir> {
    (0..shards)
        .map(|k| ShardDir::new(generation_dir, k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let err = DirLock::acquire(dir.path()).unwrap_err();
        assert!(err.contains("in use by another kubeshard"), "{err}");
        assert!(err.contains(&std::process::id().to_string()), "{err}");
        drop(first);
        DirLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn state_round_trips_and_damage_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_state(dir.path()).unwrap(), None);
        let s = State {
            generation: 3,
            shards: 4,
        };
        write_state(dir.path(), s).unwrap();
        assert_eq!(read_state(dir.path()).unwrap(), Some(s));
        fs::write(dir.path().join("STATE"), "garbage").unwrap();
        assert!(read_state(dir.path()).unwrap_err().contains("damaged"));
    }

    #[test]
    fn files_are_listed_in_order_and_tmp_snapshots_removed() {
        let dir = tempfile::tempdir().unwrap();
        let sd = ShardDir::new(dir.path(), 0);
        fs::create_dir_all(&sd.path).unwrap();
        for p in [
            sd.segment_path(10),
            sd.segment_path(2),
            sd.snapshot_path(99),
            sd.snapshot_tmp_path(120),
        ] {
            fs::write(p, b"x").unwrap();
        }
        let files = sd.list().unwrap();
        assert_eq!(
            files.segments.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![2, 10]
        );
        assert_eq!(files.snapshots[0].0, 99);
        assert!(!sd.snapshot_tmp_path(120).exists());
    }
}
