//! The operand types the language passes to array ops: one side of a binary op, one subscript item.
use super::array::Array;
use crate::vocab::Scalar;

/// One side of a binary op: an array, or a Python scalar that broadcasts on any device.
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    Array(&'a Array),
    Scalar(Scalar),
}

/// One item of a subscript `x[...]`.
#[derive(Clone)]
pub enum IndexItem {
    Int(i64),
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
    NewAxis,
    Ellipsis,
    /// An integer array (gathers along one axis) or a bool mask (must be the only item).
    Array(Array),
}
