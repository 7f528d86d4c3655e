//! The Python library: what CPython's built-ins and standard modules give a program. This layer
//! knows nothing of arrays, devices or dialects: where a built-in meets a value of an upper layer
//! (`abs(x)` of an array, `x.attr` of a tensor), it asks through the hooks of `hooks.rs`, which
//! the upper layers fill in at start-up.
//!
//! - `builtins.rs` — Python's built-ins, the attribute protocol, str/list/dict methods;
//! - `classes.rs` — the built-ins of the class machinery (`super`, `property`, ...);
//! - `code.rs` — `compile`, `exec`, `eval` and code objects;
//! - `str_more.rs` — the rest of `str`'s methods; `file_io.rs` — `open()`: text files, and
//!   binary files for reading; `bytes.rs` — what those and `subprocess` give as `bytes`;
//! - `stdin.rs` — reading input: `input()`, `sys.stdin`, `getpass`;
//! - `stdlib/` — the standard modules, one file each.

pub mod builtins;
pub mod bytes;
pub mod classes;
pub mod code;
pub mod file_io;
pub mod hooks;
pub mod int_more;
pub mod lazy;
pub mod library_names;
pub mod native;
pub mod stdin;
pub mod stdlib;
pub mod str_more;
