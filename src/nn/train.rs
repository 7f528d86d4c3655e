//! `gluon.Trainer` (MXNet's sgd, nag and adam) and `gluon.utils.split_and_load`.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::autograd::Tape;
use super::layers::Parameter;
use super::optim::{update, Algorithm, SlotState};
use crate::runtime::{Array, BinaryOp, Device, IndexItem, Operand, Result, Runtime, RuntimeError};

/// `gluon.Trainer`: an MXNet optimizer over a fixed list of parameters, with its state
/// (momentum, Adam's moments, the update count) per parameter and per device copy.
pub struct Trainer {
    pub params: Vec<Rc<Parameter>>,
    /// The optimizer's name as MXNet registers it (`sgd`, `nag`, `adam`).
    pub optimizer: String,
    pub algorithm: Algorithm,
    pub learning_rate: Cell<f64>,
    /// MXNet's `rescale_grad` before `step` divides it by the batch size.
    pub rescale_grad: f64,
    /// `states[p][c]`: parameter p's state on its copy c.
    states: RefCell<Vec<Vec<SlotState>>>,
}

impl Trainer {
    pub fn new(
        params: Vec<Rc<Parameter>>,
        optimizer: &str,
        algorithm: Algorithm,
        learning_rate: f64,
        rescale_grad: f64,
    ) -> Trainer {
        let states = RefCell::new(vec![Vec::new(); params.len()]);
        Trainer {
            params,
            optimizer: optimizer.to_string(),
            algorithm,
            learning_rate: Cell::new(learning_rate),
            rescale_grad,
            states,
        }
    }

    /// One update with the gradients rescaled by `rescale_grad / batch_size`. With copies on
    /// several devices the gradients are first summed across them (on the first copy's
    /// device, as MXNet's kvstore 'device' does) and the same sum updates every copy, so the
    /// copies stay identical.
    ///
    /// All or nothing: every new value and state of every copy is computed first (the
    /// allocations and transfers that can fail, e.g. out of device memory); only then are
    /// they written, which allocates nothing. A failed step changes no parameter.
    pub fn step(&self, rt: &Runtime, tape: &Tape, batch_size: f64) -> Result<()> {
        if batch_size <= 0.0 || !batch_size.is_finite() {
            return Err(RuntimeError::Value(format!(
                "Trainer.step: batch_size must be a positive number, got {batch_size}"
            )));
        }
        let rescale = self.rescale_grad / batch_size;
        let lr = self.learning_rate.get();
        let mut updated: Vec<(Array, Array)> = Vec::new();
        let mut new_states: Vec<Vec<SlotState>> = Vec::with_capacity(self.params.len());
        let states = self.states.borrow();
        for (i, p) in self.params.iter().enumerate() {
            let copies = p.list_data()?;
            // A constant (`params.get_constant`) is not trained, as in MXNet (grad_req='null').
            let Some(first) = copies
                .first()
                .filter(|_| !p.constant.get() && !p.buffer.get())
            else {
                new_states.push(Vec::new());
                continue;
            };
            let mut total: Option<Array> = None;
            for c in &copies {
                let g = tape.grad(c).ok_or_else(|| {
                    RuntimeError::Value(format!("Parameter '{}' has no gradient buffer", p.name))
                })?;
                let g = g.as_in_device(rt, first.device())?;
                total = Some(match total {
                    None => g,
                    Some(t) => {
                        Array::binary(BinaryOp::Add, Operand::Array(&t), Operand::Array(&g))?
                    }
                });
            }
            let Some(total) = total else {
                new_states.push(Vec::new());
                continue;
            };
            let old = states.get(i);
            let mut param_states = Vec::with_capacity(copies.len());
            for (k, c) in copies.iter().enumerate() {
                let local = total.as_in_device(rt, c.device())?;
                // A state from copies on other devices (reset_ctx moved them) starts over.
                let prev = old
                    .and_then(|s| s.get(k))
                    .filter(|s| s.buffers.iter().all(|b| b.device() == c.device()))
                    .cloned()
                    .unwrap_or_default();
                let (new, state) = update(&self.algorithm, lr, rescale, c, &local, &prev)?;
                updated.push((new, c.clone()));
                param_states.push(state);
            }
            new_states.push(param_states);
        }
        drop(states);
        for (new, copy) in updated {
            new.copy_into(&copy)?;
        }
        *self.states.borrow_mut() = new_states;
        Ok(())
    }
}

/// Splits `data` along axis 0 into one slice per device and copies each there.
pub fn split_and_load(
    rt: &Runtime,
    data: &Array,
    devices: &[Device],
    even_split: bool,
) -> Result<Vec<Array>> {
    let k = devices.len();
    if k == 0 {
        return Err(RuntimeError::Value(
            "split_and_load: the device list is empty; pass e.g. [gpu(0), gpu(1)]".into(),
        ));
    }
    let n = data.shape().first().copied().ok_or_else(|| {
        RuntimeError::Shape("split_and_load: a 0-d array has no batch axis to split".into())
    })?;
    if let [only] = devices {
        return Ok(vec![data.as_in_device(rt, *only)?]);
    }
    if even_split && n % k != 0 {
        return Err(RuntimeError::Value(format!(
            "data with shape {} cannot be evenly split into {k} slices along axis 0. Use a batch size that is a multiple of {k}, or pass even_split=False to allow uneven slices",
            crate::runtime::shape::shape_tuple(data.shape())
        )));
    }
    if n < k {
        return Err(RuntimeError::Value(format!(
            "split_and_load: a batch of {n} cannot be split over {k} devices; use at least one sample per device"
        )));
    }
    let step = n / k;
    devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let stop = if i + 1 == k { n } else { (i + 1) * step };
            let part = data.index(&[IndexItem::Slice {
                start: Some((i * step) as i64),
                stop: Some(stop as i64),
                step: None,
            }])?;
            part.as_in_device(rt, *d)
        })
        .collect()
}
