//! Reverse-mode automatic differentiation on the runtime.
//!
//! The [`Tape`] lives in the session (`State::nn`). While `autograd.record()` is active, every
//! differentiable op whose inputs include a tracked array (one with `attach_grad()`, or the output
//! of an already recorded op) appends a [`Node`]. `backward` walks the nodes in reverse (recording
//! order is a topological order), computing each input's gradient with runtime ops on the device
//! the values live on, and writes the gradients of attached arrays into their grad buffers.
//!
//! Grad storage is a side table keyed by array identity: the table keeps the array alive, so the
//! identity cannot be reused while the entry exists.
use std::collections::{HashMap, HashSet};

use crate::runtime::shape::{broadcast_shapes, normalize_axes, normalize_axis};
use crate::runtime::{
    Array, BinaryOp, DType, Device, IndexItem, Operand, ReduceOp, Result, Runtime, RuntimeError,
    Scalar, UnaryOp,
};

/// One input of a recorded op: an array, or a Python scalar (which gets no gradient).
#[derive(Clone)]
pub enum Input {
    Array(Array),
    Scalar(Scalar),
}

impl Input {
    fn from_operand(op: Operand<'_>) -> Input {
        match op {
            Operand::Array(a) => Input::Array(a.clone()),
            Operand::Scalar(s) => Input::Scalar(s),
        }
    }
    fn operand(&self) -> Operand<'_> {
        match self {
            Input::Array(a) => Operand::Array(a),
            Input::Scalar(s) => Operand::Scalar(*s),
        }
    }
}

/// What a node computed, with what its backward rule needs beyond inputs and output.
#[derive(Clone)]
enum OpRecord {
    Binary(BinaryOp),
    Unary(UnaryOp),
    Reduce {
        op: ReduceOp,
        axes: Option<Vec<isize>>,
        keepdims: bool,
    },
    Matmul,
    Dot,
    Reshape,
    Transpose(Option<Vec<isize>>),
    Index(Vec<IndexItem>),
    /// A device move or dtype change: the gradient goes back where the input was.
    Copy,
    Concat(isize),
    Stack(isize),
    Clip(Option<f64>, Option<f64>),
}

struct Node {
    op: OpRecord,
    inputs: Vec<Input>,
    output: Array,
}

/// An array with `attach_grad()`: its gradient buffer and how backward writes it.
struct Attached {
    var: Array,
    grad: Array,
    accumulate: bool,
}

/// The session's autograd state: recording flags, recorded nodes, attached gradients.
#[derive(Default)]
pub struct Tape {
    recording: bool,
    training: bool,
    nodes: Vec<Node>,
    /// Identities of recorded outputs (kept alive by `nodes`).
    outputs: HashSet<usize>,
    attached: HashMap<usize, Attached>,
}

fn value_err(msg: impl Into<String>) -> RuntimeError {
    RuntimeError::Value(msg.into())
}

impl Tape {
    pub fn is_recording(&self) -> bool {
        self.recording
    }

    pub fn is_training(&self) -> bool {
        self.training
    }

    /// Enter `record()` (recording = true) or `pause()` (false); returns the state to restore.
    pub fn set_recording(&mut self, recording: bool, training: bool) -> (bool, bool) {
        let previous = (self.recording, self.training);
        // A fresh top-level record() starts a new graph: nodes nobody differentiated are dropped
        // so a loop that records without calling backward does not grow without bound.
        if recording && !self.recording {
            self.nodes.clear();
            self.outputs.clear();
        }
        self.recording = recording;
        self.training = training;
        previous
    }

    pub fn restore(&mut self, previous: (bool, bool)) {
        self.recording = previous.0;
        self.training = previous.1;
    }

    /// Number of nodes currently recorded (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    // ---- gradient buffers ----------------------------------------------------------------

    /// `x.attach_grad(grad_req='write'|'add')`: a zero gradient buffer on x's device.
    pub fn attach_grad(&mut self, rt: &Runtime, var: &Array, accumulate: bool) -> Result<()> {
        let grad = rt.zeros(var.shape(), grad_dtype(var.dtype()), var.device())?;
        self.attached.insert(
            var.id(),
            Attached {
                var: var.clone(),
                grad,
                accumulate,
            },
        );
        Ok(())
    }

    /// The gradient buffer of an attached array.
    pub fn grad(&self, var: &Array) -> Option<Array> {
        self.attached.get(&var.id()).map(|a| a.grad.clone())
    }

    /// Forget an attached array (parameters do this when their data is replaced).
    pub fn detach(&mut self, var: &Array) {
        self.attached.remove(&var.id());
    }

    fn tracked(&self, a: &Array) -> bool {
        let id = a.id();
        self.outputs.contains(&id) || self.attached.contains_key(&id)
    }

    fn push(&mut self, op: OpRecord, inputs: Vec<Input>, output: &Array) {
        self.outputs.insert(output.id());
        self.nodes.push(Node {
            op,
            inputs,
            output: output.clone(),
        });
    }

    /// Whether an op over `inputs` must be recorded: one branch when not recording.
    fn wants(&self, inputs: &[&Array]) -> bool {
        self.recording && inputs.iter().any(|a| self.tracked(a))
    }

    // ---- recorded ops --------------------------------------------------------------------

    pub fn binary(&mut self, op: BinaryOp, lhs: Operand<'_>, rhs: Operand<'_>) -> Result<Array> {
        let out = Array::binary(op, lhs, rhs)?;
        if self.recording && differentiable_binary(op) {
            let arrays: Vec<&Array> = [lhs, rhs]
                .iter()
                .filter_map(|o| match o {
                    Operand::Array(a) => Some(*a),
                    Operand::Scalar(_) => None,
                })
                .collect();
            if self.wants(&arrays) {
                let inputs = vec![Input::from_operand(lhs), Input::from_operand(rhs)];
                self.push(OpRecord::Binary(op), inputs, &out);
            }
        }
        Ok(out)
    }

    pub fn unary(&mut self, x: &Array, op: UnaryOp) -> Result<Array> {
        let out = x.unary(op)?;
        if self.wants(&[x]) && op != UnaryOp::Not {
            self.push(OpRecord::Unary(op), vec![Input::Array(x.clone())], &out);
        }
        Ok(out)
    }

    pub fn reduce(
        &mut self,
        x: &Array,
        op: ReduceOp,
        axes: Option<&[isize]>,
        keepdims: bool,
    ) -> Result<Array> {
        let out = x.reduce(op, axes, keepdims)?;
        if self.wants(&[x]) && !matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
            let record = OpRecord::Reduce {
                op,
                axes: axes.map(<[isize]>::to_vec),
                keepdims,
            };
            self.push(record, vec![Input::Array(x.clone())], &out);
        }
        Ok(out)
    }

    pub fn matmul(&mut self, a: &Array, b: &Array) -> Result<Array> {
        let out = a.matmul(b)?;
        if self.wants(&[a, b]) {
            let inputs = vec![Input::Array(a.clone()), Input::Array(b.clone())];
            self.push(OpRecord::Matmul, inputs, &out);
        }
        Ok(out)
    }

    pub fn dot(&mut self, a: &Array, b: &Array) -> Result<Array> {
        if a.ndim() == 0 || b.ndim() == 0 {
            return self.binary(BinaryOp::Mul, Operand::Array(a), Operand::Array(b));
        }
        let out = a.dot(b)?;
        if self.wants(&[a, b]) {
            let inputs = vec![Input::Array(a.clone()), Input::Array(b.clone())];
            self.push(OpRecord::Dot, inputs, &out);
        }
        Ok(out)
    }

    pub fn reshape(&mut self, x: &Array, shape: &[isize]) -> Result<Array> {
        let out = x.reshape(shape)?;
        if self.wants(&[x]) {
            self.push(OpRecord::Reshape, vec![Input::Array(x.clone())], &out);
        }
        Ok(out)
    }

    pub fn transpose(&mut self, x: &Array, axes: Option<&[isize]>) -> Result<Array> {
        let out = x.transpose(axes)?;
        if self.wants(&[x]) {
            let record = OpRecord::Transpose(axes.map(<[isize]>::to_vec));
            self.push(record, vec![Input::Array(x.clone())], &out);
        }
        Ok(out)
    }

    pub fn index(&mut self, x: &Array, items: &[IndexItem]) -> Result<Array> {
        let out = x.index(items)?;
        if self.wants(&[x]) {
            let record = OpRecord::Index(items.to_vec());
            self.push(record, vec![Input::Array(x.clone())], &out);
        }
        Ok(out)
    }

    /// `as_in_context`: the same array when already on `device` (nothing to record), else a copy.
    pub fn as_in_device(&mut self, rt: &Runtime, x: &Array, device: Device) -> Result<Array> {
        if x.device() == device {
            return Ok(x.clone());
        }
        self.copy_to(rt, x, device)
    }

    pub fn copy_to(&mut self, rt: &Runtime, x: &Array, device: Device) -> Result<Array> {
        let out = x.copy_to(rt, device)?;
        if self.wants(&[x]) {
            self.push(OpRecord::Copy, vec![Input::Array(x.clone())], &out);
        }
        Ok(out)
    }

    pub fn astype(&mut self, x: &Array, dtype: DType) -> Result<Array> {
        let out = x.astype(dtype)?;
        if self.wants(&[x]) && dtype.is_float() && x.dtype().is_float() {
            self.push(OpRecord::Copy, vec![Input::Array(x.clone())], &out);
        }
        Ok(out)
    }

    pub fn concat(&mut self, arrays: &[Array], axis: isize) -> Result<Array> {
        let out = Array::concat(arrays, axis)?;
        let refs: Vec<&Array> = arrays.iter().collect();
        if self.wants(&refs) {
            let inputs = arrays.iter().cloned().map(Input::Array).collect();
            self.push(OpRecord::Concat(axis), inputs, &out);
        }
        Ok(out)
    }

    pub fn stack(&mut self, arrays: &[Array], axis: isize) -> Result<Array> {
        let out = Array::stack(arrays, axis)?;
        let refs: Vec<&Array> = arrays.iter().collect();
        if self.wants(&refs) {
            let inputs = arrays.iter().cloned().map(Input::Array).collect();
            self.push(OpRecord::Stack(axis), inputs, &out);
        }
        Ok(out)
    }

    pub fn clip(&mut self, x: &Array, min: Option<f64>, max: Option<f64>) -> Result<Array> {
        let out = x.clip(min, max)?;
        if self.wants(&[x]) {
            self.push(
                OpRecord::Clip(min, max),
                vec![Input::Array(x.clone())],
                &out,
            );
        }
        Ok(out)
    }

    // ---- backward ------------------------------------------------------------------------

    /// `head.backward(head_grad)`: gradients of `head` (seeded with ones when `head_grad` is None,
    /// like MXNet for non-scalar heads) with respect to every attached array it depends on.
    pub fn backward(
        &mut self,
        rt: &Runtime,
        head: &Array,
        head_grad: Option<&Array>,
        retain_graph: bool,
    ) -> Result<()> {
        if !self.tracked(head) {
            return Err(value_err(
                "backward: this array is not part of a recorded computation. Compute it inside \
                 `with autograd.record():` from arrays that had x.attach_grad() (or from network \
                 parameters) and call backward on the result",
            ));
        }
        let seed = match head_grad {
            Some(g) => {
                if g.shape() != head.shape() {
                    return Err(RuntimeError::Shape(format!(
                        "backward: head_grad has shape {:?} but the array has shape {:?}; pass a gradient of the same shape",
                        g.shape(),
                        head.shape()
                    )));
                }
                g.as_in_device(rt, head.device())?
            }
            None => rt.ones(head.shape(), grad_dtype(head.dtype()), head.device())?,
        };
        let mut grads: HashMap<usize, Array> = HashMap::new();
        grads.insert(head.id(), seed);
        let mut used = vec![false; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate().rev() {
            let Some(g) = grads.get(&node.output.id()).cloned() else {
                continue;
            };
            if let Some(flag) = used.get_mut(i) {
                *flag = true;
            }
            let input_grads = node_backward(rt, node, &g)?;
            for (input, grad) in node.inputs.iter().zip(input_grads) {
                let (Input::Array(x), Some(grad)) = (input, grad) else {
                    continue;
                };
                let merged = match grads.remove(&x.id()) {
                    Some(prev) => {
                        Array::binary(BinaryOp::Add, Operand::Array(&prev), Operand::Array(&grad))?
                    }
                    None => grad,
                };
                grads.insert(x.id(), merged);
            }
        }
        // Every new gradient first (accumulation allocates and can fail), then the writes, so
        // a failed backward leaves every gradient buffer as it was.
        let mut new_grads = Vec::new();
        for entry in self.attached.values() {
            let Some(g) = grads.get(&entry.var.id()) else {
                continue;
            };
            let value = if entry.accumulate {
                Array::binary(
                    BinaryOp::Add,
                    Operand::Array(&entry.grad),
                    Operand::Array(g),
                )?
            } else {
                g.clone()
            };
            new_grads.push((value, &entry.grad));
        }
        for (value, grad) in new_grads {
            value.copy_into(grad)?;
        }
        if !retain_graph {
            let mut flags = used.into_iter();
            self.nodes.retain(|_| !flags.next().unwrap_or(false));
            self.outputs = self.nodes.iter().map(|n| n.output.id()).collect();
        }
        Ok(())
    }
}

fn grad_dtype(dtype: DType) -> DType {
    if dtype.is_float() {
        dtype
    } else {
        DType::Float32
    }
}

fn differentiable_binary(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Pow
            | BinaryOp::Maximum
            | BinaryOp::Minimum
    )
}

// ---- backward rules (runtime ops, on the values' device) --------------------------------------

fn bin(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    Array::binary(op, Operand::Array(a), Operand::Array(b))
}

fn bin_s(op: BinaryOp, a: &Array, s: f64) -> Result<Array> {
    Array::binary(op, Operand::Array(a), Operand::Scalar(Scalar::Float(s)))
}

fn bin_o(op: BinaryOp, a: Operand<'_>, b: Operand<'_>) -> Result<Array> {
    Array::binary(op, a, b)
}

/// A 0/1 mask in `dtype` from a comparison.
fn mask(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, dtype: DType) -> Result<Array> {
    Array::binary(op, a, b)?.astype(dtype)
}

fn to_isize(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// Sums a broadcast gradient back down to `shape`.
fn unbroadcast(g: Array, shape: &[usize]) -> Result<Array> {
    if g.shape() == shape {
        return Ok(g);
    }
    let nd = g.ndim();
    let lead = nd.saturating_sub(shape.len());
    let axes: Vec<isize> = (0..nd)
        .filter(|&i| i < lead || (shape.get(i - lead) == Some(&1) && g.shape().get(i) != Some(&1)))
        .map(|i| i as isize)
        .collect();
    let summed = if axes.is_empty() {
        g
    } else {
        g.reduce(ReduceOp::Sum, Some(&axes), true)?
    };
    summed.reshape(&to_isize(shape))
}

/// `g` broadcast up to `shape` (a new array).
fn broadcast_to(rt: &Runtime, g: &Array, shape: &[usize]) -> Result<Array> {
    let zeros = rt.zeros(shape, g.dtype(), g.device())?;
    bin(BinaryOp::Add, &zeros, g)
}

/// Swaps the last two axes.
fn swap_last(x: &Array) -> Result<Array> {
    let n = x.ndim() as isize;
    let mut axes: Vec<isize> = (0..n).collect();
    axes.swap((n - 1) as usize, (n - 2) as usize);
    x.transpose(Some(&axes))
}

fn node_backward(rt: &Runtime, node: &Node, g: &Array) -> Result<Vec<Option<Array>>> {
    let arr = |i: usize| -> Option<&Array> {
        match node.inputs.get(i) {
            Some(Input::Array(a)) => Some(a),
            _ => None,
        }
    };
    let first = || arr(0).ok_or_else(|| value_err("autograd: a recorded op lost its input"));
    let out = &node.output;
    Ok(match &node.op {
        OpRecord::Binary(op) => {
            let (Some(l), Some(r)) = (node.inputs.first(), node.inputs.get(1)) else {
                return Err(value_err("autograd: a binary op lost an input"));
            };
            let (gl, gr) = binary_backward(*op, l, r, out, g)?;
            let fit = |grad: Option<Array>, input: &Input| -> Result<Option<Array>> {
                match (grad, input) {
                    (Some(grad), Input::Array(a)) => Ok(Some(unbroadcast(grad, a.shape())?)),
                    _ => Ok(None),
                }
            };
            vec![fit(gl, l)?, fit(gr, r)?]
        }
        OpRecord::Unary(op) => vec![Some(unary_backward(*op, first()?, out, g)?)],
        OpRecord::Reduce { op, axes, keepdims } => {
            let x = first()?;
            vec![Some(reduce_backward(
                rt,
                *op,
                x,
                out,
                g,
                axes.as_deref(),
                *keepdims,
            )?)]
        }
        OpRecord::Matmul => {
            let (Some(a), Some(b)) = (arr(0), arr(1)) else {
                return Err(value_err("autograd: matmul lost an input"));
            };
            let (ga, gb) = matmul_backward(a, b, g)?;
            vec![Some(ga), Some(gb)]
        }
        OpRecord::Dot => {
            let (Some(a), Some(b)) = (arr(0), arr(1)) else {
                return Err(value_err("autograd: dot lost an input"));
            };
            let k = a.shape().last().copied().unwrap_or(1);
            let m = a.size() / k.max(1);
            let n = b.size() / k.max(1);
            let a2 = a.reshape(&[m as isize, k as isize])?;
            let b2 = b.reshape(&[k as isize, n as isize])?;
            let g2 = g.reshape(&[m as isize, n as isize])?;
            let ga = g2.matmul(&swap_last(&b2)?)?.reshape(&to_isize(a.shape()))?;
            let gb = swap_last(&a2)?.matmul(&g2)?.reshape(&to_isize(b.shape()))?;
            vec![Some(ga), Some(gb)]
        }
        OpRecord::Reshape => vec![Some(g.reshape(&to_isize(first()?.shape()))?)],
        OpRecord::Transpose(axes) => {
            let x = first()?;
            let n = x.ndim();
            let perm: Vec<usize> = match axes {
                None => (0..n).rev().collect(),
                Some(ax) => ax
                    .iter()
                    .map(|&a| normalize_axis(a, n, "transpose"))
                    .collect::<Result<_>>()?,
            };
            let mut inverse = vec![0isize; n];
            for (i, &p) in perm.iter().enumerate() {
                if let Some(slot) = inverse.get_mut(p) {
                    *slot = i as isize;
                }
            }
            vec![Some(g.transpose(Some(&inverse))?)]
        }
        OpRecord::Index(items) => {
            let x = first()?;
            let gx = rt.zeros(x.shape(), g.dtype(), g.device())?;
            gx.set_index(items, Operand::Array(g))?;
            vec![Some(gx)]
        }
        OpRecord::Copy => {
            let x = first()?;
            let moved = g.as_in_device(rt, x.device())?;
            vec![Some(if moved.dtype() == x.dtype() {
                moved
            } else {
                moved.astype(grad_dtype(x.dtype()))?
            })]
        }
        OpRecord::Concat(axis) => {
            let ax = normalize_axis(*axis, g.ndim(), "concat")?;
            let mut start = 0usize;
            let mut grads = Vec::with_capacity(node.inputs.len());
            for input in &node.inputs {
                let Input::Array(a) = input else {
                    grads.push(None);
                    continue;
                };
                let len = a.shape().get(ax).copied().unwrap_or(0);
                let mut items = vec![full_slice(); ax];
                items.push(IndexItem::Slice {
                    start: Some(start as i64),
                    stop: Some((start + len) as i64),
                    step: None,
                });
                grads.push(Some(g.index(&items)?));
                start += len;
            }
            grads
        }
        OpRecord::Stack(axis) => {
            let ax = normalize_axis(*axis, g.ndim(), "stack")?;
            (0..node.inputs.len())
                .map(|i| {
                    let mut items = vec![full_slice(); ax];
                    items.push(IndexItem::Int(i as i64));
                    g.index(&items).map(Some)
                })
                .collect::<Result<_>>()?
        }
        OpRecord::Clip(min, max) => {
            let x = first()?;
            let mut gx = g.clone();
            if let Some(lo) = min {
                let m = mask(
                    BinaryOp::Ge,
                    Operand::Array(x),
                    Operand::Scalar(Scalar::Float(*lo)),
                    g.dtype(),
                )?;
                gx = bin(BinaryOp::Mul, &gx, &m)?;
            }
            if let Some(hi) = max {
                let m = mask(
                    BinaryOp::Le,
                    Operand::Array(x),
                    Operand::Scalar(Scalar::Float(*hi)),
                    g.dtype(),
                )?;
                gx = bin(BinaryOp::Mul, &gx, &m)?;
            }
            vec![Some(gx)]
        }
    })
}

fn full_slice() -> IndexItem {
    IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    }
}

fn binary_backward(
    op: BinaryOp,
    l: &Input,
    r: &Input,
    out: &Array,
    g: &Array,
) -> Result<(Option<Array>, Option<Array>)> {
    let gop = Operand::Array(g);
    let wants_l = matches!(l, Input::Array(_));
    let wants_r = matches!(r, Input::Array(_));
    let when = |flag: bool, f: &dyn Fn() -> Result<Array>| -> Result<Option<Array>> {
        if flag {
            f().map(Some)
        } else {
            Ok(None)
        }
    };
    Ok(match op {
        BinaryOp::Add => (
            when(wants_l, &|| Ok(g.clone()))?,
            when(wants_r, &|| Ok(g.clone()))?,
        ),
        BinaryOp::Sub => (
            when(wants_l, &|| Ok(g.clone()))?,
            when(wants_r, &|| g.unary(UnaryOp::Neg))?,
        ),
        BinaryOp::Mul => (
            when(wants_l, &|| bin_o(BinaryOp::Mul, gop, r.operand()))?,
            when(wants_r, &|| bin_o(BinaryOp::Mul, gop, l.operand()))?,
        ),
        BinaryOp::Div => (
            when(wants_l, &|| bin_o(BinaryOp::Div, gop, r.operand()))?,
            when(wants_r, &|| {
                // d(a/b)/db = -(a/b)/b
                let t = bin_o(BinaryOp::Div, Operand::Array(out), r.operand())?;
                bin(BinaryOp::Mul, g, &t)?.unary(UnaryOp::Neg)
            })?,
        ),
        BinaryOp::Pow => (
            when(wants_l, &|| {
                // b * a^(b-1)
                let p = match r {
                    Input::Scalar(s) => bin_o(
                        BinaryOp::Pow,
                        l.operand(),
                        Operand::Scalar(Scalar::Float(s.as_f64() - 1.0)),
                    )?,
                    Input::Array(b) => {
                        let bm1 = bin_s(BinaryOp::Sub, b, 1.0)?;
                        bin_o(BinaryOp::Pow, l.operand(), Operand::Array(&bm1))?
                    }
                };
                let t = bin_o(BinaryOp::Mul, Operand::Array(&p), r.operand())?;
                bin(BinaryOp::Mul, g, &t)
            })?,
            when(wants_r, &|| {
                // a^b * ln(a)
                let ln = match l {
                    Input::Array(a) => a.unary(UnaryOp::Log)?,
                    Input::Scalar(s) => {
                        return bin_s(BinaryOp::Mul, &bin(BinaryOp::Mul, g, out)?, s.as_f64().ln())
                    }
                };
                bin(BinaryOp::Mul, &bin(BinaryOp::Mul, g, out)?, &ln)
            })?,
        ),
        BinaryOp::Maximum | BinaryOp::Minimum => {
            let (pick_l, pick_r) = if op == BinaryOp::Maximum {
                (BinaryOp::Ge, BinaryOp::Lt)
            } else {
                (BinaryOp::Le, BinaryOp::Gt)
            };
            (
                when(wants_l, &|| {
                    let m = mask(pick_l, l.operand(), r.operand(), g.dtype())?;
                    bin(BinaryOp::Mul, g, &m)
                })?,
                when(wants_r, &|| {
                    let m = mask(pick_r, l.operand(), r.operand(), g.dtype())?;
                    bin(BinaryOp::Mul, g, &m)
                })?,
            )
        }
        _ => (None, None),
    })
}

fn unary_backward(op: UnaryOp, x: &Array, out: &Array, g: &Array) -> Result<Array> {
    let mul = |t: &Array| bin(BinaryOp::Mul, g, t);
    match op {
        UnaryOp::Neg => g.unary(UnaryOp::Neg),
        UnaryOp::Abs => mul(&x.unary(UnaryOp::Sign)?.astype(g.dtype())?),
        UnaryOp::Exp => mul(out),
        UnaryOp::Log => bin(BinaryOp::Div, g, x),
        UnaryOp::Log2 => bin_s(
            BinaryOp::Div,
            &bin(BinaryOp::Div, g, x)?,
            std::f64::consts::LN_2,
        ),
        UnaryOp::Log10 => bin_s(
            BinaryOp::Div,
            &bin(BinaryOp::Div, g, x)?,
            std::f64::consts::LN_10,
        ),
        UnaryOp::Sqrt => bin_s(BinaryOp::Mul, &bin(BinaryOp::Div, g, out)?, 0.5),
        UnaryOp::Square => bin_s(BinaryOp::Mul, &mul(x)?, 2.0),
        UnaryOp::Tanh => {
            // 1 - tanh^2
            let sq = out.unary(UnaryOp::Square)?;
            let one_minus = Array::binary(
                BinaryOp::Sub,
                Operand::Scalar(Scalar::Float(1.0)),
                Operand::Array(&sq),
            )?;
            mul(&one_minus)
        }
        UnaryOp::Sigmoid => {
            let one_minus = Array::binary(
                BinaryOp::Sub,
                Operand::Scalar(Scalar::Float(1.0)),
                Operand::Array(out),
            )?;
            mul(&bin(BinaryOp::Mul, out, &one_minus)?)
        }
        UnaryOp::Relu => mul(&mask(
            BinaryOp::Gt,
            Operand::Array(x),
            Operand::Scalar(Scalar::Float(0.0)),
            g.dtype(),
        )?),
        UnaryOp::Sin => mul(&x.unary(UnaryOp::Cos)?),
        UnaryOp::Cos => mul(&x.unary(UnaryOp::Sin)?)?.unary(UnaryOp::Neg),
        UnaryOp::Tan => {
            // 1 + tan^2
            let sq = out.unary(UnaryOp::Square)?;
            mul(&bin_s(BinaryOp::Add, &sq, 1.0)?)
        }
        UnaryOp::Reciprocal => mul(&out.unary(UnaryOp::Square)?)?.unary(UnaryOp::Neg),
        // Piecewise constant: the gradient is zero almost everywhere.
        UnaryOp::Sign
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Round
        | UnaryOp::Trunc
        | UnaryOp::Not => bin_s(BinaryOp::Mul, g, 0.0),
    }
}

fn reduce_backward(
    rt: &Runtime,
    op: ReduceOp,
    x: &Array,
    out: &Array,
    g: &Array,
    axes: Option<&[isize]>,
    keepdims: bool,
) -> Result<Array> {
    let selected = normalize_axes(axes, x.ndim(), op.name())?;
    let kept_shape: Vec<usize> = x
        .shape()
        .iter()
        .zip(&selected)
        .map(|(&d, &s)| if s { 1 } else { d })
        .collect();
    let kept = to_isize(&kept_shape);
    let g_kd = if keepdims {
        g.clone()
    } else {
        g.reshape(&kept)?
    };
    let out_kd = if keepdims {
        out.clone()
    } else {
        out.reshape(&kept)?
    };
    let spread = broadcast_to(rt, &g_kd, x.shape())?;
    match op {
        ReduceOp::Sum => Ok(spread),
        ReduceOp::Mean => {
            let count: usize = x
                .shape()
                .iter()
                .zip(&selected)
                .filter(|(_, &s)| s)
                .map(|(&d, _)| d)
                .product();
            bin_s(BinaryOp::Div, &spread, count.max(1) as f64)
        }
        ReduceOp::Max | ReduceOp::Min => {
            let m = mask(
                BinaryOp::Eq,
                Operand::Array(x),
                Operand::Array(&out_kd),
                g.dtype(),
            )?;
            bin(BinaryOp::Mul, &spread, &m)
        }
        ReduceOp::Prod => {
            let t = bin(BinaryOp::Div, &broadcast_to(rt, &out_kd, x.shape())?, x)?;
            bin(BinaryOp::Mul, &spread, &t)
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => bin_s(BinaryOp::Mul, &spread, 0.0),
    }
}

fn matmul_backward(a: &Array, b: &Array, g: &Array) -> Result<(Array, Array)> {
    let a2 = if a.ndim() == 1 {
        a.reshape(&[1, a.size() as isize])?
    } else {
        a.clone()
    };
    let b2 = if b.ndim() == 1 {
        b.reshape(&[b.size() as isize, 1])?
    } else {
        b.clone()
    };
    let (a_batch, a_mat) = a2.shape().split_at(a2.ndim() - 2);
    let (b_batch, b_mat) = b2.shape().split_at(b2.ndim() - 2);
    let mut out_shape = broadcast_shapes(a_batch, b_batch)?;
    out_shape.push(a_mat.first().copied().unwrap_or(1));
    out_shape.push(b_mat.get(1).copied().unwrap_or(1));
    let g2 = g.reshape(&to_isize(&out_shape))?;
    let ga = g2.matmul(&swap_last(&b2)?)?;
    let gb = swap_last(&a2)?.matmul(&g2)?;
    let ga = unbroadcast(ga, a2.shape())?.reshape(&to_isize(a.shape()))?;
    let gb = unbroadcast(gb, b2.shape())?.reshape(&to_isize(b.shape()))?;
    Ok((ga, gb))
}

#[cfg(test)]
mod tests;
