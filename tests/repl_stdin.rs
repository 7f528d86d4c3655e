//! The REPL on a terminal (a pseudo-terminal here): `input()` goes through the line editor,
//! Ctrl-C while it waits is KeyboardInterrupt and Ctrl-D EOFError, the session's variables
//! intact after either; `getpass` reads without echo. Each step waits for the text it expects
//! (a generous deadline only guards against a hang; nothing is timed).
#![cfg(unix)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A pseudo-terminal pair: (master, slave).
fn open_pty() -> (File, File) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two new descriptors, which the Files then own.
    let status = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(status, 0, "openpty failed");
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    unsafe { (File::from_raw_fd(master), File::from_raw_fd(slave)) }
}

struct Terminal {
    master: File,
    output: mpsc::Receiver<Vec<u8>>,
    seen: String,
    /// Where the next `expect` starts looking.
    from: usize,
}

impl Terminal {
    fn send(&mut self, text: &str) {
        // A key sent the instant a prompt shows was lost about once in 20 runs on a loaded
        // machine (rustyline still setting up the terminal): a pause, not a timing check.
        std::thread::sleep(Duration::from_millis(100));
        self.master
            .write_all(text.as_bytes())
            .expect("write to the terminal");
    }

    /// Reads until `needle` appears after the previous match; returns what came before it.
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(at) = self.seen[self.from..].find(needle) {
                let before = self.seen[self.from..self.from + at].to_string();
                self.from += at + needle.len();
                return before;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(chunk) => self.seen.push_str(&String::from_utf8_lossy(&chunk)),
                Err(_) => panic!("{needle:?} never came; the terminal showed:\n{}", self.seen),
            }
        }
    }
}

#[test]
fn repl_input_reads_the_terminal_and_ctrl_c_ctrl_d_raise() {
    let (master, slave) = open_pty();
    let home = std::env::temp_dir().join(format!("devarray-repl-stdin-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("a home folder");
    let mut child = Command::new(env!("CARGO_BIN_EXE_devarray"))
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("HOME", &home)
        .env_remove("DEVARRAY_SIM_GPUS")
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("start devarray");
    let mut reader = master.try_clone().expect("dup");
    let (send, output) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || send.send(buf[..n].to_vec()).is_err() {
                return;
            }
        }
    });
    let mut t = Terminal {
        master,
        output,
        seen: String::new(),
        from: 0,
    };
    t.expect(">>> ");
    t.send("kept = 41\r");
    t.expect(">>> ");
    t.send("x = input('name? ')\r");
    t.expect("name? ");
    t.send("Ada\r");
    t.expect(">>> ");
    t.send("print(x, kept)\r");
    t.expect("Ada 41");
    t.expect(">>> ");

    t.send("y = input('again? ')\r");
    t.expect("again? ");
    t.send("\x03");
    t.expect("KeyboardInterrupt");
    t.expect(">>> ");
    t.send("z = input('eof? ')\r");
    t.expect("eof? ");
    t.send("\x04");
    t.expect("EOFError: EOF when reading a line");
    t.expect(">>> ");
    t.send("print(kept, 'y' in globals(), 'z' in globals())\r");
    t.expect("41 False False");
    t.expect(">>> ");

    t.send("import getpass\r");
    t.expect(">>> ");
    t.send("p = getpass.getpass()\r");
    t.expect("Password: ");
    t.send("hunter2\r");
    t.expect(">>> ");
    t.send("print(len(p), p[::-1])\r");
    t.expect("7 2retnuh");
    t.expect(">>> ");
    assert!(
        !t.seen.contains("hunter2"),
        "the password was echoed:\n{}",
        t.seen
    );

    t.send("\x04");
    let status = child.wait().expect("devarray ends");
    assert!(
        status.success(),
        "{status}; the terminal showed:\n{}",
        t.seen
    );
}
