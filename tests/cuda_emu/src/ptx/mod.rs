//! PTX: a parser for the text NVRTC emits (`parse`) and an interpreter that runs a kernel's
//! threads block by block (`exec`). Anything the parser does not know (an instruction, a type,
//! a modifier, a directive) is an error that names it: nothing is skipped.
pub mod exec;
pub mod parse;

pub use exec::{launch, Grid, LaunchError};
pub use parse::{parse, Program};

#[cfg(test)]
mod tests;
