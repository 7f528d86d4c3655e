//! The backward walk, one node at a time, and the gradient hooks it stops for.
//!
//! A walk visits the recorded nodes newest first (recording order is topological), summing
//! each input's gradient. [`Tape::walk_step`] returns where a tensor with hooks has its gradient
//! complete, so the caller can run user code there (PyTorch's `register_hook`) with no borrow
//! of the tape held, and hand back a replacement through [`Walk::set_grad`]. A non-leaf's
//! gradient is complete when the walk reaches the node that made it; a leaf's after the last
//! node that reads it (PyTorch runs a leaf's `AccumulateGrad` as soon as it is ready).

use std::any::Any;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

use super::{node_backward, Input, Tape};
use crate::runtime::{Array, BinaryOp, Operand, Result, Runtime};

/// A hook registered on a tensor: its payload is the caller's (the language's callable), kept
/// opaque so that this layer knows nothing of the language.
pub(super) struct TensorHook {
    pub(super) handle: u64,
    pub(super) var: Array,
    pub(super) payload: Rc<dyn Any>,
}

/// A backward in progress (see the module comment).
pub struct Walk {
    pub(super) grads: HashMap<usize, Array>,
    pub(super) used: Vec<bool>,
    /// Nodes below this index are still to be visited.
    next: usize,
    /// Gradients the caller reads after the walk (attached arrays, `wanted`): never dropped.
    kept: HashSet<usize>,
    /// Outputs of recorded nodes: an input outside this set and `kept` needs no gradient.
    produced: HashSet<usize>,
    /// Whether hooks run (PyTorch's backward), and the hooked leaves by the lowest index of a
    /// node that reads them.
    hooks: bool,
    leaf_ready_at: HashMap<usize, usize>,
    /// Whether the hooks of node `next - 1`'s output have run.
    output_hooked: bool,
    /// Hooked leaves whose gradients are complete, to report next.
    ready: VecDeque<usize>,
}

impl Walk {
    /// Replaces the gradient of array `id` (what a hook returned).
    pub fn set_grad(&mut self, id: usize, grad: Array) {
        self.grads.insert(id, grad);
    }
}

impl Tape {
    /// Registers `payload` as a hook of `var`'s gradient; returns its handle.
    pub fn add_hook(&mut self, var: &Array, payload: Rc<dyn Any>) -> u64 {
        self.hook_count += 1;
        let handle = self.hook_count;
        self.hooks.push(TensorHook {
            handle,
            var: var.clone(),
            payload,
        });
        handle
    }

    /// Removes the hook with this handle (nothing if it is gone).
    pub fn remove_hook(&mut self, handle: u64) {
        self.hooks.retain(|h| h.handle != handle);
    }

    /// The hooks of array `id`, in registration order.
    pub fn hooks_of(&self, id: usize) -> Vec<Rc<dyn Any>> {
        (self.hooks.iter())
            .filter(|h| h.var.id() == id)
            .map(|h| h.payload.clone())
            .collect()
    }

    fn hooked(&self, id: usize) -> bool {
        self.hooks.iter().any(|h| h.var.id() == id)
    }

    /// Starts a walk from `head` seeded with `seed`; `wanted` gradients are kept for the
    /// caller, and `hooks` says whether the walk stops for hooked tensors.
    pub(super) fn begin_walk(
        &self,
        head: &Array,
        seed: Array,
        wanted: &[usize],
        hooks: bool,
    ) -> Walk {
        let kept: HashSet<usize> = (self.attached.values().map(|e| e.var.id()))
            .chain(wanted.iter().copied())
            .collect();
        let produced: HashSet<usize> = self.nodes.iter().map(|n| n.output.id()).collect();
        let mut leaf_ready_at = HashMap::new();
        if hooks && !self.hooks.is_empty() {
            for (i, node) in self.nodes.iter().enumerate() {
                for input in &node.inputs {
                    if let Input::Array(a) = input {
                        if !produced.contains(&a.id()) && self.hooked(a.id()) {
                            leaf_ready_at.entry(a.id()).or_insert(i);
                        }
                    }
                }
            }
        }
        Walk {
            grads: HashMap::from([(head.id(), seed)]),
            used: vec![false; self.nodes.len()],
            next: self.nodes.len(),
            kept,
            produced,
            hooks: hooks && !self.hooks.is_empty(),
            leaf_ready_at,
            output_hooked: false,
            ready: VecDeque::new(),
        }
    }

    /// Walks on until a hooked tensor's gradient is complete (its id and gradient) or the walk
    /// ends (None).
    pub fn walk_step(&self, rt: &Runtime, walk: &mut Walk) -> Result<Option<(usize, Array)>> {
        loop {
            if let Some(id) = walk.ready.pop_front() {
                if let Some(g) = walk.grads.get(&id) {
                    return Ok(Some((id, g.clone())));
                }
                continue;
            }
            let Some(i) = walk.next.checked_sub(1) else {
                return Ok(None);
            };
            let Some(node) = self.nodes.get(i) else {
                // Nodes a hook's own code removed: nothing left to visit there.
                walk.next = i;
                continue;
            };
            let id = node.output.id();
            if walk.hooks && !walk.output_hooked && self.hooked(id) {
                if let Some(g) = walk.grads.get(&id) {
                    walk.output_hooked = true;
                    return Ok(Some((id, g.clone())));
                }
            }
            walk.output_hooked = false;
            walk.next = i;
            // An intermediate gradient is dropped once its node has passed it on, so the
            // backward holds the gradients of one frontier at a time, not of the whole graph.
            let g = if walk.kept.contains(&id) {
                walk.grads.get(&id).cloned()
            } else {
                walk.grads.remove(&id)
            };
            if let Some(g) = g {
                if let Some(flag) = walk.used.get_mut(i) {
                    *flag = true;
                }
                let needs =
                    |a: &Array| walk.kept.contains(&a.id()) || walk.produced.contains(&a.id());
                let input_grads = node_backward(rt, node, &g, &needs)?;
                for (input, grad) in node.inputs.iter().zip(input_grads) {
                    let (Input::Array(x), Some(grad)) = (input, grad) else {
                        continue;
                    };
                    let merged = match walk.grads.remove(&x.id()) {
                        Some(prev) => Array::binary(
                            BinaryOp::Add,
                            Operand::Array(&prev),
                            Operand::Array(&grad),
                        )?,
                        None => grad,
                    };
                    walk.grads.insert(x.id(), merged);
                }
            }
            for input in &node.inputs {
                if let Input::Array(x) = input {
                    if walk.leaf_ready_at.get(&x.id()) == Some(&i) {
                        walk.leaf_ready_at.remove(&x.id());
                        walk.ready.push_back(x.id());
                    }
                }
            }
        }
    }
}
