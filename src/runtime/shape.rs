//! Shape arithmetic: element counts without overflow, broadcasting, strides and axis normalisation.
use super::error::{Result, RuntimeError};

/// Python tuple spelling: `(2, 3)`, `(4,)`, `()`.
pub fn shape_tuple(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// numpy's compact spelling in broadcast errors: `(2,3)`, `(4,)`.
pub fn shape_compact(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(","))
        }
    }
}

/// Number of elements, or a clean error when the product does not fit in memory addressing.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            RuntimeError::Value(format!(
                "shape {} has too many elements to address; use a smaller shape",
                shape_tuple(shape)
            ))
        })
}

/// Bytes for `numel` elements of `elem_size` bytes, with overflow reported as a Value error.
pub fn checked_bytes(shape: &[usize], elem_size: usize) -> Result<usize> {
    checked_numel(shape)?.checked_mul(elem_size).ok_or_else(|| {
        RuntimeError::Value(format!(
            "shape {} needs more bytes than can be addressed; use a smaller shape",
            shape_tuple(shape)
        ))
    })
}

/// Row-major strides in elements.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc = 1usize;
    for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
        *stride = acc;
        acc = acc.saturating_mul(dim);
    }
    strides
}

/// numpy broadcasting of two shapes.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let ndim = a.len().max(b.len());
    let mut out = vec![0; ndim];
    for (i, slot) in out.iter_mut().enumerate() {
        let da = dim_from_right(a, ndim - 1 - i);
        let db = dim_from_right(b, ndim - 1 - i);
        *slot = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(RuntimeError::Shape(format!(
                "operands could not be broadcast together with shapes {} {}",
                shape_compact(a),
                shape_compact(b)
            )));
        };
    }
    Ok(out)
}

/// Dimension `k` counted from the right (0 = last), 1 when the shape is shorter.
fn dim_from_right(shape: &[usize], k: usize) -> usize {
    if k < shape.len() {
        shape[shape.len() - 1 - k]
    } else {
        1
    }
}

/// A shape or stride list. Almost every array has at most 4 axes, so they live inline: a small
/// result costs no allocation for its shape.
pub(crate) type Dims = smallvec::SmallVec<[usize; 4]>;

/// Strides that read a contiguous array of `shape` as if it had `out_shape` (0 on broadcast dims).
/// `shape` must broadcast to `out_shape`.
pub fn broadcast_strides(shape: &[usize], out_shape: &[usize]) -> Dims {
    // Built from the last axis back: no intermediate list, and inline for up to 4 axes.
    let mut strides = Dims::from_elem(0, out_shape.len());
    let offset = out_shape.len().saturating_sub(shape.len());
    let mut step = 1usize;
    for (i, &d) in shape.iter().enumerate().rev() {
        if d != 1 {
            if let Some(s) = strides.get_mut(i + offset) {
                *s = step;
            }
        }
        step = step.saturating_mul(d);
    }
    strides
}

/// A possibly negative axis as an index, or numpy's "axis 3 is out of bounds" error.
pub fn normalize_axis(axis: isize, ndim: usize, op: &str) -> Result<usize> {
    let n = ndim as isize;
    let resolved = if axis < 0 { axis + n } else { axis };
    if resolved < 0 || resolved >= n {
        return Err(RuntimeError::Index(format!(
            "{op}: axis {axis} is out of bounds for an array of dimension {ndim}; use an axis in {}..{}",
            -n,
            n - 1
        )));
    }
    Ok(resolved as usize)
}

/// A set of axes, normalised and checked for repeats; `None` means all axes.
pub fn normalize_axes(axes: Option<&[isize]>, ndim: usize, op: &str) -> Result<Vec<bool>> {
    let mut selected = vec![axes.is_none(); ndim];
    for &axis in axes.unwrap_or(&[]) {
        let a = normalize_axis(axis, ndim, op)?;
        if selected[a] {
            return Err(RuntimeError::Value(format!(
                "{op}: axis {axis} appears twice; list each axis once"
            )));
        }
        selected[a] = true;
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples() {
        assert_eq!(shape_tuple(&[2, 3]), "(2, 3)");
        assert_eq!(shape_tuple(&[4]), "(4,)");
        assert_eq!(shape_tuple(&[]), "()");
        assert_eq!(shape_compact(&[2, 3]), "(2,3)");
    }

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes(&[2, 3], &[3]).unwrap(), vec![2, 3]);
        assert_eq!(broadcast_shapes(&[2, 1], &[1, 4]).unwrap(), vec![2, 4]);
        assert_eq!(broadcast_shapes(&[], &[5]).unwrap(), vec![5]);
        assert_eq!(
            broadcast_shapes(&[2, 3], &[4]).unwrap_err().to_string(),
            "operands could not be broadcast together with shapes (2,3) (4,)"
        );
        assert_eq!(broadcast_strides(&[3], &[2, 3]).as_slice(), [0, 1]);
        assert_eq!(broadcast_strides(&[2, 1], &[2, 4]).as_slice(), [1, 0]);
    }

    #[test]
    fn overflow_is_a_value_error() {
        let e = checked_numel(&[1 << 40, 1 << 40]).unwrap_err();
        assert_eq!(e.ename(), "ValueError");
        assert_eq!(checked_numel(&[2, 3]).unwrap(), 6);
    }

    #[test]
    fn axes() {
        assert_eq!(normalize_axis(-1, 3, "sum").unwrap(), 2);
        assert_eq!(
            normalize_axis(3, 2, "sum").unwrap_err().to_string(),
            "sum: axis 3 is out of bounds for an array of dimension 2; use an axis in -2..1"
        );
        assert_eq!(
            normalize_axes(Some(&[0, -2]), 2, "sum")
                .unwrap_err()
                .ename(),
            "ValueError"
        );
    }
}
