//! The language front end: source text -> tokens -> syntax tree.
//! Nothing here knows about arrays, devices or the evaluator.

pub mod ast;
mod blocks;
pub mod lexer;
pub mod lower;
pub mod parser;
pub mod pattern;
pub mod span;

#[cfg(test)]
mod tests;

pub use lexer::{highlight, TokenClass};
pub use parser::{
    input_status, next_indent, parse, parse_expression, parse_expression_span, parse_span,
    InputStatus, Statements, SyntaxError,
};
pub use span::Span;
