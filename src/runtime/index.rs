//! Basic indexing: turns a subscript into a strided view of the source (no data touched).
use super::error::{Result, RuntimeError};
use super::operand::IndexItem;
use super::shape::contiguous_strides;
use crate::backend::StridedView;

/// Resolves one Python slice against a dimension: (start, length, step).
pub fn resolve_slice(
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
    dim: usize,
) -> Result<(i64, usize, i64)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(RuntimeError::Value(
            "slice step cannot be zero; use a positive or negative step".into(),
        ));
    }
    let n = dim as i64;
    let clamp = |v: i64, low: i64, high: i64| v.max(low).min(high);
    let fix = |v: Option<i64>, default: i64, low: i64, high: i64| match v {
        None => default,
        Some(v) if v < 0 => clamp(v.saturating_add(n), low, high),
        Some(v) => clamp(v, low, high),
    };
    let (first, end) = if step > 0 {
        (fix(start, 0, 0, n), fix(stop, n, 0, n))
    } else {
        (fix(start, n - 1, -1, n - 1), fix(stop, -1, -1, n - 1))
    };
    // i128: a step near i64::MAX must not overflow the length arithmetic.
    let (lo, hi, st) = (i128::from(first), i128::from(end), i128::from(step));
    let len = if st > 0 && hi > lo {
        (hi - lo + st - 1) / st
    } else if st < 0 && lo > hi {
        (lo - hi - st - 1) / (-st)
    } else {
        0
    };
    Ok((first, len as usize, step))
}

/// The view a basic subscript selects. Array items are not handled here.
pub fn basic_view(shape: &[usize], items: &[IndexItem]) -> Result<StridedView> {
    let consumed = items
        .iter()
        .filter(|i| {
            matches!(
                i,
                IndexItem::Int(_) | IndexItem::Slice { .. } | IndexItem::Array(_)
            )
        })
        .count();
    let ellipses = items
        .iter()
        .filter(|i| matches!(i, IndexItem::Ellipsis))
        .count();
    if ellipses > 1 {
        return Err(RuntimeError::Index(
            "an index can only have a single ellipsis ('...')".into(),
        ));
    }
    if consumed > shape.len() {
        return Err(RuntimeError::Index(format!(
            "too many indices for array: array is {}-dimensional, but {consumed} were indexed",
            shape.len()
        )));
    }
    let source_strides = contiguous_strides(shape);
    let mut view = StridedView {
        offset: 0,
        shape: Vec::with_capacity(shape.len()),
        strides: Vec::with_capacity(shape.len()),
    };
    let mut offset: i64 = 0;
    let mut axis = 0usize;
    for item in items {
        match item {
            IndexItem::Int(i) => {
                let dim = shape[axis];
                let resolved = if *i < 0 { i + dim as i64 } else { *i };
                if resolved < 0 || resolved >= dim as i64 {
                    return Err(RuntimeError::Index(format!(
                        "index {i} is out of bounds for axis {axis} with size {dim}"
                    )));
                }
                offset += resolved * source_strides[axis] as i64;
                axis += 1;
            }
            IndexItem::Slice { start, stop, step } => {
                let (first, len, step) = resolve_slice(*start, *stop, *step, shape[axis])?;
                if len > 0 {
                    offset += first * source_strides[axis] as i64;
                }
                view.shape.push(len);
                // With one element the step never applies (and `x[::2**62]` would overflow).
                let stride = if len > 1 {
                    step * source_strides[axis] as i64
                } else {
                    source_strides[axis] as i64
                };
                view.strides.push(stride as isize);
                axis += 1;
            }
            IndexItem::NewAxis => {
                view.shape.push(1);
                view.strides.push(0);
            }
            IndexItem::Ellipsis => {
                let skip = shape.len() - consumed;
                for _ in 0..skip {
                    view.shape.push(shape[axis]);
                    view.strides.push(source_strides[axis] as isize);
                    axis += 1;
                }
            }
            IndexItem::Array(_) => {
                return Err(RuntimeError::Index(
                    "array indices must come alone: x[idx] with an integer array, or x[mask] with a bool array".into(),
                ))
            }
        }
    }
    while axis < shape.len() {
        view.shape.push(shape[axis]);
        view.strides.push(source_strides[axis] as isize);
        axis += 1;
    }
    view.offset = offset as usize;
    Ok(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> IndexItem {
        IndexItem::Slice { start, stop, step }
    }

    #[test]
    fn slices_follow_python() {
        assert_eq!(resolve_slice(None, None, None, 5).unwrap(), (0, 5, 1));
        assert_eq!(resolve_slice(Some(1), Some(3), None, 5).unwrap(), (1, 2, 1));
        assert_eq!(resolve_slice(None, None, Some(-1), 5).unwrap(), (4, 5, -1));
        assert_eq!(resolve_slice(Some(-2), None, None, 5).unwrap(), (3, 2, 1));
        assert_eq!(resolve_slice(None, None, Some(2), 5).unwrap(), (0, 3, 2));
        assert_eq!(resolve_slice(Some(10), None, None, 5).unwrap(), (5, 0, 1));
        assert_eq!(
            resolve_slice(Some(3), Some(0), Some(-2), 5).unwrap(),
            (3, 2, -2)
        );
        assert!(resolve_slice(None, None, Some(0), 5).is_err());
        assert_eq!(
            resolve_slice(None, None, Some(i64::MAX), 5).unwrap(),
            (0, 1, i64::MAX)
        );
        assert_eq!(
            resolve_slice(None, None, Some(i64::MIN), 5).unwrap(),
            (4, 1, i64::MIN)
        );
    }

    #[test]
    fn views() {
        let v = basic_view(&[2, 3], &[IndexItem::Int(-1)]).unwrap();
        assert_eq!((v.offset, v.shape, v.strides), (3, vec![3], vec![1]));
        let v = basic_view(&[2, 3], &[IndexItem::Ellipsis, slice(None, None, Some(-1))]).unwrap();
        assert_eq!((v.offset, v.shape, v.strides), (2, vec![2, 3], vec![3, -1]));
        let v = basic_view(&[3], &[IndexItem::NewAxis]).unwrap();
        assert_eq!((v.shape, v.strides), (vec![1, 3], vec![0, 1]));
        assert_eq!(
            basic_view(&[3], &[IndexItem::Int(3)])
                .unwrap_err()
                .to_string(),
            "index 3 is out of bounds for axis 0 with size 3"
        );
        assert_eq!(
            basic_view(&[3], &[IndexItem::Int(0), IndexItem::Int(0)])
                .unwrap_err()
                .to_string(),
            "too many indices for array: array is 1-dimensional, but 2 were indexed"
        );
    }
}
