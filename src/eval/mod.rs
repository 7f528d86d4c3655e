//! The evaluator: the tree-walking interpreter and [`session::Session`], the API every frontend
//! uses. The object model it runs on is `crate::object`; the built-in libraries it imports from
//! are `crate::modules`.
//!
//! - `interp.rs` — statements, expressions, calls, scopes; implements `object::Interpreter`;
//! - `fuse.rs` — elementwise expressions of several ops run as one fused pass;
//! - `generator.rs` — generator functions: the resume protocol, and bodies run on a stack of their own;
//! - `pattern.rs` — the `match` statement: which case matches, the names it binds;
//! - `resumable.rs` — generators whose yields are statements, suspended without a stack;
//! - `session.rs` — `Session`, the one evaluator API.

pub mod fuse;
pub mod generator;
pub mod inspect;
pub mod interp;
mod pattern;
mod resumable;
pub mod session;

#[cfg(test)]
mod tests;
