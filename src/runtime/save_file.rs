//! The one way devarray writes a file it saves (`np.save`, `np.savetxt`, `npx.save`, `nd.save`,
//! `torch.save`, `save_parameters`). It lives in `runtime` because both `nn` (safetensors) and
//! `modules` (`.npy`, text) use it, and `nn` may name nothing above `runtime`.
//!
//! - The target is resolved through symbolic links first, so saving to a link writes its
//!   destination (as NumPy and PyTorch do, whose `open(path, 'wb')` follows it) and the link stays.
//! - Anything there that is not a regular file (a directory, device, FIFO, socket) is refused:
//!   replacing `/dev/null` with a regular file, or blocking on a FIFO, is never what was meant.
//! - The bytes go to a temporary beside the destination (same filesystem, so the final rename is
//!   atomic) whose name has 64 random bits, created with `O_CREAT | O_EXCL | O_NOFOLLOW`: a name
//!   another user planted (a link to their victim's file) makes the open fail instead of being
//!   written through.
//! - The temporary gets the old file's mode (and owner and group where the saver may set them)
//!   before any byte is written, then is fsynced and renamed over the destination: a crash, a
//!   full disk or an interrupt leaves the old file whole, and a `0600` file stays `0600`.
//! - Dropping an uncommitted `SaveFile` (any error, an interrupt) removes the temporary; the
//!   temporaries of processes that died (`kill -9`) are removed by the next save into the folder
//!   (a save holds a `flock` on its temporary; one nobody holds is abandoned).
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::backend::cpu::cancel::Cancel;
use crate::vocab::error::RuntimeError;

/// The marker between the target's name and the owner's pid in a temporary's name.
const TEMP_MARK: &str = ".tmp-";

/// How much is written at once (and so the memory a streamed array costs beyond its own).
pub const BUFFER_BYTES: usize = 1 << 20;

/// Why a save failed. Each binding words it the way its framework does.
#[derive(Debug)]
pub enum SaveError {
    /// An operating-system call failed while `doing` something to `path`.
    Io {
        doing: &'static str,
        path: PathBuf,
        error: io::Error,
    },
    /// Something other than a regular file is at the (resolved) target.
    NotRegular { path: PathBuf, kind: &'static str },
    /// The path ends in no file name (`''`, `/`, `..`).
    NoFileName { path: PathBuf },
    /// A chain of more than 40 symbolic links (or a loop).
    TooManyLinks { path: PathBuf },
    /// The session's interrupt flag was set while writing; nothing was replaced.
    Interrupted,
    /// Reading an array to write failed (a queued device error, an interrupted wait).
    Runtime(RuntimeError),
}

impl From<RuntimeError> for SaveError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Interrupted => SaveError::Interrupted,
            other => SaveError::Runtime(other),
        }
    }
}

impl std::fmt::Display for SaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaveError::Io { doing, path, error } => {
                write!(f, "cannot {doing} '{}': {error}", path.display())
            }
            SaveError::NotRegular { path, kind } => write!(
                f,
                "cannot save to '{}': it is {kind}, not a regular file; give a file name such as 'data.npy'",
                path.display()
            ),
            SaveError::NoFileName { path } => write!(
                f,
                "cannot save to '{}': the path names a directory, not a file; give a file name such as 'data.npy'",
                path.display()
            ),
            SaveError::TooManyLinks { path } => write!(
                f,
                "cannot save to '{}': too many levels of symbolic links",
                path.display()
            ),
            SaveError::Interrupted => f.write_str("interrupted while saving; the file is unchanged"),
            SaveError::Runtime(e) => write!(f, "{e}"),
        }
    }
}

impl SaveError {
    /// The operating system's error, where there is one (bindings map its kind to an exception).
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            SaveError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

fn io_err(doing: &'static str, path: &Path, error: io::Error) -> SaveError {
    SaveError::Io {
        doing,
        path: path.to_path_buf(),
        error,
    }
}

/// "a directory", "a character device", ... for a file that is not a regular one.
pub fn kind_of(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// What a symbolic link at `path` finally names (a chain of links, relative ones resolved
/// against their own directory); `path` itself when it is not a link. The target need not exist.
pub fn resolve_links(path: &Path) -> Result<PathBuf, SaveError> {
    let mut current = path.to_path_buf();
    // The kernel's own limit on links followed in one lookup.
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&current).map_err(|e| io_err("follow", &current, e))?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(SaveError::TooManyLinks {
        path: path.to_path_buf(),
    })
}

/// 64 bits from the operating system's generator, for names nobody can guess.
fn random_suffix() -> String {
    let mut bytes = [0u8; 8];
    // SAFETY: `bytes` is a valid, writable buffer of the length passed.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if got != bytes.len() as isize {
        // Never expected on Linux >= 3.17; the clock and the address space still vary per call
        // and O_EXCL keeps a guessed name harmless.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        bytes = (nanos ^ (&bytes as *const _ as u64).rotate_left(32)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The pid in a temporary's name (`.<name>.tmp-<pid>-<suffix>`), for any name this or an
/// earlier devarray gave its temporaries.
fn temp_owner(name: &[u8]) -> Option<i32> {
    if name.first() != Some(&b'.') {
        return None;
    }
    let name = std::str::from_utf8(name).ok()?;
    let at = name.rfind(TEMP_MARK)?;
    let (pid, suffix) = name[at + TEMP_MARK.len()..].split_once('-')?;
    if suffix.is_empty() || !suffix.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    pid.parse().ok()
}

/// A temporary this young is never taken for stale: it may have been created a moment ago by
/// a save that has not yet locked it.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// Removes the temporaries in `dir` that a process of this user left when it died (a `kill -9`
/// in the middle of a save). A save holds an exclusive `flock` on its temporary until it ends,
/// and the kernel drops the lock when the process dies: a temporary whose lock can be taken is
/// abandoned, whatever runs under the pid in its name now (pids are reused, and a process in
/// another pid namespace sharing the folder has pids of its own). Only regular files this user
/// owns, untouched for [`STALE_AFTER`], are considered.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if temp_owner(name.as_bytes()).is_none() {
            continue;
        }
        let path = entry.path();
        // Without following a link, and without blocking should it have become a FIFO.
        let Ok(file) = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        else {
            continue;
        };
        let Ok(meta) = file.metadata() else {
            continue;
        };
        let idle = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if !meta.is_file() || meta.uid() != me || !idle || !try_lock(&file) {
            continue;
        }
        // Still the file that was checked (not replaced meanwhile): remove it, lock held.
        if fs::symlink_metadata(&path).is_ok_and(|m| m.ino() == meta.ino() && m.dev() == meta.dev())
        {
            let _ = fs::remove_file(&path);
        }
    }
}

/// Takes an exclusive `flock` on `file` without waiting; whether it got it. The lock lasts
/// as long as the file stays open.
fn try_lock(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this `File` owns and keeps open.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// A file being saved: write into it, then `commit`. Dropped without `commit`, it removes its
/// temporary and leaves the target as it was.
pub struct SaveFile {
    out: Option<BufWriter<File>>,
    temp: PathBuf,
    target: PathBuf,
    cancel: Cancel,
}

impl SaveFile {
    /// Starts saving to `path` (see the module's documentation for what is checked).
    pub fn create(path: &Path) -> Result<SaveFile, SaveError> {
        let target = resolve_links(path)?;
        let old = match fs::symlink_metadata(&target) {
            Ok(meta) if meta.is_file() => Some(meta),
            Ok(meta) => {
                return Err(SaveError::NotRegular {
                    path: path.to_path_buf(),
                    kind: kind_of(&meta),
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err("write", path, e)),
        };
        let name = target
            .file_name()
            .filter(|_| !target.as_os_str().as_bytes().ends_with(b"/"))
            .ok_or_else(|| SaveError::NoFileName {
                path: path.to_path_buf(),
            })?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        remove_stale_temporaries(&dir);
        // Keep the temporary's name within NAME_MAX (255 bytes) for long target names.
        let mut stem = name.as_bytes();
        if stem.len() > 200 {
            stem = &stem[..200];
        }
        // Created with the old file's permission bits, so no other user can open it in the
        // moment before `set_permissions` (the umask only narrows them).
        let mode = old.as_ref().map_or(0o666, |m| m.mode() & 0o777);
        let mut attempt = 0;
        let (file, temp) = loop {
            let mut temp_name = OsString::from(".");
            temp_name.push(std::ffi::OsStr::from_bytes(stem));
            temp_name.push(format!(
                "{TEMP_MARK}{}-{}",
                std::process::id(),
                random_suffix()
            ));
            let temp = dir.join(temp_name);
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&temp)
            {
                // Locked while this save runs: a cleaner in another process leaves it alone.
                Ok(f) => {
                    try_lock(&f);
                    break (f, temp);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
                Err(e) => return Err(io_err("write into", &dir, e)),
            }
        };
        let saving = SaveFile {
            out: Some(BufWriter::with_capacity(BUFFER_BYTES, file)),
            temp,
            target,
            cancel: Cancel::current(),
        };
        if let (Some(old), Some(out)) = (&old, &saving.out) {
            let file = out.get_ref();
            // The owner first: chown clears set-id bits, which the chmod then restores. Only
            // root (or the owner, for the group) may do this; others keep their own ownership.
            let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
            file.set_permissions(fs::Permissions::from_mode(old.mode() & 0o7777))
                .map_err(|e| io_err("write into", &saving.temp, e))?;
        }
        Ok(saving)
    }

    /// `Err(Interrupted)` once the session's interrupt flag is set (the request is consumed);
    /// long writers call it between chunks.
    pub fn check_interrupt(&self) -> Result<(), SaveError> {
        self.cancel.check().map_err(|_| SaveError::Interrupted)
    }

    /// Writes `bytes`, checking for an interrupt first.
    pub fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), SaveError> {
        self.check_interrupt()?;
        let temp = &self.temp;
        match self.out.as_mut() {
            Some(out) => out.write_all(bytes).map_err(|e| io_err("write", temp, e)),
            None => Ok(()),
        }
    }

    /// Flushes, fsyncs and renames the temporary over the target.
    pub fn commit(mut self) -> Result<(), SaveError> {
        self.check_interrupt()?;
        let Some(out) = self.out.take() else {
            return Ok(());
        };
        let file = out
            .into_inner()
            .map_err(|e| io_err("write", &self.temp, e.into_error()))?;
        file.sync_all()
            .map_err(|e| io_err("write", &self.temp, e))?;
        drop(file);
        fs::rename(&self.temp, &self.target).map_err(|e| io_err("replace", &self.target, e))?;
        // The rename is durable once the folder is synced; a failure here changes nothing.
        if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        self.temp = PathBuf::new();
        Ok(())
    }
}

impl Drop for SaveFile {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            // Closed first; the temporary is ours and useless now.
            drop(self.out.take());
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Saves `bytes` to `path` through `SaveFile`, in chunks (an interrupt is seen between them).
pub fn save_bytes(path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    let mut file = SaveFile::create(path)?;
    for chunk in bytes.chunks(BUFFER_BYTES) {
        file.write_bytes(chunk)?;
    }
    file.commit()
}

#[cfg(test)]
mod tests;
