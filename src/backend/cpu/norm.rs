//! Batch normalization as one primitive (`Array::batch_norm`): per-channel statistics, the
//! normalise-and-affine pass and the backward, over a row-major (n, c, inner) block (axis 1 is
//! the channel). Sums are taken in f64 (in `LANES` running sums) and, for the statistics, in two
//! passes over the channel (mean, then squared deviations), as accurate as the composed path; channels run on rayon's
//! threads when the block is large enough to pay for it.
use super::element::Float;
use super::kernels::{alloc, PARALLEL_THRESHOLD};
use crate::vocab::error::Result;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// The geometry: `n` samples, `c` channels, `inner` positions per channel and sample.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub n: usize,
    pub c: usize,
    pub inner: usize,
}

impl Dims {
    /// Values per channel.
    fn count(self) -> usize {
        self.n * self.inner
    }
    fn parallel(self) -> bool {
        self.c > 1 && self.n * self.c * self.inner > PARALLEL_THRESHOLD
    }
}

/// `f(ch)` for every channel, on rayon's threads when the block is large.
fn per_channel<R: Send>(d: Dims, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    if d.parallel() {
        (0..d.c).into_par_iter().map(f).collect()
    } else {
        (0..d.c).map(f).collect()
    }
}

/// Where channel `ch`'s run of `inner` values starts in each sample.
fn runs(d: Dims, ch: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..d.n).map(move |b| {
        let at = (b * d.c + ch) * d.inner;
        at..at + d.inner
    })
}

/// Lanes of running f64 sums. One running sum is a chain of dependent adds at a fraction of the
/// adder's rate (batch norm's statistics and backward sums were most of its time); `LANES`
/// independent ones, added together at the end, vectorise.
const LANES: usize = 8;

/// The sum of `lanes`, pairwise.
fn lanes_total(l: [f64; LANES]) -> f64 {
    ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]))
}

/// `f(v)` summed over `xs` into `acc`, element i into lane i % LANES (the tail into lane 0..).
#[inline(always)]
fn sum_into<T: Float>(acc: &mut [f64; LANES], xs: &[T], f: impl Fn(f64) -> f64) {
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += f(v.to_f64());
        }
    }
    for (a, v) in acc.iter_mut().zip(tail) {
        *a += f(v.to_f64());
    }
}

/// Per-channel mean and biased variance of `x`, in f64.
pub fn stats<T: Float>(x: &[T], d: Dims) -> Vec<(f64, f64)> {
    per_channel(d, |ch| channel_stats(x, d, ch))
}

multiversion! {
    /// One channel's mean and biased variance, in the widest vectors the CPU has (the f64 sums
    /// take twice the lanes of the values).
    fn channel_stats<T: Float>(x: &[T], d: Dims, ch: usize) -> (f64, f64) {
        let m = d.count().max(1) as f64;
        let mut acc = [0.0; LANES];
        for r in runs(d, ch) {
            sum_into(&mut acc, &x[r], |v| v);
        }
        let mean = lanes_total(acc) / m;
        let mut acc = [0.0; LANES];
        for r in runs(d, ch) {
            sum_into(&mut acc, &x[r], |v| {
                let t = v - mean;
                t * t
            });
        }
        (mean, lanes_total(acc) / m)
    }
}

/// `((x - mean) * invstd) * gamma + beta` per channel, in the element type, in the order the
/// composed path computes it.
pub fn normalize<T: Float>(
    x: &[T],
    d: Dims,
    mean: &[T],
    invstd: &[T],
    gamma: &[T],
    beta: &[T],
) -> Result<Vec<T>> {
    let plane = d.c * d.inner;
    by_sample(x.len(), plane, d, |b, out| {
        for ch in 0..d.c {
            let at = ch * d.inner;
            let src = &x[b * plane + at..][..d.inner];
            let coef = [mean[ch], invstd[ch], gamma[ch], beta[ch]];
            normalize_run(src, &mut out[at..at + d.inner], coef);
        }
    })
}

multiversion! {
    /// One run of `normalize`: `((v - mean) * invstd) * gamma + beta`.
    fn normalize_run<T: Float>(src: &[T], out: &mut [MaybeUninit<T>], coef: [T; 4]) -> () {
        let [m, s, g, bt] = coef;
        for (o, &v) in out.iter_mut().zip(src) {
            o.write(v.sub(m).mul(s).mul(g).add(bt));
        }
    }
}

/// A new vector of `len` elements written one sample's plane of `plane` at a time by `fill`
/// (which must write every element of the plane it is given), samples on rayon's threads when
/// the block is large.
fn by_sample<T: Float>(
    len: usize,
    plane: usize,
    d: Dims,
    fill: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync + Send,
) -> Result<Vec<T>> {
    let mut out = alloc::<T>(len)?;
    if plane > 0 {
        let spare = &mut out.spare_capacity_mut()[..len];
        if d.parallel() && d.n > 1 {
            spare
                .par_chunks_mut(plane)
                .enumerate()
                .for_each(|(b, p)| fill(b, p));
        } else {
            for (b, p) in spare.chunks_mut(plane).enumerate() {
                fill(b, p);
            }
        }
    }
    // SAFETY: `fill` wrote every element of every plane, and the planes cover the first `len`
    // (capacity is at least `len`; `len` is a multiple of `plane`, or 0 when the plane is).
    unsafe { out.set_len(if plane > 0 { len } else { 0 }) };
    Ok(out)
}

multiversion! {
    /// One channel's sum(g) and sum(g * (x - mu)), in f64, in the widest vectors the CPU has.
    fn channel_grad_sums<T: Float>(x: &[T], g: &[T], d: Dims, ch: usize, mu: f64) -> (f64, f64) {
        let (mut sg, mut sgc) = ([0.0; LANES], [0.0; LANES]);
        for r in runs(d, ch) {
            let (xs, gs) = (&x[r.clone()], &g[r]);
            sum_into(&mut sg, gs, |gv| gv);
            let xc = xs.chunks_exact(LANES);
            let tail = xc
                .remainder()
                .iter()
                .zip(gs.chunks_exact(LANES).remainder());
            for (xc, gc) in xc.zip(gs.chunks_exact(LANES)) {
                for ((a, &v), &gv) in sgc.iter_mut().zip(xc).zip(gc) {
                    *a += gv.to_f64() * (v.to_f64() - mu);
                }
            }
            for (a, (&v, &gv)) in sgc.iter_mut().zip(tail) {
                *a += gv.to_f64() * (v.to_f64() - mu);
            }
        }
        (lanes_total(sg), lanes_total(sgc))
    }
}

/// What the backward returns: the input's gradient and the per-channel scale and shift ones.
pub struct Grads<T> {
    pub dx: Vec<T>,
    pub dgamma: Vec<T>,
    pub dbeta: Vec<T>,
}

/// The gradient of `normalize`. With `batch_stats` the mean and variance were the batch's own, so
/// the gradient flows through them too:
/// dx = gamma * invstd * (g - mean(g) - xhat * mean(g * xhat)); otherwise (running statistics,
/// constants) dx = g * gamma * invstd. dgamma = sum(g * xhat), dbeta = sum(g) either way.
#[allow(clippy::too_many_arguments)]
pub fn backward<T: Float>(
    x: &[T],
    g: &[T],
    d: Dims,
    mean: &[T],
    invstd: &[T],
    gamma: &[T],
    batch_stats: bool,
) -> Result<Grads<T>> {
    // Pass 1: per channel, sum(g) and sum(g * (x - mean)) in f64.
    let sums = per_channel(d, |ch| channel_grad_sums(x, g, d, ch, mean[ch].to_f64()));
    let m = d.count().max(1) as f64;
    let mut dgamma = Vec::with_capacity(d.c);
    let mut dbeta = Vec::with_capacity(d.c);
    // Per channel: dx = g * a - b - (x - mean) * k.
    let mut coef = Vec::with_capacity(d.c);
    for (ch, &(sg, sgc)) in sums.iter().enumerate() {
        let (s, gm) = (invstd[ch].to_f64(), gamma[ch].to_f64());
        dbeta.push(T::from_f64(sg));
        dgamma.push(T::from_f64(sgc * s));
        let a = gm * s;
        coef.push(if batch_stats {
            (
                T::from_f64(a),
                T::from_f64(a * sg / m),
                T::from_f64(a * sgc * s * s / m),
            )
        } else {
            (T::from_f64(a), T::zero(), T::zero())
        });
    }
    // Pass 2: dx, one sample's planes at a time.
    let plane = d.c * d.inner;
    let dx = by_sample(x.len(), plane, d, |b, out| {
        for (ch, &(a, bb, k)) in coef.iter().enumerate() {
            let at = b * plane + ch * d.inner;
            let (xs, gs) = (&x[at..at + d.inner], &g[at..at + d.inner]);
            let mu = mean[ch];
            let out = &mut out[ch * d.inner..(ch + 1) * d.inner];
            grad_run(xs, gs, out, [a, bb, k, mu], batch_stats);
        }
    })?;
    Ok(Grads { dx, dgamma, dbeta })
}

multiversion! {
    /// One run of the backward's dx: `g * a - b - (x - mu) * k` with batch statistics, else
    /// `g * a`.
    fn grad_run<T: Float>(
        xs: &[T],
        gs: &[T],
        out: &mut [MaybeUninit<T>],
        coef: [T; 4],
        batch_stats: bool,
    ) -> () {
        let [a, bb, k, mu] = coef;
        if batch_stats {
            for ((o, &v), &gv) in out.iter_mut().zip(xs).zip(gs) {
                o.write(gv.mul(a).sub(bb).sub(v.sub(mu).mul(k)));
            }
        } else {
            for (o, &gv) in out.iter_mut().zip(gs) {
                o.write(gv.mul(a));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_and_gradient_of_a_small_block() {
        // Two samples, two channels, two positions.
        let x = [1.0f64, 3.0, 10.0, 10.0, 5.0, 7.0, 20.0, 40.0];
        let d = Dims {
            n: 2,
            c: 2,
            inner: 2,
        };
        let st = stats(&x, d);
        assert_eq!(st[0], (4.0, 5.0));
        assert_eq!(st[1], (20.0, 150.0));
        let mean = [4.0, 20.0];
        let invstd: Vec<f64> = st.iter().map(|s| 1.0 / s.1.sqrt()).collect();
        let y = normalize(&x, d, &mean, &invstd, &[1.0, 1.0], &[0.0, 0.0]).unwrap();
        let total: f64 = y.iter().sum();
        assert!(total.abs() < 1e-12);
        // A gradient of all ones passes nothing back through batch statistics.
        let g = [1.0; 8];
        let r = backward(&x, &g, d, &mean, &invstd, &[2.0, 2.0], true).unwrap();
        assert!(r.dx.iter().all(|v| v.abs() < 1e-12));
        assert_eq!(r.dbeta, vec![4.0, 4.0]);
    }
}
