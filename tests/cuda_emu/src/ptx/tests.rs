//! One test per instruction group, each a small kernel whose results are stored to global memory
//! and compared with values worked out from the PTX ISA manual.
use super::exec::{launch, Grid};
use super::parse::parse;
use crate::driver::memory::Memory;
use crate::status::*;

const REGS: &str = "
    .reg .pred %p<8>; .reg .b16 %rs<8>; .reg .b32 %r<16>; .reg .b64 %rd<16>;
    .reg .f32 %f<16>; .reg .f64 %fd<16>;";

fn ptx(body: &str, extra: &str) -> String {
    format!(
        ".version 8.8\n.target sm_90\n.address_size 64\n{extra}\n.visible .entry k(.param .u64 out)\n{{{REGS}\n    ld.param.u64 %rd0, [out];\n{body}\n    ret;\n}}\n"
    )
}

/// Runs `body` on `threads` threads of one block; returns the 64 output words (u64).
fn run_with(body: &str, extra: &str, threads: u32) -> Result<Vec<u64>, (CUresult, String)> {
    let program = parse(&ptx(body, extra)).map_err(|e| (INVALID_PTX, e))?;
    let memory = Memory::default();
    let out = memory.alloc(0, 64 * 8, 1 << 20, None).expect("alloc");
    let mut globals = Vec::new();
    for g in &program.globals {
        let p = memory
            .alloc(0, g.size as usize, 1 << 20, None)
            .expect("alloc");
        memory.write(p, &g.init).expect("init");
        globals.push(p);
    }
    let grid = Grid {
        grid: [1, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared: 0,
    };
    let f = program.function("k").expect("entry");
    launch(
        &program,
        f,
        grid,
        &out.to_le_bytes(),
        &globals,
        &memory.snapshot(),
    )
    .map_err(|e| (e.code, e.message))?;
    let mut raw = vec![0u8; 64 * 8];
    memory.read(out, &mut raw).expect("read");
    Ok(raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

fn run(body: &str) -> Vec<u64> {
    run_with(body, "", 1).unwrap_or_else(|e| panic!("{e:?}"))
}

fn f32s(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

#[test]
fn integer_arithmetic() {
    let out = run("
    mov.u32 %r1, 2147483647; add.s32 %r2, %r1, 1; st.global.u32 [%rd0], %r2;
    mov.u32 %r3, -2; mov.u32 %r4, 3; mul.wide.s32 %rd1, %r3, %r4; st.global.u64 [%rd0+8], %rd1;
    mov.u32 %r5, 4294967295; mul.hi.u32 %r6, %r5, 2; st.global.u32 [%rd0+16], %r6;
    mov.u64 %rd2, -7; div.s64 %rd3, %rd2, 2; st.global.u64 [%rd0+24], %rd3;
    rem.s64 %rd4, %rd2, 2; st.global.u64 [%rd0+32], %rd4;
    mov.u32 %r7, 0; div.u32 %r8, %r5, %r7; st.global.u32 [%rd0+40], %r8;
    mul.lo.s64 %rd5, %rd2, %rd2; st.global.u64 [%rd0+48], %rd5;
    abs.s32 %r9, %r3; neg.s32 %r10, %r9; st.global.u32 [%rd0+56], %r10;
    min.s32 %r11, %r3, %r4; max.u32 %r12, %r3, %r4; st.global.u32 [%rd0+64], %r11; st.global.u32 [%rd0+72], %r12;
    mad.wide.u32 %rd6, %r4, %r4, %rd5; st.global.u64 [%rd0+80], %rd6;
    ");
    assert_eq!(out[0] as u32, 0x8000_0000, "add wraps");
    assert_eq!(out[1] as i64, -6, "mul.wide.s32");
    assert_eq!(out[2] as u32, 1, "mul.hi.u32");
    assert_eq!(out[3] as i64, -3, "div truncates towards zero");
    assert_eq!(out[4] as i64, -1, "rem has the dividend's sign");
    assert_eq!(out[5] as u32, u32::MAX, "division by zero");
    assert_eq!(out[6], 49);
    assert_eq!(out[7] as u32 as i32, -2);
    assert_eq!((out[8] as u32 as i32, out[9] as u32), (-2, u32::MAX - 1));
    assert_eq!(out[10], 58, "mad.wide");
}

#[test]
fn carry_chains() {
    let out = run("
    mov.u32 %r1, 4294967295; mov.u32 %r2, 1; mov.u32 %r3, 0;
    add.cc.u32 %r4, %r1, %r2; addc.u32 %r5, %r3, %r3;
    st.global.u32 [%rd0], %r4; st.global.u32 [%rd0+8], %r5;
    sub.cc.u32 %r6, %r3, %r2; subc.u32 %r7, 5, %r3;
    st.global.u32 [%rd0+16], %r6; st.global.u32 [%rd0+24], %r7;
    mad.lo.cc.u32 %r8, %r1, %r1, %r1; madc.hi.u32 %r9, %r1, %r1, 0;
    st.global.u32 [%rd0+32], %r8; st.global.u32 [%rd0+40], %r9;
    add.cc.u32 %r10, %r2, %r2; addc.cc.u32 %r11, %r1, %r2; addc.u32 %r12, %r3, %r3;
    st.global.u32 [%rd0+48], %r12;
    ");
    assert_eq!((out[0], out[1]), (0, 1), "add.cc carries into addc");
    assert_eq!(
        (out[2] as u32, out[3]),
        (u32::MAX, 4),
        "sub.cc borrows from subc"
    );
    // 0xFFFFFFFF^2 = 0xFFFFFFFE_00000001; + 0xFFFFFFFF = 0xFFFFFFFF_00000000 (lo 0, no carry
    // beyond the hi word: lo 0x00000001 + 0xFFFFFFFF = 0 carry 1; hi 0xFFFFFFFE + 1 = 0xFFFFFFFF).
    assert_eq!((out[4], out[5] as u32), (0, 0xFFFF_FFFF));
    assert_eq!(out[6], 1, "a carry passes through addc.cc");
}

#[test]
fn bits_and_shifts() {
    let out = run("
    mov.u32 %r1, 1; shl.b32 %r2, %r1, 33; st.global.u32 [%rd0], %r2;
    mov.u32 %r3, -8; shr.s32 %r4, %r3, 1; st.global.u32 [%rd0+8], %r4;
    shr.u32 %r5, %r3, 28; st.global.u32 [%rd0+16], %r5;
    mov.u64 %rd1, 1; clz.b64 %r6, %rd1; st.global.u32 [%rd0+24], %r6;
    mov.u64 %rd2, 0; mov.u64 %rd3, 5; bfi.b64 %rd4, %rd3, %rd2, 8, 4; st.global.u64 [%rd0+32], %rd4;
    not.b32 %r7, %r1; xor.b32 %r8, %r7, %r3; st.global.u32 [%rd0+40], %r8;
    and.b16 %rs1, 0x00F0, 0x0FF0; or.b16 %rs2, %rs1, 1; st.global.u16 [%rd0+48], %rs2;
    ");
    assert_eq!(out[0], 0, "shifts of the width or more give 0");
    assert_eq!(out[1] as u32 as i32, -4, "arithmetic shift");
    assert_eq!(out[2], 15);
    assert_eq!(out[3], 63);
    assert_eq!(out[4], 5 << 8, "bfi inserts 4 bits at 8");
    assert_eq!(out[5] as u32, !1u32 ^ (-8i32 as u32));
    assert_eq!(out[6], 0xF1);
}

#[test]
fn compare_select_and_predicates() {
    let nan = "0f7FC00000";
    let out = run(&format!("
    setp.lt.f32 %p1, {nan}, 0f3F800000; selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd0], %r1;
    setp.ltu.f32 %p2, {nan}, 0f3F800000; selp.u32 %r2, 1, 0, %p2; st.global.u32 [%rd0+8], %r2;
    mov.u32 %r3, -1; setp.lt.u32 %p3, %r3, 1; selp.u32 %r4, 1, 0, %p3; st.global.u32 [%rd0+16], %r4;
    setp.lt.s32 %p4, %r3, 1; and.pred %p5, %p4, %p2; not.pred %p6, %p5; selp.u32 %r5, 7, 9, %p6; st.global.u32 [%rd0+24], %r5;
    @%p4 st.global.u32 [%rd0+32], 11;
    @!%p4 st.global.u32 [%rd0+40], 12;
    setp.ne.f64 %p7, 0d7FF8000000000000, 0d3FF0000000000000; selp.u32 %r6, 1, 0, %p7; st.global.u32 [%rd0+48], %r6;
    "));
    assert_eq!(out[0], 0, "ordered compare with NaN is false");
    assert_eq!(out[1], 1, "unordered compare with NaN is true");
    assert_eq!(out[2], 0, "-1 as u32 is large");
    assert_eq!(out[3], 9);
    assert_eq!((out[4], out[5]), (11, 0), "guards");
    assert_eq!(out[6], 0, "ne is ordered: NaN != 1 is false");
}

#[test]
fn float_rounding_modes() {
    // 1 + 2^-30 is between 1 and the next f32.
    let out = run("
    mov.f32 %f1, 0f3F800000; mov.f32 %f2, 0f30800000;
    add.rz.f32 %f3, %f1, %f2; st.global.f32 [%rd0], %f3;
    add.rp.f32 %f4, %f1, %f2; st.global.f32 [%rd0+8], %f4;
    neg.f32 %f5, %f2; fma.rm.f32 %f6, %f1, %f1, %f5; st.global.f32 [%rd0+16], %f6;
    fma.rz.f32 %f7, %f1, %f1, %f5; st.global.f32 [%rd0+24], %f7;
    mov.f32 %f8, 0f40400000; div.rn.f32 %f9, %f1, %f8; st.global.f32 [%rd0+32], %f9;
    mov.f32 %f10, 0f40000000; sqrt.rn.f32 %f11, %f10; st.global.f32 [%rd0+40], %f11;
    mov.f64 %fd1, 0d4008000000000000; rcp.rn.f64 %fd2, %fd1; st.global.f64 [%rd0+48], %fd2;
    mul.rn.f32 %f12, %f8, %f8; st.global.f32 [%rd0+56], %f12;
    add.rn.f64 %fd3, %fd1, 0d3CA0000000000000; st.global.f64 [%rd0+64], %fd3;
    ");
    assert_eq!(f32s(out[0]), 1.0, "rz truncates");
    assert_eq!(f32s(out[1]), 1.0 + f32::EPSILON, "rp rounds up");
    assert_eq!(
        f32s(out[2]),
        1.0 - f32::EPSILON / 2.0,
        "rm: 1 - 2^-30 rounds down"
    );
    assert_eq!(
        f32s(out[3]),
        1.0 - f32::EPSILON / 2.0,
        "rz of a positive value rounds down"
    );
    assert_eq!(out[4] as u32, 0x3EAA_AAAB, "1/3 to nearest");
    assert_eq!(out[5] as u32, 0x3FB5_04F3, "sqrt(2) to nearest");
    assert_eq!(f64::from_bits(out[6]), 1.0 / 3.0);
    assert_eq!(f32s(out[7]), 9.0);
    assert_eq!(f64::from_bits(out[8]), 3.0, "3 + 2^-53 ties to even");
}

#[test]
fn conversions() {
    let out = run("
    cvt.rzi.s32.f32 %r1, 0fC02CCCCD; st.global.u32 [%rd0], %r1;
    cvt.rni.s32.f64 %r2, 0d4004000000000000; st.global.u32 [%rd0+8], %r2;
    cvt.rmi.f32.f32 %f1, 0fBF000000; st.global.f32 [%rd0+16], %f1;
    mov.u64 %rd1, 16777217; cvt.rn.f32.s64 %f2, %rd1; st.global.f32 [%rd0+24], %f2;
    cvt.rzi.s32.f32 %r3, 0f7FC00000; st.global.u32 [%rd0+32], %r3;
    cvt.rzi.s32.f32 %r4, 0f60AD78EC; st.global.u32 [%rd0+40], %r4;
    cvt.sat.f32.f32 %f3, 0f3FC00000; st.global.f32 [%rd0+48], %f3;
    mov.u32 %r5, -1; cvt.s64.s32 %rd2, %r5; st.global.u64 [%rd0+56], %rd2;
    cvt.u64.u32 %rd3, %r5; st.global.u64 [%rd0+64], %rd3;
    cvt.rn.f32.f64 %f4, 0d3FD5555555555555; st.global.f32 [%rd0+72], %f4;
    cvt.rpi.f64.f64 %fd1, 0d3FF0000000000001; st.global.f64 [%rd0+80], %fd1;
    mov.u16 %rs1, 65535; cvt.rn.f32.u16 %f5, %rs1; st.global.f32 [%rd0+88], %f5;
    ");
    assert_eq!(out[0] as u32 as i32, -2, "rzi truncates -2.7");
    assert_eq!(out[1] as u32 as i32, 2, "rni: 2.5 ties to even");
    assert_eq!(f32s(out[2]), -1.0, "rmi floors");
    assert_eq!(f32s(out[3]), 16_777_216.0, "2^24 + 1 to nearest even");
    assert_eq!(out[4], 0, "NaN converts to 0");
    assert_eq!(out[5] as u32 as i32, i32::MAX, "out of range saturates");
    assert_eq!(f32s(out[6]), 1.0, "sat clamps");
    assert_eq!(out[7] as i64, -1, "sign extension");
    assert_eq!(out[8], u32::MAX as u64, "zero extension");
    assert_eq!(f32s(out[9]), (1.0f64 / 3.0) as f32);
    assert_eq!(f64::from_bits(out[10]), 2.0);
    assert_eq!(f32s(out[11]), 65535.0);
}

#[test]
fn ftz_and_approx() {
    // 2^-140 is subnormal in f32.
    let out = run("
    mov.f32 %f1, 0f00000200; mul.ftz.f32 %f2, %f1, 0f3F800000; st.global.f32 [%rd0], %f2;
    mul.f32 %f3, %f1, 0f3F800000; st.global.f32 [%rd0+8], %f3;
    ex2.approx.ftz.f32 %f4, 0f40400000; st.global.f32 [%rd0+16], %f4;
    rcp.approx.ftz.f64 %fd1, 0d4010000000000000; st.global.f64 [%rd0+24], %fd1;
    div.approx.f32 %f5, 0f3F800000, 0f40400000; st.global.f32 [%rd0+32], %f5;
    abs.f32 %f6, 0fBF800000; neg.f64 %fd2, 0d3FF0000000000000; st.global.f32 [%rd0+40], %f6; st.global.f64 [%rd0+48], %fd2;
    max.f32 %f7, 0f7FC00000, 0f40000000; st.global.f32 [%rd0+56], %f7;
    ");
    assert_eq!(f32s(out[0]), 0.0, "ftz flushes a subnormal");
    assert_eq!(out[1] as u32, 0x200, "without ftz it stays");
    // ex2.approx: maximum relative error 2^-22.5 (PTX ISA); exactly 8 here.
    assert!((f32s(out[2]) - 8.0).abs() <= 8.0 * 2f32.powf(-22.5));
    assert_eq!(f64::from_bits(out[3]), 0.25);
    assert!(
        (f32s(out[4]) - 1.0 / 3.0).abs() <= 2.0 * f32::EPSILON,
        "div.approx within 2 ulp"
    );
    assert_eq!((f32s(out[5]), f64::from_bits(out[6])), (1.0, -1.0));
    assert_eq!(f32s(out[7]), 2.0, "max ignores a NaN operand");
}

#[test]
fn memory_spaces_calls_and_constant_tables() {
    let extra = "
.global .align 4 .b8 table[8] = {1, 0, 0, 0, 2, 0, 0, 0};
.func (.param .b64 func_retval0) twice(.param .b64 twice_param_0)
{
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [twice_param_0];
    add.s64 %rd2, %rd1, %rd1;
    st.param.b64 [func_retval0+0], %rd2;
    ret;
}";
    let out = run_with("
    .local .align 8 .b8 __local_depot0[16];
    .reg .b64 %SPL;
    mov.u64 %SPL, __local_depot0;
    add.u64 %rd1, %SPL, 8;
    st.local.u64 [%rd1], 77; ld.local.u64 %rd2, [%rd1]; st.global.u64 [%rd0], %rd2;
    mov.u64 %rd3, table; ld.global.nc.u32 %r1, [%rd3+4]; st.global.u32 [%rd0+8], %r1;
    { .param .b64 param0; st.param.b64 [param0+0], 21; .param .b64 retval0;
      call.uni (retval0), twice, (param0); ld.param.b64 %rd4, [retval0+0]; }
    st.global.u64 [%rd0+16], %rd4;
    mov.b64 %rd5, 0x0000000200000001; mov.b64 {%r2, %r3}, %rd5; st.global.u32 [%rd0+24], %r3;
    st.global.v2.u32 [%rd0+32], {%r2, %r3}; ld.global.v2.u32 {%r4, %r5}, [%rd0+32]; add.s32 %r6, %r4, %r5; st.global.u32 [%rd0+40], %r6;
    ", extra, 1).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out[0], 77, "local memory");
    assert_eq!(out[1], 2, ".global table");
    assert_eq!(out[2], 42, ".func call with param and retval");
    assert_eq!(out[3], 2, "mov unpacks");
    assert_eq!(out[5], 3, "vector load and store");
}

const SHARED: &str = ".shared .align 4 .b8 buf[256];";

/// Thread i writes i into shared memory, then (after the barrier, or not) reads thread i+1's slot.
fn neighbour(barrier: &str) -> Vec<u64> {
    let body = format!(
        "
    mov.u32 %r1, %tid.x; mul.wide.u32 %rd1, %r1, 4; mov.u64 %rd2, buf; add.s64 %rd3, %rd2, %rd1;
    st.shared.u32 [%rd3], %r1;
    {barrier}
    add.s32 %r2, %r1, 1; rem.u32 %r3, %r2, 4; mul.wide.u32 %rd4, %r3, 4; add.s64 %rd5, %rd2, %rd4;
    ld.shared.u32 %r4, [%rd5];
    mul.wide.u32 %rd6, %r1, 8; add.s64 %rd7, %rd0, %rd6; st.global.u32 [%rd7], %r4;
    "
    );
    run_with(&body, SHARED, 4).unwrap_or_else(|e| panic!("{e:?}"))
}

#[test]
fn barriers_order_shared_memory_and_a_missing_one_shows() {
    assert_eq!(&neighbour("bar.sync 0;")[..4], &[1, 2, 3, 0]);
    // Without the barrier thread 0 reads slot 1 before thread 1 ran: fresh shared memory is
    // all ones, never a plausible value.
    assert_eq!(neighbour("")[0] as u32, u32::MAX);
}

#[test]
fn bad_addresses_are_errors_not_reads() {
    let (code, message) =
        run_with("ld.global.u32 %r1, [%rd0+512];", "", 1).expect_err("past the end");
    assert_eq!(code, ILLEGAL_ADDRESS);
    assert!(
        message.contains("outside every live allocation"),
        "{message}"
    );
    let (code, _) =
        run_with("mov.u64 %rd1, 4096; st.global.u32 [%rd1], 1;", "", 1).expect_err("wild pointer");
    assert_eq!(code, ILLEGAL_ADDRESS);
}

#[test]
fn the_grid_is_checked_like_a_gpu() {
    let (code, message) = run_with("", "", 1025).expect_err("too many threads");
    assert_eq!(code, INVALID_VALUE);
    assert!(message.contains("at most 1024"), "{message}");
    let (code, message) = run_with("mov.u64 %rd1, big;", ".shared .align 4 .b8 big[50000];", 1)
        .expect_err("too much shared memory");
    assert_eq!(code, INVALID_VALUE);
    assert!(message.contains("shared memory"), "{message}");
}

#[test]
fn unknown_instructions_and_directives_are_named() {
    let (code, message) =
        run_with("shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;", "", 1).expect_err("not implemented");
    assert_eq!(code, INVALID_PTX);
    assert!(
        message.contains("`shfl.sync.bfly.b32` is not implemented"),
        "{message}"
    );
    let (_, message) = run_with("add.f16 %rs1, %rs2, %rs3;", "", 1).expect_err("f16");
    assert!(message.contains("add.f16"), "{message}");
    let (_, message) = run_with("", ".extern .func foo();", 1).expect_err("extern");
    assert!(message.contains(".extern"), "{message}");
}
