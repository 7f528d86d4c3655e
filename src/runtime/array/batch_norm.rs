//! Batch normalization as one op per direction (the backends' `batch_norm` kernels: CPU in
//! `backend/cpu/norm.rs`, CUDA in `kernels/norm.cu`; a simulated GPU queues the CPU kernel as one
//! job). The tape keeps x, the mean and 1/sqrt(var + eps) and runs `batch_norm_backward`.
use super::{
    allocate_many, shape_tuple, Array, DType, Dims, Result, RuntimeError, Storage, StorageRef,
};
use crate::backend::cpu::norm::Dims as NormDims;
use crate::backend::BackendStorage;

/// What the forward computes: the output and the per-channel statistics it used (shape (C,)).
pub struct BatchNormOutputs {
    pub y: Array,
    pub mean: Array,
    /// The biased variance (the batch's, or the running one given).
    pub var: Array,
    /// 1 / sqrt(var + eps).
    pub invstd: Array,
}

/// (n, c, inner) of an (N, C, ...) array.
fn geometry(x: &Array) -> Result<[usize; 3]> {
    match x.shape() {
        [n, c, rest @ ..] => Ok([*n, *c, rest.iter().product()]),
        _ => Err(RuntimeError::Shape(format!(
            "batch_norm: expected an input with a batch and a channel axis (at least 2-d), got shape {}",
            shape_tuple(x.shape())
        ))),
    }
}

/// The checks every backend relies on: one float dtype, one device, (C,) statistics.
fn check(x: &Array, c: usize, others: &[(&str, &Array)]) -> Result<()> {
    if !x.dtype().is_float() {
        return Err(RuntimeError::DType(format!(
            "batch_norm: expected a floating-point input, got {}",
            x.dtype()
        )));
    }
    for (what, a) in others {
        x.check_same_device(a, "batch_norm")?;
        if a.dtype() != x.dtype() {
            return Err(RuntimeError::DType(format!(
                "batch_norm: {what} is {} but the input is {}",
                a.dtype(),
                x.dtype()
            )));
        }
        if a.size() != c {
            return Err(RuntimeError::Shape(format!(
                "batch_norm: {what} has {} elements but the input has {c} channels (shape {})",
                a.size(),
                shape_tuple(x.shape())
            )));
        }
    }
    Ok(())
}

fn mixed() -> RuntimeError {
    RuntimeError::Value("internal error: batch_norm over two backends; please report it".into())
}

fn cpu(s: &Storage) -> Option<&crate::backend::CpuStorage> {
    match s {
        Storage::Cpu(s) => Some(s),
        Storage::Cuda(_) => None,
    }
}

fn cuda(s: &Storage) -> Option<&crate::backend::CudaStorage> {
    match s {
        Storage::Cuda(s) => Some(s),
        Storage::Cpu(_) => None,
    }
}

/// The storage of an optional (C,) scale or shift: the array's, or `fill` where there is none.
fn affine<'a>(x: &Storage, a: Option<&'a Array>, c: usize, fill: f64) -> Result<StorageRef<'a>> {
    Ok(match a {
        Some(a) => StorageRef::Borrowed(a.read()),
        None => StorageRef::Owned(match x {
            Storage::Cpu(_) => Storage::Cpu(crate::backend::CpuStorage::full(c, fill, x.dtype())?),
            Storage::Cuda(s) => Storage::Cuda(crate::backend::CudaStorage::full(
                s.device(),
                c,
                fill,
                x.dtype(),
            )?),
        }),
    })
}

impl Array {
    /// Batch normalization over every axis but 1 of this (N, C, ...) array: with `running`
    /// (mean, var) those normalize, else the batch's own statistics (one pass for them, one for
    /// the output). `gamma`, `beta` and the running statistics are (C,) of this dtype.
    pub fn batch_norm(
        &self,
        gamma: Option<&Array>,
        beta: Option<&Array>,
        running: Option<(&Array, &Array)>,
        eps: f64,
    ) -> Result<BatchNormOutputs> {
        let _op = super::op_scope("batch_norm");
        let [n, c, inner] = geometry(self)?;
        let mut others = Vec::new();
        others.extend(gamma.map(|a| ("weight", a)));
        others.extend(beta.map(|a| ("bias", a)));
        if let Some((m, v)) = running {
            others.extend([("running_mean", m), ("running_var", v)]);
        }
        check(self, c, &others)?;
        let (x, gamma, beta) = (self.clone(), gamma.cloned(), beta.cloned());
        let running = running.map(|(m, v)| (m.clone(), v.clone()));
        let dtype = self.dtype();
        let stat = || (Dims::from_slice(&[c]), dtype);
        let [y, mean, var, invstd] = allocate_many(
            self.ctx(),
            [
                (Dims::from_slice(self.shape()), dtype),
                stat(),
                stat(),
                stat(),
            ],
            move || {
                let xs = x.read();
                // A missing scale or shift is ones or zeros (exact, so the same bits).
                let gs = affine(&xs, gamma.as_ref(), c, 1.0)?;
                let bs = affine(&xs, beta.as_ref(), c, 0.0)?;
                let rs = running.as_ref().map(|(m, v)| (m.read(), v.read()));
                match &*xs {
                    Storage::Cpu(xc) => {
                        let r = match &rs {
                            Some((m, v)) => {
                                Some((cpu(m).ok_or_else(mixed)?, cpu(v).ok_or_else(mixed)?))
                            }
                            None => None,
                        };
                        let d = NormDims { n, c, inner };
                        let (g, b) = (cpu(&gs).ok_or_else(mixed)?, cpu(&bs).ok_or_else(mixed)?);
                        let out = xc.batch_norm(d, r, g, b, eps).ok_or_else(mixed)??;
                        Ok(out.map(Storage::Cpu))
                    }
                    Storage::Cuda(xc) => {
                        let r = match &rs {
                            Some((m, v)) => {
                                Some((cuda(m).ok_or_else(mixed)?, cuda(v).ok_or_else(mixed)?))
                            }
                            None => None,
                        };
                        let (g, b) = (cuda(&gs).ok_or_else(mixed)?, cuda(&bs).ok_or_else(mixed)?);
                        let out = xc.batch_norm([n, c, inner], r, g, b, eps)?;
                        Ok(out.map(Storage::Cuda))
                    }
                }
            },
        )?;
        Ok(BatchNormOutputs {
            y,
            mean,
            var,
            invstd,
        })
    }

    /// The gradients (dx, dgamma, dbeta) of `batch_norm` for the output gradient `g`, from this
    /// input and the `mean` and `invstd` the forward used. `batch_stats`: they were the batch's
    /// own (the gradient flows through them), not running statistics.
    pub fn batch_norm_backward(
        &self,
        g: &Array,
        mean: &Array,
        invstd: &Array,
        gamma: Option<&Array>,
        batch_stats: bool,
    ) -> Result<[Array; 3]> {
        let _op = super::op_scope("batch_norm_backward");
        let [n, c, inner] = geometry(self)?;
        let mut others = vec![("mean", mean), ("invstd", invstd)];
        others.extend(gamma.map(|a| ("weight", a)));
        check(self, c, &others)?;
        self.check_same_device(g, "batch_norm")?;
        if g.shape() != self.shape() || g.dtype() != self.dtype() {
            return Err(RuntimeError::Value(format!(
                "internal error: batch_norm gradient of shape {} {} for an input of shape {} {}; please report it",
                shape_tuple(g.shape()),
                g.dtype(),
                shape_tuple(self.shape()),
                self.dtype()
            )));
        }
        let dtype: DType = self.dtype();
        let (x, g, mean, invstd, gamma) = (
            self.clone(),
            g.clone(),
            mean.clone(),
            invstd.clone(),
            gamma.cloned(),
        );
        let stat = || (Dims::from_slice(&[c]), dtype);
        allocate_many(
            self.ctx(),
            [(Dims::from_slice(self.shape()), dtype), stat(), stat()],
            move || {
                let (xs, gs) = (x.read(), g.read());
                let (ms, ss) = (mean.read(), invstd.read());
                let gms = affine(&xs, gamma.as_ref(), c, 1.0)?;
                match &*xs {
                    Storage::Cpu(xc) => {
                        let d = NormDims { n, c, inner };
                        let out = xc
                            .batch_norm_backward(
                                cpu(&gs).ok_or_else(mixed)?,
                                d,
                                cpu(&ms).ok_or_else(mixed)?,
                                cpu(&ss).ok_or_else(mixed)?,
                                cpu(&gms).ok_or_else(mixed)?,
                                batch_stats,
                            )
                            .ok_or_else(mixed)??;
                        Ok(out.map(Storage::Cpu))
                    }
                    Storage::Cuda(xc) => {
                        let out = xc.batch_norm_backward(
                            cuda(&gs).ok_or_else(mixed)?,
                            [n, c, inner],
                            cuda(&ms).ok_or_else(mixed)?,
                            cuda(&ss).ok_or_else(mixed)?,
                            cuda(&gms).ok_or_else(mixed)?,
                            batch_stats,
                        )?;
                        Ok(out.map(Storage::Cuda))
                    }
                }
            },
        )
    }
}
