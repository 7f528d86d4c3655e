//! Selection by an index array along one axis, and the order that sorts an axis: the runtime's
//! primitives for gather/take/index_select/where/sort (`backend/select.rs`: CPU and CUDA
//! kernels; a simulated GPU queues the CPU kernel). Everything else of the family is composed
//! from these and the basic ops, above the runtime.
use super::{shape_tuple, Array, DType, Result, RuntimeError};
use crate::backend::select::Lanes;
use crate::runtime::shape::normalize_axis;
use crate::runtime::timeline::op_scope;

/// The index as int64 (int32 converted), or an error naming `op` for other dtypes.
fn int64_index(index: &Array, op: &str) -> Result<Array> {
    match index.dtype() {
        DType::Int64 => Ok(index.clone()),
        DType::Int32 => index.astype(DType::Int64),
        other => Err(RuntimeError::DType(format!(
            "{op}: the index must be an integer array, not {other}"
        ))),
    }
}

/// `index` fits `x` along every axis but `axis` (the same rank, equal sizes elsewhere).
fn check_fits(x: &Array, index: &Array, axis: usize, op: &str) -> Result<()> {
    let fits = index.ndim() == x.ndim()
        && (0..x.ndim()).all(|d| d == axis || index.shape()[d] == x.shape()[d]);
    if !fits {
        return Err(RuntimeError::Shape(format!(
            "{op}: an index of shape {} does not fit an array of shape {} along axis {axis}",
            shape_tuple(index.shape()),
            shape_tuple(x.shape())
        )));
    }
    Ok(())
}

/// Every position in `index` lies in a lane of `len` (negative ones count from the end). Read
/// on the host: CUDA kernels cannot raise, so positions are checked before they run.
pub fn check_positions(index: &Array, len: usize) -> Result<()> {
    let host = index.try_to_host()?;
    let n = len as i64;
    for i in host.to_f64_vec() {
        let i = i as i64;
        if i < -n || i >= n {
            return Err(RuntimeError::Index(format!(
                "index {i} is out of bounds for axis with size {len}"
            )));
        }
    }
    Ok(())
}

impl Array {
    /// `out[..., j, ...] = self[..., index[..., j, ...], ...]` along `axis`: NumPy's
    /// `take_along_axis` and PyTorch's `gather` when `index` has this array's shape except along
    /// `axis` (callers broadcast or slice first). The result has `index`'s shape.
    pub fn take_along_axis(&self, index: &Array, axis: isize) -> Result<Array> {
        self.take_along(index, axis, true)
    }

    /// [`Array::take_along_axis`] with positions the caller made itself (a sort's, a mask's):
    /// no host check on CUDA.
    pub fn take_along_trusted(&self, index: &Array, axis: isize) -> Result<Array> {
        self.take_along(index, axis, false)
    }

    fn take_along(&self, index: &Array, axis: isize, check: bool) -> Result<Array> {
        let _op = op_scope("take_along_axis");
        let axis = normalize_axis(axis, self.ndim().max(1), "take_along_axis")?;
        self.check_same_device(index, "take_along_axis")?;
        let index = int64_index(index, "take_along_axis")?;
        check_fits(self, &index, axis, "take_along_axis")?;
        let from = Lanes::of(self.shape(), axis);
        let len = index.shape().get(axis).copied().unwrap_or(1);
        if from.len == 0 && index.size() > 0 {
            return Err(RuntimeError::Index(
                "take_along_axis: cannot take from an empty axis".into(),
            ));
        }
        if check && self.ctx().placement.is_cuda() {
            check_positions(&index, from.len)?;
        }
        let x = self.clone();
        self.derive(index.shape().to_vec(), self.dtype(), move || {
            let i = index.read();
            x.read().take_along(from, &i, len)
        })
    }

    /// `self[..., index[..., j, ...], ...] = src[..., j, ...]` along `axis`, in place (`+=`
    /// with `add`): PyTorch's `scatter_`/`scatter_add_`. `index` and `src` have one shape, this
    /// array's except along `axis`; `src` is converted to this array's dtype.
    pub fn scatter_along_axis(
        &self,
        index: &Array,
        src: &Array,
        axis: isize,
        add: bool,
    ) -> Result<()> {
        let _op = op_scope("scatter");
        let axis = normalize_axis(axis, self.ndim().max(1), "scatter")?;
        self.check_same_device(index, "scatter")?;
        self.check_same_device(src, "scatter")?;
        let index = int64_index(index, "scatter")?;
        check_fits(self, &index, axis, "scatter")?;
        if src.shape() != index.shape() {
            return Err(RuntimeError::Shape(format!(
                "scatter: the source has shape {} but the index {}",
                shape_tuple(src.shape()),
                shape_tuple(index.shape())
            )));
        }
        if add && self.dtype() == DType::Bool {
            return Err(RuntimeError::DType(
                "scatter_add: not defined for bool arrays".into(),
            ));
        }
        let to = Lanes::of(self.shape(), axis);
        let len = index.shape().get(axis).copied().unwrap_or(1);
        if to.len == 0 && index.size() > 0 {
            return Err(RuntimeError::Index(
                "scatter: cannot write into an empty axis".into(),
            ));
        }
        if self.ctx().placement.is_cuda() {
            check_positions(&index, to.len)?;
        }
        let dtype = self.dtype();
        let src = src.clone();
        self.write_with(move |target| {
            // Private copies before the write lock: the source or index may be the target.
            let values = {
                let s = src.read();
                if s.dtype() == dtype {
                    s.gather(&super::full_view(src.shape()))?
                } else {
                    s.cast(dtype)?
                }
            };
            let positions = index.read().gather(&super::full_view(index.shape()))?;
            let mut storage = target.inner.buffer().write();
            storage.scatter_along(to, &positions, &values, len, add)
        })
    }

    /// The int64 positions that sort this array along `axis` (stable: equal elements keep
    /// their order, descending too; NaN sorts after every number). The values in order are
    /// `take_along_axis` of these. On CUDA devices the lanes are sorted on the host.
    pub fn sort_positions(&self, axis: isize, descending: bool) -> Result<Array> {
        let _op = op_scope("sort");
        if self.ndim() == 0 {
            return self
                .reshape(&[1])?
                .sort_positions(0, descending)?
                .reshape(&[]);
        }
        let axis = normalize_axis(axis, self.ndim(), "sort")?;
        let lanes = Lanes::of(self.shape(), axis);
        let x = self.clone();
        self.derive(self.shape().to_vec(), DType::Int64, move || {
            x.read().sort_positions(lanes, descending)
        })
    }
}
