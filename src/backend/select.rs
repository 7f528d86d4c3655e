//! Selection along one axis for either backend (`cpu/select.rs`, `cuda/select.rs`).
use super::{mixed_backends, Storage};
pub use crate::backend::cpu::select::Lanes;
use crate::vocab::Result;

impl Storage {
    /// `out[o, j, k] = self[o, index[o, j, k], k]` with an int64 `index` of (outer, len, inner).
    pub fn take_along(&self, from: Lanes, index: &Storage, len: usize) -> Result<Storage> {
        match (self, index) {
            (Storage::Cpu(s), Storage::Cpu(i)) => s.take_along(from, i, len).map(Storage::Cpu),
            (Storage::Cuda(s), Storage::Cuda(i)) => s.take_along(from, i, len).map(Storage::Cuda),
            _ => Err(mixed_backends("take_along")),
        }
    }

    /// `self[o, index[o, j, k], k] = src[o, j, k]` (or `+=`), in index order.
    pub fn scatter_along(
        &mut self,
        to: Lanes,
        index: &Storage,
        src: &Storage,
        len: usize,
        add: bool,
    ) -> Result<()> {
        match (self, index, src) {
            (Storage::Cpu(d), Storage::Cpu(i), Storage::Cpu(s)) => {
                d.scatter_along(to, i, s, len, add)
            }
            (Storage::Cuda(d), Storage::Cuda(i), Storage::Cuda(s)) => {
                d.scatter_along(to, i, s, len, add)
            }
            _ => Err(mixed_backends("scatter_along")),
        }
    }

    /// The int64 positions that sort each lane (stable; NaN last ascending, first descending).
    pub fn sort_positions(&self, lanes: Lanes, descending: bool) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.sort_positions(lanes, descending))),
            // No sort kernel yet: the lanes are sorted on the host, as nonzero and unique are,
            // and the positions go back to the card.
            Storage::Cuda(s) => {
                use super::BackendStorage;
                let host = super::cpu::CpuStorage::from_host(s.to_host()?)?;
                let positions = host.sort_positions(lanes, descending).to_host();
                Ok(Storage::Cuda(super::cuda::CudaStorage::from_host(
                    s.device(),
                    &positions,
                )?))
            }
        }
    }
}
