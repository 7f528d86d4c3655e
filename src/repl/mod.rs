//! The terminal REPL. (Being written.)
