//! The evaluator: values, the tree-walking interpreter, built-in functions and
//! modules, and [`session::Session`], the API every frontend uses.
//!
//! - `value.rs` — the `Value` enum and argument handling;
//! - `interp.rs` — statements, expressions, calls, scopes;
//! - `globals.rs` — the global scope as slots that name nodes cache;
//! - `ops.rs` — operators and indexing (arrays are sent to the runtime);
//! - `fuse.rs` — elementwise expressions of several ops run as one fused pass;
//! - `format.rs` — repr/str/format and the pretty display form;
//! - `builtins.rs` — Python's built-ins, attributes, str/list/dict methods;
//! - `arrays.rs` — the array API shared by every dialect;
//! - `modules.rs` — `mxnet`, `time`, `sys`, `math` and the native globals;
//! - `torch.rs` — the PyTorch dialect (`torch.device`, `torch.cuda`);
//! - `magic.rs` — `%time`, `%timeit`, `%devices`, `%who`, `!cmd`;
//! - `session.rs` — `Session`, the one evaluator API.

pub mod arrays;
pub mod builtins;
pub mod docs;
pub mod error;
pub mod format;
pub mod fuse;
pub mod globals;
pub mod gluon;
pub mod gluon_data;
pub mod inspect;
pub mod interp;
pub mod magic;
pub mod modules;
pub mod ops;
pub mod session;
pub mod torch;
pub mod torch_nn;
pub mod value;
