//! The read side of `save_file`: a whole file read into a buffer reserved through the fallible
//! path (a file larger than memory is an error, never an abort), in chunks with a check of the
//! session's interrupt flag between them, so Ctrl-C during `np.load` / `nd.load` /
//! `torch.load` of a large file stops it within one chunk and nothing is assigned.

use std::io::Read;

use crate::backend::cpu::cancel::Cancel;

/// Bytes read between two interrupt checks (a few milliseconds from the page cache).
const CHUNK: usize = 8 << 20;

#[derive(Debug)]
pub enum LoadError {
    Io(std::io::Error),
    /// No room for the file's bytes.
    TooLarge,
    /// The session's interrupt flag was set (the request is consumed).
    Interrupted,
}

/// Everything `reader` has, `size` bytes expected (the file's length: the buffer is reserved
/// once), appended to `out`.
pub fn read_into(mut reader: impl Read, size: u64, out: &mut Vec<u8>) -> Result<(), LoadError> {
    let size = usize::try_from(size).map_err(|_| LoadError::TooLarge)?;
    out.try_reserve_exact(size)
        .map_err(|_| LoadError::TooLarge)?;
    let cancel = Cancel::current();
    loop {
        cancel.check().map_err(|_| LoadError::Interrupted)?;
        let start = out.len();
        let room = out.capacity() - start;
        if room == 0 {
            // As long as announced: whatever more there is (a file still growing) is read on.
            let mut probe = [0u8; 4096];
            let n = read_some(&mut reader, &mut probe)?;
            if n == 0 {
                return Ok(());
            }
            out.try_reserve(CHUNK).map_err(|_| LoadError::TooLarge)?;
            out.extend_from_slice(&probe[..n]);
            continue;
        }
        out.resize(start + room.min(CHUNK), 0);
        let mut filled = start;
        while filled < out.len() {
            match read_some(&mut reader, &mut out[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) => {
                    out.truncate(start);
                    return Err(e);
                }
            }
        }
        let full = filled == out.len();
        out.truncate(filled);
        if !full {
            return Ok(());
        }
    }
}

/// One `read`, retried when a signal interrupted it.
fn read_some(reader: &mut impl Read, buf: &mut [u8]) -> Result<usize, LoadError> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => return other.map_err(LoadError::Io),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn reads_everything_and_stops_at_an_interrupt() {
        let data: Vec<u8> = (0..3 * CHUNK + 5).map(|i| i as u8).collect();
        let mut out = vec![7u8];
        read_into(&data[..], data.len() as u64, &mut out).expect("read");
        assert_eq!(out.len(), data.len() + 1);
        assert_eq!(&out[1..], &data[..]);
        let flag = Arc::new(AtomicBool::new(true));
        crate::runtime::interruptible(&flag, || {
            let mut out = Vec::new();
            assert!(matches!(
                read_into(&data[..], data.len() as u64, &mut out),
                Err(LoadError::Interrupted)
            ));
        });
        assert!(!flag.load(Ordering::SeqCst), "the request is consumed");
        let mut out = Vec::new();
        assert!(matches!(
            read_into(&data[..], u64::MAX, &mut out),
            Err(LoadError::TooLarge)
        ));
    }
}
