//! The audit log backend: events go over a channel to one writer thread
//! that appends JSON lines to `--audit-log-path` and flushes whenever the
//! channel runs dry, so executors never block on the file.

use std::io::Write;
use std::path::Path;
use std::sync::mpsc;

pub struct LogWriter {
    tx: mpsc::Sender<Vec<u8>>,
}

impl LogWriter {
    pub fn open(path: &Path) -> Result<Self, String> {
        let mut out: Box<dyn Write + Send> = if path == Path::new("-") {
            Box::new(std::io::stdout())
        } else {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("creating {}: {e}", dir.display()))?;
            }
            Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("opening audit log {}: {e}", path.display()))?,
            )
        };
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                let mut buf = std::io::BufWriter::with_capacity(64 * 1024, &mut out);
                while let Ok(line) = rx.recv() {
                    let _ = buf.write_all(&line);
                    while let Ok(more) = rx.try_recv() {
                        let _ = buf.write_all(&more);
                    }
                    if let Err(e) = buf.flush() {
                        tracing::error!(error = %e, "writing the audit log failed");
                    }
                }
            })
            .map_err(|e| format!("starting the audit writer: {e}"))?;
        Ok(Self { tx })
    }

    /// Queues one event line (a trailing newline is added).
    pub fn write(&self, mut line: Vec<u8>) {
        line.push(b'\n');
        let _ = self.tx.send(line);
    }
}
