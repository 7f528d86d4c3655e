//! Tests that run whole programs through a `Session` and look at what a module did (the
//! transcripts under `tests/transcripts/` are the user-level record; these check sink calls and
//! files that a transcript cannot see).
mod clear_output;
mod files;
mod finalizers;
mod gluon_data;
