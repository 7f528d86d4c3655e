//! The shared save path: what it does to links, modes, special files, temporaries and interrupts.
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::*;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("devarray-save-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .expect("read_dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn a_link_at_the_target_is_written_through_and_stays_a_link() {
    let dir = scratch("link");
    let private = dir.join("private");
    fs::write(&private, b"secret").expect("write");
    let link = dir.join("model.pt");
    symlink(&private, &link).expect("symlink");
    save_bytes(&link, b"model").expect("save");
    assert!(fs::symlink_metadata(&link)
        .expect("meta")
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&private).expect("read"), b"model");
    assert_eq!(names(&dir), ["model.pt", "private"]);
}

#[test]
fn saving_over_a_private_file_keeps_its_mode() {
    let dir = scratch("mode");
    let target = dir.join("x.npy");
    fs::write(&target, b"old").expect("write");
    fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).expect("chmod");
    save_bytes(&target, b"new").expect("save");
    let meta = fs::metadata(&target).expect("meta");
    assert_eq!(meta.mode() & 0o7777, 0o600);
    assert_eq!(fs::read(&target).expect("read"), b"new");
    // A new file gets the usual 0666 less the umask, never more than 0644 with the usual umask.
    let fresh = dir.join("fresh.npy");
    save_bytes(&fresh, b"x").expect("save");
    assert_eq!(fs::metadata(&fresh).expect("meta").mode() & 0o111, 0);
}

#[test]
fn temporaries_have_unpredictable_names_and_never_follow_a_planted_link() {
    let dir = scratch("names");
    let target = dir.join("m.pt");
    let a = SaveFile::create(&target).expect("create");
    let b = SaveFile::create(&target).expect("create");
    assert_ne!(a.temp, b.temp);
    let name = a
        .temp
        .file_name()
        .expect("name")
        .to_string_lossy()
        .to_string();
    assert!(name.starts_with(".m.pt.tmp-"), "{name}");
    // 16 hex digits of randomness after the pid.
    assert_eq!(name.rsplit('-').next().map(str::len), Some(16));
    drop((a, b));
    assert!(names(&dir).is_empty(), "{:?}", names(&dir));
    // Every name the old scheme would pick, planted as links to a victim, is left alone.
    let victim = dir.join("victim");
    fs::write(&victim, b"private").expect("write");
    for n in 0..4 {
        let planted = dir.join(format!(".m.pt.tmp-{}-{n}", std::process::id()));
        symlink(&victim, planted).expect("symlink");
    }
    save_bytes(&target, b"model").expect("save");
    assert_eq!(fs::read(&victim).expect("read"), b"private");
    assert_eq!(fs::read(&target).expect("read"), b"model");
}

#[test]
fn special_files_are_refused() {
    let dir = scratch("special");
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("cstring");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = save_bytes(&fifo, b"x").expect_err("refused");
    assert!(
        e.to_string()
            .contains("it is a named pipe (FIFO), not a regular file"),
        "{e}"
    );
    assert!(fs::symlink_metadata(&fifo)
        .expect("meta")
        .file_type()
        .is_fifo_like());
    let e = save_bytes(Path::new("/dev/null"), b"x").expect_err("refused");
    assert!(e.to_string().contains("a character device"), "{e}");
    let e = save_bytes(&dir, b"x").expect_err("refused");
    assert!(e.to_string().contains("a directory"), "{e}");
    // Through a link too.
    let link = dir.join("null");
    symlink("/dev/null", &link).expect("symlink");
    assert!(matches!(
        save_bytes(&link, b"x"),
        Err(SaveError::NotRegular { .. })
    ));
}

trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}
impl FifoLike for fs::FileType {
    fn is_fifo_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_fifo()
    }
}

#[test]
fn an_error_or_an_interrupt_removes_the_temporary_and_keeps_the_old_file() {
    let dir = scratch("interrupt");
    let target = dir.join("x.npy");
    fs::write(&target, b"old").expect("write");
    let flag = Arc::new(AtomicBool::new(false));
    let result = crate::runtime::interruptible(&flag, || {
        let mut f = SaveFile::create(&target)?;
        f.write_bytes(b"new, part one")?;
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        f.write_bytes(b"part two")?;
        f.commit()
    });
    assert!(matches!(result, Err(SaveError::Interrupted)));
    assert_eq!(fs::read(&target).expect("read"), b"old");
    assert_eq!(names(&dir), ["x.npy"]);
    // A missing folder names the folder.
    let e = save_bytes(&dir.join("no/such/x.npy"), b"x").expect_err("error");
    assert!(matches!(
        e.io_error().map(io::Error::kind),
        Some(io::ErrorKind::NotFound)
    ));
}

#[test]
fn stale_temporaries_of_dead_processes_are_removed_by_the_next_save() {
    let dir = scratch("stale");
    // A pid that surely ran and ended: a child we waited for.
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead = child.id();
    child.wait().expect("wait");
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let old_file = |n: &str, bytes: &[u8]| {
        let f = fs::File::create(dir.join(n)).expect("create");
        io::Write::write_all(&mut &f, bytes).expect("write");
        f.set_modified(an_hour_ago).expect("mtime");
        f
    };
    let stale = [
        format!(".model.pt.tmp-{dead}-0"),
        format!(".other.npy.tmp-{dead}-0123456789abcdef"),
        // Its pid runs (pid 1 always does), but no save holds it: the pid was reused.
        ".reused.pt.tmp-1-0".to_string(),
    ];
    for n in &stale {
        old_file(n, b"partial");
    }
    // Kept: a temporary a save still holds (its lock, whatever its pid), one written a moment
    // ago (a save may not have locked it yet), and files that only look alike.
    let held = old_file(&format!(".held.pt.tmp-{dead}-0"), b"writing");
    // SAFETY: flock on a descriptor `held` owns.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX) },
        0
    );
    fs::write(dir.join(format!(".fresh.pt.tmp-{dead}-0")), b"new").expect("write");
    let kept = [
        format!(".held.pt.tmp-{dead}-0"),
        format!(".fresh.pt.tmp-{dead}-0"),
        format!("model.pt.tmp-{dead}-0"),
        format!(".model.pt.tmp-{dead}-"),
        "notes.txt".to_string(),
    ];
    for n in &kept[2..] {
        old_file(n, b"keep");
    }
    save_bytes(&dir.join("model.pt"), b"model").expect("save");
    let mut expected: Vec<String> = kept.to_vec();
    expected.push("model.pt".to_string());
    expected.sort();
    assert_eq!(names(&dir), expected);
    drop(held);
}
