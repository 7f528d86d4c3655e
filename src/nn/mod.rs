//! Neural networks on the runtime: autograd, Gluon-style layers, losses, the trainer, data.
//!
//! Nothing here knows the language: `crate::eval::gluon` binds it to `mxnet.gluon` and
//! `mxnet.autograd`. Everything runs through the runtime's public `Array` API, so it works
//! on every device the runtime has.
pub mod autograd;
pub mod cnn;
pub mod conv;
pub mod data;
pub mod layers;
pub mod losses;
pub mod norm;
pub mod optim;
pub mod params_io;
pub mod resize;
pub mod tensor_file;
pub mod train;

use std::collections::HashMap;
use std::rc::Rc;

use crate::runtime::Array;

/// What one session keeps for nn: the autograd tape and the counters that name layers
/// (`dense0`, `dense1`, ...) the way MXNet does.
#[derive(Default)]
pub struct NnState {
    pub tape: autograd::Tape,
    pub name_counts: HashMap<String, usize>,
    /// The prefixes of the blocks whose `name_scope()` is open, innermost last: a block made
    /// inside is named under the innermost (`mlp0_dense0`), counted per prefix.
    pub name_scopes: Vec<String>,
    /// PyTorch parameters by the identity of the tensor a program sees for each (its data):
    /// such a tensor prints as `Parameter containing:` and an optimizer finds its parameter.
    param_arrays: HashMap<usize, (Array, Rc<layers::Parameter>)>,
    /// Size of `param_arrays` at which unused entries are next dropped.
    prune_at: usize,
    /// While `torch.nn.DataParallel` runs a replica: its device. A PyTorch parameter with a
    /// replica's copy there reads as that copy (`self.weight` inside `forward`).
    pub replica_device: Option<crate::runtime::Device>,
}

impl NnState {
    /// Notes that `data` is the tensor of parameter `p` (kept alive with the entry, so its
    /// identity is not reused while noted).
    pub fn note_param_array(&mut self, data: &Array, p: &Rc<layers::Parameter>) {
        if self.param_arrays.len() >= self.prune_at {
            // Drop entries nothing else holds: neither the parameter (a model) nor the tensor
            // (a program's variable; the entry and the parameter's own copy are two handles).
            self.param_arrays
                .retain(|_, (a, p)| Rc::strong_count(p) > 1 || a.holders() > 2);
            self.prune_at = (self.param_arrays.len() * 2).max(64);
        }
        self.param_arrays
            .insert(data.id(), (data.clone(), p.clone()));
    }

    /// The parameter whose current data `data` is.
    pub fn param_of_array(&self, data: &Array) -> Option<Rc<layers::Parameter>> {
        let (_, p) = self.param_arrays.get(&data.id())?;
        p.list_data()
            .ok()?
            .iter()
            .any(|x| x.same(data))
            .then(|| p.clone())
    }

    /// The next name for a block of `hint` (`dense` -> `dense0`, then `dense1`; inside the
    /// name scope of `mlp0`, `mlp0_dense0`).
    pub fn next_name(&mut self, hint: &str) -> String {
        let scope = self.name_scopes.last().cloned().unwrap_or_default();
        let key = format!("{scope}{hint}");
        let n = self.name_counts.entry(key.clone()).or_insert(0);
        let name = format!("{key}{n}");
        *n += 1;
        name
    }
}
