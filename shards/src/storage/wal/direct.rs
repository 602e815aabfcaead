//! The log's block writes, made off the shard's thread.
//!
//! Through io_uring this machine's disk takes O_DIRECT writes out of line
//! (a kernel worker picks them up), which cost milliseconds per group once
//! the cores are busy — measured: 1 client, 900 creates/s with most appends
//! over 1 ms; a plain `pwrite` takes a few tens of microseconds and gave
//! 2,300 creates/s (BENCHMARKS.md). But a `pwrite` made on the shard's own
//! thread stops the shard until the device has the data: with big groups
//! (~190 KB at 256 clients) that was 6–8% of the core spent in iowait, with
//! requests waiting. So the write is made by glommio's blocking thread,
//! which the executor keeps next to itself, and the shard serves meanwhile.
//! Under `--fsync=always` the same thread syncs right after the write: one
//! hand-off per group instead of a second one, to io_uring's worker.

use std::alloc::{self, Layout};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::Arc;

/// Alignment of every buffer: a multiple of the block sizes O_DIRECT asks
/// of common devices (a segment on a device wanting more is refused).
pub const ALIGN: usize = 4096;

/// A zeroed, block-aligned buffer owned outright, so that it can travel to
/// the blocking thread and come back to be reused.
pub struct BlockBuf {
    ptr: NonNull<u8>,
    cap: usize,
}

// SAFETY: the buffer is plain bytes owned by this value alone.
unsafe impl Send for BlockBuf {}

impl BlockBuf {
    pub fn with_capacity(cap: usize) -> Self {
        let cap = cap.max(ALIGN).next_multiple_of(ALIGN);
        let layout = Layout::from_size_align(cap, ALIGN).expect("a valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            alloc::handle_alloc_error(layout)
        };
        Self { ptr, cap }
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `cap` initialised bytes, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap) }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `cap` initialised bytes, borrowed through `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.cap) }
    }
}

impl Drop for BlockBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.cap, ALIGN).expect("a valid layout");
        // SAFETY: allocated in `with_capacity` with this very layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

/// What [`pwrite`] did: the buffer back, the write's result, and the
/// sync's (Ok when no sync was asked for or the write fell short).
pub struct Written {
    pub buf: BlockBuf,
    pub written: io::Result<usize>,
    pub synced: io::Result<()>,
}

/// Writes the first `len` bytes of `buf` at `at` of `fd` on the executor's
/// blocking thread and, with `sync`, then `fdatasync`s there too (one hand-
/// off instead of a second one to io_uring's worker). The descriptor is
/// shared so it stays open until the write is over, even if the caller
/// goes away first (glommio then never hands the result back, so the
/// buffer is not freed: a caller is only dropped when its shard stops).
pub async fn pwrite(fd: &Arc<OwnedFd>, buf: BlockBuf, len: usize, at: u64, sync: bool) -> Written {
    let fd = fd.clone();
    glommio::executor()
        .spawn_blocking(move || {
            let data = &buf.as_slice()[..len];
            // SAFETY: `data` outlives the call and the kernel only reads it.
            let n = unsafe {
                libc::pwrite(
                    fd.as_raw_fd(),
                    data.as_ptr().cast(),
                    data.len(),
                    at as libc::off_t,
                )
            };
            let written = if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            };
            let synced = match written {
                // SAFETY: a descriptor this closure keeps open.
                Ok(n) if sync && n == len => match unsafe { libc::fdatasync(fd.as_raw_fd()) } {
                    0 => Ok(()),
                    _ => Err(io::Error::last_os_error()),
                },
                _ => Ok(()),
            };
            Written {
                buf,
                written,
                synced,
            }
        })
        .await
}
