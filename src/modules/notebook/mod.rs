//! The notebook helpers: what IPython adds around a program. Magics, `help`/`obj?` reports and
//! the long docs, and the `IPython` module. They use the array API (the device table of
//! `%devices`) and the Python library, never a dialect.
//!
//! - `magic.rs` — `%time`, `%timeit`, `%devices`, `%transfers`, `%who`, `!cmd`;
//! - `timeline.rs` — `%timeline`: the last cell's device work, lane by lane;
//! - `pydoc.rs`, `docs.rs` — what `help`, `obj?` and inspection show; the long docs;
//! - `ipython.rs` — `IPython.display`.

pub mod docs;
pub mod ipython;
pub mod magic;
pub mod pydoc;
pub mod timeline;
