//! The language front end: source text -> tokens -> syntax tree.
//! Nothing here knows about arrays, devices or the evaluator.

pub mod ast;
pub mod lexer;
pub mod parser;
pub mod span;

pub use parser::{parse, SyntaxError};
pub use span::Span;
