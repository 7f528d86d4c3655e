//! The evaluator: values, the tree-walking interpreter, built-in functions and
//! modules, and [`session::Session`], the API every frontend uses.

pub mod session;
