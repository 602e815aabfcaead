//! Reading a log segment back: frames in order until the written part ends,
//! with damage reported precisely enough to tell a torn tail (a write cut
//! short by a crash, never acknowledged) from damage in acknowledged data.

use crate::storage::record::ObjectRecord;
use crate::storage::record::{good_frame_after, kind_from_code, read_frame, Frame, FrameRead};
use kubeshard_cache::EventType;
use std::path::Path;

/// Damage found in a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub offset: usize,
    pub reason: String,
    /// A good frame follows the damage in the same segment: the damage is
    /// not a torn tail.
    pub good_frames_follow: bool,
}

/// The outcome of reading one segment.
#[derive(Debug)]
pub struct SegmentScan {
    pub seq: u64,
    pub base_revision: u64,
    /// The newest revision read (the base revision when there is none).
    pub max_revision: u64,
    pub records: usize,
    pub damage: Option<Damage>,
}

/// The first frame of a segment, if it is a good segment header.
pub fn read_header(buf: &[u8]) -> Option<(u32, u64, u64)> {
    match read_frame(buf, 0) {
        FrameRead::Frame(f, _) => match *f {
            Frame::SegmentHeader {
                shard,
                seq,
                base_revision,
            } => Some((shard, seq, base_revision)),
            _ => None,
        },
        _ => None,
    }
}

/// Reads the segment at `path`, handing each mutation after `after` to
/// `apply` in order. Revisions must increase from `after`; a record that
/// does not is damage.
pub fn scan_segment(
    path: &Path,
    shard: u32,
    after: u64,
    mut apply: impl FnMut(u64, EventType, ObjectRecord),
) -> std::io::Result<SegmentScan> {
    let buf = std::fs::read(path)?;
    let damaged = |offset: usize, reason: String| Damage {
        offset,
        good_frames_follow: good_frame_after(&buf, offset + 1).is_some(),
        reason,
    };
    let Some((hdr_shard, seq, base_revision)) = read_header(&buf) else {
        return Ok(SegmentScan {
            seq: 0,
            base_revision: 0,
            max_revision: 0,
            records: 0,
            damage: Some(damaged(0, "no segment header".into())),
        });
    };
    let mut scan = SegmentScan {
        seq,
        base_revision,
        max_revision: base_revision,
        records: 0,
        damage: None,
    };
    if hdr_shard != shard {
        scan.damage = Some(damaged(
            0,
            format!("segment belongs to shard {hdr_shard}, not {shard}"),
        ));
        return Ok(scan);
    }
    let mut last = base_revision;
    let mut at = match read_frame(&buf, 0) {
        FrameRead::Frame(_, next) => next,
        _ => unreachable!("the header was read above"),
    };
    loop {
        match read_frame(&buf, at) {
            FrameRead::End => break,
            FrameRead::Damaged(reason) => {
                scan.damage = Some(damaged(at, reason));
                break;
            }
            FrameRead::Frame(frame, next) => {
                let Frame::Mutation {
                    revision,
                    kind,
                    object,
                } = *frame
                else {
                    scan.damage = Some(damaged(at, "unexpected frame in a log".into()));
                    break;
                };
                let Some(kind) = kind_from_code(kind) else {
                    scan.damage = Some(damaged(at, format!("unknown event kind {kind}")));
                    break;
                };
                if revision <= last {
                    scan.damage = Some(damaged(
                        at,
                        format!("revision {revision} does not follow {last}"),
                    ));
                    break;
                }
                last = revision;
                scan.max_revision = revision;
                scan.records += 1;
                if revision > after {
                    apply(revision, kind, object);
                }
                at = next;
            }
        }
    }
    Ok(scan)
}
