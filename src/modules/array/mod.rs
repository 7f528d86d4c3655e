//! The array API every dialect shares: array creation, attributes and methods, the NumPy-style
//! functions, array files, devices and the model layer. It knows no dialect: what differs between
//! MXNet, PyTorch and NumPy is the `Flavor` an array carries (how it prints, its defaults), and
//! where a dialect adds to an array (a tensor's `grad`, `torch.Size`), the dialect registers it
//! through `hooks.rs` at start-up.
//!
//! - `arrays.rs` — the core: creation, attributes, methods, the namespace functions;
//! - `array_more.rs` — the functions and methods beyond that core (`view`, `cumsum`, `*_like`...);
//! - `numpy_fns.rs` — what NumPy has beyond the core (`linspace`, `where`, `sort`, `split`...);
//! - `linalg.rs` — `einsum`, `tensordot`, `kron`, `cross`... and `numpy.linalg`/`torch.linalg`'s
//!   factorisations (`solve`, `qr`, `eigh`, `svd`, `cholesky`, `pinv`...) on the host;
//! - `math_more.rs` — elementwise math beyond the primitive ops (`arcsin`, `atan2`, `fmod`,
//!   `clamp` with tensor bounds, the comparison functions), in every dialect's names;
//! - `poly.rs` — `interp`, `gradient`, `trapz`/`trapezoid`, `convolve`, `polyfit`, `polyval`,
//!   `vander`;
//! - `reductions.rs` — `nansum`/`nanmean`/..., `ptp`, `average`, `cov`, `corrcoef`,
//!   `histogram2d`, and PyTorch's `logsumexp`, `std`/`var`, `cumprod`, `histc`;
//! - `scalars.rs` — NumPy's scalars (`numpy.float32`...) and their types;
//! - `numpy_io.rs` — `.npy` and text files; `files.rs` — devarray's safetensors files (`save`/`load`);
//! - `devices.rs` — `cpu`, `gpu`, `num_gpus`, `try_gpu`, `try_all_gpus`;
//! - `data.rs` — data sets, transforms and loaders, bound as `gluon.data` and as `torchvision` /
//!   `torch.utils.data`;
//! - `blocks.rs` — the model layer (Gluon's `Block`, PyTorch's `Module`) both dialects bind;
//! - `conv_args.rs` — the arguments convolution and pooling layers read in both dialects;
//! - `graph.rs` — traced graphs and the plan that runs them (`hybridize`, `torch.jit`);
//! - `selection.rs` — sorting, gathers, `where`, flips and rolls, composed from the runtime's
//!   selection primitives, for every dialect to bind.

pub mod array_more;
pub mod arrays;
pub mod block_hooks;
pub mod blocks;
pub mod conv_args;
pub mod data;
pub mod devices;
pub mod eig;
pub mod files;
pub mod fn_args;
pub mod graph;
pub mod hooks;
pub mod linalg;
pub mod math_more;
pub mod mxnet_params;
pub mod npz;
pub mod numpy_fns;
pub mod numpy_io;
pub mod poly;
pub mod reductions;
pub mod scalars;
pub mod selection;
