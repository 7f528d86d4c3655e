//! The dialects: thin bindings of the shared array API (`crate::modules::array`) under the names
//! and defaults of each framework. A dialect may use the array API and the Python library, never
//! another dialect: what two dialects share moves down into the array API.
//!
//! - `mxnet/` — `mxnet` (nd, np, npx, context), `gluon`, `autograd`, `init`;
//! - `torch/` — `torch`, `torch.cuda`, `torch.nn`, `torch.optim`, `torchvision`;
//! - `numpy/` — `import numpy as np` and `numpy.random`.

pub mod mxnet;
pub mod numpy;
pub mod torch;
