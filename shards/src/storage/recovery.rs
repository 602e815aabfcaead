//! Recovery: rebuilding every shard's state from its newest usable snapshot
//! and the log after it, before the server serves anything.
//!
//! The rules for damage: a record cut short or failing its checksum at the
//! very end of a shard's log is a torn tail (a crash interrupted a write
//! that was never acknowledged): it is cut off with a log line. Damage with
//! good records after it, a missing segment, or a log that does not reach
//! back to the snapshot means acknowledged data is unreadable: the start is
//! refused with a message naming the file and offset, unless `--repair`
//! says to keep what precedes the damage and drop the rest.
//!
//! When the shard count changed since the last run, the recovered state is
//! re-distributed by key and written as a new generation of snapshots.

use super::layout::{
    generation_dir, read_state, shard_dirs, write_state, DirLock, ShardDir, State,
};
use super::record::ObjectRecord;
use super::snapshot::{load_snapshot, write_snapshot_sync, SnapshotEncoder};
use super::wal::scan::{read_header, scan_segment, Damage};
use super::wal::writer::LogStart;
use super::wal::SegmentInfo;
use kubeshard_cache::{Event, EventType, StoredObject};
use kubeshard_core::keys::shard_for;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct RecoveryOptions {
    pub dir: PathBuf,
    pub shards: usize,
    pub repair: bool,
}

/// One shard's recovered state, ready for its executor.
#[derive(Debug)]
pub struct RecoveredShard {
    pub objects: Vec<(Arc<str>, Arc<StoredObject>)>,
    /// Events after `history_start`, oldest first, with their previous
    /// objects: watch resumption and list snapshots work across a restart.
    pub history: Vec<Arc<Event>>,
    pub history_start: u64,
    pub log: LogStart,
    /// Snapshot files, oldest first.
    pub snapshots: Vec<(u64, PathBuf)>,
}

#[derive(Debug, Default)]
pub struct RecoveryReport {
    pub objects: usize,
    pub replayed: usize,
    pub resharded_from: Option<usize>,
    pub elapsed: Duration,
}

#[derive(Debug)]
pub struct Recovered {
    pub lock: DirLock,
    pub shards: Vec<RecoveredShard>,
    /// The newest revision found: the sequencer continues from it.
    pub revision: u64,
    /// Every shard's history is complete after this revision.
    pub hub_start: u64,
    pub report: RecoveryReport,
}

type Key = (Arc<str>, Arc<str>, Arc<str>);

/// What one shard directory yields.
#[derive(Debug, Default)]
struct ShardRecovery {
    objects: HashMap<Key, Arc<StoredObject>>,
    history: Vec<Arc<Event>>,
    snapshot_revision: u64,
    last_revision: u64,
    segments: Vec<SegmentInfo>,
    next_seq: u64,
    snapshots: Vec<(u64, PathBuf)>,
}

pub fn recover(opts: &RecoveryOptions) -> Result<Recovered, String> {
    let started = Instant::now();
    let lock = DirLock::acquire(&opts.dir)?;
    let state = match read_state(&opts.dir)? {
        Some(s) => s,
        None => fresh(&opts.dir, opts.shards)?,
    };
    remove_stale_generations(&opts.dir, state.generation);
    let gen_dir = generation_dir(&opts.dir, state.generation);
    let dirs = shard_dirs(&gen_dir, state.shards);
    let recovered: Vec<Result<ShardRecovery, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = dirs
            .iter()
            .map(|d| s.spawn(move || recover_shard(d, opts.repair)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("recovery thread panicked".into()))
            })
            .collect()
    });
    let recovered = recovered.into_iter().collect::<Result<Vec<_>, _>>()?;
    let revision = recovered.iter().map(|r| r.last_revision).max().unwrap_or(0);
    let mut report = RecoveryReport {
        objects: recovered.iter().map(|r| r.objects.len()).sum(),
        replayed: recovered.iter().map(|r| r.history.len()).sum(),
        ..Default::default()
    };
    let shards = if state.shards == opts.shards {
        recovered
            .into_iter()
            .zip(dirs)
            .map(|(r, dir)| into_shard(r, dir))
            .collect()
    } else {
        report.resharded_from = Some(state.shards);
        reshard(&opts.dir, state, opts.shards, recovered, revision)?
    };
    let hub_start = shards.iter().map(|s| s.history_start).max().unwrap_or(0);
    report.elapsed = started.elapsed();
    Ok(Recovered {
        lock,
        shards,
        revision,
        hub_start,
        report,
    })
}

/// A new data directory: generation 0 with the requested shard count.
fn fresh(dir: &Path, shards: usize) -> Result<State, String> {
    let leftovers = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().starts_with("gen-"));
    if leftovers {
        return Err(format!(
            "{} holds log generations but no STATE file; refusing to guess which one is current",
            dir.display()
        ));
    }
    let state = State {
        generation: 0,
        shards,
    };
    write_state(dir, state).map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
    Ok(state)
}

/// Generations other than the current one are leftovers of an interrupted
/// re-distribution: the switch to the new one either happened or not.
fn remove_stale_generations(dir: &Path, current: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(g) = name
            .strip_prefix("gen-")
            .and_then(|g| g.parse::<u64>().ok())
        {
            if g != current {
                tracing::info!(generation = g, "removing a stale log generation");
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

fn into_shard(r: ShardRecovery, dir: ShardDir) -> RecoveredShard {
    let mut objects: Vec<(Arc<str>, Arc<StoredObject>)> = r
        .objects
        .into_iter()
        .map(|((res, _, _), o)| (res, o))
        .collect();
    objects
        .sort_by(|a, b| (&a.0, &a.1.namespace, &a.1.name).cmp(&(&b.0, &b.1.namespace, &b.1.name)));
    RecoveredShard {
        objects,
        history: r.history,
        history_start: r.snapshot_revision,
        log: LogStart {
            dir,
            last_revision: r.last_revision,
            next_seq: r.next_seq,
            segments: r.segments,
        },
        snapshots: r.snapshots,
    }
}

/// Interns resource keys and namespaces so every object and event of a
/// resource or namespace shares one allocation.
#[derive(Default)]
struct Resources {
    resources: HashMap<String, Arc<str>>,
    namespaces: HashMap<String, Arc<str>>,
}

fn intern(map: &mut HashMap<String, Arc<str>>, s: &str) -> Arc<str> {
    if let Some(r) = map.get(s) {
        return r.clone();
    }
    let r: Arc<str> = Arc::from(s);
    map.insert(s.to_string(), r.clone());
    r
}

impl Resources {
    fn stored(&mut self, rec: ObjectRecord, kind: EventType) -> (Key, Arc<StoredObject>) {
        let ns = intern(&mut self.namespaces, &rec.namespace);
        let resource = intern(&mut self.resources, &rec.resource);
        let (_, stored) = rec.into_stored(kind, ns);
        let key = (resource, stored.namespace.clone(), stored.name.clone());
        (key, Arc::new(stored))
    }
}

fn recover_shard(dir: &ShardDir, repair: bool) -> Result<ShardRecovery, String> {
    let shard = dir.shard;
    let files = dir
        .list()
        .map_err(|e| format!("shard {shard}: cannot list {}: {e}", dir.path.display()))?;
    let mut out = ShardRecovery::default();
    let mut resources = Resources::default();

    // The newest snapshot that reads back whole.
    let mut has_snapshot = false;
    for (rev, path) in files.snapshots.iter().rev() {
        match load_snapshot(path) {
            Ok(snap) if snap.shard as usize == shard && snap.revision == *rev => {
                for rec in snap.objects {
                    let (key, obj) = resources.stored(rec, EventType::Added);
                    out.objects.insert(key, obj);
                }
                out.snapshot_revision = snap.revision;
                has_snapshot = true;
                break;
            }
            Ok(_) => {
                tracing::warn!(shard, file = %path.display(), "snapshot belongs elsewhere; ignored")
            }
            Err(why) => {
                tracing::warn!(shard, file = %path.display(), %why, "snapshot is damaged; falling back to an older one");
                let _ = std::fs::rename(path, path.with_extension("damaged"));
            }
        }
    }
    out.snapshots = files
        .snapshots
        .iter()
        .filter(|(_, p)| p.exists())
        .cloned()
        .collect();
    let s = out.snapshot_revision;
    out.last_revision = s;

    // Segment headers: which segment the replay starts from.
    let headers: Vec<(u64, PathBuf, Option<u64>)> = files
        .segments
        .iter()
        .map(|(seq, path)| {
            let base = std::fs::File::open(path).ok().and_then(|mut f| {
                use std::io::Read;
                let mut buf = vec![0u8; 4096];
                let n = f.read(&mut buf).ok()?;
                read_header(&buf[..n]).map(|(_, _, base)| base)
            });
            (*seq, path.clone(), base)
        })
        .collect();
    out.next_seq = headers.last().map_or(0, |h| h.0 + 1);
    let start = headers
        .iter()
        .rposition(|(_, _, base)| base.is_some_and(|b| b <= s));
    let start = match start {
        Some(j) => j,
        None if headers.is_empty() => 0,
        // Only header-less segments: a crash while creating the first one.
        None if headers.iter().all(|h| h.2.is_none()) && !has_snapshot => 0,
        None => {
            let first = headers.iter().find_map(|h| h.2).unwrap_or_default();
            let msg = format!(
                "shard {shard}: no usable snapshot reaches the log, which starts after revision {first} (snapshot revision {s}): the state in between is lost. Restore the missing snapshot, or start with --repair to serve what is left"
            );
            if !repair {
                return Err(msg);
            }
            tracing::error!("{msg}; --repair given, going on");
            0
        }
    };
    // Segments before the start are covered by the snapshot: trim fodder.
    for w in headers[..start].iter() {
        out.segments.push(SegmentInfo {
            seq: w.0,
            path: w.1.clone(),
            max_revision: w.2.unwrap_or(0).min(s),
        });
    }
    let replay = &headers[start..];
    for (i, (seq, path, _)) in replay.iter().enumerate() {
        if i > 0 && *seq != replay[i - 1].0 + 1 {
            let msg = format!(
                "shard {shard}: log segment {} is missing (found {} after it)",
                replay[i - 1].0 + 1,
                path.display()
            );
            if !repair {
                return Err(format!(
                    "{msg}; start with --repair to drop the segments after the gap"
                ));
            }
            tracing::error!("{msg}; --repair: dropping it and the rest");
            for (_, p, _) in &replay[i..] {
                let _ = std::fs::remove_file(p);
            }
            break;
        }
        let mut history = std::mem::take(&mut out.history);
        let objects = &mut out.objects;
        let scan = scan_segment(path, shard as u32, s, |revision, kind, rec| {
            let (key, obj) = resources.stored(rec, kind);
            let prev = match kind {
                EventType::Deleted => objects.remove(&key),
                _ => objects.insert(key.clone(), obj.clone()),
            };
            history.push(Arc::new(Event::new(revision, kind, key.0, obj, prev)));
        })
        .map_err(|e| format!("shard {shard}: cannot read {}: {e}", path.display()))?;
        out.history = history;
        out.last_revision = out.last_revision.max(scan.max_revision);
        out.segments.push(SegmentInfo {
            seq: *seq,
            path: path.clone(),
            max_revision: scan.max_revision,
        });
        let Some(damage) = scan.damage else {
            continue;
        };
        let next_base = replay.get(i + 1).and_then(|h| h.2);
        let torn = !damage.good_frames_follow
            && (i + 1 == replay.len() || next_base == Some(scan.max_revision));
        if torn {
            cut_torn_tail(shard, path, &damage)?;
            if damage.offset == 0 {
                out.segments.pop();
            }
            continue;
        }
        let msg = format!(
            "shard {shard}: log segment {} is damaged at offset {} ({}){}",
            path.display(),
            damage.offset,
            damage.reason,
            if damage.good_frames_follow {
                " and acknowledged records follow it"
            } else {
                " before the end of the log"
            }
        );
        if !repair {
            return Err(format!(
                "{msg}; refusing to start. Start with --repair to keep everything before the damage and drop the rest"
            ));
        }
        tracing::error!("{msg}; --repair: keeping what precedes it, dropping the rest");
        truncate(path, damage.offset as u64)?;
        for (_, p, _) in &replay[i + 1..] {
            let _ = std::fs::remove_file(p);
        }
        out.segments.retain(|g| g.seq <= *seq);
        break;
    }
    Ok(out)
}

fn cut_torn_tail(shard: usize, path: &Path, damage: &Damage) -> Result<(), String> {
    tracing::warn!(
        shard,
        file = %path.display(),
        offset = damage.offset,
        reason = %damage.reason,
        "torn record at the end of the log (a write interrupted by a crash, never acknowledged): cut off"
    );
    if damage.offset == 0 {
        return std::fs::remove_file(path).map_err(|e| e.to_string());
    }
    truncate(path, damage.offset as u64)
}

fn truncate(path: &Path, len: u64) -> Result<(), String> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    f.set_len(len)
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("cannot cut {} at {len}: {e}", path.display()))
}

/// Re-distributes recovered state over `shards` shards and makes that the
/// data directory's layout.
fn reshard(
    dir: &Path,
    old: State,
    shards: usize,
    recovered: Vec<ShardRecovery>,
    revision: u64,
) -> Result<Vec<RecoveredShard>, String> {
    tracing::info!(
        from = old.shards,
        to = shards,
        "shard count changed: re-distributing the stored state"
    );
    let history_start = recovered
        .iter()
        .map(|r| r.snapshot_revision)
        .max()
        .unwrap_or(0);
    let mut per_shard: Vec<Vec<(Arc<str>, Arc<StoredObject>)>> = vec![Vec::new(); shards];
    let mut history: Vec<Vec<Arc<Event>>> = vec![Vec::new(); shards];
    for r in recovered {
        for ((res, ns, name), obj) in r.objects {
            per_shard[shard_for(&res, &ns, &name, shards)].push((res, obj));
        }
        for ev in r.history.into_iter().filter(|e| e.revision > history_start) {
            let o = &ev.object;
            history[shard_for(&ev.resource, &o.namespace, &o.name, shards)].push(ev);
        }
    }
    let new = State {
        generation: old.generation + 1,
        shards,
    };
    let gen_dir = generation_dir(dir, new.generation);
    let mut out = Vec::with_capacity(shards);
    for (k, (mut objects, mut events)) in per_shard.into_iter().zip(history).enumerate() {
        objects.sort_by(|a, b| {
            (&a.0, &a.1.namespace, &a.1.name).cmp(&(&b.0, &b.1.namespace, &b.1.name))
        });
        events.sort_by_key(|e| e.revision);
        let sd = ShardDir::new(&gen_dir, k);
        let dest = sd.snapshot_path(revision);
        write_snapshot_sync(
            &sd.snapshot_tmp_path(revision),
            &dest,
            SnapshotEncoder::new(k, shards, revision, objects.clone()),
        )
        .map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
        out.push(RecoveredShard {
            objects,
            history: events,
            history_start,
            log: LogStart {
                dir: sd,
                last_revision: revision,
                next_seq: 0,
                segments: Vec::new(),
            },
            snapshots: vec![(revision, dest)],
        });
    }
    write_state(dir, new).map_err(|e| format!("cannot switch to the new layout: {e}"))?;
    remove_stale_generations(dir, new.generation);
    Ok(out)
}
