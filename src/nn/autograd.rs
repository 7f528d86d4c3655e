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
//!
//! PyTorch's autograd runs on the same tape. A tensor with `requires_grad` is an *auto* leaf: ops
//! on it are recorded without a `record()` scope while grad mode is on (`torch.no_grad()` turns
//! it off), its gradient is None until a backward reaches it and accumulates afterwards, and a
//! backward without `retain_graph` marks the nodes it used as freed instead of forgetting them, so
//! the output keeps its `grad_fn` and a second backward is PyTorch's error. Nothing else frees
//! auto nodes, so [`Tape::collect`] drops the nodes and leaves no program value can reach any
//! more (their arrays are held only by the tape), as PyTorch's reference counting would.
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::runtime::shape::{broadcast_shapes, normalize_axes, normalize_axis};
use crate::runtime::{
    Array, BinaryOp, DType, Device, FusedExpr, IndexItem, Operand, Patches, ReduceOp, Result,
    Runtime, RuntimeError, Scalar, UnaryOp,
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
    /// `a @ b^T` of two matrices with `b` read transposed in place (a linear layer's `x @ W^T`).
    MatmulNT,
    /// `act(z + b)` with `b` broadcast over `z`'s rows (a dense layer's bias and activation),
    /// inputs z and b: one node where the composed form has two and a temporary.
    BiasAct(UnaryOp),
    Dot,
    Reshape,
    Transpose(Option<Vec<isize>>),
    Index(Vec<IndexItem>),
    /// `take_along_axis(x, index, axis)`: inputs x and the index.
    TakeAlong(isize),
    /// A device move or dtype change: the gradient goes back where the input was.
    Copy,
    Concat(isize),
    Stack(isize),
    Clip(Option<f64>, Option<f64>),
    /// An elementwise function computed outside the runtime's ops (`asin`, `erf`, `atan2` on
    /// the host), with each input's local derivative d out / d input (out's shape, out's
    /// dtype) taken at forward: backward multiplies the gradient by it.
    Local(Vec<Array>),
    /// im2col (`Array::patches`); its gradient is the adjoint.
    Patches(Patches),
    /// A convolution's GEMM over im2col, `w @ patches(x)` with the patches viewed as `cols`:
    /// only `x` and `w` are kept, and backward recomputes the patches.
    PatchMatmul {
        patches: Patches,
        cols: Vec<isize>,
    },
    /// A convolution as one GEMM over the whole batch, `w @ patches_cols(x)` (+ bias) laid out
    /// as (N, O, Ho, Wo): only `x`, `w` (O, K) and the bias (O,) are kept, and backward
    /// recomputes the patches. `relu`: a ReLU was applied in the same pass (Gluon's
    /// `Conv2D(activation='relu')`), and backward masks the gradient by the output.
    BatchPatchMatmul {
        patches: Patches,
        relu: bool,
        /// The patch matrix, kept from forward when it fits `KEPT_BUDGET` (backward then
        /// reads it instead of recomputing it).
        kept: Option<std::sync::Arc<KeptCols>>,
    },
    /// Max or average pooling read in place (`Array::pool`); backward recomputes the maxima
    /// from the input.
    Pool(Patches, crate::runtime::PoolKind),
    /// Batch norm over axis 1 (`Array::batch_norm`), inputs x, gamma, beta: one node saving
    /// x and the per-channel mean and 1/sqrt(var + eps), not the ~8 activation-sized
    /// intermediates of the composed form. `batch_stats`: the mean and variance were the
    /// batch's, so the gradient flows through them.
    BatchNorm {
        mean: Array,
        invstd: Array,
        batch_stats: bool,
    },
    /// The L2 (Frobenius) norm over `axes` (all when None).
    Norm {
        axes: Option<Vec<isize>>,
        keepdims: bool,
    },
}

struct Node {
    op: OpRecord,
    inputs: Vec<Input>,
    output: Array,
    /// Recorded by PyTorch's grad mode (an input was an auto leaf or an auto node's output).
    auto: bool,
    /// A backward without `retain_graph` went through it (auto nodes only; others are removed).
    freed: bool,
    /// Freed, and its rule needed saved values: they were let go (its inputs cleared), as
    /// PyTorch frees saved tensors, so a graph the program still holds (last step's loss)
    /// does not keep every activation alive.
    saved_dropped: bool,
    /// The `grad_fn` name when the op's own name is not PyTorch's (`clone` is a copy).
    name: Option<&'static str>,
    /// PyTorch nodes: each input's and the output's `Array::version` when recorded (0 for a
    /// scalar input); a backward refuses values an in-place write changed since.
    versions: Vec<u32>,
    out_version: u32,
}

/// An array with a gradient: `attach_grad()`'s buffer, or a PyTorch leaf's `.grad`.
struct Attached {
    var: Array,
    /// MXNet's buffer always exists; a PyTorch gradient is None until a backward reaches it.
    grad: Option<Array>,
    accumulate: bool,
    /// PyTorch semantics: recorded without `record()`, grad None at first, accumulating.
    auto: bool,
    /// False after `requires_grad_(False)` (a gradient already there stays readable).
    requires: bool,
}

/// Why a PyTorch `backward()` could not run, in terms the binding turns into PyTorch's messages.
#[derive(Debug)]
pub enum TorchBackwardError {
    /// The head neither requires grad nor has a grad_fn.
    NotRequiring,
    /// No `gradient=` for a head with more than one element.
    ImplicitNonScalar,
    /// `gradient=` of another shape: (gradient's, output's).
    ShapeMismatch(Vec<usize>, Vec<usize>),
    /// `gradient=` on another device: (expected, got).
    DeviceMismatch(Device, Device),
    /// The graph was already freed by an earlier backward.
    Freed,
    /// A value the backward needs was changed in place after it was recorded: PyTorch's
    /// message.
    Modified(String),
    /// `torch.autograd.grad` with respect to a tensor that does not require grad.
    InputNotRequiring,
    Runtime(RuntimeError),
}

/// Why a PyTorch in-place op was refused.
#[derive(Debug)]
pub enum InplaceError {
    /// A leaf that requires grad, outside `torch.no_grad()`.
    Leaf,
    /// The result does not fit the tensor: PyTorch's message.
    Mismatch(String),
    Runtime(RuntimeError),
}

/// PyTorch's message for an in-place op on a leaf that requires grad.
pub const LEAF_INPLACE: &str =
    "a leaf Variable that requires grad is being used in an in-place operation.";

impl From<RuntimeError> for InplaceError {
    fn from(e: RuntimeError) -> Self {
        InplaceError::Runtime(e)
    }
}

/// PyTorch's short dtype names (`Float`, `Long`), as its casting and dtype-mismatch errors
/// print them.
pub(crate) fn torch_scalar_type(d: DType) -> &'static str {
    match d {
        DType::Float32 => "Float",
        DType::Float64 => "Double",
        DType::Int32 => "Int",
        DType::Int64 => "Long",
        DType::Bool => "Bool",
        DType::Float16 => "Half",
        DType::BFloat16 => "BFloat16",
        DType::Int8 => "Char",
        DType::Int16 => "Short",
        DType::UInt8 => "Byte",
        DType::UInt16 => "UInt16",
        DType::UInt32 => "UInt32",
        DType::UInt64 => "UInt64",
    }
}

fn shape_list(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// An in-place result must keep the tensor's shape and be castable to its dtype.
fn check_fits(target: &Array, result: &Array) -> std::result::Result<(), InplaceError> {
    if result.shape() != target.shape() {
        return Err(InplaceError::Mismatch(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            shape_list(target.shape()),
            shape_list(result.shape())
        )));
    }
    let (from, to) = (result.dtype(), target.dtype());
    let narrowing =
        (from.is_float() && !to.is_float()) || (to == DType::Bool && from != DType::Bool);
    if narrowing {
        return Err(InplaceError::Mismatch(format!(
            "result type {} can't be cast to the desired output type {}",
            torch_scalar_type(from),
            torch_scalar_type(to)
        )));
    }
    Ok(())
}

impl From<RuntimeError> for TorchBackwardError {
    fn from(e: RuntimeError) -> Self {
        TorchBackwardError::Runtime(e)
    }
}

/// The session's autograd state: recording flags, recorded nodes, attached gradients.
pub struct Tape {
    recording: bool,
    training: bool,
    /// PyTorch's grad mode: `torch.no_grad()` sets it false.
    grad_enabled: bool,
    nodes: Vec<Node>,
    /// Identities of recorded outputs (kept alive by `nodes`), with their node's index.
    outputs: HashMap<usize, usize>,
    attached: HashMap<usize, Attached>,
    /// [`Tape::collect`] runs when nodes and attached entries reach this many.
    collect_at: usize,
    /// Whether any PyTorch leaf requires grad or any auto node exists: without one, an op
    /// outside `record()` costs one branch.
    has_auto: bool,
    /// While `torch.jit.trace` runs a forward: every op recorded, in order (`Tape::trace`).
    tracing: Option<Vec<Logged>>,
    /// The inputs `start_trace` made require grad so that their ops are recorded: not the
    /// user's leaves, so in-place ops on them are allowed (PyTorch traces `x += 1` on an input).
    trace_inputs: Vec<usize>,
    /// Gradient hooks (`register_hook`), in registration order, and the last handle given.
    hooks: Vec<walk::TensorHook>,
    hook_count: u64,
    /// Backward walks in progress (a hook's code runs inside one): collection waits for them,
    /// since a walk holds node indices.
    walks: usize,
}

impl Default for Tape {
    fn default() -> Self {
        Tape {
            recording: false,
            training: false,
            grad_enabled: true,
            nodes: Vec::new(),
            outputs: HashMap::new(),
            attached: HashMap::new(),
            collect_at: COLLECT_MIN,
            has_auto: false,
            tracing: None,
            trace_inputs: Vec::new(),
            hooks: Vec::new(),
            hook_count: 0,
            walks: 0,
        }
    }
}

/// The fewest nodes and entries at which collecting unreachable ones is worth a pass.
const COLLECT_MIN: usize = 256;

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
            // PyTorch's graphs live on until backward or until nothing refers to them.
            self.nodes.retain(|n| n.auto);
            self.reindex();
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
                grad: Some(grad),
                accumulate,
                auto: false,
                requires: true,
            },
        );
        Ok(())
    }

    /// The gradient buffer of an attached array (None for a PyTorch leaf no backward reached).
    pub fn grad(&self, var: &Array) -> Option<Array> {
        self.attached.get(&var.id()).and_then(|a| a.grad.clone())
    }

    /// Forget an attached array (parameters do this when their data is replaced).
    pub fn detach(&mut self, var: &Array) {
        self.attached.remove(&var.id());
        self.refresh_auto();
    }

    fn refresh_auto(&mut self) {
        self.has_auto = self.nodes.iter().any(|n| n.auto)
            || self.attached.values().any(|e| e.auto && e.requires);
    }

    // ---- PyTorch's view of the tape ---------------------------------------------------------

    /// PyTorch's grad mode (`torch.is_grad_enabled()`).
    pub fn grad_enabled(&self) -> bool {
        self.grad_enabled
    }

    /// `torch.set_grad_enabled(b)`; returns the mode to restore.
    pub fn set_grad_enabled(&mut self, enabled: bool) -> bool {
        std::mem::replace(&mut self.grad_enabled, enabled)
    }

    /// `x.requires_grad_(flag)` on a leaf (the caller refuses non-leaves): a PyTorch leaf whose
    /// gradient is None until a backward reaches it. Turning it off keeps a gradient already
    /// there. This is also how a parameter's data becomes a `torch.nn.Parameter`.
    pub fn set_requires_grad(&mut self, var: &Array, requires: bool) {
        match self.attached.get_mut(&var.id()) {
            Some(entry) => {
                entry.requires = requires;
                if requires && !entry.auto {
                    // An MXNet buffer becomes a PyTorch leaf: no gradient until a backward.
                    entry.auto = true;
                    entry.accumulate = true;
                    entry.grad = None;
                }
            }
            None if requires => {
                self.attached.insert(
                    var.id(),
                    Attached {
                        var: var.clone(),
                        grad: None,
                        accumulate: true,
                        auto: true,
                        requires: true,
                    },
                );
                self.maybe_collect();
            }
            None => {}
        }
        if requires {
            self.has_auto = true;
        } else {
            self.refresh_auto();
        }
    }

    /// `x.requires_grad`: a leaf that requires grad, or the output of a recorded op.
    pub fn requires_grad(&self, a: &Array) -> bool {
        self.tracked(a)
    }

    /// `x.is_leaf`: not the output of a recorded op.
    pub fn is_leaf(&self, a: &Array) -> bool {
        !self.outputs.contains_key(&a.id())
    }

    /// `x.grad = g` (None clears it). PyTorch allows it on any tensor; the entry makes the
    /// tensor no more a leaf that requires grad than it was.
    pub fn set_grad(&mut self, var: &Array, grad: Option<Array>) {
        match self.attached.get_mut(&var.id()) {
            Some(entry) => entry.grad = grad,
            None => {
                if grad.is_none() {
                    return;
                }
                self.attached.insert(
                    var.id(),
                    Attached {
                        var: var.clone(),
                        grad,
                        accumulate: true,
                        auto: true,
                        requires: false,
                    },
                );
            }
        }
    }

    /// `y.retain_grad()`: backward also fills `y.grad` for this non-leaf.
    pub fn retain_grad(&mut self, var: &Array) {
        if self.is_leaf(var) || self.attached.contains_key(&var.id()) {
            return;
        }
        self.attached.insert(
            var.id(),
            Attached {
                var: var.clone(),
                grad: None,
                accumulate: true,
                auto: true,
                requires: true,
            },
        );
        self.has_auto = true;
    }

    /// `y.retains_grad`: a non-leaf whose gradient backward keeps.
    pub fn retains_grad(&self, var: &Array) -> bool {
        !self.is_leaf(var) && self.attached.contains_key(&var.id())
    }

    /// The PyTorch name of the op that made `a` (`SumBackward0`), None for a leaf.
    pub fn grad_fn(&self, a: &Array) -> Option<&'static str> {
        let node = self.nodes.get(*self.outputs.get(&a.id())?)?;
        Some(node.name.unwrap_or_else(|| grad_fn_name(node)))
    }

    /// Names the op that made `out` as PyTorch does when its record is shared (`clone`).
    pub fn rename(&mut self, out: &Array, name: &'static str) {
        if let Some(node) = self
            .outputs
            .get(&out.id())
            .and_then(|&i| self.nodes.get_mut(i))
        {
            node.name = Some(name);
        }
    }

    /// Whether an op over `inputs` would be recorded now (fusion must not bypass the tape).
    pub fn would_record(&self, inputs: &[Array]) -> bool {
        let refs: Vec<&Array> = inputs.iter().collect();
        self.wants(&refs).is_some()
    }

    /// A leaf that requires grad, while grad mode is on: PyTorch refuses to change it in place.
    pub fn guards_leaf(&self, a: &Array) -> bool {
        self.grad_enabled
            && !self.trace_inputs.contains(&a.id())
            && self
                .attached
                .get(&a.id())
                .is_some_and(|e| e.auto && e.requires && self.is_leaf(a))
    }

    /// Whether an in-place op on `target` with `others` must go through the graph (PyTorch
    /// records in-place ops on tensors that require grad).
    pub fn inplace_records(&self, target: &Array, others: &[&Array]) -> bool {
        self.grad_enabled
            && (self.auto_tracked(target) || others.iter().any(|a| self.auto_tracked(a)))
    }

    /// Gives `target`'s place in the graph to `before` (a copy of its values): the nodes that
    /// made or read `target` now name `before`, and `target` is a leaf again.
    pub fn cut(&mut self, target: &Array, before: &Array) {
        // A trace cannot follow a tensor leaving the graph (`detach_`): it runs as written.
        if let Some(log) = &mut self.tracing {
            log.push(Logged::Opaque);
        }
        self.cut_graph(target, before);
    }

    fn cut_graph(&mut self, target: &Array, before: &Array) {
        let tid = target.id();
        for node in &mut self.nodes {
            if node.output.id() == tid {
                node.output = before.clone();
                node.out_version = before.version();
            }
            for (k, input) in node.inputs.iter_mut().enumerate() {
                if matches!(input, Input::Array(a) if a.id() == tid) {
                    *input = Input::Array(before.clone());
                    if let Some(v) = node.versions.get_mut(k) {
                        *v = before.version();
                    }
                }
            }
        }
        self.reindex();
    }

    /// A PyTorch in-place op on `target`: `compute(tape, source)` gives the new values from
    /// `source` (the tensor's values), out of place, and they are written into `target`. When
    /// grad mode records it, `source` is a copy of the old values that the graph keeps, and
    /// `target` becomes the op's output (a result the tape did not record, such as `zero_`'s
    /// constant, takes `target` out of the graph).
    pub fn inplace(
        &mut self,
        rt: &Runtime,
        target: &Array,
        others: &[&Array],
        compute: impl FnOnce(&mut Tape, &Array) -> Result<Array>,
    ) -> std::result::Result<(), InplaceError> {
        if self.guards_leaf(target) {
            return Err(InplaceError::Leaf);
        }
        if !self.inplace_records(target, others) {
            if let Some(log) = &mut self.tracing {
                log.push(Logged::Opaque);
            }
            let result = compute(self, target)?;
            check_fits(target, &result)?;
            result.copy_into(target)?;
            return Ok(());
        }
        // The graph keeps the old values under a new identity; `target` becomes the op's output.
        let before = target.copy_to(rt, target.device())?;
        self.cut_graph(target, &before);
        // A trace follows the same rewrite (`z += y` reads the old `z` and is the new one);
        // an in-place op on what no traced op made (an input, a parameter) cannot be replayed.
        if let Some(log) = &mut self.tracing {
            if log
                .iter()
                .any(|e| e.output().is_some_and(|o| o.id() == target.id()))
            {
                for e in log.iter_mut() {
                    e.rename(target, &before);
                }
            } else {
                log.push(Logged::Opaque);
            }
        }
        let written = compute(self, &before)
            .map_err(InplaceError::from)
            .and_then(|result| {
                check_fits(target, &result)?;
                result.copy_into(target)?;
                Ok(result)
            });
        let result = match written {
            Ok(result) => result,
            Err(e) => {
                self.cut_graph(&before, target);
                if let Some(log) = &mut self.tracing {
                    log.push(Logged::Opaque);
                }
                return Err(e);
            }
        };
        if let Some(&i) = self.outputs.get(&result.id()) {
            if let Some(node) = self.nodes.get_mut(i) {
                node.output = target.clone();
                node.out_version = target.version();
            }
            self.reindex();
            if let Some(log) = &mut self.tracing {
                if let Some(Logged::Op(node)) = log.last_mut() {
                    if node.output.id() == result.id() {
                        node.output = target.clone();
                    }
                }
            }
        }
        Ok(())
    }

    fn reindex(&mut self) {
        self.outputs = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.output.id(), i))
            .collect();
        self.refresh_auto();
    }

    fn tracked(&self, a: &Array) -> bool {
        let id = a.id();
        self.outputs.contains_key(&id) || self.attached.get(&id).is_some_and(|e| e.requires)
    }

    /// Tracked the PyTorch way: a leaf that requires grad or an auto node's output.
    fn auto_tracked(&self, a: &Array) -> bool {
        let id = a.id();
        match self.outputs.get(&id) {
            Some(&i) => self.nodes.get(i).is_some_and(|n| n.auto),
            None => self.attached.get(&id).is_some_and(|e| e.auto && e.requires),
        }
    }

    fn push(&mut self, op: OpRecord, inputs: Vec<Input>, output: &Array, auto: bool) {
        let versions = if auto {
            inputs
                .iter()
                .map(|i| match i {
                    Input::Array(a) => a.version(),
                    Input::Scalar(_) => 0,
                })
                .collect()
        } else {
            Vec::new()
        };
        let node = Node {
            op,
            inputs,
            output: output.clone(),
            auto,
            freed: false,
            saved_dropped: false,
            name: None,
            versions,
            out_version: output.version(),
        };
        if let Some(log) = &mut self.tracing {
            log.push(Logged::Op(Node {
                op: node.op.clone(),
                inputs: node.inputs.clone(),
                output: node.output.clone(),
                versions: node.versions.clone(),
                ..node
            }));
        }
        self.outputs.insert(output.id(), self.nodes.len());
        self.nodes.push(node);
        self.maybe_collect();
    }

    /// Whether an op over `inputs` must be recorded, and whether PyTorch's rules record it
    /// (Some(true)); one branch when neither dialect records.
    fn wants(&self, inputs: &[&Array]) -> Option<bool> {
        if !(self.recording || self.grad_enabled && self.has_auto) {
            return None;
        }
        let auto = self.grad_enabled && inputs.iter().any(|a| self.auto_tracked(a));
        if auto {
            return Some(true);
        }
        (self.recording && inputs.iter().any(|a| self.tracked(a))).then_some(false)
    }

    fn maybe_collect(&mut self) {
        if self.nodes.len() + self.attached.len() >= self.collect_at {
            self.collect();
            self.collect_at = (2 * (self.nodes.len() + self.attached.len())).max(COLLECT_MIN);
        }
    }

    /// Drops the nodes and attached entries that nothing outside the tape can reach: an array
    /// only the tape holds (its holders are all the tape's own references) that no kept node
    /// needs as an input. Recording order is topological, so one sweep from the newest node
    /// finds them; dropping arrays can release views of others, hence a few sweeps.
    pub fn collect(&mut self) {
        if self.walks > 0 {
            return;
        }
        for _ in 0..4 {
            let mut internal: HashMap<usize, usize> = HashMap::new();
            let mut count = |a: &Array| *internal.entry(a.id()).or_default() += 1;
            for n in &self.nodes {
                count(&n.output);
                for input in &n.inputs {
                    if let Input::Array(a) = input {
                        count(a);
                    }
                }
            }
            for e in self.attached.values() {
                count(&e.var);
                if let Some(g) = &e.grad {
                    count(g);
                }
            }
            for h in &self.hooks {
                count(&h.var);
            }
            let held = |a: &Array| a.holders() > internal.get(&a.id()).copied().unwrap_or(0);
            let mut needed: HashSet<usize> = HashSet::new();
            let mut keep = vec![false; self.nodes.len()];
            for (i, n) in self.nodes.iter().enumerate().rev() {
                let id = n.output.id();
                let retained = self.attached.get(&id).is_some_and(|e| held(&e.var));
                if held(&n.output) || needed.contains(&id) || retained {
                    if let Some(k) = keep.get_mut(i) {
                        *k = true;
                    }
                    for input in &n.inputs {
                        if let Input::Array(a) = input {
                            needed.insert(a.id());
                        }
                    }
                }
            }
            let before = self.nodes.len() + self.attached.len();
            // Every decision before any drop: dropping changes the holders counted above.
            let dropped: HashSet<usize> = self
                .attached
                .iter()
                .filter(|(id, e)| !held(&e.var) && !needed.contains(id))
                .map(|(id, _)| *id)
                .collect();
            let mut flags = keep.into_iter();
            self.nodes.retain(|_| flags.next().unwrap_or(true));
            self.attached.retain(|id, _| !dropped.contains(id));
            // A hook lives as long as its tensor.
            let unheld: HashSet<u64> = (self.hooks.iter())
                .filter(|h| !held(&h.var))
                .map(|h| h.handle)
                .collect();
            self.hooks.retain(|h| !unheld.contains(&h.handle));
            self.reindex();
            if self.nodes.len() + self.attached.len() == before {
                break;
            }
        }
    }

    // ---- recorded ops --------------------------------------------------------------------

    pub fn binary(&mut self, op: BinaryOp, lhs: Operand<'_>, rhs: Operand<'_>) -> Result<Array> {
        let out = Array::binary(op, lhs, rhs)?;
        if differentiable_binary(op) {
            let arrays: Vec<&Array> = [lhs, rhs]
                .iter()
                .filter_map(|o| match o {
                    Operand::Array(a) => Some(*a),
                    Operand::Scalar(_) => None,
                })
                .collect();
            if let Some(auto) = self.wants(&arrays) {
                let inputs = vec![Input::from_operand(lhs), Input::from_operand(rhs)];
                self.push(OpRecord::Binary(op), inputs, &out, auto);
            }
        }
        Ok(out)
    }

    pub fn unary(&mut self, x: &Array, op: UnaryOp) -> Result<Array> {
        let out = x.unary(op)?;
        if let (Some(auto), true) = (self.wants(&[x]), op != UnaryOp::Not) {
            self.push(
                OpRecord::Unary(op),
                vec![Input::Array(x.clone())],
                &out,
                auto,
            );
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
        if let (Some(auto), true) = (
            self.wants(&[x]),
            !matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin),
        ) {
            let record = OpRecord::Reduce {
                op,
                axes: axes.map(<[isize]>::to_vec),
                keepdims,
            };
            self.push(record, vec![Input::Array(x.clone())], &out, auto);
        }
        Ok(out)
    }

    pub fn matmul(&mut self, a: &Array, b: &Array) -> Result<Array> {
        let out = a.matmul(b)?;
        if let Some(auto) = self.wants(&[a, b]) {
            let inputs = vec![Input::Array(a.clone()), Input::Array(b.clone())];
            self.push(OpRecord::Matmul, inputs, &out, auto);
        }
        Ok(out)
    }

    /// `a @ b^T` for matrices `a` (M, K) and `b` (N, K): `b` is read transposed by the GEMM,
    /// never copied, which is what a linear layer's `x @ W^T` costs per call otherwise.
    pub fn matmul_nt(&mut self, a: &Array, b: &Array) -> Result<Array> {
        if a.ndim() != 2 || b.ndim() != 2 {
            let bt = self.transpose(b, None)?;
            return self.matmul(a, &bt);
        }
        let out = a.matmul_t(b, [false, true])?;
        if let Some(auto) = self.wants(&[a, b]) {
            let inputs = vec![Input::Array(a.clone()), Input::Array(b.clone())];
            self.push(OpRecord::MatmulNT, inputs, &out, auto);
        }
        Ok(out)
    }

    /// `act(z + b)` for `z` (..., N) and a bias `b` (N,) broadcast over its rows: one pass
    /// (`Array::fused`) when the rows are one (the bias then has `z`'s shape, read in place),
    /// else the two ops; either way one tape node. The values and gradients are the composed
    /// ops' bit for bit: the same kernels per element, and the same backward rules.
    pub fn bias_act(&mut self, z: &Array, b: &Array, act: UnaryOp) -> Result<Array> {
        let out = bias_act_forward(z, b, act)?;
        if let Some(auto) = self.wants(&[z, b]) {
            let inputs = vec![Input::Array(z.clone()), Input::Array(b.clone())];
            self.push(OpRecord::BiasAct(act), inputs, &out, auto);
        }
        Ok(out)
    }

    pub fn dot(&mut self, a: &Array, b: &Array) -> Result<Array> {
        if a.ndim() == 0 || b.ndim() == 0 {
            return self.binary(BinaryOp::Mul, Operand::Array(a), Operand::Array(b));
        }
        let out = a.dot(b)?;
        if let Some(auto) = self.wants(&[a, b]) {
            let inputs = vec![Input::Array(a.clone()), Input::Array(b.clone())];
            self.push(OpRecord::Dot, inputs, &out, auto);
        }
        Ok(out)
    }

    pub fn reshape(&mut self, x: &Array, shape: &[isize]) -> Result<Array> {
        let out = x.reshape(shape)?;
        if let Some(auto) = self.wants(&[x]) {
            self.push(OpRecord::Reshape, vec![Input::Array(x.clone())], &out, auto);
        }
        Ok(out)
    }

    pub fn transpose(&mut self, x: &Array, axes: Option<&[isize]>) -> Result<Array> {
        let out = x.transpose(axes)?;
        if let Some(auto) = self.wants(&[x]) {
            let record = OpRecord::Transpose(axes.map(<[isize]>::to_vec));
            self.push(record, vec![Input::Array(x.clone())], &out, auto);
        }
        Ok(out)
    }

    pub fn index(&mut self, x: &Array, items: &[IndexItem]) -> Result<Array> {
        let out = x.index(items)?;
        if let Some(auto) = self.wants(&[x]) {
            let record = OpRecord::Index(items.to_vec());
            self.push(record, vec![Input::Array(x.clone())], &out, auto);
        }
        Ok(out)
    }

    /// `x` picked along `axis` by `index` (`Array::take_along_axis`, or the trusted form for
    /// positions the caller computed); the gradient adds `g` back at the picked positions.
    pub fn take_along(
        &mut self,
        x: &Array,
        index: &Array,
        axis: isize,
        trusted: bool,
    ) -> Result<Array> {
        let out = if trusted {
            x.take_along_trusted(index, axis)?
        } else {
            x.take_along_axis(index, axis)?
        };
        if let Some(auto) = self.wants(&[x]) {
            let inputs = vec![Input::Array(x.clone()), Input::Array(index.clone())];
            self.push(OpRecord::TakeAlong(axis), inputs, &out, auto);
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
        if let Some(auto) = self.wants(&[x]) {
            self.push(OpRecord::Copy, vec![Input::Array(x.clone())], &out, auto);
        }
        Ok(out)
    }

    pub fn astype(&mut self, x: &Array, dtype: DType) -> Result<Array> {
        let out = x.astype(dtype)?;
        if let (Some(auto), true) = (self.wants(&[x]), dtype.is_float() && x.dtype().is_float()) {
            self.push(OpRecord::Copy, vec![Input::Array(x.clone())], &out, auto);
        }
        Ok(out)
    }

    pub fn concat(&mut self, arrays: &[Array], axis: isize) -> Result<Array> {
        let out = Array::concat(arrays, axis)?;
        let refs: Vec<&Array> = arrays.iter().collect();
        if let Some(auto) = self.wants(&refs) {
            let inputs = arrays.iter().cloned().map(Input::Array).collect();
            self.push(OpRecord::Concat(axis), inputs, &out, auto);
        }
        Ok(out)
    }

    /// im2col in one pass (`Array::patches`; the caller checks `has_patches`).
    pub fn patches(&mut self, x: &Array, p: &Patches) -> Result<Array> {
        let out = x.patches(p)?;
        if let Some(auto) = self.wants(&[x]) {
            self.push(
                OpRecord::Patches(*p),
                vec![Input::Array(x.clone())],
                &out,
                auto,
            );
        }
        Ok(out)
    }

    /// A convolution's GEMM, `w @ patches(x).reshape(cols)`, recorded as one node: the tape keeps
    /// `x` and `w` but not the patch matrix (kh*kw times the input), which backward recomputes.
    /// Without this a ResNet's tape holds every layer's patches until backward (3.5 GiB for
    /// ResNet-18 on 28x28 images at batch 256).
    pub fn patch_matmul(
        &mut self,
        x: &Array,
        w: &Array,
        p: &Patches,
        cols: &[isize],
    ) -> Result<Array> {
        let out = w.matmul(&x.patches(p)?.reshape(cols)?)?;
        if let Some(auto) = self.wants(&[x, w]) {
            let record = OpRecord::PatchMatmul {
                patches: *p,
                cols: cols.to_vec(),
            };
            let inputs = vec![Input::Array(x.clone()), Input::Array(w.clone())];
            self.push(record, inputs, &out, auto);
        }
        Ok(out)
    }

    /// A convolution's GEMM over the batch-folded patches (`Array::patches_cols`, host devices):
    /// `w` (O, K) times (K, N*Ho*Wo), returned as (N, O, Ho, Wo). One wide product instead of one
    /// per sample keeps the GEMM's micro-kernel full on small feature maps. Recorded as one node
    /// that keeps `x` and `w` but not the patch matrix, which backward recomputes.
    /// `bias` (O,), of the product's dtype, is added in the same pass that lays the output out,
    /// and with `relu` the activation too (one node instead of two, and no pre-activation kept).
    pub fn batch_patch_matmul(
        &mut self,
        x: &Array,
        w: &Array,
        bias: Option<&Array>,
        p: &Patches,
        relu: bool,
    ) -> Result<Array> {
        let mut tracked = vec![x, w];
        tracked.extend(bias);
        let wants = self.wants(&tracked);
        let (out, kept) = batch_patch_forward(x, w, bias, p, relu, wants.is_some())?;
        if let Some(auto) = wants {
            let inputs = tracked.into_iter().cloned().map(Input::Array).collect();
            let record = OpRecord::BatchPatchMatmul {
                patches: *p,
                relu,
                kept,
            };
            self.push(record, inputs, &out, auto);
        }
        Ok(out)
    }

    /// Pooling in one pass (`Array::pool`; the caller checks `has_pool`).
    pub fn pool(
        &mut self,
        x: &Array,
        p: &Patches,
        kind: crate::runtime::PoolKind,
    ) -> Result<Array> {
        let out = x.pool(p, kind)?;
        if let Some(auto) = self.wants(&[x]) {
            self.push(
                OpRecord::Pool(*p, kind),
                vec![Input::Array(x.clone())],
                &out,
                auto,
            );
        }
        Ok(out)
    }

    /// Batch norm as one recorded op (`Array::batch_norm`): batch statistics unless `running`
    /// (mean, var) is given.
    pub fn batch_norm(
        &mut self,
        x: &Array,
        gamma: Option<&Array>,
        beta: Option<&Array>,
        running: Option<(&Array, &Array)>,
        eps: f64,
    ) -> Result<crate::runtime::array::BatchNormOutputs> {
        let out = x.batch_norm(gamma, beta, running, eps)?;
        let tracked: Vec<&Array> = [Some(x), gamma, beta].into_iter().flatten().collect();
        if let Some(auto) = self.wants(&tracked) {
            let record = OpRecord::BatchNorm {
                mean: out.mean.clone(),
                invstd: out.invstd.clone(),
                batch_stats: running.is_none(),
            };
            // A missing scale or shift stands as a scalar input, which gets no gradient.
            let input = |a: Option<&Array>| {
                a.map_or(Input::Scalar(Scalar::Float(0.0)), |a| {
                    Input::Array(a.clone())
                })
            };
            let inputs = vec![Input::Array(x.clone()), input(gamma), input(beta)];
            self.push(record, inputs, &out.y, auto);
        }
        Ok(out)
    }

    pub fn stack(&mut self, arrays: &[Array], axis: isize) -> Result<Array> {
        let out = Array::stack(arrays, axis)?;
        let refs: Vec<&Array> = arrays.iter().collect();
        if let Some(auto) = self.wants(&refs) {
            let inputs = arrays.iter().cloned().map(Input::Array).collect();
            self.push(OpRecord::Stack(axis), inputs, &out, auto);
        }
        Ok(out)
    }

    pub fn clip(&mut self, x: &Array, min: Option<f64>, max: Option<f64>) -> Result<Array> {
        let out = x.clip(min, max)?;
        if let Some(auto) = self.wants(&[x]) {
            self.push(
                OpRecord::Clip(min, max),
                vec![Input::Array(x.clone())],
                &out,
                auto,
            );
        }
        Ok(out)
    }

    /// Records `out`, an elementwise function of `inputs` computed outside the tape's ops, when
    /// an input is tracked: `derivatives` (called only then) gives d out / d input for each
    /// input, in out's shape; `name` is its `grad_fn` (PyTorch's `AsinBackward0`).
    pub fn local(
        &mut self,
        inputs: &[&Array],
        out: &Array,
        derivatives: impl FnOnce() -> Result<Vec<Array>>,
        name: &'static str,
    ) -> Result<()> {
        if let Some(auto) = self.wants(inputs) {
            let d = derivatives()?;
            let inputs = inputs.iter().map(|a| Input::Array((*a).clone())).collect();
            self.push(OpRecord::Local(d), inputs, out, auto);
            self.rename(out, name);
        }
        Ok(())
    }

    /// `x.norm(ord, axes, keepdims)`: recorded for the L2 norm and ord=1; other orders are
    /// computed without a gradient.
    pub fn norm(
        &mut self,
        x: &Array,
        ord: Option<f64>,
        axes: Option<&[isize]>,
        keepdims: bool,
    ) -> Result<Array> {
        if self.wants(&[x]).is_none() || !x.dtype().is_float() {
            return x.norm(ord, axes, keepdims);
        }
        let single_axis = axes.map_or(x.ndim() <= 1, |a| a.len() == 1);
        let l2 = ord.is_none() || (ord == Some(2.0) && single_axis);
        match ord {
            _ if l2 => {
                let out = x.norm(None, axes, keepdims)?;
                if let Some(auto) = self.wants(&[x]) {
                    let record = OpRecord::Norm {
                        axes: axes.map(<[isize]>::to_vec),
                        keepdims,
                    };
                    self.push(record, vec![Input::Array(x.clone())], &out, auto);
                }
                Ok(out)
            }
            Some(p) if p == 1.0 && single_axis => {
                let abs = self.unary(x, UnaryOp::Abs)?;
                self.reduce(&abs, ReduceOp::Sum, axes, keepdims)
            }
            _ => x.norm(ord, axes, keepdims),
        }
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
        self.run_backward(rt, head, seed, retain_graph)
    }

    /// PyTorch's `y.backward(gradient=None, retain_graph=False)`: its checks, then the same
    /// walk as [`Tape::backward`].
    pub fn torch_backward(
        &mut self,
        rt: &Runtime,
        head: &Array,
        gradient: Option<&Array>,
        retain_graph: bool,
    ) -> std::result::Result<(), TorchBackwardError> {
        let seed = self.torch_seed(rt, head, gradient)?;
        self.check_saved_versions(head, &[])?;
        self.run_backward(rt, head, seed, retain_graph)?;
        Ok(())
    }

    /// PyTorch's checks of a backward's head and its `gradient=`, and the seed they give.
    fn torch_seed(
        &self,
        rt: &Runtime,
        head: &Array,
        gradient: Option<&Array>,
    ) -> std::result::Result<Array, TorchBackwardError> {
        if !self.tracked(head) {
            return Err(TorchBackwardError::NotRequiring);
        }
        let seed = match gradient {
            Some(g) => {
                if g.shape() != head.shape() {
                    return Err(TorchBackwardError::ShapeMismatch(
                        g.shape().to_vec(),
                        head.shape().to_vec(),
                    ));
                }
                if g.device() != head.device() {
                    return Err(TorchBackwardError::DeviceMismatch(
                        head.device(),
                        g.device(),
                    ));
                }
                if g.dtype() == head.dtype() {
                    g.clone()
                } else {
                    g.astype(grad_dtype(head.dtype()))?
                }
            }
            None if head.size() != 1 => return Err(TorchBackwardError::ImplicitNonScalar),
            None => rt.ones(head.shape(), grad_dtype(head.dtype()), head.device())?,
        };
        if self.reaches_freed(head) {
            return Err(TorchBackwardError::Freed);
        }
        Ok(seed)
    }

    /// Whether the graph behind `head` has a node a backward already freed whose rule needs
    /// the values it saved (PyTorch frees them; ops that save nothing still run).
    fn reaches_freed(&self, head: &Array) -> bool {
        let mut wanted: HashSet<usize> = HashSet::from([head.id()]);
        for node in self.nodes.iter().rev() {
            if !wanted.contains(&node.output.id()) {
                continue;
            }
            if node.freed && (node.saved_dropped || saves_values(node)) {
                return true;
            }
            for input in &node.inputs {
                if let Input::Array(a) = input {
                    wanted.insert(a.id());
                }
            }
        }
        false
    }

    /// PyTorch's check that the values a backward will read are those its nodes saved: an
    /// in-place write since (under `no_grad`: a parameter update, `load_state_dict`) is an
    /// error naming the tensor and its versions, never a silently different gradient. Nodes
    /// are checked in the order the backward reaches them; which values count as saved
    /// follows PyTorch's rules (a product keeps each factor only for the other's gradient).
    fn check_saved_versions(
        &self,
        head: &Array,
        wanted: &[usize],
    ) -> std::result::Result<(), TorchBackwardError> {
        let kept: HashSet<usize> = (self.attached.values().map(|e| e.var.id()))
            .chain(wanted.iter().copied())
            .collect();
        let needs = |a: &Array| kept.contains(&a.id()) || self.outputs.contains_key(&a.id());
        let mut reached: HashSet<usize> = HashSet::from([head.id()]);
        for node in self.nodes.iter().rev() {
            if !reached.contains(&node.output.id()) {
                continue;
            }
            for input in &node.inputs {
                if let Input::Array(a) = input {
                    reached.insert(a.id());
                }
            }
            if !node.auto || node.freed {
                continue;
            }
            let arrays: Vec<Option<&Array>> = node
                .inputs
                .iter()
                .map(|i| match i {
                    Input::Array(a) => Some(a),
                    Input::Scalar(_) => None,
                })
                .collect();
            for (k, a) in arrays.iter().enumerate() {
                let (Some(a), Some(&v)) = (a, node.versions.get(k)) else {
                    continue;
                };
                let other_needs = arrays
                    .iter()
                    .enumerate()
                    .any(|(j, b)| j != k && b.is_some_and(&needs));
                if a.version() != v && saves_input(node, k, other_needs, needs(a)) {
                    // A linear layer's weight is saved as PyTorch's `weight.t()`: a view.
                    let transposed = matches!(node.op, OpRecord::MatmulNT) && k == 1;
                    return Err(self.modified(a, v, transposed));
                }
            }
            if node.output.version() != node.out_version && saves_result(&node.op) {
                return Err(self.modified(&node.output, node.out_version, false));
            }
        }
        Ok(())
    }

    /// PyTorch's message for a saved value changed in place.
    fn modified(&self, a: &Array, expected: u32, transposed: bool) -> TorchBackwardError {
        let cuda = if a.device().kind == crate::runtime::DeviceKind::Gpu {
            "cuda."
        } else {
            ""
        };
        let mut shape = a.shape().to_vec();
        let made_by = match self.outputs.get(&a.id()).and_then(|&i| self.nodes.get(i)) {
            _ if transposed => {
                shape.reverse();
                ", which is output 0 of AsStrided,".to_string()
            }
            Some(node) => {
                let name = node.name.unwrap_or_else(|| grad_fn_name(node));
                let short = name.trim_end_matches(|c: char| c.is_ascii_digit());
                let short = short.strip_suffix("Backward").unwrap_or(short);
                format!(", which is output 0 of {short},")
            }
            None => String::new(),
        };
        TorchBackwardError::Modified(format!(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.{cuda}{}Tensor {}]{made_by} is at version {}; expected version {expected} instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).",
            torch_scalar_type(a.dtype()),
            shape_list(&shape),
            a.version(),
        ))
    }

    /// The gradients of `head` (seeded with `seed`) with respect to every array behind it, by
    /// identity, and which nodes the walk used: a walk run through, no hooks.
    fn propagate(
        &self,
        rt: &Runtime,
        head: &Array,
        seed: Array,
        wanted: &[usize],
    ) -> Result<(HashMap<usize, Array>, Vec<bool>)> {
        let mut walk = self.begin_walk(head, seed, wanted, false);
        while self.walk_step(rt, &mut walk)?.is_some() {}
        Ok((walk.grads, walk.used))
    }

    /// Frees (auto) or forgets (MXNet) the nodes a backward used, unless the graph is retained.
    fn release(&mut self, used: Vec<bool>, retain_graph: bool) {
        if retain_graph {
            return;
        }
        let mut flags = used.into_iter();
        self.nodes.retain_mut(|n| {
            let used = flags.next().unwrap_or(false);
            if used && n.auto {
                n.freed = true;
                if saves_values(n) {
                    n.name = n.name.or(Some(grad_fn_name(n)));
                    n.inputs.clear();
                    if let OpRecord::BatchPatchMatmul { kept, .. } = &mut n.op {
                        *kept = None;
                    }
                    n.saved_dropped = true;
                }
                return true;
            }
            !used
        });
        self.reindex();
        // What the freed nodes let go of may now be unreachable: drop it now, not at the next
        // collection threshold, so the next step's forward pass has that memory.
        self.collect();
    }

    /// PyTorch's `torch.autograd.grad(head, inputs, gradient)`: the gradients with respect to
    /// `inputs` (None for one the head does not depend on), written into no `.grad`.
    pub fn torch_grad(
        &mut self,
        rt: &Runtime,
        head: &Array,
        gradient: Option<&Array>,
        inputs: &[Array],
        retain_graph: bool,
    ) -> std::result::Result<Vec<Option<Array>>, TorchBackwardError> {
        let seed = self.torch_seed(rt, head, gradient)?;
        if inputs.iter().any(|x| !self.tracked(x)) {
            return Err(TorchBackwardError::InputNotRequiring);
        }
        let wanted: Vec<usize> = inputs.iter().map(Array::id).collect();
        self.check_saved_versions(head, &wanted)?;
        let (grads, used) = self.propagate(rt, head, seed, &wanted)?;
        let mut out = Vec::with_capacity(inputs.len());
        for x in inputs {
            out.push(match grads.get(&x.id()) {
                Some(g) => Some(g.copy_to(rt, g.device())?),
                None => None,
            });
        }
        self.release(used, retain_graph);
        Ok(out)
    }

    fn run_backward(
        &mut self,
        rt: &Runtime,
        head: &Array,
        seed: Array,
        retain_graph: bool,
    ) -> Result<()> {
        let (grads, used) = self.propagate(rt, head, seed, &[])?;
        self.accumulate(rt, &grads, used, retain_graph)
    }

    /// PyTorch's `y.backward(...)` as a walk that stops for hooks ([`Tape::walk_step`]): its
    /// checks, then the walk, which [`Tape::end_torch_backward`] must end.
    pub fn begin_torch_backward(
        &mut self,
        rt: &Runtime,
        head: &Array,
        gradient: Option<&Array>,
    ) -> std::result::Result<walk::Walk, TorchBackwardError> {
        let seed = self.torch_seed(rt, head, gradient)?;
        self.check_saved_versions(head, &[])?;
        self.walks += 1;
        Ok(self.begin_walk(head, seed, &[], true))
    }

    /// Ends a walk [`Tape::begin_torch_backward`] began: when it `completed`, its gradients
    /// are written into `.grad` and the graph freed unless retained; a walk a hook's error
    /// stopped changes nothing.
    pub fn end_torch_backward(
        &mut self,
        rt: &Runtime,
        walk: walk::Walk,
        completed: bool,
        retain_graph: bool,
    ) -> Result<()> {
        self.walks = self.walks.saturating_sub(1);
        if !completed {
            return Ok(());
        }
        self.accumulate(rt, &walk.grads, walk.used, retain_graph)
    }

    /// Writes a finished walk's gradients into the `.grad` of the arrays that keep one.
    fn accumulate(
        &mut self,
        rt: &Runtime,
        grads: &HashMap<usize, Array>,
        used: Vec<bool>,
        retain_graph: bool,
    ) -> Result<()> {
        // Every new gradient first (accumulation allocates and can fail), then the writes, so
        // a failed backward leaves every gradient buffer as it was.
        let mut writes = Vec::new();
        let mut fresh = Vec::new();
        for (&id, entry) in &self.attached {
            let Some(g) = grads.get(&entry.var.id()) else {
                continue;
            };
            if !entry.requires {
                continue;
            }
            let g = if g.dtype() == entry.var.dtype() || !entry.var.dtype().is_float() {
                g.clone()
            } else {
                g.astype(entry.var.dtype())?
            };
            match &entry.grad {
                Some(buffer) if entry.accumulate => {
                    let sum =
                        Array::binary(BinaryOp::Add, Operand::Array(buffer), Operand::Array(&g))?;
                    writes.push((sum, buffer.clone()));
                }
                Some(buffer) => writes.push((g, buffer.clone())),
                // PyTorch's first gradient is a tensor of its own (never the seed the caller
                // passed, nor one shared with another leaf).
                None => fresh.push((id, g.copy_to(rt, g.device())?)),
            }
        }
        for (value, grad) in writes {
            value.copy_into(&grad)?;
        }
        for (id, g) in fresh {
            if let Some(entry) = self.attached.get_mut(&id) {
                entry.grad = Some(g);
            }
        }
        self.release(used, retain_graph);
        Ok(())
    }
}

/// Whether a node's backward rule reads values saved in the forward pass (what PyTorch frees
/// after a backward): sums, shape changes and moves need none, nor a product by a constant.
fn saves_values(node: &Node) -> bool {
    let arrays = node
        .inputs
        .iter()
        .filter(|i| matches!(i, Input::Array(_)))
        .count();
    match &node.op {
        OpRecord::Binary(BinaryOp::Add | BinaryOp::Sub) => false,
        OpRecord::Binary(BinaryOp::Mul | BinaryOp::Div) => arrays > 1,
        OpRecord::Unary(UnaryOp::Neg) => false,
        OpRecord::Reduce {
            op: ReduceOp::Sum | ReduceOp::Mean,
            ..
        } => false,
        OpRecord::Reshape
        | OpRecord::Transpose(_)
        | OpRecord::Index(_)
        | OpRecord::Copy
        | OpRecord::Concat(_)
        | OpRecord::Stack(_)
        | OpRecord::Patches(_) => false,
        _ => true,
    }
}

/// Whether PyTorch's node for `node` saves its `k`th input: a product keeps each factor only
/// for the other's gradient, a quotient its divisor for either, ops that keep their result
/// (`exp`, `relu`, ...) not their input, sums and shape changes nothing.
fn saves_input(node: &Node, k: usize, other_needs: bool, self_needs: bool) -> bool {
    match &node.op {
        OpRecord::Binary(BinaryOp::Mul)
        | OpRecord::Matmul
        | OpRecord::MatmulNT
        | OpRecord::Dot
        | OpRecord::PatchMatmul { .. }
        | OpRecord::BatchPatchMatmul { .. } => other_needs,
        OpRecord::Binary(BinaryOp::Div) => {
            if k == 1 {
                other_needs || self_needs
            } else {
                other_needs
            }
        }
        OpRecord::Unary(op) if saves_result_of(*op) => false,
        OpRecord::BiasAct(_) => false,
        // Beta only shifts: its gradient needs no saved value.
        OpRecord::BatchNorm { .. } => k < 2,
        _ => saves_values(node),
    }
}

/// The unary ops whose PyTorch backward reads the result rather than the input.
fn saves_result_of(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Exp
            | UnaryOp::Sqrt
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Relu
            | UnaryOp::Tan
            | UnaryOp::Reciprocal
    )
}

fn saves_result(op: &OpRecord) -> bool {
    match op {
        OpRecord::Unary(op) | OpRecord::BiasAct(op) => saves_result_of(*op),
        _ => false,
    }
}

/// PyTorch's name for the backward of a node (what `grad_fn` shows).
fn grad_fn_name(node: &Node) -> &'static str {
    let array = |i: usize| match node.inputs.get(i) {
        Some(Input::Array(a)) => Some(a),
        _ => None,
    };
    let whole = |axes: &Option<Vec<isize>>, keepdims: bool| axes.is_none() && !keepdims;
    match &node.op {
        OpRecord::Binary(op) => {
            let (l, r) = (array(0).is_some(), array(1).is_some());
            match op {
                BinaryOp::Add => "AddBackward0",
                BinaryOp::Sub if !l => "RsubBackward1",
                BinaryOp::Sub => "SubBackward0",
                BinaryOp::Mul => "MulBackward0",
                // `2 / x` is `x.reciprocal() * 2` in PyTorch.
                BinaryOp::Div if !l => "MulBackward0",
                BinaryOp::Div => "DivBackward0",
                BinaryOp::Pow if !r => "PowBackward0",
                BinaryOp::Pow if !l => "PowBackward2",
                BinaryOp::Pow => "PowBackward1",
                BinaryOp::Maximum => "MaximumBackward0",
                BinaryOp::Minimum => "MinimumBackward0",
                _ => "Backward0",
            }
        }
        // A fused bias and activation is named by its last op, as the composed form's output.
        OpRecord::Unary(op) | OpRecord::BiasAct(op) => match op {
            UnaryOp::Neg => "NegBackward0",
            UnaryOp::Abs => "AbsBackward0",
            UnaryOp::Exp => "ExpBackward0",
            UnaryOp::Log => "LogBackward0",
            UnaryOp::Log2 => "Log2Backward0",
            UnaryOp::Log10 => "Log10Backward0",
            UnaryOp::Sqrt => "SqrtBackward0",
            UnaryOp::Square => "PowBackward0",
            UnaryOp::Tanh => "TanhBackward0",
            UnaryOp::Sigmoid => "SigmoidBackward0",
            UnaryOp::Relu => "ReluBackward0",
            UnaryOp::Sin => "SinBackward0",
            UnaryOp::Cos => "CosBackward0",
            UnaryOp::Tan => "TanBackward0",
            UnaryOp::Reciprocal => "ReciprocalBackward0",
            UnaryOp::Sign => "SignBackward0",
            UnaryOp::Floor => "FloorBackward0",
            UnaryOp::Ceil => "CeilBackward0",
            UnaryOp::Round => "RoundBackward0",
            UnaryOp::Trunc => "TruncBackward0",
            UnaryOp::Not => "Backward0",
        },
        OpRecord::Reduce { op, axes, keepdims } => {
            let whole = whole(axes, *keepdims);
            match (op, whole) {
                (ReduceOp::Sum, true) => "SumBackward0",
                (ReduceOp::Sum, false) => "SumBackward1",
                (ReduceOp::Mean, true) => "MeanBackward0",
                (ReduceOp::Mean, false) => "MeanBackward1",
                (ReduceOp::Max, true) => "MaxBackward1",
                (ReduceOp::Max, false) => "MaxBackward0",
                (ReduceOp::Min, true) => "MinBackward1",
                (ReduceOp::Min, false) => "MinBackward0",
                (ReduceOp::Prod, true) => "ProdBackward0",
                (ReduceOp::Prod, false) => "ProdBackward1",
                _ => "Backward0",
            }
        }
        OpRecord::MatmulNT => "MmBackward0",
        OpRecord::Matmul | OpRecord::Dot => {
            let dims = (array(0).map(Array::ndim), array(1).map(Array::ndim));
            match dims {
                (Some(1), Some(1)) => "DotBackward0",
                (Some(2), Some(1)) => "MvBackward0",
                (Some(2), Some(2)) => "MmBackward0",
                (Some(1), Some(2)) => "SqueezeBackward4",
                (Some(3), Some(3)) => "BmmBackward0",
                _ => "UnsafeViewBackward0",
            }
        }
        OpRecord::Reshape => "ViewBackward0",
        OpRecord::Transpose(_) => "PermuteBackward0",
        OpRecord::Index(items) => {
            // PyTorch indexes left to right and skips whole-axis slices: the last real step names it.
            let whole = |i: &IndexItem| {
                matches!(i, IndexItem::Ellipsis)
                    || matches!(
                        i,
                        IndexItem::Slice { start, stop: None, step }
                            if matches!(start, None | Some(0)) && matches!(step, None | Some(1))
                    )
            };
            match items.iter().rev().find(|i| !whole(i)) {
                Some(IndexItem::Array(_)) => "IndexBackward0",
                Some(IndexItem::Int(_)) => "SelectBackward0",
                Some(IndexItem::NewAxis) => "UnsqueezeBackward0",
                Some(_) => "SliceBackward0",
                None => "AliasBackward0",
            }
        }
        OpRecord::TakeAlong(_) => "GatherBackward0",
        OpRecord::Copy => "ToCopyBackward0",
        OpRecord::Concat(_) => "CatBackward0",
        OpRecord::Stack(_) => "StackBackward0",
        OpRecord::Patches(_) => "Im2ColBackward0",
        OpRecord::PatchMatmul { .. } | OpRecord::BatchPatchMatmul { .. } => "ConvolutionBackward0",
        OpRecord::BatchNorm { .. } => "NativeBatchNormBackward0",
        OpRecord::Pool(_, crate::runtime::PoolKind::Max) => "MaxPool2DWithIndicesBackward0",
        OpRecord::Pool(..) => "AvgPool2DBackward0",
        OpRecord::Clip(..) => "ClampBackward1",
        OpRecord::Local(_) => "Backward0",
        OpRecord::Norm { .. } => "LinalgVectorNormBackward0",
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

/// `Tape::bias_act`'s value: one fused pass (over every row on host devices; for one row where
/// the bias can be read as `z`'s shape elsewhere), else the composed ops.
fn bias_act_forward(z: &Array, b: &Array, act: UnaryOp) -> Result<Array> {
    // Host devices: one pass over every row of a batch.
    if let Some(y) = z.bias_act_rows(b, act)? {
        return Ok(y);
    }
    let rows = z.size() / b.size().max(1);
    if rows == 1 && b.size() == z.shape().last().copied().unwrap_or(0) {
        let b_row = b.reshape(&to_isize(z.shape()))?;
        let expr = FusedExpr::Unary(
            act,
            Box::new(FusedExpr::Binary(
                BinaryOp::Add,
                Box::new(FusedExpr::Input(0)),
                Box::new(FusedExpr::Input(1)),
            )),
        );
        if let Some(y) = Array::fused(&expr, &[z.clone(), b_row])? {
            return Ok(y);
        }
    }
    bin(BinaryOp::Add, z, b)?.unary(act)
}

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

/// The gradients of `node`'s inputs for its output gradient `g`; `needs` says which inputs
/// want one (a rule may answer None for the others instead of computing it).
fn node_backward(
    rt: &Runtime,
    node: &Node,
    g: &Array,
    needs: &dyn Fn(&Array) -> bool,
) -> Result<Vec<Option<Array>>> {
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
        OpRecord::BiasAct(act) => {
            let (Some(z), Some(b)) = (arr(0), arr(1)) else {
                return Err(value_err("autograd: a bias and activation lost an input"));
            };
            // The composed form's rules: the activation's (ReLU's mask of z + b > 0 is the
            // output's > 0), then the sum's, which sums the bias's share over the rows.
            let pre = unary_backward(*act, out, out, g)?;
            let gb = unbroadcast(pre.clone(), b.shape())?;
            vec![Some(unbroadcast(pre, z.shape())?), Some(gb)]
        }
        OpRecord::MatmulNT => {
            let (Some(a), Some(b)) = (arr(0), arr(1)) else {
                return Err(value_err("autograd: matmul lost an input"));
            };
            // y = a b^T: dA = g b, dB = g^T a.
            vec![Some(g.matmul(b)?), Some(g.matmul_t(a, [true, false])?)]
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
            let ga = g2
                .matmul_t(&b2, [false, true])?
                .reshape(&to_isize(a.shape()))?;
            let gb = a2
                .matmul_t(&g2, [true, false])?
                .reshape(&to_isize(b.shape()))?;
            vec![Some(ga), Some(gb)]
        }
        OpRecord::Reshape => vec![Some(g.reshape(&to_isize(first()?.shape()))?)],
        OpRecord::Patches(p) => {
            let x = first()?;
            let hw = [x.shape()[2], x.shape()[3]];
            vec![Some(g.patches_adjoint(p, hw)?)]
        }
        OpRecord::PatchMatmul { patches, cols } => {
            let (Some(x), Some(w)) = (arr(0), arr(1)) else {
                return Err(value_err("autograd: a convolution lost an input"));
            };
            let patches_of_x = x.patches(patches)?;
            let patch_shape = to_isize(patches_of_x.shape());
            let (gw, gcols) = matmul_backward(w, &patches_of_x.reshape(cols)?, g)?;
            drop(patches_of_x);
            let hw = [x.shape()[2], x.shape()[3]];
            let gx = gcols.reshape(&patch_shape)?.patches_adjoint(patches, hw)?;
            vec![Some(gx), Some(gw)]
        }
        OpRecord::BatchPatchMatmul {
            patches,
            relu,
            kept,
        } => {
            let (Some(x), Some(w)) = (arr(0), arr(1)) else {
                return Err(value_err("autograd: a convolution lost an input"));
            };
            let relu_out = relu.then_some(out);
            let cols = kept.as_ref().map(|k| &k.cols);
            let (gx, gw, gb) =
                batch_patch_backward(x, w, arr(2).is_some(), needs(x), patches, g, relu_out, cols)?;
            vec![gx, Some(gw), gb]
        }
        OpRecord::Pool(p, kind) => {
            let x = first()?;
            let g = if g.dtype() == x.dtype() {
                g.clone()
            } else {
                g.astype(x.dtype())?
            };
            vec![Some(x.pool_grad(&g, p, *kind)?)]
        }
        OpRecord::BatchNorm {
            mean,
            invstd,
            batch_stats,
        } => {
            let x = first()?;
            let gamma = arr(1);
            let g = if g.dtype() == x.dtype() {
                g.clone()
            } else {
                g.astype(x.dtype())?
            };
            let [dx, dgamma, dbeta] =
                x.batch_norm_backward(&g, mean, invstd, gamma, *batch_stats)?;
            vec![Some(dx), Some(dgamma), Some(dbeta)]
        }
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
            if let [IndexItem::Array(index)] = items.as_slice() {
                if let Some(gx) = repeated_rows_grad(rt, x, index, g)? {
                    return Ok(vec![Some(gx)]);
                }
            }
            let gx = rt.zeros(x.shape(), g.dtype(), g.device())?;
            gx.set_index(items, Operand::Array(g))?;
            vec![Some(gx)]
        }
        OpRecord::TakeAlong(axis) => {
            let (Some(x), Some(index)) = (arr(0), arr(1)) else {
                return Err(value_err("autograd: a gather lost an input"));
            };
            let gx = rt.zeros(x.shape(), g.dtype(), g.device())?;
            gx.scatter_along_axis(index, g, *axis, true)?;
            vec![Some(gx), None]
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
        OpRecord::Norm { axes, keepdims } => {
            let x = first()?;
            let selected = normalize_axes(axes.as_deref(), x.ndim(), "norm")?;
            let kept: Vec<isize> = x
                .shape()
                .iter()
                .zip(&selected)
                .map(|(&d, &s)| if s { 1 } else { d as isize })
                .collect();
            let (g_kd, out_kd) = if *keepdims {
                (g.clone(), out.clone())
            } else {
                (g.reshape(&kept)?, out.reshape(&kept)?)
            };
            // x / |x| * g, and 0 where the norm is 0 (PyTorch's subgradient).
            let zero = mask(
                BinaryOp::Eq,
                Operand::Array(&out_kd),
                Operand::Scalar(Scalar::Float(0.0)),
                out_kd.dtype(),
            )?;
            let safe = bin(BinaryOp::Add, &out_kd, &zero)?;
            let scale = bin(BinaryOp::Div, &g_kd, &safe)?;
            vec![Some(bin(BinaryOp::Mul, x, &scale)?)]
        }
        OpRecord::Local(derivatives) => {
            let mut grads = Vec::with_capacity(node.inputs.len());
            for (input, d) in node.inputs.iter().zip(derivatives) {
                grads.push(match input {
                    Input::Array(a) => {
                        let gd = bin(BinaryOp::Mul, g, d)?;
                        Some(unbroadcast(gd, a.shape())?)
                    }
                    Input::Scalar(_) => None,
                });
            }
            grads
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

/// The gradient of `x[index]` when an integer index repeats a row (`x[[0, 0, 1]]`): each
/// selection adds its gradient, as PyTorch's `IndexBackward0` does, where writing them in place
/// would keep only the last. The rows are summed by a one-hot matrix's product with the
/// gradient's rows. None when no row repeats (the in-place write is exact and cheaper).
fn repeated_rows_grad(rt: &Runtime, x: &Array, index: &Array, g: &Array) -> Result<Option<Array>> {
    if index.dtype() == DType::Bool || x.ndim() == 0 {
        return Ok(None);
    }
    let rows = x.array_index_rows(index)?;
    let mut seen = vec![false; x.shape()[0]];
    let repeats = rows
        .iter()
        .any(|&r| seen.get_mut(r).map(|s| std::mem::replace(s, true)) == Some(true));
    if !repeats {
        return Ok(None);
    }
    let n = x.shape()[0];
    let unit: usize = x.shape()[1..].iter().product();
    let mut one_hot = vec![0.0f64; n * rows.len()];
    for (i, &r) in rows.iter().enumerate() {
        if let Some(slot) = one_hot.get_mut(r * rows.len() + i) {
            *slot = 1.0;
        }
    }
    let select = rt.from_f64(one_hot, &[n, rows.len()], g.dtype(), g.device())?;
    let g_rows = g.reshape(&[rows.len() as isize, unit as isize])?;
    let shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
    Ok(Some(select.matmul(&g_rows)?.reshape(&shape)?))
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
    use FusedExpr::{Binary, Unary};
    let input = |i: usize| Box::new(FusedExpr::Input(i));
    let scalar = |v: f64| Box::new(FusedExpr::Scalar(v));
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
            // g * (1 - tanh^2), in one pass where the fused kernel runs it.
            let expr = Binary(
                BinaryOp::Mul,
                input(0),
                Binary(
                    BinaryOp::Sub,
                    scalar(1.0),
                    Unary(UnaryOp::Square, input(1)).into(),
                )
                .into(),
            );
            if let Some(r) = Array::fused(&expr, &[g.clone(), out.clone()])? {
                return Ok(r);
            }
            let sq = out.unary(UnaryOp::Square)?;
            let one_minus = Array::binary(
                BinaryOp::Sub,
                Operand::Scalar(Scalar::Float(1.0)),
                Operand::Array(&sq),
            )?;
            mul(&one_minus)
        }
        UnaryOp::Sigmoid => {
            // g * (y * (1 - y)), in one pass where the fused kernel runs it.
            let expr = Binary(
                BinaryOp::Mul,
                input(0),
                Binary(
                    BinaryOp::Mul,
                    input(1),
                    Binary(BinaryOp::Sub, scalar(1.0), input(1)).into(),
                )
                .into(),
            );
            if let Some(r) = Array::fused(&expr, &[g.clone(), out.clone()])? {
                return Ok(r);
            }
            let one_minus = Array::binary(
                BinaryOp::Sub,
                Operand::Scalar(Scalar::Float(1.0)),
                Operand::Array(out),
            )?;
            mul(&bin(BinaryOp::Mul, out, &one_minus)?)
        }
        UnaryOp::Relu => {
            // g * (x > 0) in one pass where the fused kernel runs it: sign(relu(x)) is that
            // mask (1 where x > 0; 0 elsewhere, NaN included), so the bits are the same.
            let expr = Binary(
                BinaryOp::Mul,
                input(0),
                Unary(UnaryOp::Sign, Unary(UnaryOp::Relu, input(1)).into()).into(),
            );
            if let Some(r) = Array::fused(&expr, &[g.clone(), x.clone()])? {
                return Ok(r);
            }
            mul(&mask(
                BinaryOp::Gt,
                Operand::Array(x),
                Operand::Scalar(Scalar::Float(0.0)),
                g.dtype(),
            )?)
        }
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
    // The transposed operands are read in place (`matmul_t`), not copied.
    let ga = if a2.ndim() == 2 && out_shape.len() > 2 {
        shared_matrix_grad_left(&g2, &b2)?
    } else {
        unbroadcast(g2.matmul_t(&b2, [false, true])?, a2.shape())?
    };
    let gb = if b2.ndim() == 2 && out_shape.len() > 2 {
        shared_matrix_grad_right(&a2, &g2)?
    } else {
        unbroadcast(a2.matmul_t(&g2, [true, false])?, b2.shape())?
    };
    let ga = ga.reshape(&to_isize(a.shape()))?;
    let gb = gb.reshape(&to_isize(b.shape()))?;
    Ok((ga, gb))
}

/// The gradient of a matrix `a` (M, K) shared by every batch of `a @ b`: the sum over the batch of
/// `g[i] @ b[i]^T`, as one GEMM over the batch folded into the inner axis. Computing each batch's
/// product and then summing would allocate batch x M x K first (1.1 GiB for a ResNet's last
/// convolution at batch 128). `b` has `g`'s batch axes, as `a` has none.
fn shared_matrix_grad_left(g: &Array, b: &Array) -> Result<Array> {
    let (m, n) = (g.shape()[g.ndim() - 2], g.shape()[g.ndim() - 1]);
    let batch: usize = g.shape()[..g.ndim() - 2].iter().product();
    let k = b.shape()[b.ndim() - 2];
    // g: (batch.., M, N) -> (M, batch.., N) -> (M, batch*N)
    let nd = g.ndim() as isize;
    let mut axes: Vec<isize> = vec![nd - 2];
    axes.extend(0..nd - 2);
    axes.push(nd - 1);
    let g_flat = g
        .transpose(Some(&axes))?
        .reshape(&[m as isize, (batch * n) as isize])?;
    // b: (batch.., K, N) -> (K, batch.., N) -> (K, batch*N), read transposed
    let b_flat = b
        .transpose(Some(&axes))?
        .reshape(&[k as isize, (batch * n) as isize])?;
    g_flat.matmul_t(&b_flat, [false, true])
}

/// The gradient of a matrix `b` (K, N) shared by every batch of `a @ b`: `sum_i a[i]^T @ g[i]`,
/// which is one GEMM of the batch-stacked rows, `a (batch*M, K)^T @ g (batch*M, N)`.
fn shared_matrix_grad_right(a: &Array, g: &Array) -> Result<Array> {
    let (m, n) = (g.shape()[g.ndim() - 2], g.shape()[g.ndim() - 1]);
    let batch: usize = g.shape()[..g.ndim() - 2].iter().product();
    let k = a.shape()[a.ndim() - 1];
    let a_flat = a.reshape(&[(batch * m) as isize, k as isize])?;
    let g_flat = g.reshape(&[(batch * m) as isize, n as isize])?;
    a_flat.matmul_t(&g_flat, [true, false])
}

mod walk;
pub use walk::Walk;

#[cfg(test)]
mod tests;

/// (N, C, H, W) and the output channels of a batch-folded convolution.
fn batch_patch_dims(x: &Array, w: &Array) -> Result<([usize; 4], usize)> {
    match (x.shape(), w.shape()) {
        (&[n, c, h, wd], &[o, _]) => Ok(([n, c, h, wd], o)),
        _ => Err(value_err(
            "internal error: a batch-folded convolution needs a 4-d input and a 2-d weight; please report this as a devarray bug",
        )),
    }
}

/// How many bytes of patch matrices convolution nodes may keep from forward for backward, all
/// devices and tapes together. Recomputing a patch matrix is a pass as large as the matrix
/// (LeNet's are 15-20 MiB at batch 256), so small ones are worth keeping; a large network's
/// (ResNet's at 224x224: gigabytes) would multiply the tape's memory, so past the budget the
/// rest are recomputed. ResNet-18's at 96x96 and batch 32 are 302 MiB in all; at 64 MiB a
/// step recomputed most of them, a tenth of its time by profile, and at 256 MiB the last 45.
const KEPT_BUDGET: usize = 320 << 20;

/// Bytes of patch matrices kept now (`KeptCols`).
static KEPT_BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A patch matrix kept by a `BatchPatchMatmul` node; its bytes count against `KEPT_BUDGET`
/// until it is dropped.
struct KeptCols {
    cols: Array,
    bytes: usize,
}

impl KeptCols {
    /// `cols` kept if the budget has room for it.
    fn keep(cols: Array) -> Option<std::sync::Arc<KeptCols>> {
        use std::sync::atomic::Ordering::Relaxed;
        let bytes = cols.nbytes();
        KEPT_BYTES
            .fetch_update(Relaxed, Relaxed, |k| {
                (k + bytes <= KEPT_BUDGET).then_some(k + bytes)
            })
            .ok()?;
        Some(std::sync::Arc::new(KeptCols { cols, bytes }))
    }
}

impl Drop for KeptCols {
    fn drop(&mut self) {
        KEPT_BYTES.fetch_sub(self.bytes, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The convolution's output and, when `keep` (the op is recorded) and the budget allows, its
/// patch matrix for backward.
fn batch_patch_forward(
    x: &Array,
    w: &Array,
    bias: Option<&Array>,
    p: &Patches,
    relu: bool,
    keep: bool,
) -> Result<(Array, Option<std::sync::Arc<KeptCols>>)> {
    let ([n, ..], o) = batch_patch_dims(x, w)?;
    let (y, kept) = match x.winograd_cols(w, p)? {
        // Winograd makes no patch matrix; backward makes one for the weight gradient.
        Some(y) => (y, None),
        None => {
            let cols = x.patches_cols(p)?;
            let y = w.matmul(&cols)?;
            (y, if keep { KeptCols::keep(cols) } else { None })
        }
    };
    let y = y.cols_to_batch(n, bias, relu)?.reshape(&[
        n as isize,
        o as isize,
        p.out[0] as isize,
        p.out[1] as isize,
    ])?;
    Ok((y, kept))
}

/// The gradients of `batch_patch_forward` for the output gradient `g` (N, O, Ho, Wo): with
/// gT = g as (O, N*L) and P the recomputed patches, dw = gT P^T, dx = adjoint(w^T gT) (both
/// products reading the transposed operand in place) and, with a bias, db = gT summed by row.
/// `relu_out`: the output of a fused ReLU, whose mask (out > 0) gT takes in the same pass.
/// `want_x`: whether dx is wanted at all (not for a network's input data). `kept`: the patches
/// forward kept, if it did.
#[allow(clippy::too_many_arguments)]
fn batch_patch_backward(
    x: &Array,
    w: &Array,
    bias: bool,
    want_x: bool,
    p: &Patches,
    g: &Array,
    relu_out: Option<&Array>,
    kept: Option<&Array>,
) -> Result<(Option<Array>, Array, Option<Array>)> {
    let (nchw, o) = batch_patch_dims(x, w)?;
    let g = if g.dtype() == x.dtype() {
        g.clone()
    } else {
        g.astype(x.dtype())?
    };
    let gt = g.batch_to_cols(relu_out)?;
    let gb = if bias {
        Some(gt.reduce(ReduceOp::Sum, Some(&[1]), false)?)
    } else {
        None
    };
    let gw = match x.winograd_weight_grad(&gt, p, o)? {
        Some(gw) => gw,
        None => {
            let cols = match kept {
                Some(c) => c.clone(),
                None => x.patches_cols(p)?,
            };
            gt.matmul_t(&cols, [false, true])?
        }
    };
    let gx = if want_x {
        Some(w.conv_input_grad(&gt, p, nchw)?)
    } else {
        None
    };
    Ok((gx, gw, gb))
}

// ---- traces (torch.jit.trace) -------------------------------------------------------------

/// A computation a trace keeps whole and replays by calling it again on the replayed inputs:
/// a built-in layer (convolution, pooling, batch norm, dropout) whose tape nodes hold what
/// its input's shape fixed (the window's output size) or leave out what it changes beside its
/// output (batch norm's running statistics), so that only running it again is exact.
pub type TraceFn = Rc<dyn Fn(&Runtime, &mut Tape, &[Array]) -> Result<Array>>;

/// One entry of a trace's log: an op recorded on the tape, or a whole call (`Tape::traced_call`),
/// or a change the trace cannot replay (an in-place op on an input, `detach_`).
enum Logged {
    Op(Node),
    Call {
        key: String,
        inputs: Vec<Array>,
        output: Array,
        run: TraceFn,
    },
    Opaque,
}

impl Logged {
    fn output(&self) -> Option<&Array> {
        match self {
            Logged::Op(node) => Some(&node.output),
            Logged::Call { output, .. } => Some(output),
            Logged::Opaque => None,
        }
    }

    /// `Tape::cut`'s rewrite in the log: what named `from` names `to`.
    fn rename(&mut self, from: &Array, to: &Array) {
        let id = from.id();
        let swap = |a: &mut Array| {
            if a.id() == id {
                *a = to.clone();
            }
        };
        match self {
            Logged::Op(node) => {
                swap(&mut node.output);
                for input in &mut node.inputs {
                    if let Input::Array(a) = input {
                        swap(a);
                    }
                }
            }
            Logged::Call { inputs, output, .. } => {
                swap(output);
                inputs.iter_mut().for_each(swap);
            }
            Logged::Opaque => {}
        }
    }
}

/// Where a traced op reads an array: an input of the pass, an earlier op's output, or an array
/// the pass read from outside (a parameter, a constant it made).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TraceRef {
    Input(usize),
    Step(usize),
    Const(usize),
}

#[derive(Clone, Copy)]
enum TraceArg {
    Array(TraceRef),
    Scalar(Scalar),
}

/// What a traced step runs again: a tape op, or a call kept whole (its key says which: two
/// traces of one forward agree when they called the same things).
enum StepOp {
    Op(OpRecord),
    Call { key: String, run: TraceFn },
}

struct TraceStep {
    op: StepOp,
    args: Vec<TraceArg>,
    /// The `grad_fn` name the op's output had (`AddmmBackward0` for a Linear's product).
    name: Option<&'static str>,
    shape: Vec<usize>,
    dtype: DType,
    device: Device,
}

/// What `Tape::start_trace` changed, for `finish_trace` to restore.
pub struct TraceStart {
    grad_enabled: bool,
    required: Vec<Array>,
}

/// A forward pass recorded op by op (`Tape::start_trace` .. `finish_trace`), replayed on new
/// inputs with the same ops: what `torch.jit.trace` makes of a module with its own forward.
/// As in PyTorch, everything that was not an op on arrays is frozen as it went in the example
/// (branches taken, Python numbers, arrays made inside the forward, a layer's training mode).
pub struct Trace {
    steps: Vec<TraceStep>,
    /// The arrays the pass read from outside, in first-use order; `replay` takes their current
    /// values (a parameter's data on the input's device) in this order.
    pub consts: Vec<Array>,
    output: TraceRef,
}

impl Tape {
    /// Begins recording every op (grad mode on, `inputs` tracked) until `finish_trace`.
    pub fn start_trace(&mut self, inputs: &[Array]) -> TraceStart {
        self.tracing = Some(Vec::new());
        let grad_enabled = self.set_grad_enabled(true);
        let mut required = Vec::new();
        for x in inputs {
            if !self.requires_grad(x) {
                self.set_requires_grad(x, true);
                self.trace_inputs.push(x.id());
                required.push(x.clone());
            }
        }
        TraceStart {
            grad_enabled,
            required,
        }
    }

    /// Whether a trace is recording (`torch.jit.trace` runs a forward): PyTorch's
    /// `TracerWarning`s are due.
    pub fn is_tracing(&self) -> bool {
        self.tracing.is_some()
    }

    /// `run(inputs)`; while a trace records, as one entry that a replay calls again (its own
    /// ops are not logged), `key` naming what it computes (the same key, the same call).
    pub fn traced_call(
        &mut self,
        rt: &Runtime,
        key: impl FnOnce() -> String,
        inputs: &[Array],
        run: TraceFn,
    ) -> Result<Array> {
        let Some(log) = self.tracing.take() else {
            return run(rt, self, inputs);
        };
        let out = run(rt, self, inputs);
        let mut log = log;
        if let Ok(y) = &out {
            log.push(Logged::Call {
                key: key(),
                inputs: inputs.to_vec(),
                output: y.clone(),
                run,
            });
        }
        self.tracing = Some(log);
        out
    }

    /// Ends the recording `start_trace` began; the trace leading to `output`, or None when an
    /// op cannot be replayed (a convolution, pooling or batch norm called as a function: the
    /// module then runs as written) or `output` is not computed from the inputs.
    pub fn finish_trace(
        &mut self,
        start: TraceStart,
        inputs: &[Array],
        output: Option<&Array>,
    ) -> Option<Trace> {
        let log = self.tracing.take().unwrap_or_default();
        self.trace_inputs.clear();
        for x in &start.required {
            self.set_requires_grad(x, false);
        }
        self.set_grad_enabled(start.grad_enabled);
        let output = output?;
        let mut refs: HashMap<usize, TraceRef> = inputs
            .iter()
            .enumerate()
            .map(|(k, a)| (a.id(), TraceRef::Input(k)))
            .collect();
        let mut consts: Vec<Array> = Vec::new();
        let mut steps = Vec::with_capacity(log.len());
        for entry in log {
            let (op, args, out, name) = match entry {
                Logged::Op(node) => {
                    let replayable = matches!(
                        node.op,
                        OpRecord::Binary(_)
                            | OpRecord::Unary(_)
                            | OpRecord::Reduce { .. }
                            | OpRecord::Matmul
                            | OpRecord::MatmulNT
                            | OpRecord::Dot
                            | OpRecord::BiasAct(_)
                            | OpRecord::Reshape
                            | OpRecord::Transpose(_)
                            | OpRecord::Index(_)
                            | OpRecord::Copy
                            | OpRecord::Concat(_)
                            | OpRecord::Stack(_)
                            | OpRecord::Clip(..)
                    );
                    if !replayable {
                        return None;
                    }
                    let args = node
                        .inputs
                        .iter()
                        .map(|input| match input {
                            Input::Scalar(s) => TraceArg::Scalar(*s),
                            Input::Array(a) => {
                                TraceArg::Array(trace_ref(&mut refs, &mut consts, a))
                            }
                        })
                        .collect();
                    let name = Some(
                        self.grad_fn(&node.output)
                            .unwrap_or_else(|| grad_fn_name(&node)),
                    );
                    (StepOp::Op(node.op), args, node.output, name)
                }
                Logged::Call {
                    key,
                    inputs,
                    output,
                    run,
                } => {
                    let args = inputs
                        .iter()
                        .map(|a| TraceArg::Array(trace_ref(&mut refs, &mut consts, a)))
                        .collect();
                    let name = self.grad_fn(&output);
                    (StepOp::Call { key, run }, args, output, name)
                }
                Logged::Opaque => return None,
            };
            refs.insert(out.id(), TraceRef::Step(steps.len()));
            steps.push(TraceStep {
                op,
                args,
                name,
                shape: out.shape().to_vec(),
                dtype: out.dtype(),
                device: out.device(),
            });
        }
        let output = match refs.get(&output.id()) {
            Some(r @ (TraceRef::Step(_) | TraceRef::Input(_))) => *r,
            _ => return None,
        };
        Some(Trace {
            steps,
            consts,
            output,
        })
    }
}

/// Where a traced op reads `a`: a known input or step, or a new constant.
fn trace_ref(refs: &mut HashMap<usize, TraceRef>, consts: &mut Vec<Array>, a: &Array) -> TraceRef {
    *refs.entry(a.id()).or_insert_with(|| {
        consts.push(a.clone());
        TraceRef::Const(consts.len() - 1)
    })
}

impl Trace {
    /// Whether two traces of one forward did the same: the same ops on the same operands, and
    /// constants with the same values. A forward that draws random numbers outside a layer
    /// differs between two runs, and a trace would freeze the draw: such a module runs as
    /// written instead.
    pub fn same_as(&self, other: &Trace) -> bool {
        let same_arg = |a: &TraceArg, b: &TraceArg| match (a, b) {
            (TraceArg::Array(x), TraceArg::Array(y)) => x == y,
            (TraceArg::Scalar(x), TraceArg::Scalar(y)) => {
                x.as_f64().to_bits() == y.as_f64().to_bits()
            }
            _ => false,
        };
        let same_op = |a: &StepOp, b: &StepOp| match (a, b) {
            (StepOp::Op(x), StepOp::Op(y)) => {
                std::mem::discriminant(x) == std::mem::discriminant(y)
            }
            (StepOp::Call { key: x, .. }, StepOp::Call { key: y, .. }) => x == y,
            _ => false,
        };
        let same_const = |a: &Array, b: &Array| {
            a.id() == b.id()
                || (a.shape() == b.shape()
                    && a.dtype() == b.dtype()
                    && a.to_host().to_f64_vec() == b.to_host().to_f64_vec())
        };
        self.output == other.output
            && self.steps.len() == other.steps.len()
            && self.consts.len() == other.consts.len()
            && self.steps.iter().zip(&other.steps).all(|(a, b)| {
                same_op(&a.op, &b.op)
                    && a.name == b.name
                    && a.shape == b.shape
                    && a.args.len() == b.args.len()
                    && a.args.iter().zip(&b.args).all(|(x, y)| same_arg(x, y))
            })
            && self
                .consts
                .iter()
                .zip(&other.consts)
                .all(|(a, b)| same_const(a, b))
    }

    /// The traced ops again on `inputs`, with `consts` for the arrays read from outside
    /// (`Trace::consts`' order), recorded on the tape as the forward's own ops were.
    pub fn replay(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        inputs: &[Array],
        consts: &[Array],
    ) -> Result<Array> {
        let mut values: Vec<Array> = Vec::with_capacity(self.steps.len());
        let lost = || {
            value_err("internal error: a traced op lost its operand; please report this as a devarray bug")
        };
        for step in &self.steps {
            let array = |r: &TraceRef, values: &[Array]| -> Result<Array> {
                match *r {
                    TraceRef::Input(k) => inputs.get(k),
                    TraceRef::Step(i) => values.get(i),
                    TraceRef::Const(i) => consts.get(i),
                }
                .cloned()
                .ok_or_else(lost)
            };
            let arrays: Vec<Array> = step
                .args
                .iter()
                .filter_map(|a| match a {
                    TraceArg::Array(r) => Some(array(r, &values)),
                    TraceArg::Scalar(_) => None,
                })
                .collect::<Result<_>>()?;
            let first = || arrays.first().ok_or_else(lost);
            let second = || arrays.get(1).ok_or_else(lost);
            let op = match &step.op {
                StepOp::Op(op) => op,
                StepOp::Call { run, .. } => {
                    let y = run(rt, tape, &arrays)?;
                    if let Some(name) = step.name {
                        tape.rename(&y, name);
                    }
                    values.push(y);
                    continue;
                }
            };
            let y = match op {
                OpRecord::Binary(op) => {
                    let mut it = arrays.iter();
                    let mut operand = |a: &TraceArg| -> Result<Operand<'_>> {
                        Ok(match a {
                            TraceArg::Scalar(s) => Operand::Scalar(*s),
                            TraceArg::Array(_) => Operand::Array(it.next().ok_or_else(lost)?),
                        })
                    };
                    let (Some(l), Some(r)) = (step.args.first(), step.args.get(1)) else {
                        return Err(lost());
                    };
                    let (l, r) = (operand(l)?, operand(r)?);
                    tape.binary(*op, l, r)?
                }
                OpRecord::Unary(op) => tape.unary(first()?, *op)?,
                OpRecord::Reduce { op, axes, keepdims } => {
                    tape.reduce(first()?, *op, axes.as_deref(), *keepdims)?
                }
                OpRecord::Matmul => tape.matmul(first()?, second()?)?,
                OpRecord::MatmulNT => tape.matmul_nt(first()?, second()?)?,
                OpRecord::Dot => tape.dot(first()?, second()?)?,
                OpRecord::BiasAct(act) => tape.bias_act(first()?, second()?, *act)?,
                OpRecord::Reshape => {
                    let x = first()?;
                    let mut shape = to_isize(&step.shape);
                    // Another batch size: the leading axis follows the input, as a
                    // `view(x.size(0), -1)` PyTorch traced would.
                    if x.size() != step.shape.iter().product::<usize>() {
                        if let Some(d) = shape.first_mut() {
                            *d = -1;
                        }
                    }
                    tape.reshape(x, &shape)?
                }
                OpRecord::Transpose(axes) => tape.transpose(first()?, axes.as_deref())?,
                OpRecord::Index(items) => tape.index(first()?, items)?,
                OpRecord::Copy => {
                    let x = first()?;
                    if x.dtype() != step.dtype {
                        tape.astype(x, step.dtype)?
                    } else {
                        tape.copy_to(rt, x, step.device)?
                    }
                }
                OpRecord::Concat(axis) => tape.concat(&arrays, *axis)?,
                OpRecord::Stack(axis) => tape.stack(&arrays, *axis)?,
                OpRecord::Clip(min, max) => tape.clip(first()?, *min, *max)?,
                _ => return Err(value_err("internal error: a traced op cannot be replayed; please report this as a devarray bug")),
            };
            if let Some(name) = step.name {
                tape.rename(&y, name);
            }
            values.push(y);
        }
        match self.output {
            TraceRef::Step(i) => values.get(i).cloned().ok_or_else(lost),
            TraceRef::Input(k) => inputs.get(k).cloned().ok_or_else(lost),
            TraceRef::Const(_) => Err(lost()),
        }
    }
}
