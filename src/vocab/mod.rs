//! The vocabulary the runtime and the backends share: dtypes, devices, the primitive op enums and
//! fused expressions, host data and scalars, the error type, and the host's memory facts.
//!
//! It sits below both (`runtime -> backend -> vocab`), so a backend names an op or a dtype without
//! reaching up into the runtime that holds `Array`. Nothing here imports another layer of the crate.
pub mod device;
pub mod dtype;
pub mod error;
pub mod host;
pub mod memory;
pub mod ops;

pub use device::{Device, DeviceKind};
pub use dtype::DType;
pub use error::{Result, RuntimeError};
pub use host::{bf16, f16, HostData, HostElement, Scalar};
pub use ops::{BinaryOp, FusedExpr, Patches, PoolKind, ReduceOp, UnaryOp};
