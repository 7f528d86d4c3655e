//! Neural networks on the runtime: autograd, Gluon-style layers, losses, the trainer, data.
//!
//! Nothing here knows the language: `crate::eval::gluon` binds it to `mxnet.gluon` and
//! `mxnet.autograd`. Everything runs through the runtime's public `Array` API, so it works
//! on every device the runtime has.
pub mod autograd;
pub mod data;
pub mod layers;
pub mod params_io;
pub mod tensor_file;
pub mod train;

use std::collections::HashMap;

/// What one session keeps for nn: the autograd tape and the per-prefix counters that name
/// layers (`dense0`, `dense1`, ...) the way MXNet does.
#[derive(Default)]
pub struct NnState {
    pub tape: autograd::Tape,
    pub name_counts: HashMap<String, usize>,
}

impl NnState {
    /// The next name for a block of `prefix` (`dense` -> `dense0`, then `dense1`).
    pub fn next_name(&mut self, prefix: &str) -> String {
        let n = self.name_counts.entry(prefix.to_string()).or_insert(0);
        let name = format!("{prefix}{n}");
        *n += 1;
        name
    }
}
