//! Selection along one axis on a card (copy.cu's `DA_SELECT`): the CUDA side of
//! `backend/cpu/select.rs`. Sorting has no kernel yet; the runtime refuses it on CUDA by name.
use super::kernels::{self, Module};
use super::storage::{Arg, CudaStorage};
use crate::backend::cpu::select::Lanes;
use crate::vocab::{DType, Result, RuntimeError};

fn int64_index(index: &CudaStorage) -> Result<()> {
    if index.dtype() != DType::Int64 {
        return Err(RuntimeError::Value(format!(
            "internal error: an index buffer of {} reached the kernel; please report this as a devarray bug",
            index.dtype()
        )));
    }
    Ok(())
}

impl CudaStorage {
    /// `out[o, j, k] = self[o, index[o, j, k], k]` for `self` laid out as `from` and an int64
    /// `index` of (outer, len, inner).
    pub fn take_along(&self, from: Lanes, index: &CudaStorage, len: usize) -> Result<CudaStorage> {
        int64_index(index)?;
        let n = from.outer * len * from.inner;
        let out = CudaStorage::alloc(self.device(), n, self.dtype())?;
        if n > 0 {
            let [entry, _] = kernels::select_entries(self.dtype());
            out.launch(
                Module::Copy,
                &entry,
                n,
                &[
                    Arg::Ptr(out.ptr()),
                    Arg::Ptr(self.ptr()),
                    Arg::Ptr(index.ptr()),
                    Arg::I64(from.len as i64),
                    Arg::I64(len as i64),
                    Arg::I64(from.inner as i64),
                    Arg::I64(n as i64),
                ],
            )?;
        }
        Ok(out)
    }

    /// `self[o, index[o, j, k], k] = src[o, j, k]` (`+=` with `add`), in index order.
    pub fn scatter_along(
        &mut self,
        to: Lanes,
        index: &CudaStorage,
        src: &CudaStorage,
        len: usize,
        add: bool,
    ) -> Result<()> {
        int64_index(index)?;
        let lanes = to.outer * to.inner;
        if lanes == 0 || len == 0 {
            return Ok(());
        }
        // The kernel adds float16 as bits: sum in float32 and round back instead.
        if add && self.dtype().is_half() {
            let mut wide = self.cast(DType::Float32)?;
            wide.scatter_along(to, index, &src.cast(DType::Float32)?, len, add)?;
            *self = wide.cast(self.dtype())?;
            return Ok(());
        }
        let [_, entry] = kernels::select_entries(self.dtype());
        self.launch(
            Module::Copy,
            &entry,
            lanes,
            &[
                Arg::Ptr(self.ptr()),
                Arg::Ptr(index.ptr()),
                Arg::Ptr(src.ptr()),
                Arg::I64(to.len as i64),
                Arg::I64(len as i64),
                Arg::I64(to.inner as i64),
                Arg::I64(lanes as i64),
                Arg::I32(i32::from(add)),
            ],
        )
    }
}
