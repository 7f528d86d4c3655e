//! Selection by an index array along one axis, and sorting along one axis. An array is seen as
//! (outer, len, inner): `len` is the axis, `outer` the axes before it, `inner` those after.
//! Every selection op of the language (gather, take, index_select, where, sort's values,
//! scatter, scatter_add and the gradients of the gathers) is composed from these three.
use super::element::Element;
use super::CpuStorage;
use crate::backend::BackendStorage;
use crate::vocab::error::{Result, RuntimeError};
use std::cmp::Ordering;

/// The (outer, len, inner) geometry of an array and one of its axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lanes {
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
}

impl Lanes {
    pub fn of(shape: &[usize], axis: usize) -> Lanes {
        Lanes {
            outer: shape.iter().take(axis).product(),
            len: shape.get(axis).copied().unwrap_or(1),
            inner: shape.iter().skip(axis + 1).product(),
        }
    }

    pub fn size(&self) -> usize {
        self.outer * self.len * self.inner
    }
}

fn out_of_bounds(i: i64, len: usize) -> RuntimeError {
    RuntimeError::Index(format!(
        "index {i} is out of bounds for axis with size {len}"
    ))
}

/// `i` as a position in a lane of `len` (negative counts from the end).
fn position(i: i64, len: usize) -> Result<usize> {
    let n = len as i64;
    let p = if i < 0 { i + n } else { i };
    if p < 0 || p >= n {
        return Err(out_of_bounds(i, len));
    }
    Ok(p as usize)
}

/// `out[o, j, k] = src[o, index[o, j, k], k]`: `src` is `from`, `index` (and the result) has
/// `from`'s outer and inner and `len` of its own.
pub fn take_along<T: Element>(src: &[T], from: Lanes, index: &[i64], len: usize) -> Result<Vec<T>> {
    let Lanes { outer, inner, .. } = from;
    if src.len() != from.size() || index.len() != outer * len * inner {
        return Err(RuntimeError::Value(
            "internal error: take_along over mismatched buffers; please report this as a devarray bug".into(),
        ));
    }
    let mut out = Vec::with_capacity(index.len());
    for o in 0..outer {
        for j in 0..len {
            let row = (o * len + j) * inner;
            for k in 0..inner {
                let p = position(index[row + k], from.len)?;
                out.push(src[(o * from.len + p) * inner + k]);
            }
        }
    }
    Ok(out)
}

/// `dst[o, index[o, j, k], k] = src[o, j, k]` (or `+=` with `add`), in index order, so with
/// repeated positions the last write wins, or every value is added in turn.
pub fn scatter_along<T: Element>(
    dst: &mut [T],
    to: Lanes,
    index: &[i64],
    src: &[T],
    len: usize,
    add: bool,
) -> Result<()> {
    let Lanes { outer, inner, .. } = to;
    if dst.len() != to.size() || index.len() != outer * len * inner || src.len() != index.len() {
        return Err(RuntimeError::Value(
            "internal error: scatter_along over mismatched buffers; please report this as a devarray bug".into(),
        ));
    }
    // Every position checked before the first write: a failure changes nothing.
    for &i in index {
        position(i, to.len)?;
    }
    for o in 0..outer {
        for j in 0..len {
            let row = (o * len + j) * inner;
            for k in 0..inner {
                let p = position(index[row + k], to.len)?;
                let d = &mut dst[(o * to.len + p) * inner + k];
                *d = if add {
                    sum(*d, src[row + k])
                } else {
                    src[row + k]
                };
            }
        }
    }
    Ok(())
}

fn sum<T: Element>(a: T, b: T) -> T {
    match T::DTYPE {
        d if d.is_float() => T::from_f64(a.to_f64() + b.to_f64()),
        crate::vocab::DType::Bool => T::from_i64(i64::from(a.is_nonzero() || b.is_nonzero())),
        _ => T::from_i64(a.to_i64().wrapping_add(b.to_i64())),
    }
}

/// Ascending order with NaN after everything (NumPy's and PyTorch's), NaNs equal.
fn ascending<T: Element>(a: &T, b: &T) -> Ordering {
    a.partial_cmp(b).unwrap_or_else(|| {
        #[allow(clippy::eq_op)]
        let (a_nan, b_nan) = (a != a, b != b);
        match (a_nan, b_nan) {
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => Ordering::Equal,
        }
    })
}

/// The positions that sort each lane (stable: equal elements keep their order, also when
/// descending), as an (outer, len, inner) array of int64 like `src`.
pub fn sort_positions<T: Element>(src: &[T], lanes: Lanes, descending: bool) -> Vec<i64> {
    let Lanes { outer, len, inner } = lanes;
    let mut out = vec![0i64; src.len()];
    let mut order: Vec<usize> = Vec::with_capacity(len);
    for o in 0..outer {
        for k in 0..inner {
            let at = |p: usize| &src[(o * len + p) * inner + k];
            order.clear();
            order.extend(0..len);
            if descending {
                order.sort_by(|&a, &b| ascending(at(b), at(a)));
            } else {
                order.sort_by(|&a, &b| ascending(at(a), at(b)));
            }
            for (j, &p) in order.iter().enumerate() {
                out[(o * len + j) * inner + k] = p as i64;
            }
        }
    }
    out
}

fn positions_of(index: &CpuStorage) -> Result<&[i64]> {
    match index {
        CpuStorage::I64(v) => Ok(v),
        other => Err(RuntimeError::Value(format!(
            "internal error: an index buffer of {} reached the kernel; please report this as a devarray bug",
            other.dtype()
        ))),
    }
}

fn typed_scatter<T: Element>(
    dst: &mut [T],
    to: Lanes,
    index: &[i64],
    src: &CpuStorage,
    len: usize,
    add: bool,
) -> Result<()> {
    let src = T::slice(src).ok_or_else(|| {
        RuntimeError::Value(
            "internal error: scatter of another dtype; please report this as a devarray bug".into(),
        )
    })?;
    scatter_along(dst, to, index, src, len, add)
}

impl CpuStorage {
    /// [`take_along`] on this buffer, with an int64 `index` buffer.
    pub fn take_along(&self, from: Lanes, index: &CpuStorage, len: usize) -> Result<CpuStorage> {
        let index = positions_of(index)?;
        with_any!(self, v => Ok(Element::into_storage(take_along(v, from, index, len)?)))
    }

    /// [`scatter_along`] into this buffer, `src` of the same dtype.
    pub fn scatter_along(
        &mut self,
        to: Lanes,
        index: &CpuStorage,
        src: &CpuStorage,
        len: usize,
        add: bool,
    ) -> Result<()> {
        let index = positions_of(index)?;
        with_any!(self, v => typed_scatter(v, to, index, src, len, add))
    }

    /// [`sort_positions`] of this buffer, as int64.
    pub fn sort_positions(&self, lanes: Lanes, descending: bool) -> CpuStorage {
        CpuStorage::I64(with_any!(self, v => sort_positions(v, lanes, descending)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_and_scatter_along_the_middle_axis() {
        // src (1, 3, 2): rows [0 1] [2 3] [4 5]
        let src: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let from = Lanes::of(&[1, 3, 2], 1);
        let got = take_along(&src, from, &[2, 0, -1, 1], 2).unwrap();
        assert_eq!(got, vec![4.0, 1.0, 4.0, 3.0]);
        assert!(take_along(&src, from, &[3, 0], 1).is_err());
        let mut dst = vec![0.0f32; 6];
        scatter_along(
            &mut dst,
            from,
            &[0, 0, 0, 1],
            &[1.0, 2.0, 3.0, 4.0],
            2,
            true,
        )
        .unwrap();
        assert_eq!(dst, vec![4.0, 2.0, 0.0, 4.0, 0.0, 0.0]);
        let mut dst = vec![0i64; 6];
        scatter_along(&mut dst, from, &[0, 0, 0, 1], &[1, 2, 3, 4], 2, false).unwrap();
        assert_eq!(dst, vec![3, 2, 0, 4, 0, 0]);
        // A bad position anywhere writes nothing.
        let mut dst = vec![0i64; 6];
        assert!(scatter_along(&mut dst, from, &[0, 0, 0, 9], &[1, 2, 3, 4], 2, false).is_err());
        assert_eq!(dst, vec![0; 6]);
    }

    #[test]
    fn sorting_is_stable_with_nan_last() {
        let v = [2.0f64, f64::NAN, 1.0, 2.0];
        let lanes = Lanes::of(&[4], 0);
        assert_eq!(sort_positions(&v, lanes, false), vec![2, 0, 3, 1]);
        assert_eq!(sort_positions(&v, lanes, true), vec![1, 0, 3, 2]);
        // Columns of a (2, 2) array.
        let v = [3i32, 1, 2, 4];
        assert_eq!(
            sort_positions(&v, Lanes::of(&[2, 2], 0), false),
            vec![1, 0, 0, 1]
        );
    }
}
