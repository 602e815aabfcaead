//! Appending to a shard's log with DMA writes and group commit.
//!
//! The shard hands over a group of frames (every mutation that arrived while
//! the previous group was being written); the writer appends them with one
//! write and, under `--fsync=always`, one `fdatasync`. O_DIRECT writes must
//! cover whole blocks, so the last partial block is kept in memory and
//! rewritten, with the new frames after it, by the next group.
//!
//! A failed write or sync leaves the log where it was: the frames it may
//! have put on disk are overwritten with zeros by the next write before
//! anything new follows them, so a write reported as failed never comes
//! back at recovery.

use super::direct::{self, BlockBuf};
use super::{SegmentInfo, DEFAULT_SEGMENT_SIZE};
use crate::storage::layout::ShardDir;
use crate::storage::record::{encode_frame, Frame};
use crate::storage::FsyncPolicy;
use glommio::io::{DmaFile, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Frames of committed mutations, logged together.
#[derive(Debug, Default)]
pub struct Group {
    pub bytes: Vec<u8>,
    /// The newest revision in the group.
    pub last_revision: u64,
}

impl Group {
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Where a writer starts: what recovery found of the shard's log.
#[derive(Debug, Clone)]
pub struct LogStart {
    pub dir: ShardDir,
    /// The shard's newest durable revision (the next segment's base).
    pub last_revision: u64,
    pub next_seq: u64,
    /// Existing segments, oldest first.
    pub segments: Vec<SegmentInfo>,
}

pub struct LogWriter {
    dir: ShardDir,
    policy: FsyncPolicy,
    segment_size: u64,
    current: Option<Segment>,
    next_seq: u64,
    last_revision: u64,
    segments: Vec<SegmentInfo>,
    rotate: bool,
    unsynced: bool,
    last_sync: Instant,
    written_since_rotation: u64,
    /// Test hook: while this file exists, writes fail with ENOSPC.
    fault: Option<PathBuf>,
}

/// Segments grow their allocation in steps this big, so a short-lived
/// server does not reserve a whole segment of disk per shard.
const ALLOCATION_STEP: u64 = 4 << 20;

/// The largest write buffer a segment keeps for its next write.
const MAX_KEPT_BUFFER: usize = 4 << 20;

struct Segment {
    file: DmaFile,
    /// The file again, for writes made off the shard's thread (see
    /// [`direct`]).
    fd: Arc<OwnedFd>,
    /// The buffer of the last write, kept for the next.
    scratch: Option<BlockBuf>,
    size: u64,
    /// Bytes reserved on disk so far (reads past the data see zeros).
    allocated: u64,
    align: u64,
    /// End of the valid frames.
    pos: u64,
    /// The bytes of the partial block ending at `pos`.
    tail: Vec<u8>,
    /// End of what a failed write may have left on disk past `pos`.
    dirty_until: u64,
}

impl LogWriter {
    pub fn new(start: LogStart, policy: FsyncPolicy, segment_size: Option<u64>) -> Self {
        Self {
            dir: start.dir,
            policy,
            segment_size: segment_size.unwrap_or(DEFAULT_SEGMENT_SIZE),
            current: None,
            next_seq: start.next_seq,
            last_revision: start.last_revision,
            segments: start.segments,
            rotate: false,
            unsynced: false,
            last_sync: Instant::now(),
            written_since_rotation: 0,
            fault: None,
        }
    }

    /// Makes writes fail with ENOSPC while `path` exists (fault injection
    /// for tests on machines where a small filesystem cannot be mounted).
    pub fn inject_disk_full_when(&mut self, path: Option<PathBuf>) {
        self.fault = path;
    }

    pub fn last_revision(&self) -> u64 {
        self.last_revision
    }

    /// Bytes logged since the last rotation (snapshots rotate).
    pub fn written_since_rotation(&self) -> u64 {
        self.written_since_rotation
    }

    /// The next append starts a new segment, so that segments before it
    /// hold nothing newer than what a snapshot taken now covers.
    pub fn rotate_next(&mut self) {
        self.rotate = true;
        self.written_since_rotation = 0;
    }

    /// Appends a group and makes it durable as the policy says: under
    /// `always` it is on stable storage when this returns Ok; otherwise it
    /// is written (it survives the process, not necessarily power loss).
    pub async fn append(&mut self, group: &Group) -> io::Result<()> {
        if let Some(p) = &self.fault {
            if p.exists() {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
        }
        let needed = group.bytes.len() as u64;
        let fits = self
            .current
            .as_ref()
            .is_some_and(|s| s.pos + needed <= s.size);
        if self.rotate || !fits {
            self.start_segment(needed).await?;
        }
        let seg = self.current.as_mut().expect("a segment was just started");
        let always = self.policy == FsyncPolicy::Always;
        let (pos, tail) = seg.write(&group.bytes, always).await?;
        if always {
            self.last_sync = Instant::now();
        } else {
            self.unsynced = true;
        }
        seg.pos = pos;
        seg.tail = tail;
        self.last_revision = group.last_revision;
        self.written_since_rotation += needed;
        if let Some(info) = self.segments.last_mut() {
            info.max_revision = group.last_revision;
        }
        Ok(())
    }

    /// When the interval policy wants the next sync, if anything waits.
    pub fn sync_due(&self) -> Option<Instant> {
        match self.policy {
            FsyncPolicy::Interval(every) if self.unsynced => Some(self.last_sync + every),
            _ => None,
        }
    }

    /// Syncs what was written (the interval policy's periodic flush).
    pub async fn sync(&mut self) -> io::Result<()> {
        if let Some(seg) = &self.current {
            if self.unsynced {
                seg.file.fdatasync().await?;
            }
        }
        self.unsynced = false;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Removes segments holding nothing newer than `revision` (a snapshot
    /// covers them), never the one being written.
    pub async fn trim_through(&mut self, revision: u64) -> io::Result<usize> {
        let current = self.current.as_ref().map(|_| self.next_seq - 1);
        let (gone, keep): (Vec<_>, Vec<_>) = self
            .segments
            .drain(..)
            .partition(|s| s.max_revision <= revision && Some(s.seq) != current);
        self.segments = keep;
        for s in &gone {
            match std::fs::remove_file(&s.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if !gone.is_empty() {
            glommio::io::Directory::open(&self.dir.path)
                .await?
                .sync()
                .await?;
        }
        Ok(gone.len())
    }

    pub fn dir(&self) -> &ShardDir {
        &self.dir
    }

    pub fn segments(&self) -> &[SegmentInfo] {
        &self.segments
    }

    async fn start_segment(&mut self, needed: u64) -> io::Result<()> {
        if let Some(old) = &self.current {
            // A closed segment is always synced, whatever the policy.
            if self.unsynced {
                old.file.fdatasync().await?;
                self.unsynced = false;
            }
        }
        std::fs::create_dir_all(&self.dir.path)?;
        let seq = self.next_seq;
        let path = self.dir.segment_path(seq);
        let created = self.create_segment(seq, &path, needed).await;
        let seg = match created {
            Ok(seg) => seg,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        if let Some(old) = self.current.replace(seg) {
            let _ = old.file.close().await;
        }
        self.next_seq += 1;
        self.rotate = false;
        self.segments.push(SegmentInfo {
            seq,
            path,
            max_revision: self.last_revision,
        });
        Ok(())
    }

    async fn create_segment(&self, seq: u64, path: &PathBuf, needed: u64) -> io::Result<Segment> {
        // Read access too: glommio probes a new file with a read to decide
        // whether the device supports polled IO.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .dma_open(path)
            .await?;
        let align = file.alignment();
        if align as usize > direct::ALIGN {
            return Err(io::Error::other(format!(
                "the log's device wants {align}-byte aligned writes; at most {} are supported",
                direct::ALIGN
            )));
        }
        let mut header = Vec::new();
        encode_frame(
            &Frame::SegmentHeader {
                shard: self.dir.shard as u32,
                seq,
                base_revision: self.last_revision,
            },
            &mut header,
        );
        let size = self
            .segment_size
            .max(header.len() as u64 + needed)
            .next_multiple_of(align);
        let allocated = size
            .min(ALLOCATION_STEP.max(header.len() as u64 + needed))
            .next_multiple_of(align);
        zero_fill(&file, 0, allocated).await?;
        let fd = Arc::new(dup(&file)?);
        let mut seg = Segment {
            file,
            fd,
            scratch: None,
            size,
            allocated,
            align,
            pos: 0,
            tail: Vec::new(),
            dirty_until: 0,
        };
        let (pos, tail) = seg.write(&header, true).await?;
        seg.pos = pos;
        seg.tail = tail;
        glommio::io::Directory::open(&self.dir.path)
            .await?
            .sync()
            .await?;
        Ok(seg)
    }
}

impl Segment {
    /// Writes `data` after `pos` (rewriting the partial tail block, zeroing
    /// whatever a failed write left beyond), then with `sync` makes it
    /// durable. Returns the new end and tail without adopting them: the
    /// caller does once the data is durable.
    async fn write(&mut self, data: &[u8], sync: bool) -> io::Result<(u64, Vec<u8>)> {
        let start = self.pos - self.pos % self.align;
        let end = self.pos + data.len() as u64;
        let write_end = end.max(self.dirty_until).next_multiple_of(self.align);
        if write_end > self.allocated {
            let target = (write_end + ALLOCATION_STEP).min(self.size).max(write_end);
            zero_fill(&self.file, self.allocated, target).await?;
            self.allocated = target;
        }
        let len = (write_end - start) as usize;
        let mut buf = match self.scratch.take() {
            Some(b) if b.capacity() >= len => b,
            _ => BlockBuf::with_capacity(len),
        };
        let bytes = &mut buf.as_mut_slice()[..len];
        let t = self.tail.len();
        bytes[..t].copy_from_slice(&self.tail);
        bytes[t..t + data.len()].copy_from_slice(data);
        bytes[t + data.len()..].fill(0);
        let new_tail_start = (end - end % self.align - start) as usize;
        let new_tail = bytes[new_tail_start..(end - start) as usize].to_vec();
        // Marked dirty before the write starts: if this future is dropped
        // while the blocking thread still writes, the next write zeroes
        // whatever it put past the valid end.
        self.dirty_until = self.dirty_until.max(write_end);
        let done = direct::pwrite(&self.fd, buf, len, start, sync).await;
        // A group far above the usual (a huge object) does not pin its
        // buffer for the segment's life.
        if done.buf.capacity() <= MAX_KEPT_BUFFER {
            self.scratch = Some(done.buf);
        }
        // On any failure below, the blocks stay marked dirty (above).
        if done.written? < len {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        done.synced?;
        self.dirty_until = end;
        Ok((end, new_tail))
    }
}

/// Writes zeros over [from, to): log writes then overwrite blocks that
/// exist, which the kernel can do without handing them to a worker thread
/// (writes into merely reserved space must convert it first, which it
/// does out of line: milliseconds under load).
async fn zero_fill(file: &DmaFile, from: u64, to: u64) -> io::Result<()> {
    const CHUNK: u64 = 1 << 20;
    let mut at = from;
    while at < to {
        let len = CHUNK.min(to - at) as usize;
        let mut buf = file.alloc_dma_buffer(len);
        buf.as_bytes_mut().fill(0);
        let n = file.write_at(buf, at).await?;
        if n < len {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        at += len as u64;
    }
    Ok(())
}

/// A second (close-on-exec) descriptor of `file`, owned apart from
/// glommio's.
fn dup(file: &DmaFile) -> io::Result<OwnedFd> {
    // SAFETY: `file` keeps the descriptor open for this borrow.
    unsafe { BorrowedFd::borrow_raw(file.as_raw_fd()) }.try_clone_to_owned()
}
