//! Snapshots: a shard's whole state at one revision, as a file of frames
//! (header, chunks of object records, footer). They are written in the
//! background from a frozen list of the shard's objects (objects are
//! immutable and shared, so freezing is a copy of pointers), then renamed
//! into place, so a snapshot file that exists is complete.

use crate::storage::record::{encode_frame, Frame, ObjectRecord, FRAME_ALIGN, FRAME_HEADER};
use crate::storage::record::{read_frame, FrameRead, MAX_PAYLOAD};
use kubeshard_cache::StoredObject;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

/// Object bytes per chunk frame: big enough to amortise framing, small
/// enough that encoding one never stalls the shard noticeably.
const CHUNK_BYTES: usize = 1 << 20;

/// Turns a frozen object list into snapshot bytes, a chunk at a time.
pub struct SnapshotEncoder {
    header: Option<Frame>,
    objects: Vec<(Arc<str>, Arc<StoredObject>)>,
    next: usize,
    revision: u64,
    done: bool,
}

impl SnapshotEncoder {
    pub fn new(
        shard: usize,
        shards: usize,
        revision: u64,
        objects: Vec<(Arc<str>, Arc<StoredObject>)>,
    ) -> Self {
        Self {
            header: Some(Frame::SnapshotHeader {
                shard: shard as u32,
                shards: shards as u32,
                revision,
            }),
            objects,
            next: 0,
            revision,
            done: false,
        }
    }
}

impl Iterator for SnapshotEncoder {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        if let Some(h) = self.header.take() {
            encode_frame(&h, &mut out);
            return Some(out);
        }
        if self.done {
            return None;
        }
        if self.next == self.objects.len() {
            self.done = true;
            encode_frame(
                &Frame::SnapshotFooter {
                    objects: self.objects.len() as u64,
                    revision: self.revision,
                },
                &mut out,
            );
            return Some(out);
        }
        let mut chunk = Vec::new();
        let mut bytes = 0;
        while self.next < self.objects.len() && bytes < CHUNK_BYTES {
            let (resource, obj) = &self.objects[self.next];
            bytes += obj.json_slice().len();
            chunk.push(ObjectRecord::from_stored(resource, obj));
            self.next += 1;
        }
        encode_frame(&Frame::SnapshotObjects(chunk), &mut out);
        Some(out)
    }
}

/// A snapshot read back.
#[derive(Debug)]
pub struct LoadedSnapshot {
    pub shard: u32,
    pub shards: u32,
    pub revision: u64,
    pub objects: Vec<ObjectRecord>,
}

/// Reads a snapshot file, streaming; any damage or a missing footer makes
/// the whole snapshot unusable (the caller falls back to an older one).
pub fn load_snapshot(path: &Path) -> Result<LoadedSnapshot, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut reader = io::BufReader::with_capacity(1 << 20, file);
    let mut offset = 0usize;
    let mut next = || -> Result<Frame, String> {
        let at = offset;
        let mut header = [0u8; FRAME_HEADER];
        reader
            .read_exact(&mut header)
            .map_err(|_| format!("cut short at offset {at}"))?;
        let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
        if len == 0 || len > MAX_PAYLOAD {
            return Err(format!("bad frame length {len} at offset {at}"));
        }
        let padded = (FRAME_HEADER + len).next_multiple_of(FRAME_ALIGN);
        let mut buf = vec![0u8; padded];
        buf[..FRAME_HEADER].copy_from_slice(&header);
        reader
            .read_exact(&mut buf[FRAME_HEADER..])
            .map_err(|_| format!("cut short at offset {at}"))?;
        offset += padded;
        match read_frame(&buf, 0) {
            FrameRead::Frame(f, _) => Ok(*f),
            FrameRead::Damaged(why) => Err(format!("{why} at offset {at}")),
            FrameRead::End => Err(format!("unexpected end at offset {at}")),
        }
    };
    let Frame::SnapshotHeader {
        shard,
        shards,
        revision,
    } = next()?
    else {
        return Err("no snapshot header".into());
    };
    let mut objects = Vec::new();
    loop {
        match next()? {
            Frame::SnapshotObjects(chunk) => objects.extend(chunk),
            Frame::SnapshotFooter {
                objects: count,
                revision: r,
            } => {
                if count != objects.len() as u64 || r != revision {
                    return Err(format!(
                        "footer says {count} objects at revision {r}, found {} at {revision}",
                        objects.len()
                    ));
                }
                return Ok(LoadedSnapshot {
                    shard,
                    shards,
                    revision,
                    objects,
                });
            }
            _ => return Err("unexpected frame in a snapshot".into()),
        }
    }
}

/// Writes a snapshot synchronously (recovery, before serving): to a
/// temporary name, synced, then renamed into place.
pub fn write_snapshot_sync(tmp: &Path, dest: &Path, encoder: SnapshotEncoder) -> io::Result<()> {
    use std::io::Write;
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::File::create(tmp)?;
    let mut w = io::BufWriter::with_capacity(1 << 20, file);
    for chunk in encoder {
        w.write_all(&chunk)?;
    }
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    std::fs::rename(tmp, dest)?;
    if let Some(dir) = dest.parent() {
        crate::storage::layout::sync_dir(dir)?;
    }
    Ok(())
}

/// Writes a snapshot from an executor without blocking it: DMA stream
/// writes, yielding between chunks so the shard keeps serving.
pub async fn write_snapshot(tmp: &Path, dest: &Path, encoder: SnapshotEncoder) -> io::Result<()> {
    use futures_lite::AsyncWriteExt;
    use glommio::io::{DmaStreamWriterBuilder, OpenOptions};
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .dma_open(tmp)
        .await?;
    let mut w = DmaStreamWriterBuilder::new(file)
        .with_buffer_size(1 << 20)
        .with_write_behind(2)
        .build();
    for chunk in encoder {
        w.write_all(&chunk).await?;
        glommio::yield_if_needed().await;
    }
    w.sync().await?;
    w.close().await?;
    std::fs::rename(tmp, dest)?;
    if let Some(dir) = dest.parent() {
        glommio::io::Directory::open(dir).await?.sync().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::Catalog;
    use serde_json::json;

    fn objects(n: usize) -> Vec<(Arc<str>, Arc<StoredObject>)> {
        let info = Catalog::with_builtins()
            .snapshot()
            .lookup("", "v1", "configmaps")
            .unwrap()
            .clone();
        (0..n)
            .map(|i| {
                let v = json!({"metadata": {"name": format!("cm-{i}"), "namespace": "d",
                    "labels": {"i": i.to_string()}}, "data": {"x": "y".repeat(i % 300)}});
                (
                    info.storage_key.clone(),
                    Arc::new(StoredObject::encode(&info, &v, i as u64 + 1)),
                )
            })
            .collect()
    }

    #[test]
    fn snapshots_round_trip_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (tmp, dest) = (dir.path().join("s.tmp"), dir.path().join("s.snap"));
        let objs = objects(5000);
        write_snapshot_sync(&tmp, &dest, SnapshotEncoder::new(1, 2, 77, objs.clone())).unwrap();
        let snap = load_snapshot(&dest).unwrap();
        assert_eq!((snap.shard, snap.shards, snap.revision), (1, 2, 77));
        assert_eq!(snap.objects.len(), 5000);
        for ((res, o), rec) in objs.iter().zip(&snap.objects) {
            assert_eq!(rec, &ObjectRecord::from_stored(res, o));
        }
        // Cut short: no footer.
        let bytes = std::fs::read(&dest).unwrap();
        std::fs::write(&dest, &bytes[..bytes.len() - 40]).unwrap();
        assert!(load_snapshot(&dest).is_err());
        // A flipped byte in the middle.
        let mut bad = bytes.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x5a;
        std::fs::write(&dest, &bad).unwrap();
        assert!(load_snapshot(&dest).unwrap_err().contains("offset"));
    }
}
