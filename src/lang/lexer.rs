//! Tokens and the indentation-aware lexer. (Placeholder until the lexer lands.)
