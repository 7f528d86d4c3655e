//! Runs a kernel: every block of the grid, every thread of a block. A thread runs until it
//! reaches `bar.sync` or exits; when every thread of the block has arrived (exited threads count
//! as arrived), all continue. Threads therefore run one after another between barriers, in
//! order: a read of shared memory that a missing barrier leaves unordered sees the state of a
//! serial schedule, and fresh shared memory holds garbage (all bits set), so such a read returns
//! NaN or -1 rather than a plausible zero.
use super::parse::*;
use crate::driver::memory::Allocation;
use crate::status::*;
use std::sync::Arc;

const TAG_SHIFT: u32 = 60;
const PARAM_TAG: u64 = 0xA << TAG_SHIFT;
const OUT_TAG: u64 = 0xB << TAG_SHIFT;
const LOCAL_TAG: u64 = 0xC << TAG_SHIFT;
const SHARED_TAG: u64 = 0xD << TAG_SHIFT;
const TAG_MASK: u64 = 0xF << TAG_SHIFT;
/// Static + dynamic shared memory per block (sm_80/sm_90 without the opt-in attribute).
pub const SHARED_LIMIT: u32 = 48 * 1024;
/// Per-thread local memory the emulator gives a thread (frames' depots).
const LOCAL_BYTES: usize = 16 * 1024;
/// Instructions one launch may execute before it counts as hung.
const BUDGET: u64 = 20_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchError {
    pub code: CUresult,
    pub message: String,
}

fn fault(code: CUresult, message: String) -> LaunchError {
    LaunchError { code, message }
}

/// Checks a launch shape as the driver does: at most 1024 threads per block, the per-dimension
/// limits, and shared memory within the card's per-block limit.
pub fn check_grid(program: &Program, func: usize, grid: &Grid) -> Result<(), LaunchError> {
    let [bx, by, bz] = grid.block;
    let [gx, gy, gz] = grid.grid;
    let threads = bx as u64 * by as u64 * bz as u64;
    if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
        return Err(fault(
            INVALID_VALUE,
            "a grid or block dimension is 0".into(),
        ));
    }
    if threads > 1024 || bx > 1024 || by > 1024 || bz > 64 {
        return Err(fault(
            INVALID_VALUE,
            format!("block ({bx}, {by}, {bz}) has {threads} threads: at most 1024 (and 1024, 1024, 64 per dimension)"),
        ));
    }
    if gx > i32::MAX as u32 || gy > 65_535 || gz > 65_535 {
        return Err(fault(
            INVALID_VALUE,
            format!("grid ({gx}, {gy}, {gz}) exceeds the limits (2^31-1, 65535, 65535)"),
        ));
    }
    let shared = shared_layout(program, func).1 + grid.dynamic_shared;
    if shared > SHARED_LIMIT {
        return Err(fault(
            INVALID_VALUE,
            format!("{shared} bytes of shared memory per block: the limit is {SHARED_LIMIT}"),
        ));
    }
    Ok(())
}

/// Offsets of the shared variables `func` names (by module index) and the static total.
fn shared_layout(program: &Program, func: usize) -> (Vec<u32>, u32) {
    let mut offsets = vec![0u32; program.shared.len()];
    let mut used = Vec::new();
    let mut stack = vec![func];
    let mut seen = vec![false; program.functions.len()];
    while let Some(f) = stack.pop() {
        if std::mem::replace(&mut seen[f], true) {
            continue;
        }
        used.extend(program.functions[f].shared_used.iter().copied());
        for inst in &program.functions[f].body {
            if let Some(call) = &inst.call {
                stack.push(call.func as usize);
            }
        }
    }
    used.sort_unstable();
    used.dedup();
    let mut at = 0u32;
    for i in used {
        let var = &program.shared[i as usize];
        at = at.div_ceil(var.align.max(1)) * var.align.max(1);
        offsets[i as usize] = at;
        at += var.size;
    }
    (offsets, at)
}

fn has_barrier(program: &Program, func: usize) -> bool {
    let mut stack = vec![func];
    let mut seen = vec![false; program.functions.len()];
    while let Some(f) = stack.pop() {
        if std::mem::replace(&mut seen[f], true) {
            continue;
        }
        for inst in &program.functions[f].body {
            match (&inst.op, &inst.call) {
                (Op::Bar, _) => return true,
                (_, Some(call)) => stack.push(call.func as usize),
                _ => {}
            }
        }
    }
    false
}

struct Frame {
    func: u32,
    pc: u32,
    regs: Vec<u64>,
    inp: Vec<u8>,
    out: Vec<u8>,
    local_base: u32,
    /// The caller's out-area slot that receives this frame's return value.
    ret: Option<(u32, u32)>,
}

struct Thread {
    tid: [u32; 3],
    /// The running frame, and its callers.
    cur: Frame,
    stack: Vec<Frame>,
    local: Vec<u8>,
    carry: bool,
    done: bool,
}

enum Stop {
    Barrier,
    Exit,
}

/// Everything a block's threads share.
struct Block<'a> {
    program: &'a Program,
    globals: &'a [u64],
    memory: &'a [Arc<Allocation>],
    shared: Vec<u8>,
    shared_offsets: &'a [u32],
    ctaid: [u32; 3],
    grid: Grid,
    /// The allocation of the last global access (most accesses hit the same one).
    cache: usize,
    executed: u64,
    kernel: &'a str,
}

/// Runs `func` of `program` over `grid` with the kernel parameter bytes `params`. `globals` are
/// the device addresses of the module's `.global` variables, `memory` every live allocation
/// (sorted by address).
pub fn launch(
    program: &Program,
    func: usize,
    grid: Grid,
    params: &[u8],
    globals: &[u64],
    memory: &[Arc<Allocation>],
) -> Result<(), LaunchError> {
    check_grid(program, func, &grid)?;
    let f = &program.functions[func];
    if params.len() < f.in_size as usize {
        return Err(fault(
            INVALID_VALUE,
            format!(
                "{}: {} parameter bytes, the kernel takes {}",
                f.name,
                params.len(),
                f.in_size
            ),
        ));
    }
    let (offsets, static_shared) = shared_layout(program, func);
    let shared_bytes = (static_shared + grid.dynamic_shared) as usize;
    let barriers = has_barrier(program, func);
    let [bx, by, bz] = grid.block;
    let nthreads = (bx * by * bz) as usize;
    let new_thread = |linear: usize| Thread {
        tid: [
            linear as u32 % bx,
            (linear as u32 / bx) % by,
            linear as u32 / (bx * by),
        ],
        cur: entry_frame(f, func, params),
        stack: Vec::new(),
        local: vec![0u8; LOCAL_BYTES],
        carry: false,
        done: false,
    };
    let mut block = Block {
        program,
        globals,
        memory,
        shared: Vec::new(),
        shared_offsets: &offsets,
        ctaid: [0; 3],
        grid,
        cache: 0,
        executed: 0,
        kernel: &f.name,
    };
    let mut threads: Vec<Thread> = if barriers {
        (0..nthreads).map(new_thread).collect()
    } else {
        vec![new_thread(0)]
    };
    for cz in 0..grid.grid[2] {
        for cy in 0..grid.grid[1] {
            for cx in 0..grid.grid[0] {
                block.ctaid = [cx, cy, cz];
                block.shared.clear();
                block.shared.resize(shared_bytes, 0xFF);
                if barriers {
                    for (i, t) in threads.iter_mut().enumerate() {
                        *t = Thread {
                            local: std::mem::take(&mut t.local),
                            ..new_thread(i)
                        };
                    }
                    loop {
                        let mut waiting = 0;
                        for t in threads.iter_mut().filter(|t| !t.done) {
                            match block.run(t)? {
                                Stop::Barrier => waiting += 1,
                                Stop::Exit => t.done = true,
                            }
                        }
                        if waiting == 0 {
                            break;
                        }
                    }
                } else {
                    // No barrier: one thread state, reused by each thread in turn.
                    for linear in 0..nthreads {
                        let t = &mut threads[0];
                        let l = linear as u32;
                        t.tid = [l % bx, (l / bx) % by, l / (bx * by)];
                        t.done = false;
                        // The entry frame is reused: parameters reloaded, registers left as
                        // they are (PTX writes a register before reading it).
                        t.stack.clear();
                        t.cur.func = func as u32;
                        t.cur.pc = 0;
                        t.cur.local_base = 0;
                        t.cur.ret = None;
                        t.cur.inp.copy_from_slice(&params[..f.in_size as usize]);
                        while let Stop::Barrier = block.run(t)? {}
                    }
                }
            }
        }
    }
    Ok(())
}

fn entry_frame(f: &Function, func: usize, params: &[u8]) -> Frame {
    Frame {
        func: func as u32,
        pc: 0,
        regs: vec![0; f.regs as usize],
        inp: params[..f.in_size as usize].to_vec(),
        out: vec![0; f.out_size as usize],
        local_base: 0,
        ret: None,
    }
}

// ---- values ---------------------------------------------------------------------------------

fn mask(v: u64, ty: Ty) -> u64 {
    match ty.bits() {
        64 | 0 => v,
        8 if ty == Ty::Pred => u64::from(v != 0),
        b => v & ((1u64 << b) - 1),
    }
}

fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

/// The integer value of `v` as `ty` (signed types sign-extended).
fn int(v: u64, ty: Ty) -> i128 {
    if ty.signed() {
        sext(v, ty.bits()) as i128
    } else {
        mask(v, ty) as i128
    }
}

fn f32v(v: u64) -> f32 {
    f32::from_bits(v as u32)
}

fn f64v(v: u64) -> f64 {
    f64::from_bits(v)
}

fn from_f32(x: f32) -> u64 {
    x.to_bits() as u64
}

fn flush32(x: f32, ftz: bool) -> f32 {
    if ftz && x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

fn flush64(x: f64, ftz: bool) -> f64 {
    if ftz && x.is_subnormal() {
        0.0f64.copysign(x)
    } else {
        x
    }
}

pub fn next_up32(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    f32::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

pub fn next_down32(x: f32) -> f32 {
    -next_up32(-x)
}

pub fn next_up64(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

pub fn next_down64(x: f64) -> f64 {
    -next_up64(-x)
}

/// `hi + err` is the exact result (err's sign is what matters); rounds it to f32 by `rnd`.
pub fn round32(hi: f64, err: f64, rnd: Rnd) -> f32 {
    let r = hi as f32;
    if matches!(rnd, Rnd::Default | Rnd::Rn) || hi.is_nan() {
        return r;
    }
    // Sign of r - exact (see the module docs in the tests: |err| < the f32 spacing near hi).
    let dir = if (r as f64) > hi {
        1.0
    } else if (r as f64) < hi {
        -1.0
    } else {
        -err.signum() * f64::from(u8::from(err != 0.0))
    };
    let exact_positive = hi > 0.0 || (hi == 0.0 && err > 0.0);
    match rnd {
        Rnd::Rm if dir > 0.0 => next_down32(r),
        Rnd::Rp if dir < 0.0 => next_up32(r),
        Rnd::Rz if dir > 0.0 && exact_positive => next_down32(r),
        Rnd::Rz if dir < 0.0 && !exact_positive => next_up32(r),
        _ => r,
    }
}

/// As `round32` for f64: `hi` is already the nearest double.
pub fn round64(hi: f64, err: f64, rnd: Rnd) -> f64 {
    if matches!(rnd, Rnd::Default | Rnd::Rn) || hi.is_nan() || err == 0.0 {
        return hi;
    }
    // hi is nearest; the exact value is hi + err.
    let exact_positive = hi > 0.0 || (hi == 0.0 && err > 0.0);
    match rnd {
        Rnd::Rm if err < 0.0 => next_down64(hi),
        Rnd::Rp if err > 0.0 => next_up64(hi),
        Rnd::Rz if err < 0.0 && exact_positive => next_down64(hi),
        Rnd::Rz if err > 0.0 && !exact_positive => next_up64(hi),
        _ => hi,
    }
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

fn sat32(x: f32, sat: bool) -> f32 {
    if !sat {
        x
    } else if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

fn sat64(x: f64, sat: bool) -> f64 {
    if !sat {
        x
    } else if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

#[derive(Clone, Copy)]
enum FOp {
    Add,
    Sub,
    Mul,
    Div,
    Fma,
    Sqrt,
    Rcp,
}

/// An f32 operation with PTX's rounding, ftz and saturation.
fn float32(op: FOp, a: f32, b: f32, c: f32, inst: &Inst) -> Result<f32, String> {
    let ftz = inst.ftz;
    let (a, b, c) = (flush32(a, ftz), flush32(b, ftz), flush32(c, ftz));
    let (ad, bd, cd) = (a as f64, b as f64, c as f64);
    let rnd = if inst.approx { Rnd::Rn } else { inst.rnd };
    let r = match op {
        FOp::Add | FOp::Sub => {
            let (s, e) = two_sum(ad, if matches!(op, FOp::Sub) { -bd } else { bd });
            round32(s, e, rnd)
        }
        FOp::Mul => round32(ad * bd, 0.0, rnd),
        FOp::Fma => {
            if matches!(rnd, Rnd::Default | Rnd::Rn) {
                a.mul_add(b, c)
            } else {
                let (s, e) = two_sum(ad * bd, cd);
                round32(s, e, rnd)
            }
        }
        FOp::Div | FOp::Rcp => {
            let (n, d) = if matches!(op, FOp::Rcp) {
                (1.0, ad)
            } else {
                (ad, bd)
            };
            let q = n / d;
            let rem = (-q).mul_add(d, n);
            round32(q, rem * d.signum(), rnd)
        }
        FOp::Sqrt => {
            let s = ad.sqrt();
            round32(s, (-s).mul_add(s, ad), rnd)
        }
    };
    Ok(sat32(flush32(r, ftz), inst.sat))
}

fn float64(op: FOp, a: f64, b: f64, c: f64, inst: &Inst) -> Result<f64, String> {
    let ftz = inst.ftz;
    let (a, b, c) = (flush64(a, ftz), flush64(b, ftz), flush64(c, ftz));
    let rnd = if inst.approx { Rnd::Rn } else { inst.rnd };
    let r = match op {
        FOp::Add | FOp::Sub => {
            let (s, e) = two_sum(a, if matches!(op, FOp::Sub) { -b } else { b });
            round64(s, e, rnd)
        }
        FOp::Mul => {
            let p = a * b;
            round64(p, a.mul_add(b, -p), rnd)
        }
        FOp::Fma => {
            let r = a.mul_add(b, c);
            if !matches!(rnd, Rnd::Default | Rnd::Rn) {
                return Err(format!(
                    "{}: directed rounding of an f64 fma is not implemented",
                    inst.text
                ));
            }
            r
        }
        FOp::Div | FOp::Rcp => {
            let (n, d) = if matches!(op, FOp::Rcp) {
                (1.0, a)
            } else {
                (a, b)
            };
            let q = n / d;
            round64(q, (-q).mul_add(d, n) * d.signum(), rnd)
        }
        FOp::Sqrt => {
            let s = a.sqrt();
            round64(s, (-s).mul_add(s, a), rnd)
        }
    };
    Ok(sat64(flush64(r, ftz), inst.sat))
}

fn compare(cmp: Cmp, a: u64, b: u64, ty: Ty, ftz: bool) -> bool {
    use std::cmp::Ordering as O;
    let ord = match ty {
        Ty::F32 => flush32(f32v(a), ftz).partial_cmp(&flush32(f32v(b), ftz)),
        Ty::F64 => flush64(f64v(a), ftz).partial_cmp(&flush64(f64v(b), ftz)),
        _ => Some(int(a, ty).cmp(&int(b, ty))),
    };
    match (cmp, ord) {
        (Cmp::Num, o) => o.is_some(),
        (Cmp::Nan, o) => o.is_none(),
        (Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu, None) => true,
        (_, None) => false,
        (Cmp::Eq | Cmp::Equ, Some(o)) => o == O::Equal,
        (Cmp::Ne | Cmp::Neu, Some(o)) => o != O::Equal,
        (Cmp::Lt | Cmp::Ltu, Some(o)) => o == O::Less,
        (Cmp::Le | Cmp::Leu, Some(o)) => o != O::Greater,
        (Cmp::Gt | Cmp::Gtu, Some(o)) => o == O::Greater,
        (Cmp::Ge | Cmp::Geu, Some(o)) => o != O::Less,
    }
}

/// PTX min/max: a NaN operand gives the other one; -0 is below +0.
fn minmax64(a: f64, b: f64, max: bool) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f64::NAN,
        (true, false) => b,
        (false, true) => a,
        _ if a == b => f64::from_bits(if max {
            a.to_bits() & b.to_bits()
        } else {
            a.to_bits() | b.to_bits()
        }),
        _ => {
            if (a > b) == max {
                a
            } else {
                b
            }
        }
    }
}

fn minmax32(a: f32, b: f32, max: bool) -> f32 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f32::NAN,
        (true, false) => b,
        (false, true) => a,
        _ if a == b => f32::from_bits(if max {
            a.to_bits() & b.to_bits()
        } else {
            a.to_bits() | b.to_bits()
        }),
        _ => {
            if (a > b) == max {
                a
            } else {
                b
            }
        }
    }
}

/// Float to integer with cvt's rounding: saturating, NaN to 0.
fn float_to_int(x: f64, rnd: Rnd, ty: Ty) -> u64 {
    let r = match rnd {
        Rnd::Rzi | Rnd::Rz | Rnd::Default => x.trunc(),
        Rnd::Rmi | Rnd::Rm => x.floor(),
        Rnd::Rpi | Rnd::Rp => x.ceil(),
        Rnd::Rni | Rnd::Rn => x.round_ties_even(),
    };
    if r.is_nan() {
        return 0;
    }
    let bits = ty.bits();
    let (lo, hi): (i128, i128) = if ty.signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let v = if r <= lo as f64 {
        lo
    } else if r >= hi as f64 {
        hi
    } else {
        r as i128
    };
    mask(v as u64, ty)
}

fn int_to_float(v: i128, to: Ty, rnd: Rnd) -> u64 {
    match to {
        Ty::F32 => {
            let r = v as f32;
            let dir = (r as i128).cmp(&v);
            let r = match (rnd, dir) {
                (Rnd::Rm, std::cmp::Ordering::Greater) => next_down32(r),
                (Rnd::Rp, std::cmp::Ordering::Less) => next_up32(r),
                (Rnd::Rz, std::cmp::Ordering::Greater) if v > 0 => next_down32(r),
                (Rnd::Rz, std::cmp::Ordering::Less) if v < 0 => next_up32(r),
                _ => r,
            };
            from_f32(r)
        }
        _ => {
            let r = v as f64;
            let dir = (r as i128).cmp(&v);
            let r = match (rnd, dir) {
                (Rnd::Rm, std::cmp::Ordering::Greater) => next_down64(r),
                (Rnd::Rp, std::cmp::Ordering::Less) => next_up64(r),
                (Rnd::Rz, std::cmp::Ordering::Greater) if v > 0 => next_down64(r),
                (Rnd::Rz, std::cmp::Ordering::Less) if v < 0 => next_up64(r),
                _ => r,
            };
            r.to_bits()
        }
    }
}

fn round_integral(x: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rzi => x.trunc(),
        Rnd::Rmi => x.floor(),
        Rnd::Rpi => x.ceil(),
        Rnd::Rni => x.round_ties_even(),
        _ => x,
    }
}

/// cvt: every combination of integer and float types NVRTC emits.
fn convert(v: u64, inst: &Inst) -> Result<u64, String> {
    let (to, from) = (inst.ty, inst.ty2);
    let integral = matches!(inst.rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi);
    Ok(match (to.float(), from.float()) {
        (false, false) => {
            let x = int(v, from);
            if inst.sat {
                let bits = to.bits();
                let (lo, hi): (i128, i128) = if to.signed() {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                mask(x.clamp(lo, hi) as u64, to)
            } else {
                mask(x as u64, to)
            }
        }
        (false, true) => {
            let x = if from == Ty::F32 {
                flush32(f32v(v), inst.ftz) as f64
            } else {
                f64v(v)
            };
            float_to_int(x, inst.rnd, to)
        }
        (true, false) => {
            if integral {
                return Err(format!(
                    "{}: integral rounding of an integer source is not valid PTX",
                    inst.text
                ));
            }
            int_to_float(int(v, from), to, inst.rnd)
        }
        (true, true) => {
            let x = if from == Ty::F32 {
                flush32(f32v(v), inst.ftz) as f64
            } else {
                f64v(v)
            };
            let x = if integral {
                round_integral(x, inst.rnd)
            } else {
                x
            };
            match to {
                Ty::F32 => {
                    let r = if from == Ty::F32 || integral {
                        x as f32
                    } else {
                        round32(x, 0.0, inst.rnd)
                    };
                    from_f32(sat32(flush32(r, inst.ftz), inst.sat))
                }
                _ => sat64(x, inst.sat).to_bits(),
            }
        }
    })
}

// ---- the interpreter ------------------------------------------------------------------------

impl Block<'_> {
    fn special(&self, t: &Thread, s: Special) -> u64 {
        let linear = |t: &Thread| {
            t.tid[0]
                + t.tid[1] * self.grid.block[0]
                + t.tid[2] * self.grid.block[0] * self.grid.block[1]
        };
        u64::from(match s {
            Special::Tid(d) => t.tid[d as usize],
            Special::Ntid(d) => self.grid.block[d as usize],
            Special::Ctaid(d) => self.ctaid[d as usize],
            Special::Nctaid(d) => self.grid.grid[d as usize],
            Special::LaneId => linear(t) % 32,
            Special::WarpId => linear(t) / 32,
        })
    }

    fn value(&self, t: &Thread, op: &Operand) -> u64 {
        let frame = &t.cur;
        match op {
            Operand::Reg(r) => frame.regs[*r as usize],
            Operand::Imm(v) => *v,
            Operand::Special(s) => self.special(t, *s),
            Operand::Global(i) => self.globals.get(*i as usize).copied().unwrap_or(0),
            Operand::Shared(i) => SHARED_TAG | u64::from(self.shared_offsets[*i as usize]),
            Operand::Param(o) => PARAM_TAG | u64::from(*o),
            Operand::Out(o) => OUT_TAG | u64::from(*o),
            Operand::Local(o) => LOCAL_TAG | u64::from(frame.local_base + *o),
            Operand::Addr(base, off) => self.value(t, base).wrapping_add(*off as u64),
            Operand::Label(l) => u64::from(*l),
            Operand::Vector(_) | Operand::PredPair(..) | Operand::Name(_) => 0,
        }
    }

    /// The bytes at `addr` in `space` (`n` of them), as a raw pointer into the right memory.
    fn locate(
        &mut self,
        t: &mut Thread,
        space: Space,
        addr: u64,
        n: usize,
        write: bool,
    ) -> Result<*mut u8, LaunchError> {
        let tag = addr & TAG_MASK;
        let offset = (addr & !TAG_MASK) as usize;
        let low = (addr & 0xFFFF_FFFF) as usize;
        let frame = &mut t.cur;
        let slice: Option<&mut [u8]> = match (space, tag) {
            (Space::Param, OUT_TAG) | (Space::Generic, OUT_TAG) => {
                frame.out.get_mut(offset..offset + n)
            }
            // The incoming area also holds a function's return value (st.param [func_retval0]).
            (Space::Param, _) | (Space::Generic, PARAM_TAG) => {
                frame.inp.get_mut(offset..offset + n)
            }
            (Space::Local, LOCAL_TAG) | (Space::Generic, LOCAL_TAG) => {
                t.local.get_mut(offset..offset + n)
            }
            (Space::Local, 0) => t.local.get_mut(low..low + n),
            (Space::Shared, SHARED_TAG) | (Space::Generic, SHARED_TAG) => {
                self.shared.get_mut(offset..offset + n)
            }
            (Space::Shared, 0) => self.shared.get_mut(low..low + n),
            (Space::Global | Space::Generic | Space::Const, 0) => {
                return self.global(addr, n, write, t)
            }
            _ => None,
        };
        match slice {
            Some(s) => Ok(s.as_mut_ptr()),
            None => Err(fault(
                ILLEGAL_ADDRESS,
                format!(
                    "{}: thread {:?} of block {:?}: {} of {n} bytes at {addr:#x} is outside {:?} memory",
                    self.kernel, t.tid, self.ctaid, if write { "store" } else { "load" }, space
                ),
            )),
        }
    }

    fn global(
        &mut self,
        addr: u64,
        n: usize,
        write: bool,
        t: &Thread,
    ) -> Result<*mut u8, LaunchError> {
        if let Some(a) = self.memory.get(self.cache) {
            if addr >= a.start {
                if let Some(p) = a.at(addr - a.start, n) {
                    return Ok(p);
                }
            }
        }
        let i = self.memory.partition_point(|a| a.start <= addr);
        if i > 0 {
            let a = &self.memory[i - 1];
            if let Some(p) = a.at(addr - a.start, n) {
                self.cache = i - 1;
                return Ok(p);
            }
        }
        Err(fault(
            ILLEGAL_ADDRESS,
            format!(
                "{}: thread {:?} of block {:?}: {} of {n} bytes at {addr:#x} is outside every live allocation",
                self.kernel, t.tid, self.ctaid, if write { "store" } else { "load" }
            ),
        ))
    }

    fn load(
        &mut self,
        t: &mut Thread,
        space: Space,
        addr: u64,
        ty: Ty,
    ) -> Result<u64, LaunchError> {
        let n = ty.bytes();
        let p = self.locate(t, space, addr, n, false)?;
        let mut bytes = [0u8; 8];
        // SAFETY: `locate` returned a pointer to n readable bytes.
        unsafe { std::ptr::copy_nonoverlapping(p, bytes.as_mut_ptr(), n) };
        let v = u64::from_le_bytes(bytes);
        Ok(if ty.signed() {
            sext(v, ty.bits()) as u64
        } else {
            v
        })
    }

    fn store(
        &mut self,
        t: &mut Thread,
        space: Space,
        addr: u64,
        ty: Ty,
        v: u64,
    ) -> Result<(), LaunchError> {
        let n = ty.bytes();
        let p = self.locate(t, space, addr, n, true)?;
        // SAFETY: as above, writable.
        unsafe { std::ptr::copy_nonoverlapping(v.to_le_bytes().as_ptr(), p, n) };
        Ok(())
    }

    fn unsupported(&self, inst: &Inst, why: &str) -> LaunchError {
        fault(
            LAUNCH_FAILED,
            format!("{}: line {}: `{}` {why}", self.kernel, inst.line, inst.text),
        )
    }

    /// Runs `t` until it reaches a barrier or exits.
    fn run(&mut self, t: &mut Thread) -> Result<Stop, LaunchError> {
        let program = self.program;
        loop {
            self.executed += 1;
            if self.executed > BUDGET {
                return Err(fault(
                    702,
                    format!(
                        "{}: more than {BUDGET} instructions: the kernel does not finish",
                        self.kernel
                    ),
                ));
            }
            let (func, pc) = (t.cur.func as usize, t.cur.pc as usize);
            let body = &program.functions[func].body;
            let Some(inst) = body.get(pc) else {
                // Falling off the end of a body is a return.
                if self.ret(t) {
                    return Ok(Stop::Exit);
                }
                continue;
            };
            t.cur.pc += 1;
            if let Some((p, negate)) = inst.guard {
                let on = t.cur.regs[p as usize] != 0;
                if on == negate {
                    continue;
                }
            }
            match self.step(t, inst)? {
                Flow::Next => {}
                Flow::Barrier => return Ok(Stop::Barrier),
                Flow::Exit => return Ok(Stop::Exit),
            }
        }
    }

    /// Pops a frame; true when the kernel itself returned.
    fn ret(&mut self, t: &mut Thread) -> bool {
        let Some(caller) = t.stack.pop() else {
            return true;
        };
        let frame = std::mem::replace(&mut t.cur, caller);
        let caller = &mut t.cur;
        if let (Some((at, size)), Some(r)) = (
            frame.ret,
            &self.program.functions[frame.func as usize].retval,
        ) {
            let (at, size) = (at as usize, size.min(r.size) as usize);
            let src = &frame.inp[r.offset as usize..r.offset as usize + size];
            caller.out[at..at + size].copy_from_slice(src);
        }
        false
    }

    fn set(&self, t: &mut Thread, dst: &Operand, v: u64) {
        if let Operand::Reg(r) = dst {
            t.cur.regs[*r as usize] = v;
        }
    }

    fn step(&mut self, t: &mut Thread, inst: &Inst) -> Result<Flow, LaunchError> {
        let a = |i: usize| inst.args.get(i);
        let val = |this: &Self, t: &Thread, i: usize| a(i).map_or(0, |o| this.value(t, o));
        let ty = inst.ty;
        let dst: &Operand = a(0).unwrap_or(&Operand::Imm(0));
        let bits = ty.bits();
        macro_rules! put {
            ($v:expr) => {{
                let v = $v;
                self.set(t, dst, v);
            }};
        }
        match inst.op {
            Op::Mov => match (dst, a(1)) {
                (Operand::Vector(regs), _) => {
                    // mov.b64 {lo, hi}, x: unpack.
                    let v = val(self, t, 1);
                    let part = 64 / regs.len() as u32;
                    for (i, r) in regs.iter().enumerate() {
                        let piece = if part >= 64 {
                            v
                        } else {
                            (v >> (part * i as u32)) & ((1u64 << part) - 1)
                        };
                        self.set(t, &Operand::Reg(*r), piece);
                    }
                }
                (_, Some(Operand::Vector(regs))) => {
                    let part = bits / regs.len() as u32;
                    let mut v = 0u64;
                    for (i, r) in regs.iter().enumerate() {
                        v |= mask(self.value(t, &Operand::Reg(*r)), Ty::B64) << (part * i as u32);
                    }
                    put!(mask(v, ty))
                }
                _ => put!(mask(
                    val(self, t, 1),
                    if ty == Ty::Pred { Ty::Pred } else { ty }
                )),
            },
            Op::Add | Op::Sub if !ty.float() => {
                let (x, y) = (
                    mask(val(self, t, 1), ty) as u128,
                    mask(val(self, t, 2), ty) as u128,
                );
                let cin = u128::from(inst.carry_in && t.carry);
                let full = if inst.op == Op::Add {
                    x + y + cin
                } else {
                    x.wrapping_sub(y).wrapping_sub(cin)
                };
                if inst.cc {
                    t.carry = if inst.op == Op::Add {
                        full >> bits != 0
                    } else {
                        x < y + cin
                    };
                }
                put!(mask(full as u64, ty))
            }
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Fma | Op::Mad | Op::Sqrt | Op::Rcp
                if ty.float() =>
            {
                let fop = match inst.op {
                    Op::Add => FOp::Add,
                    Op::Sub => FOp::Sub,
                    Op::Mul => FOp::Mul,
                    Op::Div => FOp::Div,
                    Op::Fma | Op::Mad => FOp::Fma,
                    Op::Sqrt => FOp::Sqrt,
                    _ => FOp::Rcp,
                };
                let (x, y, z) = (val(self, t, 1), val(self, t, 2), val(self, t, 3));
                let r = if ty == Ty::F32 {
                    float32(fop, f32v(x), f32v(y), f32v(z), inst).map(from_f32)
                } else {
                    float64(fop, f64v(x), f64v(y), f64v(z), inst).map(f64::to_bits)
                };
                put!(r.map_err(|e| self.unsupported(inst, &e))?)
            }
            Op::Mul | Op::Mad => {
                let (x, y) = (int(val(self, t, 1), ty), int(val(self, t, 2), ty));
                let product = x.wrapping_mul(y);
                let (r, wide) = match inst.mode {
                    MulMode::Lo => (product as u64, ty),
                    MulMode::Hi => ((product >> bits) as u64, ty),
                    MulMode::Wide => (product as u64, wide_of(ty)),
                };
                if inst.op == Op::Mul {
                    put!(mask(r, wide))
                } else {
                    let c = mask(val(self, t, 3), wide) as u128;
                    let cin = u128::from(inst.carry_in && t.carry);
                    let full = mask(r, wide) as u128 + c + cin;
                    if inst.cc {
                        t.carry = full >> wide.bits() != 0;
                    }
                    put!(mask(full as u64, wide))
                }
            }
            Op::Div | Op::Rem => {
                let (x, y) = (int(val(self, t, 1), ty), int(val(self, t, 2), ty));
                let r = if y == 0 {
                    // What the hardware returns: all ones for a quotient, the dividend for a remainder.
                    if inst.op == Op::Div {
                        u64::MAX
                    } else {
                        x as u64
                    }
                } else if inst.op == Op::Div {
                    x.wrapping_div(y) as u64
                } else {
                    x.wrapping_rem(y) as u64
                };
                put!(mask(r, ty))
            }
            Op::Neg | Op::Abs if !ty.float() => {
                let x = int(val(self, t, 1), ty);
                put!(mask(
                    if inst.op == Op::Neg {
                        x.wrapping_neg()
                    } else {
                        x.abs()
                    } as u64,
                    ty
                ))
            }
            Op::Neg | Op::Abs => {
                let x = val(self, t, 1);
                let sign = 1u64 << (bits - 1);
                let r = if inst.op == Op::Neg {
                    x ^ sign
                } else {
                    x & !sign
                };
                let r = match ty {
                    Ty::F32 => from_f32(flush32(f32v(r), inst.ftz)),
                    _ => flush64(f64v(r), inst.ftz).to_bits(),
                };
                put!(mask(r, ty))
            }
            Op::Min | Op::Max => {
                let (x, y) = (val(self, t, 1), val(self, t, 2));
                let max = inst.op == Op::Max;
                let r = match ty {
                    Ty::F32 => from_f32(flush32(
                        minmax32(flush32(f32v(x), inst.ftz), flush32(f32v(y), inst.ftz), max),
                        inst.ftz,
                    )),
                    Ty::F64 => minmax64(f64v(x), f64v(y), max).to_bits(),
                    _ => {
                        let (p, q) = (int(x, ty), int(y, ty));
                        (if (p > q) == max { p } else { q }) as u64
                    }
                };
                put!(mask(r, ty))
            }
            Op::And | Op::Or | Op::Xor => {
                let (x, y) = (val(self, t, 1), val(self, t, 2));
                let r = match inst.op {
                    Op::And => x & y,
                    Op::Or => x | y,
                    _ => x ^ y,
                };
                put!(mask(r, ty))
            }
            Op::Not => {
                let x = val(self, t, 1);
                put!(if ty == Ty::Pred {
                    u64::from(x == 0)
                } else {
                    mask(!x, ty)
                })
            }
            Op::Shl | Op::Shr => {
                let x = val(self, t, 1);
                let n = mask(val(self, t, 2), Ty::U32) as u32;
                let r = if inst.op == Op::Shl {
                    if n >= bits {
                        0
                    } else {
                        x << n
                    }
                } else if ty.signed() {
                    (sext(x, bits) >> n.min(63)) as u64
                } else if n >= bits {
                    0
                } else {
                    mask(x, ty) >> n
                };
                put!(mask(r, ty))
            }
            Op::Clz => {
                let x = mask(val(self, t, 1), ty);
                put!(u64::from(x.leading_zeros() - (64 - bits)))
            }
            Op::Popc => put!(u64::from(mask(val(self, t, 1), ty).count_ones())),
            Op::Bfi => {
                let (f, b) = (val(self, t, 1), val(self, t, 2));
                let pos = val(self, t, 3) as u32 & 0xFF;
                let len = val(self, t, 4) as u32 & 0xFF;
                let r = if len == 0 || pos >= bits {
                    b
                } else {
                    let len = len.min(bits - pos);
                    let m = if len >= 64 {
                        u64::MAX
                    } else {
                        ((1u64 << len) - 1) << pos
                    };
                    (b & !m) | ((f << pos) & m)
                };
                put!(mask(r, ty))
            }
            Op::Selp => {
                let p = val(self, t, 3);
                put!(mask(
                    if p != 0 {
                        val(self, t, 1)
                    } else {
                        val(self, t, 2)
                    },
                    ty
                ))
            }
            Op::Setp => {
                let r = compare(inst.cmp, val(self, t, 1), val(self, t, 2), ty, inst.ftz);
                let c = inst.boolop.map(|_| val(self, t, 3) != 0);
                let combine = |x: bool| match (inst.boolop, c) {
                    (Some(BoolOp::And), Some(c)) => x && c,
                    (Some(BoolOp::Or), Some(c)) => x || c,
                    (Some(BoolOp::Xor), Some(c)) => x ^ c,
                    _ => x,
                };
                match dst {
                    Operand::PredPair(p, q) => {
                        self.set(t, &Operand::Reg(*p), u64::from(combine(r)));
                        self.set(t, &Operand::Reg(*q), u64::from(combine(!r)));
                    }
                    _ => put!(u64::from(combine(r))),
                }
            }
            Op::Cvt => {
                let r = convert(val(self, t, 1), inst).map_err(|e| self.unsupported(inst, &e))?;
                put!(r)
            }
            Op::Cvta => {
                let x = val(self, t, 1);
                let r = if inst.to_space || x & TAG_MASK != 0 {
                    x
                } else {
                    match inst.space {
                        Space::Shared => SHARED_TAG | (x & 0xFFFF_FFFF),
                        Space::Local => LOCAL_TAG | (x & 0xFFFF_FFFF),
                        _ => x,
                    }
                };
                put!(mask(r, ty))
            }
            Op::Ld => {
                let addr = val(self, t, 1);
                match dst {
                    Operand::Vector(regs) => {
                        for (i, r) in regs.iter().enumerate() {
                            let v = self.load(t, inst.space, addr + (i * ty.bytes()) as u64, ty)?;
                            self.set(t, &Operand::Reg(*r), v);
                        }
                    }
                    _ => {
                        let v = self.load(t, inst.space, addr, ty)?;
                        put!(v)
                    }
                }
            }
            Op::St => {
                let addr = val(self, t, 0);
                match a(1) {
                    Some(Operand::Vector(regs)) => {
                        for (i, r) in regs.iter().enumerate() {
                            let v = self.value(t, &Operand::Reg(*r));
                            self.store(t, inst.space, addr + (i * ty.bytes()) as u64, ty, v)?;
                        }
                    }
                    _ => {
                        let v = val(self, t, 1);
                        self.store(t, inst.space, addr, ty, v)?;
                    }
                }
            }
            Op::Bra => {
                let target = val(self, t, 0) as u32;
                t.cur.pc = target;
            }
            Op::Call => {
                let call = inst
                    .call
                    .as_ref()
                    .ok_or_else(|| self.unsupported(inst, "has no call target"))?;
                let callee = &self.program.functions[call.func as usize];
                if !callee.defined {
                    return Err(self
                        .unsupported(inst, &format!("calls {}, which has no body", callee.name)));
                }
                if t.stack.len() > 64 {
                    return Err(fault(
                        LAUNCH_FAILED,
                        format!("{}: call depth over 64 (stack overflow)", self.kernel),
                    ));
                }
                let caller = &t.cur;
                let mut inp = vec![0u8; callee.in_size as usize];
                for ((at, size), p) in call.args.iter().zip(&callee.params) {
                    let n = (*size).min(p.size) as usize;
                    inp[p.offset as usize..p.offset as usize + n]
                        .copy_from_slice(&caller.out[*at as usize..*at as usize + n]);
                }
                let local_base =
                    caller.local_base + self.program.functions[caller.func as usize].local_size;
                let local_base = local_base.div_ceil(16) * 16;
                if local_base as usize + callee.local_size as usize > LOCAL_BYTES {
                    return Err(fault(
                        LAUNCH_FAILED,
                        format!(
                            "{}: local memory of the call stack exceeds {LOCAL_BYTES} bytes",
                            self.kernel
                        ),
                    ));
                }
                let callee_frame = Frame {
                    func: call.func,
                    pc: 0,
                    regs: vec![0; callee.regs as usize],
                    inp,
                    out: vec![0; callee.out_size as usize],
                    local_base,
                    ret: call.ret,
                };
                let caller = std::mem::replace(&mut t.cur, callee_frame);
                t.stack.push(caller);
            }
            Op::Ret => {
                if self.ret(t) {
                    return Ok(Flow::Exit);
                }
            }
            Op::Exit => return Ok(Flow::Exit),
            Op::Bar => {
                if val(self, t, 0) != 0 {
                    return Err(self.unsupported(inst, "uses a barrier other than 0"));
                }
                return Ok(Flow::Barrier);
            }
            Op::Rsqrt | Op::Ex2 | Op::Lg2 | Op::Sin | Op::Cos => {
                // approx instructions: computed exactly, which is within every documented bound.
                if !inst.approx {
                    return Err(self.unsupported(inst, "exists only as .approx"));
                }
                let x = val(self, t, 1);
                let f = |v: f64| match inst.op {
                    Op::Rsqrt => 1.0 / v.sqrt(),
                    Op::Ex2 => v.exp2(),
                    Op::Lg2 => v.log2(),
                    Op::Sin => v.sin(),
                    _ => v.cos(),
                };
                let r = match ty {
                    Ty::F32 => from_f32(flush32(
                        f(flush32(f32v(x), inst.ftz) as f64) as f32,
                        inst.ftz,
                    )),
                    _ => flush64(f(flush64(f64v(x), inst.ftz)), inst.ftz).to_bits(),
                };
                put!(r)
            }
            Op::Copysign => {
                let (x, y) = (val(self, t, 1), val(self, t, 2));
                let sign = 1u64 << (bits - 1);
                put!(mask((y & !sign) | (x & sign), ty))
            }
            _ => return Err(self.unsupported(inst, &format!("is not implemented for .{ty:?}"))),
        }
        Ok(Flow::Next)
    }
}

enum Flow {
    Next,
    Barrier,
    Exit,
}

fn wide_of(ty: Ty) -> Ty {
    match ty {
        Ty::U16 => Ty::U32,
        Ty::S16 => Ty::S32,
        Ty::U32 => Ty::U64,
        Ty::S32 => Ty::S64,
        other => other,
    }
}
