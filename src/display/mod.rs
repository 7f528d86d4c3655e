//! Text and HTML rendering. (Being written.)
pub mod error;
