//! Generic CPU loops. Each is monomorphised per element type; contiguous inputs take a straight
//! (auto-vectorised) path, and arrays above `PARALLEL_THRESHOLD` elements are split across cores.
use super::cancel::Cancel;
use super::element::{Element, Num};
use crate::vocab::error::Result;
use rayon::prelude::*;

/// Below this many elements a kernel stays on the calling thread: waking rayon costs more.
pub const PARALLEL_THRESHOLD: usize = 1 << 16;

/// A vector with room for `n` elements, or OutOfMemory instead of an allocation abort.
pub fn alloc<T: Element>(n: usize) -> Result<Vec<T>> {
    if let Some(v) = super::pool::take(n) {
        return Ok(v);
    }
    let mut v = Vec::new();
    // Buffers the pool keeps for reuse are the first thing to give up when memory runs out.
    if v.try_reserve_exact(n).is_err()
        && (!super::pool::free_kept() || v.try_reserve_exact(n).is_err())
    {
        return Err(crate::vocab::memory::host_out_of_memory(
            (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        ));
    }
    advise_huge_pages(&mut v);
    Ok(v)
}

/// From this size up, a new buffer asks for transparent huge pages (as numpy does): first-touch
/// page faults dominate filling new memory, and a 2 MiB page takes one fault instead of 512.
const HUGE_PAGE_BYTES: usize = 4 << 20;

#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(v: &mut Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_PAGE_BYTES {
        return;
    }
    const PAGE: usize = 4096;
    let start = v.as_mut_ptr() as usize;
    let aligned = start.next_multiple_of(PAGE);
    let len = (start + bytes).saturating_sub(aligned) / PAGE * PAGE;
    // SAFETY: the range lies inside this vector's own allocation, page-aligned as madvise needs.
    // MADV_HUGEPAGE is advice: it changes no contents, and a refusal (e.g. THP disabled) is harmless.
    unsafe {
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages<T>(_: &mut Vec<T>) {}

/// True when `strides` read `shape` in row-major order (dims of size 1 may have any stride).
pub fn is_row_major(shape: &[usize], strides: &[usize]) -> bool {
    let mut expected = 1usize;
    for (&dim, &stride) in shape.iter().zip(strides).rev() {
        if dim != 1 && stride != expected {
            return false;
        }
        expected = expected.saturating_mul(dim);
    }
    true
}

/// Visits every element of `shape` in row-major order with two strided offsets.
pub fn walk2(
    shape: &[usize],
    strides_a: &[isize],
    offset_a: isize,
    strides_b: &[isize],
    offset_b: isize,
    mut visit: impl FnMut(usize, usize),
) {
    if shape.contains(&0) {
        return;
    }
    let ndim = shape.len();
    if ndim == 0 {
        visit(offset_a as usize, offset_b as usize);
        return;
    }
    let inner = shape[ndim - 1];
    let (step_a, step_b) = (strides_a[ndim - 1], strides_b[ndim - 1]);
    let mut index = vec![0usize; ndim - 1];
    let (mut row_a, mut row_b) = (offset_a, offset_b);
    loop {
        let (mut pa, mut pb) = (row_a, row_b);
        for _ in 0..inner {
            visit(pa as usize, pb as usize);
            pa += step_a;
            pb += step_b;
        }
        let mut d = ndim - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            row_a += strides_a[d];
            row_b += strides_b[d];
            if index[d] < shape[d] {
                break;
            }
            row_a -= strides_a[d] * shape[d] as isize;
            row_b -= strides_b[d] * shape[d] as isize;
            index[d] = 0;
        }
    }
}

/// True when a view with these (signed) strides is one contiguous run in row-major order.
fn is_dense_view(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected = 1isize;
    for (&dim, &stride) in shape.iter().zip(strides).rev() {
        if dim != 1 && stride != expected {
            return false;
        }
        expected = expected.saturating_mul(dim as isize);
    }
    true
}

/// Appends `src` to the empty, pre-reserved `out`, on both cores for large copies. Each core
/// copies one contiguous part with `memcpy`, which for large sizes uses non-temporal stores (no
/// read of the destination before it is written).
fn copy_parallel<T: Element>(out: &mut Vec<T>, src: &[T]) {
    let n = src.len();
    if n <= PARALLEL_THRESHOLD * 16 {
        out.extend_from_slice(src);
        return;
    }
    let part = n.div_ceil(rayon::current_num_threads().max(1));
    let start = out.len();
    out.spare_capacity_mut()[..n]
        .par_chunks_mut(part)
        .zip(src.par_chunks(part))
        .for_each(|(dst, from)| {
            // SAFETY: `dst` and `from` are chunks of equal length (same chunk size over n
            // elements each) of two different allocations; MaybeUninit<T> has T's layout.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    from.as_ptr(),
                    dst.as_mut_ptr().cast::<T>(),
                    from.len(),
                )
            };
        });
    // SAFETY: the chunks above wrote all n elements after the first `start` (capacity >= start + n,
    // as the caller reserved it).
    unsafe { out.set_len(start + n) };
}

fn signed(strides: &[usize]) -> Vec<isize> {
    strides.iter().map(|&s| s as isize).collect()
}

/// Elements per step of the large parallel loops: between steps they check for an interrupt.
const INTERRUPT_STEP: usize = 1 << 22;

pub fn map1<T: Element, U: Element>(a: &[T], f: impl Fn(T) -> U + Sync + Send) -> Result<Vec<U>> {
    let mut out = alloc(a.len())?;
    if a.len() > PARALLEL_THRESHOLD {
        let cancel = Cancel::current();
        for part in a.chunks(INTERRUPT_STEP) {
            cancel.check()?;
            out.par_extend(part.par_iter().map(|&x| f(x)));
        }
    } else {
        out.extend(a.iter().map(|&x| f(x)));
    }
    Ok(out)
}

/// Elements per block of `map_blocks`: a few blocks of float64 fit in a 32 KiB L1 cache.
pub const BLOCK: usize = 1024;

/// Elements per parallel task of `map_blocks` (rayon splits the work into these).
const TASK: usize = 32 * BLOCK;

/// A new vector of `n` elements made block by block: `fill(start, block)` writes elements
/// `start..start + block.len()`. Blocks are computed in a stack buffer (in L1) and then written
/// once to the output, which is never zero-filled; large outputs are shared between cores.
pub fn map_blocks<T: Element>(n: usize, fill: impl Fn(usize, &mut [T]) + Sync) -> Result<Vec<T>> {
    let mut out = alloc::<T>(n)?;
    let run = |first: usize, part: &mut [std::mem::MaybeUninit<T>]| {
        let mut buf = [T::default(); BLOCK];
        for (k, piece) in part.chunks_mut(BLOCK).enumerate() {
            let block = &mut buf[..piece.len()];
            fill(first + k * BLOCK, block);
            for (slot, &value) in piece.iter_mut().zip(block.iter()) {
                slot.write(value);
            }
        }
    };
    let spare = &mut out.spare_capacity_mut()[..n];
    if n > PARALLEL_THRESHOLD {
        let cancel = Cancel::current();
        spare
            .par_chunks_mut(TASK)
            .enumerate()
            .for_each(|(i, part)| {
                // An interrupt skips the tasks not started; the output is then discarded.
                if !cancel.requested() {
                    run(i * TASK, part)
                }
            });
        cancel.check()?;
    } else {
        run(0, spare);
    }
    // SAFETY: the loops above wrote every one of the first n elements (capacity is >= n).
    unsafe { out.set_len(n) };
    Ok(out)
}

/// Elementwise binary op over two operands already broadcast to `shape` by their strides.
pub fn map2<T: Element, U: Element>(
    a: &[T],
    strides_a: &[usize],
    b: &[T],
    strides_b: &[usize],
    shape: &[usize],
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Vec<U>> {
    let n: usize = shape.iter().product();
    let mut out = alloc(n)?;
    let a_dense = a.len() == n && is_row_major(shape, strides_a);
    let b_dense = b.len() == n && is_row_major(shape, strides_b);
    let a_single = strides_a.iter().all(|&s| s == 0) && !a.is_empty();
    let b_single = strides_b.iter().all(|&s| s == 0) && !b.is_empty();
    let parallel = n > PARALLEL_THRESHOLD;
    let cancel = Cancel::current();
    if a_dense && b_dense {
        if parallel {
            for (pa, pb) in a.chunks(INTERRUPT_STEP).zip(b.chunks(INTERRUPT_STEP)) {
                cancel.check()?;
                out.par_extend(pa.par_iter().zip(pb.par_iter()).map(|(&x, &y)| f(x, y)));
            }
        } else {
            out.extend(a.iter().zip(b).map(|(&x, &y)| f(x, y)));
        }
    } else if a_dense && b_single {
        let y = b[0];
        if parallel {
            for pa in a.chunks(INTERRUPT_STEP) {
                cancel.check()?;
                out.par_extend(pa.par_iter().map(|&x| f(x, y)));
            }
        } else {
            out.extend(a.iter().map(|&x| f(x, y)));
        }
    } else if a_single && b_dense {
        let x = a[0];
        if parallel {
            for pb in b.chunks(INTERRUPT_STEP) {
                cancel.check()?;
                out.par_extend(pb.par_iter().map(|&y| f(x, y)));
            }
        } else {
            out.extend(b.iter().map(|&y| f(x, y)));
        }
    } else {
        walk2(
            shape,
            &signed(strides_a),
            0,
            &signed(strides_b),
            0,
            |i, j| out.push(f(a[i], b[j])),
        );
    }
    Ok(out)
}

/// Copies a strided view (offset, shape, strides possibly negative) into a new row-major vector.
pub fn gather<T: Element>(
    src: &[T],
    offset: usize,
    shape: &[usize],
    strides: &[isize],
) -> Result<Vec<T>> {
    let n: usize = shape.iter().product();
    let mut out = alloc(n)?;
    let cancel = Cancel::current();
    if is_dense_view(shape, strides) {
        // In steps, so an interrupt reaches a copy of gigabytes.
        for (k, piece) in src[offset..offset + n].chunks(INTERRUPT_STEP).enumerate() {
            if k > 0 {
                cancel.check()?;
            }
            copy_parallel(&mut out, piece);
        }
        return Ok(out);
    }
    let nd = shape.len();
    if n > 0 && nd >= 2 && strides[nd - 2] == 1 && shape[nd - 2] > 1 && shape[nd - 1] > 1 {
        // The last two axes transposed (what matmul's gradients read): copied in square tiles,
        // so that the strided reads reuse the cache lines they bring in.
        const TILE: usize = 32;
        let (rows, cols, step) = (shape[nd - 2], shape[nd - 1], strides[nd - 1]);
        out.resize(n, src[offset]);
        let outer: Vec<isize> = contiguous(&shape[..nd - 2])
            .iter()
            .map(|&s| (s * rows * cols) as isize)
            .collect();
        // An interrupt is checked after every INTERRUPT_STEP elements (between tiles).
        let mut since_check = 0usize;
        let mut stopped = None;
        walk2(
            &shape[..nd - 2],
            &strides[..nd - 2],
            offset as isize,
            &outer,
            0,
            |si, oi| {
                for i0 in (0..rows).step_by(TILE) {
                    for j0 in (0..cols).step_by(TILE) {
                        if stopped.is_some() {
                            return;
                        }
                        if since_check >= INTERRUPT_STEP {
                            since_check = 0;
                            if let Err(e) = cancel.check() {
                                stopped = Some(e);
                                return;
                            }
                        }
                        since_check += TILE * TILE;
                        for i in i0..(i0 + TILE).min(rows) {
                            let dst = &mut out[oi + i * cols..][..cols];
                            for (j, d) in dst
                                .iter_mut()
                                .enumerate()
                                .take((j0 + TILE).min(cols))
                                .skip(j0)
                            {
                                *d = src[(si as isize + i as isize + j as isize * step) as usize];
                            }
                        }
                    }
                }
            },
        );
        return match stopped {
            Some(e) => Err(e),
            None => Ok(out),
        };
    }
    let zeros = vec![0isize; shape.len()];
    if shape.len() < 2 {
        walk2(shape, strides, offset as isize, &zeros, 0, |i, _| {
            out.push(src[i])
        });
        return Ok(out);
    }
    for_outer_slices(shape, strides, offset as isize, &cancel, |sub, start| {
        walk2(sub, &strides[1..], start, &zeros[1..], 0, |i, _| {
            out.push(src[i])
        });
    })?;
    Ok(out)
}

/// Row-major strides (in elements) of `shape`.
fn contiguous(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// Calls `f(&shape[1..], offset)` for each slice along the first axis (`shape` has two axes
/// or more), checking for an interrupt after every [`INTERRUPT_STEP`] elements.
fn for_outer_slices(
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    cancel: &Cancel,
    mut f: impl FnMut(&[usize], isize),
) -> Result<()> {
    let slice: usize = shape[1..].iter().product();
    let mut since_check = 0usize;
    for k in 0..shape[0] {
        f(&shape[1..], offset + k as isize * strides[0]);
        since_check += slice;
        if since_check >= INTERRUPT_STEP {
            since_check = 0;
            cancel.check()?;
        }
    }
    Ok(())
}

/// Writes `src` (broadcast to `shape` by `src_strides`) into a strided view of `dst`.
pub fn scatter<T: Element>(
    dst: &mut [T],
    offset: usize,
    shape: &[usize],
    strides: &[isize],
    src: &[T],
    src_strides: &[usize],
) {
    let n: usize = shape.iter().product();
    if is_dense_view(shape, strides) && src.len() == n && is_row_major(shape, src_strides) {
        dst[offset..offset + n].copy_from_slice(src);
        return;
    }
    walk2(
        shape,
        strides,
        offset as isize,
        &signed(src_strides),
        0,
        |i, j| dst[i] = src[j],
    );
}

multiversion! {
    /// numpy's pairwise-sum leaf (8 < n <= 128): eight running sums in numpy's unrolled order,
    /// over whole chunks so the loop has no bounds checks and vectorises.
    fn pairwise_leaf<T: Num>(a: &[T]) -> T {
        let full = a.len() - a.len() % 8;
        let (body, rest) = a.split_at(full);
        let mut r = [T::zero(); 8];
        r.copy_from_slice(&body[..8]);
        for chunk in body[8..].chunks_exact(8) {
            for (acc, &x) in r.iter_mut().zip(chunk) {
                *acc = acc.add(x);
            }
        }
        let mut res = combine8(r);
        for &x in rest {
            res = res.add(x);
        }
        res
    }
}

/// numpy's combination of the eight running sums. Kept out of line: inlined, it leads the
/// vectoriser to split the accumulators across registers with shuffles in the hot loop.
#[inline(never)]
fn combine8<T: Num>(r: [T; 8]) -> T {
    (r[0].add(r[1]).add(r[2].add(r[3]))).add(r[4].add(r[5]).add(r[6].add(r[7])))
}

/// numpy's pairwise summation, so float32 sums round exactly as numpy's do. The two halves of a
/// large block are independent, so they run in parallel without changing the result.
pub fn pairwise_sum<T: Num>(a: &[T]) -> T {
    let n = a.len();
    if n < 8 {
        let mut res = T::zero();
        for &x in a {
            res = res.add(x);
        }
        res
    } else if n <= 128 {
        pairwise_leaf(a)
    } else {
        let mut half = n / 2;
        half -= half % 8;
        let (left, right) = a.split_at(half);
        if n > PARALLEL_THRESHOLD {
            let (l, r) = rayon::join(|| pairwise_sum(left), || pairwise_sum(right));
            l.add(r)
        } else {
            pairwise_sum(left).add(pairwise_sum(right))
        }
    }
}

/// The Euclidean (Frobenius) norm of all of `a`: squares summed in f64 with eight running sums
/// (one vectorised pass, both cores for large arrays), one square root, one rounding to `T`.
/// More accurate than squaring and summing in `T`, and a single pass instead of three.
pub fn norm2<T: Num>(a: &[T]) -> T {
    fn sum_squares<T: Num>(a: &[T]) -> f64 {
        if a.len() > PARALLEL_THRESHOLD {
            let (left, right) = a.split_at(a.len() / 2);
            let (l, r) = rayon::join(|| sum_squares(left), || sum_squares(right));
            return l + r;
        }
        sum_squares_block(a)
    }
    T::from_f64(sum_squares(a).sqrt())
}

multiversion! {
    fn sum_squares_block<T: Num>(a: &[T]) -> f64 {
        // 32 running sums: four independent vector chains, so adds are not latency-bound.
        let mut acc = [0.0f64; 32];
        let chunks = a.chunks_exact(32);
        let rest = chunks.remainder();
        for chunk in chunks {
            for (s, &x) in acc.iter_mut().zip(chunk) {
                let x = x.to_f64();
                *s += x * x;
            }
        }
        let tail: f64 = rest.iter().map(|&x| x.to_f64() * x.to_f64()).sum();
        total(&acc) + tail
    }
}

/// Out of line for the same reason as `combine8`.
#[inline(never)]
fn total(acc: &[f64]) -> f64 {
    acc.iter().sum()
}

/// Sum over the middle axis of a row-major (outer, len, inner) block.
pub fn reduce_sum<T: Num>(a: &[T], outer: usize, len: usize, inner: usize) -> Result<Vec<T>> {
    let mut out = alloc(outer * inner)?;
    if inner == 1 {
        if len == 0 {
            out.extend(std::iter::repeat_n(T::zero(), outer));
        } else {
            per_row(a, len, &mut out, pairwise_sum);
        }
        return Ok(out);
    }
    reduce_rows(
        a,
        outer,
        len,
        inner,
        Some(T::zero()),
        |acc, x| acc.add(x),
        &mut out,
    );
    Ok(out)
}

/// One value per row of `len` (> 0) elements, appended to `out`; the rows of a large array are
/// shared by the cores (each row's own order is unchanged).
fn per_row<T: Element, R: Send>(
    a: &[T],
    len: usize,
    out: &mut Vec<R>,
    f: impl Fn(&[T]) -> R + Send + Sync,
) {
    if a.len() > PARALLEL_THRESHOLD && a.len() > len {
        out.par_extend(a.par_chunks_exact(len).map(f));
    } else {
        out.extend(a.chunks_exact(len).map(f));
    }
}

/// Sequential fold over the middle axis, element by element (contiguous, so it vectorises), in
/// numpy's order for non-last axes: from `init`, or from the first slice when the op has no
/// identity (max, min: starting those from 0 would be wrong for all-negative data).
fn reduce_rows<T: Element>(
    a: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    init: Option<T>,
    f: impl Fn(T, T) -> T,
    out: &mut Vec<T>,
) {
    if outer * inner == 0 {
        return;
    }
    if len == 0 {
        // An empty axis: the identity everywhere (callers without one refuse empty axes first).
        if let Some(init) = init {
            out.extend(std::iter::repeat_n(init, outer * inner));
        }
        return;
    }
    for block in a.chunks_exact(len * inner) {
        let start = out.len();
        let rest = match init {
            Some(init) => {
                out.extend(std::iter::repeat_n(init, inner));
                block
            }
            None => {
                out.extend_from_slice(&block[..inner]);
                &block[inner..]
            }
        };
        let acc = &mut out[start..];
        for slice in rest.chunks_exact(inner) {
            for (slot, &x) in acc.iter_mut().zip(slice) {
                *slot = f(*slot, x);
            }
        }
    }
}

/// Product along the middle axis, in order (numpy does not reorder products either). Rows of a
/// large array are folded on both cores: each row's order is unchanged.
pub fn reduce_fold<T: Num>(
    a: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    init: T,
    f: impl Fn(T, T) -> T + Copy + Send + Sync,
) -> Result<Vec<T>> {
    let mut out = alloc(outer * inner)?;
    if inner == 1 && len > 0 {
        per_row(a, len, &mut out, |row| {
            row.iter().fold(init, |acc, &x| f(acc, x))
        });
    } else {
        reduce_rows(a, outer, len, inner, Some(init), f, &mut out);
    }
    Ok(out)
}

/// Which extreme a max, min, argmax or argmin looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extreme {
    Max,
    Min,
}

impl Extreme {
    /// The sequential fold's step: keeps `acc` on ties and once it is NaN; a NaN `x` wins.
    #[inline(always)]
    fn pick<T: Num>(self, acc: T, x: T) -> T {
        match self {
            Extreme::Max => acc.maximum(x),
            Extreme::Min => acc.minimum(x),
        }
    }
}

multiversion! {
    /// The extreme of a non-empty run, kept in 32 independent lanes so the loop vectorises.
    /// Max and min give the same value in any order; only which NaN or which signed zero comes
    /// out may differ from the in-order fold, and `extreme` puts that right.
    fn extreme_lanes<T: Num>(a: &[T], which: Extreme) -> T {
        let mut acc = [a[0]; 32];
        let chunks = a.chunks_exact(32);
        let rest = chunks.remainder();
        // One loop per extreme, so the choice is not made per element.
        match which {
            Extreme::Max => {
                for chunk in chunks {
                    for (s, &x) in acc.iter_mut().zip(chunk) {
                        *s = s.maximum(x);
                    }
                }
            }
            Extreme::Min => {
                for chunk in chunks {
                    for (s, &x) in acc.iter_mut().zip(chunk) {
                        *s = s.minimum(x);
                    }
                }
            }
        }
        acc.iter().chain(rest).fold(a[0], |r, &x| which.pick(r, x))
    }
}

/// Exactly what folding a non-empty run in order gives (numpy's max/min): the first NaN if there
/// is one, else the first element equal to the extreme (which matters only for -0.0 and 0.0);
/// computed in vector lanes, on both cores for long runs.
pub fn extreme<T: Num>(a: &[T], which: Extreme) -> T {
    fn split<T: Num>(a: &[T], which: Extreme) -> T {
        if a.len() > 4 * PARALLEL_THRESHOLD {
            let (left, right) = a.split_at(a.len() / 2);
            let (l, r) = rayon::join(|| split(left, which), || split(right, which));
            which.pick(l, r)
        } else {
            extreme_lanes(a, which)
        }
    }
    let value = split(a, which);
    if value.is_nan() {
        a.iter().copied().find(|x| x.is_nan()).unwrap_or(value)
    } else if value == T::zero() {
        a.iter().copied().find(|&x| x == value).unwrap_or(value)
    } else {
        value
    }
}

multiversion! {
    /// Where `value` first occurs in `a` (a NaN `value` finds the first NaN, a rare case left
    /// plain). Chunks are tested whole, without an early exit inside, so the test vectorises.
    fn first_index_of<T: Num>(a: &[T], value: T) -> Option<usize> {
        if value.is_nan() {
            return a.iter().position(|x| x.is_nan());
        }
        let mut chunks = a.chunks_exact(32);
        let mut start = 0;
        for chunk in chunks.by_ref() {
            let mut any = false;
            for &x in chunk {
                any |= x == value;
            }
            if any {
                return chunk.iter().position(|&x| x == value).map(|i| start + i);
            }
            start += 32;
        }
        chunks.remainder().iter().position(|&x| x == value).map(|i| start + i)
    }
}

/// Whether an axis reduction without identity has anything to compute: false when its output is
/// empty; an error for an empty axis (the runtime refuses those first, in the user's words).
fn has_work(outer: usize, len: usize, inner: usize, what: &str) -> Result<bool> {
    if outer * inner == 0 {
        return Ok(false);
    }
    if len == 0 {
        return Err(crate::vocab::error::RuntimeError::Value(format!(
            "internal error: {what} of an empty axis reached the backend; please report this as a devarray bug"
        )));
    }
    Ok(true)
}

/// Max or min along the middle axis of a row-major (outer, len, inner) block; `len` > 0.
pub fn reduce_extreme<T: Num>(
    a: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    which: Extreme,
) -> Result<Vec<T>> {
    let mut out = alloc(outer * inner)?;
    if !has_work(outer, len, inner, "max/min")? {
        return Ok(out);
    }
    if inner == 1 {
        per_row(a, len, &mut out, |row| extreme(row, which));
    } else {
        // The op is chosen here, not per element.
        match which {
            Extreme::Max => reduce_rows(a, outer, len, inner, None, T::maximum, &mut out),
            Extreme::Min => reduce_rows(a, outer, len, inner, None, T::minimum, &mut out),
        }
    }
    Ok(out)
}

/// Index of the first extreme element along the middle axis; a NaN counts as the extreme (the
/// first NaN wins), like numpy's argmax/argmin.
pub fn reduce_arg<T: Num>(
    a: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    which: Extreme,
) -> Result<Vec<i64>> {
    let mut out = alloc(outer * inner)?;
    if !has_work(outer, len, inner, "argmax/argmin")? {
        return Ok(out);
    }
    if inner == 1 {
        // Two vectorised passes instead of one branchy one: the extreme, then where it first is.
        per_row(a, len, &mut out, |row| {
            first_index_of(row, extreme(row, which)).unwrap_or(0) as i64
        });
    } else {
        match which {
            Extreme::Max => arg_along_slices(a, len, inner, |x, best| x > best, &mut out),
            Extreme::Min => arg_along_slices(a, len, inner, |x, best| x < best, &mut out),
        }
    }
    Ok(out)
}

/// argmax/argmin along a non-last axis: walk the slices in order, keeping each position's best
/// so far (a NaN best is kept; a NaN newcomer wins).
fn arg_along_slices<T: Num>(
    a: &[T],
    len: usize,
    inner: usize,
    wins: impl Fn(T, T) -> bool,
    out: &mut Vec<i64>,
) {
    let mut best: Vec<T> = Vec::with_capacity(inner);
    for block in a.chunks_exact(len * inner) {
        let start = out.len();
        out.extend(std::iter::repeat_n(0i64, inner));
        let index = &mut out[start..];
        best.clear();
        best.extend_from_slice(&block[..inner]);
        for (k, slice) in block.chunks_exact(inner).enumerate().skip(1) {
            for ((b, i), &x) in best.iter_mut().zip(index.iter_mut()).zip(slice) {
                if !b.is_nan() && (x.is_nan() || wins(x, *b)) {
                    *b = x;
                    *i = k as i64;
                }
            }
        }
    }
}

/// Integer and bool matrix products (floats go through GEMM): row-major (m, k) x (k, n).
pub fn matmul_naive<T: Num>(a: &[T], b: &[T], m: usize, k: usize, n: usize, out: &mut Vec<T>) {
    for i in 0..m {
        let start = out.len();
        out.extend(std::iter::repeat_n(T::zero(), n));
        let row = &mut out[start..];
        for p in 0..k {
            let x = a[i * k + p];
            for (slot, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *slot = slot.add(x.mul(y));
            }
        }
    }
}

/// Joins `parts` along an axis: each part contributes `chunk` contiguous elements per outer step.
pub fn concat<T: Element>(parts: &[&[T]], chunks: &[usize], outer: usize) -> Result<Vec<T>> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = alloc(total)?;
    let cancel = Cancel::current();
    let mut since_check = 0usize;
    for o in 0..outer {
        for (part, &chunk) in parts.iter().zip(chunks) {
            // In pieces, so an interrupt reaches the concatenation of huge arrays.
            for piece in part[o * chunk..(o + 1) * chunk].chunks(INTERRUPT_STEP) {
                out.extend_from_slice(piece);
                since_check += piece.len();
                if since_check >= INTERRUPT_STEP {
                    since_check = 0;
                    cancel.check()?;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 29, finding 6: an interrupt stops a large concatenation or copy between steps
    /// (the flag is set before the call, so the first check sees it); small ones never check.
    #[test]
    fn large_concats_and_copies_stop_at_an_interrupt() {
        use crate::vocab::error::RuntimeError;
        use std::sync::atomic::{AtomicBool, Ordering};
        let flag = std::sync::Arc::new(AtomicBool::new(true));
        let big = vec![1.0f32; 2 * INTERRUPT_STEP + 3];
        super::super::cancel::interruptible(&flag, || {
            assert_eq!(concat(&[&big[..4]], &[4], 1).map(|v| v.len()), Ok(4));
            assert_eq!(
                concat(&[&big[..], &big[..]], &[big.len(), big.len()], 1),
                Err(RuntimeError::Interrupted)
            );
            flag.store(true, Ordering::SeqCst);
            assert_eq!(
                gather(&big, 0, &[big.len()], &[1]).map(|v| v.len()),
                Err(RuntimeError::Interrupted)
            );
            flag.store(true, Ordering::SeqCst);
            // A transposed (strided) copy of a (rows, 2) block.
            let rows = big.len() / 2;
            assert_eq!(
                gather(&big, 0, &[2, rows], &[1, 2]).map(|v| v.len()),
                Err(RuntimeError::Interrupted)
            );
            assert_eq!(gather(&big, 0, &[2, 3], &[1, 2]).map(|v| v.len()), Ok(6));
        });
    }

    /// The in-order fold that max/min/argmax/argmin must reproduce exactly.
    fn fold_extreme(row: &[f32], which: Extreme) -> (f32, usize) {
        let mut best = (row[0], 0);
        for (k, &x) in row.iter().enumerate().skip(1) {
            let wins = match which {
                Extreme::Max => x > best.0,
                Extreme::Min => x < best.0,
            };
            if !best.0.is_nan() && (x.is_nan() || wins) {
                best = (x, k);
            }
        }
        best
    }

    #[test]
    fn extremes_match_the_in_order_fold_bit_for_bit() {
        let n = 5 * PARALLEL_THRESHOLD + 37; // lanes, tails and the parallel split
        let base: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 2003) as f32 - 1001.5)
            .collect();
        let mut cases = vec![base.clone()];
        // Ties of signed zeros: the first one wins, whichever sign it has.
        let mut zeros = vec![-3.0f32; n];
        zeros[70_000] = -0.0;
        zeros[200_000] = 0.0;
        cases.push(zeros.clone());
        zeros.swap(70_000, 200_000);
        cases.push(zeros);
        // NaNs win, and the first one is the one returned (its sign bit shows which).
        let mut nans = base.clone();
        nans[123_456] = -f32::NAN;
        nans[300_000] = f32::NAN;
        cases.push(nans);
        cases.push(vec![2.5f32; 3]);
        for row in &cases {
            for which in [Extreme::Max, Extreme::Min] {
                let (want, at) = fold_extreme(row, which);
                let got = extreme(row, which);
                assert_eq!(got.to_bits(), want.to_bits(), "{which:?}");
                let arg = reduce_arg(row, 1, row.len(), 1, which).unwrap();
                assert_eq!(arg, vec![at as i64], "arg {which:?}");
            }
        }
    }

    #[test]
    fn extremes_along_every_axis() {
        // (2, 3, 2) block of negative numbers: a fold that starts from 0 would give 0.
        let a: Vec<f32> = [-5., -1., -4., -9., -2., -7., -6., -3., -8., -2., -1., -5.].to_vec();
        assert_eq!(
            reduce_extreme(&a, 1, 2, 6, Extreme::Max).unwrap(),
            vec![-5., -1., -4., -2., -1., -5.]
        );
        assert_eq!(
            reduce_extreme(&a, 2, 3, 2, Extreme::Max).unwrap(),
            vec![-2., -1., -1., -2.]
        );
        assert_eq!(
            reduce_extreme(&a, 2, 3, 2, Extreme::Min).unwrap(),
            vec![-5., -9., -8., -5.]
        );
        assert_eq!(
            reduce_arg(&a, 2, 3, 2, Extreme::Max).unwrap(),
            vec![2, 0, 2, 1]
        );
        assert_eq!(
            reduce_arg(&a, 6, 2, 1, Extreme::Min).unwrap(),
            vec![0, 1, 1, 0, 0, 1]
        );
        let ints: Vec<i32> = vec![3, -1, 3, 7, 7, -2];
        assert_eq!(
            reduce_extreme(&ints, 2, 3, 1, Extreme::Max).unwrap(),
            vec![3, 7]
        );
        assert_eq!(
            reduce_arg(&ints, 2, 3, 1, Extreme::Max).unwrap(),
            vec![0, 0]
        );
        assert_eq!(
            reduce_arg(&ints, 1, 2, 3, Extreme::Min).unwrap(),
            vec![0, 0, 1]
        );
        // Sums and products over an empty axis give the identity.
        assert_eq!(reduce_sum::<f32>(&[], 2, 0, 3).unwrap(), vec![0.0; 6]);
        assert_eq!(
            reduce_fold::<i32>(&[], 1, 0, 2, 1, |a, b| a * b).unwrap(),
            vec![1, 1]
        );
        // Empty outputs are empty; an empty axis is refused, never a panic.
        assert!(reduce_extreme::<f32>(&[], 1, 3, 0, Extreme::Max)
            .unwrap()
            .is_empty());
        assert!(reduce_arg::<f32>(&[], 3, 0, 1, Extreme::Max).is_err());
    }

    /// The one-pass norm is the f64 norm rounded once, and within one float32 ULP of squaring
    /// and summing in float32 (numpy's order), across the parallel split.
    #[test]
    fn norm2_matches_the_composed_norm() {
        for n in [0usize, 1, 7, 8, 9, 127, 10_000, PARALLEL_THRESHOLD + 3] {
            let v: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0)
                .collect();
            let exact = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
            let got = norm2(&v);
            assert!(
                (f64::from(got) - exact).abs() <= exact * 6e-8,
                "n={n}: {got} vs {exact}"
            );
            let squares: Vec<f32> = v.iter().map(|x| x * x).collect();
            let composed = pairwise_sum(&squares).sqrt();
            let ulps = (got.to_bits() as i64 - composed.to_bits() as i64).abs();
            assert!(ulps <= 1, "n={n}: {got} vs composed {composed}");
        }
    }

    /// The parallel memcpy path (above 16 x the threshold) copies every element in order.
    #[test]
    fn large_dense_copy_is_exact() {
        let n = PARALLEL_THRESHOLD * 16 + 3;
        let src: Vec<i32> = (0..n as i32).collect();
        let out = gather(&src, 0, &[n], &[1]).unwrap();
        assert_eq!(out, src);
    }

    #[test]
    fn pairwise_sum_matches_sequential_on_integers() {
        let v: Vec<i64> = (0..1000).collect();
        assert_eq!(pairwise_sum(&v), 499_500);
    }

    #[test]
    fn gather_of_a_transpose_matches_the_element_walk() {
        // (2, 37, 45) read as its last two axes swapped, from offset 3: tiles and ragged edges.
        let (b, r, c) = (2usize, 45usize, 37usize);
        let src: Vec<f32> = (0..3 + b * r * c).map(|i| i as f32).collect();
        let (shape, strides) = ([b, r, c], [(r * c) as isize, 1, r as isize]);
        let got = gather(&src, 3, &shape, &strides).expect("gather");
        let mut want = Vec::new();
        walk2(&shape, &strides, 3, &[0, 0, 0], 0, |i, _| want.push(src[i]));
        assert_eq!(got, want);
    }

    #[test]
    fn walk2_visits_row_major() {
        let mut seen = Vec::new();
        walk2(&[2, 3], &[3, 1], 0, &[1, 2], 0, |i, j| seen.push((i, j)));
        assert_eq!(seen, vec![(0, 0), (1, 2), (2, 4), (3, 1), (4, 3), (5, 5)]);
    }
}
