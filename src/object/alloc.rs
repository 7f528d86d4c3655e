//! Allocation that can fail, for every buffer whose size the user chooses (strings built by
//! `zfill`, `center`, `replace`, `join`, reprs; lists materialised from ranges): a request the
//! system refuses is a `MemoryError`, as in CPython, instead of Rust's abort on allocation
//! failure, and the session lives on.

use super::error::{Exc, ExcKind};

/// CPython's `MemoryError()` (no message).
pub fn memory_error() -> Exc {
    Exc::new(ExcKind::MemoryError, "")
}

/// An empty string with room for `bytes`.
pub fn string(bytes: usize) -> Result<String, Exc> {
    let mut s = String::new();
    s.try_reserve_exact(bytes).map_err(|_| memory_error())?;
    Ok(s)
}

/// An empty vector with room for `items`.
pub fn vec<T>(items: usize) -> Result<Vec<T>, Exc> {
    let mut v = Vec::new();
    v.try_reserve_exact(items).map_err(|_| memory_error())?;
    Ok(v)
}

/// Appends `item`, growing `v` through the fallible path: a list the user grows without bound
/// (`list(it)`, a comprehension) ends in a MemoryError when the system refuses more.
#[inline]
pub fn push<T>(v: &mut Vec<T>, item: T) -> Result<(), Exc> {
    if v.len() == v.capacity() {
        v.try_reserve(1).map_err(|_| memory_error())?;
    }
    v.push(item);
    Ok(())
}

/// Appends `piece`, growing `out` through the fallible path (text built from user input of
/// any size: `re.sub` results).
#[inline]
pub fn push_str(out: &mut String, piece: &str) -> Result<(), Exc> {
    out.try_reserve(piece.len()).map_err(|_| memory_error())?;
    out.push_str(piece);
    Ok(())
}

/// `piece` `times` times, appended to `out` (whose room is checked first).
pub fn push_repeated(out: &mut String, piece: &str, times: usize) -> Result<(), Exc> {
    let bytes = piece.len().checked_mul(times).ok_or_else(memory_error)?;
    out.try_reserve(bytes).map_err(|_| memory_error())?;
    if times == 0 {
        return Ok(());
    }
    // By doubling what is already there: a few large copies instead of one per piece.
    let start = out.len();
    out.push_str(piece);
    let mut done = 1;
    while done < times {
        let more = done.min(times - done);
        // SAFETY: the bytes appended are whole copies of `piece` taken from `out` itself, so
        // the string stays UTF-8.
        let v = unsafe { out.as_mut_vec() };
        v.extend_from_within(start..start + more * piece.len());
        done += more;
    }
    Ok(())
}

/// A string value of `s`, whose copy is checked first: the value's own buffer is one more
/// allocation of the same size, which Rust could only abort on.
pub fn str_value(s: &str) -> Result<super::value::Value, Exc> {
    // Small strings are copied as they are; a large one is probed (a buffer of its size
    // reserved and freed) so a refusal is a MemoryError.
    if s.len() >= 1 << 24 {
        drop(vec::<u8>(s.len())?);
    }
    Ok(super::value::Value::str(s))
}

/// `parts` joined by `sep`, its length computed and reserved before any copy.
pub fn join<S: AsRef<str>>(parts: &[S], sep: &str) -> Result<String, Exc> {
    let mut bytes = sep
        .len()
        .checked_mul(parts.len().saturating_sub(1))
        .ok_or_else(memory_error)?;
    for p in parts {
        bytes = bytes
            .checked_add(p.as_ref().len())
            .ok_or_else(memory_error)?;
    }
    let mut out = string(bytes)?;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(p.as_ref());
    }
    Ok(out)
}

/// `s.replace(old, new)`, its length computed and reserved before any copy.
pub fn replace(s: &str, old: &str, new: &str) -> Result<String, Exc> {
    // Python inserts `new` between characters (and at both ends) for an empty `old`.
    let count = if old.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(old).count()
    };
    let bytes = new
        .len()
        .checked_mul(count)
        .and_then(|n| n.checked_add(s.len()))
        .ok_or_else(memory_error)?;
    let mut out = string(bytes)?;
    if old.is_empty() {
        out.push_str(new);
        for c in s.chars() {
            out.push(c);
            out.push_str(new);
        }
        return Ok(out);
    }
    let mut last = 0;
    for (i, _) in s.match_indices(old) {
        out.push_str(&s[last..i]);
        out.push_str(new);
        last = i + old.len();
    }
    out.push_str(&s[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_requests_are_memory_errors() {
        let e = string(usize::MAX / 2).unwrap_err();
        assert_eq!(e.kind, ExcKind::MemoryError);
        assert!(vec::<u64>(usize::MAX / 4).is_err());
        let mut s = String::new();
        assert!(push_repeated(&mut s, "ab", usize::MAX / 2).is_err());
        for times in [0, 1, 2, 3, 7, 8, 1000] {
            let mut s = String::from(">");
            push_repeated(&mut s, "é-", times).expect("room");
            assert_eq!(s, format!(">{}", "é-".repeat(times)));
        }
    }

    #[test]
    fn replace_matches_python() {
        assert_eq!(replace("abcab", "ab", "x").unwrap(), "xcx");
        assert_eq!(replace("ab", "", "-").unwrap(), "-a-b-");
        assert_eq!(replace("", "", "-").unwrap(), "-");
        assert_eq!(join(&["a", "b", "c"], ", ").unwrap(), "a, b, c");
    }
}
