//! `gluon.Trainer` (SGD) and `gluon.utils.split_and_load`.
use std::rc::Rc;

use super::autograd::Tape;
use super::layers::Parameter;
use crate::runtime::{
    Array, BinaryOp, Device, IndexItem, Operand, Result, Runtime, RuntimeError, Scalar,
};

/// Plain SGD over a fixed list of parameters.
pub struct Trainer {
    pub params: Vec<Rc<Parameter>>,
    pub learning_rate: f64,
}

impl Trainer {
    /// One update: `w -= lr / batch_size * g`. With copies on several devices the gradients
    /// are first summed across them (on the first copy's device) and the same sum is applied
    /// to every copy, so the copies stay identical.
    ///
    /// All or nothing: every new value of every copy is computed first (the allocations and
    /// transfers that can fail, e.g. out of device memory); only then are they written into
    /// the parameters, which allocates nothing. A failed step changes no parameter.
    pub fn step(&self, rt: &Runtime, tape: &Tape, batch_size: f64) -> Result<()> {
        if batch_size <= 0.0 || !batch_size.is_finite() {
            return Err(RuntimeError::Value(format!(
                "Trainer.step: batch_size must be a positive number, got {batch_size}"
            )));
        }
        let scale = self.learning_rate / batch_size;
        let mut updated: Vec<(Array, Array)> = Vec::new();
        for p in &self.params {
            let copies = p.list_data()?;
            let Some(first) = copies.first() else {
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
            let Some(total) = total else { continue };
            let update = Array::binary(
                BinaryOp::Mul,
                Operand::Array(&total),
                Operand::Scalar(Scalar::Float(scale)),
            )?;
            for c in &copies {
                let local = update.as_in_device(rt, c.device())?;
                let new = Array::binary(BinaryOp::Sub, Operand::Array(c), Operand::Array(&local))?;
                updated.push((new, c.clone()));
            }
        }
        for (new, copy) in updated {
            new.copy_into(&copy)?;
        }
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
