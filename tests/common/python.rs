//! The official Python `kubernetes` client from PyPI, in a venv kept
//! under target/ between runs and created by the first test that needs it
//! (tests in other binaries wait on a lock rather than race the install).

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;

/// The venv's python, with `kubernetes` installed.
pub fn python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = root.join("target");
    std::fs::create_dir_all(&target).unwrap();
    let venv = target.join("python-venv");
    let py = venv.join("bin").join("python");
    let lock = std::fs::File::create(target.join("python-venv.lock")).unwrap();
    // SAFETY: flock on a descriptor we own; released when `lock` drops.
    let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "locking the venv");
    let ok = py.exists()
        && Command::new(&py)
            .args(["-c", "import kubernetes"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
    if !ok {
        let status = Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(&venv)
            .status()
            .expect("python3 -m venv");
        assert!(status.success(), "creating the venv failed");
        let status = Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "kubernetes>=31",
            ])
            .status()
            .expect("pip install");
        assert!(status.success(), "pip install kubernetes failed");
    }
    drop(lock);
    py
}
