//! A batch-folded convolution's input gradient as one primitive on the host, where it is made
//! a block of samples at a time (`backend/cpu/conv_grad.rs`); elsewhere, and where blocks do
//! not pay, the product then the adjoint pass; a 3x3 stride-1 window's by Winograd where that
//! pays (`conv_winograd.rs`).
use super::{patches_refused, Array, Patches, Result, Storage};
use crate::backend::cpu::conv_grad::block_samples;
use crate::runtime::timeline::op_scope;

impl Array {
    /// dx (shape `nchw`) of a batch-folded convolution with window `p`, for this weight
    /// (O, C*kh*kw) and the output gradient `g` as (O, N*L): `adjoint(self^T g)`, which is
    /// `self.matmul_t(g, [true, false])` then `patches_cols_adjoint`, with the same values.
    pub fn conv_input_grad(&self, g: &Array, p: &Patches, nchw: [usize; 4]) -> Result<Array> {
        if let Some(dx) = self.winograd_input_grad(g, p, nchw)? {
            return Ok(dx);
        }
        let [n, c, _, _] = nchw;
        let (taps, l) = (p.kernel[0] * p.kernel[1], p.out[0] * p.out[1]);
        let blocks = match (self.shape(), g.shape()) {
            (&[o, rows], &[og, nl])
                if o == og
                    && rows == c * taps
                    && nl == n * l
                    && self.dtype() == g.dtype()
                    && self.dtype().has_float_kernels()
                    && !self.ctx().placement.is_cuda()
                    && self.device() == g.device() =>
            {
                block_samples(n, l, o, rayon::current_num_threads()).map(|per| (o, per))
            }
            _ => None,
        };
        let Some((o, per)) = blocks else {
            return self
                .matmul_t(g, [true, false])?
                .patches_cols_adjoint(p, nchw);
        };
        let _op = op_scope("conv_input_grad");
        let (w, g, p) = (self.clone(), g.clone(), *p);
        self.derive(nchw.to_vec(), self.dtype(), move || {
            let (ws, gs) = (w.read(), g.read());
            match (&*ws, &*gs) {
                (Storage::Cpu(ws), Storage::Cpu(gs)) => ws.conv_input_grad(gs, nchw, o, &p, per),
                _ => None,
            }
            .ok_or_else(|| patches_refused("conv_input_grad", &w))?
            .map(Storage::Cpu)
        })
    }
}
