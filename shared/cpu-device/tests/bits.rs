//! The CPU device's answers, bit for bit, where the PTX ISA's rules are easy to miss: `.ftz`
//! flushing subnormal operands and results, conversions and loads into registers wider than
//! their type, the predefined constant and special registers, and warp-level instructions
//! after some of the warp's lanes have exited. Each case is a small hand-written kernel and
//! the bits the PTX ISA (and an H100) gives.

mod support;

use cpu_device::exec::Fault;
use cpu_device::load::load;
use cpu_device::memory::Memory;

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Run `body` in a kernel of `threads` threads (one block) with registers `%f<8>` (f32),
/// `%r<8>` (b32), `%fd<4>` (f64), `%rd<8>` (b64), `%p<4>` and `%rd1` holding a zeroed
/// buffer of `bytes`: the buffer afterwards, or the fault.
fn run(body: &str, threads: u32, bytes: u64) -> Result<Vec<u8>, Fault> {
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 p)\n{{\n\
         .reg .f32 %f<8>;\n.reg .b32 %r<8>;\n.reg .f64 %fd<4>;\n.reg .b64 %rd<8>;\n\
         .reg .pred %p<4>;\nld.param.u64 %rd1, [p];\n{body}\nret;\n}}\n"
    );
    let memory = Memory::default();
    let module = load(&ptx, &memory).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    let buffer = memory.alloc(bytes, "").expect("allocated");
    let params = buffer.address.to_le_bytes();
    support::launch(&module, "k", [1, threads], &params, &memory, 1)?;
    Ok(support::read(&memory, buffer.address, bytes as usize))
}

/// The first 8 bytes `body` leaves at `%rd1`, as a little-endian word.
fn word(body: &str) -> u64 {
    let out = run(body, 1, 64).unwrap_or_else(|f| panic!("{}: {body}", f.message));
    u64::from_le_bytes(out[..8].try_into().expect("8 bytes"))
}

/// `%f1`, `%f2`, `%f3` set to three f32s' bits, then `tail`.
fn with_f32(inputs: [u32; 3], tail: &str) -> String {
    format!(
        "mov.b32 %f1, 0f{:08X};\nmov.b32 %f2, 0f{:08X};\nmov.b32 %f3, 0f{:08X};\n{tail}",
        inputs[0], inputs[1], inputs[2]
    )
}

/// Each case: an instruction writing `%f4` (stored as f32), its three f32 inputs, and the
/// result's bits with and without `.ftz` (the instruction's `{ftz}`).
const FTZ_F32: &[(&str, [u32; 3], u32, u32)] = &[
    // An operand flushed: -0 * 0.5 (the H100's 0x80000000; unflushed 0x80200000).
    (
        "mul{ftz}.f32",
        [0x8040_0000, 0x3f00_0000, 0],
        0x8000_0000,
        0x8020_0000,
    ),
    // A result flushed: the smallest normal halved is subnormal.
    (
        "mul.rn{ftz}.f32",
        [0x0080_0000, 0x3f00_0000, 0],
        0,
        0x0040_0000,
    ),
    ("add{ftz}.f32", [1, 1, 0], 0, 2),
    (
        "add.rz{ftz}.f32",
        [0x8000_0001, 0x8000_0001, 0],
        0x8000_0000,
        0x8000_0002,
    ),
    (
        "sub{ftz}.f32",
        [0x0080_0000, 0x0040_0000, 0],
        0x0080_0000,
        0x0040_0000,
    ),
    (
        "fma.rn{ftz}.f32",
        [0x0040_0000, 0x4000_0000, 0],
        0,
        0x0080_0000,
    ),
    (
        "fma.rm{ftz}.f32",
        [0x3f80_0000, 0x8040_0000, 0x0000_0001],
        0x8000_0000,
        0x803f_ffff,
    ),
    (
        "mad.rn{ftz}.f32",
        [0x0040_0000, 0x4000_0000, 0],
        0,
        0x0080_0000,
    ),
    (
        "div.rn{ftz}.f32",
        [0x0040_0000, 0x3f80_0000, 0],
        0,
        0x0040_0000,
    ),
    (
        "div.rz{ftz}.f32",
        [0x3f80_0000, 0x0040_0000, 0],
        0x7f80_0000,
        0x7f00_0000,
    ),
    (
        "sqrt.rn{ftz}.f32",
        [0x8000_0001, 0, 0],
        0x8000_0000,
        0x7fff_ffff,
    ),
    (
        "rcp.rn{ftz}.f32",
        [0x8040_0000, 0, 0],
        0xff80_0000,
        0xff00_0000,
    ),
    (
        "min{ftz}.f32",
        [0x8000_0001, 0x0000_0001, 0],
        0x8000_0000,
        0x8000_0001,
    ),
    (
        "max{ftz}.f32",
        [0x0040_0000, 0x8000_0000, 0],
        0,
        0x0040_0000,
    ),
    ("abs{ftz}.f32", [0x8040_0000, 0, 0], 0, 0x0040_0000),
    (
        "neg{ftz}.f32",
        [0x0040_0000, 0, 0],
        0x8000_0000,
        0x8040_0000,
    ),
    (
        "cvt.rmi{ftz}.f32.f32",
        [0x8000_0001, 0, 0],
        0x8000_0000,
        0xbf80_0000,
    ),
    ("add.sat{ftz}.f32", [0x0040_0000, 0, 0], 0, 0x0040_0000),
];

fn operands(instruction: &str) -> &'static str {
    match instruction.split(['.', '{']).next() {
        Some("fma" | "mad") => "%f4, %f1, %f2, %f3",
        Some("sqrt" | "rcp" | "abs" | "neg" | "cvt") => "%f4, %f1",
        _ => "%f4, %f1, %f2",
    }
}

#[test]
fn ftz_flushes_f32_subnormal_operands_and_results_to_signed_zero() {
    for &(instruction, inputs, flushed, kept) in FTZ_F32 {
        for (ftz, want) in [(".ftz", flushed), ("", kept)] {
            let opcode = instruction.replace("{ftz}", ftz);
            let body = with_f32(
                inputs,
                &format!(
                    "{opcode} {};\nst.global.f32 [%rd1], %f4;",
                    operands(instruction)
                ),
            );
            assert_eq!(
                word(&body) as u32,
                want,
                "{opcode} of {inputs:08x?}: {:#010x}, want {want:#010x}",
                word(&body)
            );
        }
    }
}

#[test]
fn ftz_compares_and_converts_flushed_values() {
    // (body after the inputs, inputs, with .ftz, without): `{ftz}` marks the modifier.
    let cases: &[(&str, [u32; 3], u64, u64)] = &[
        (
            "setp.eq{ftz}.f32 %p1, %f1, %f2;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%rd1], %r1;",
            [1, 0, 0],
            1,
            0,
        ),
        (
            "setp.lt{ftz}.f32 %p1, %f1, %f2;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%rd1], %r1;",
            [0x8000_0001, 0x0000_0001, 0],
            0,
            1,
        ),
        (
            "setp.gtu.and{ftz}.f32 %p1|%p2, %f1, %f2, 1;\nselp.u32 %r1, 1, 0, %p2;\nst.global.u32 [%rd1], %r1;",
            [0x0000_0001, 0, 0],
            1,
            0,
        ),
        (
            "cvt{ftz}.f64.f32 %fd1, %f1;\nst.global.f64 [%rd1], %fd1;",
            [0x8040_0000, 0, 0],
            0x8000_0000_0000_0000,
            0xb800_0000_0000_0000,
        ),
        (
            "cvt.rpi{ftz}.s32.f32 %r1, %f1;\nst.global.u32 [%rd1], %r1;",
            [1, 0, 0],
            0,
            1,
        ),
        (
            "cvt.rmi{ftz}.s64.f32 %rd2, %f1;\nst.global.u64 [%rd1], %rd2;",
            [0x8000_0001, 0, 0],
            0,
            u64::MAX,
        ),
    ];
    for &(tail, inputs, flushed, kept) in cases {
        for (ftz, want) in [(".ftz", flushed), ("", kept)] {
            let body = with_f32(inputs, &tail.replace("{ftz}", ftz));
            assert_eq!(word(&body), want, "{body}");
        }
    }
    // An f32 result of a conversion from f64: 2^-130 is an f32 subnormal.
    let narrow = |ftz: &str| {
        word(&format!(
            "mov.b64 %fd1, 0d37D0000000000000;\ncvt.rn{ftz}.f32.f64 %f1, %fd1;\nst.global.f32 [%rd1], %f1;"
        ))
    };
    assert_eq!(narrow(".ftz"), 0);
    assert_eq!(narrow(""), 0x0008_0000);
}

#[test]
fn ftz_is_refused_where_the_ptx_isa_has_none() {
    for instruction in [
        "add.ftz.f64 %fd1, %fd2, %fd3;",
        "setp.lt.ftz.f64 %p1, %fd2, %fd3;",
        "cvt.rn.ftz.f64.s32 %fd1, %r1;",
    ] {
        let ptx = format!(
            "{HEADER}.visible .entry f64_ftz()\n{{\n.reg .f64 %fd<4>;\n.reg .b32 %r<2>;\n\
             .reg .pred %p<2>;\n{instruction}\nret;\n}}\n"
        );
        let error = load(&ptx, &Memory::default()).expect_err(instruction);
        assert!(error.contains(".ftz applies only"), "{error}");
        assert!(
            error.contains(instruction.split(' ').next().expect("an opcode")),
            "{error}"
        );
    }
}

#[test]
fn a_narrow_signed_conversion_is_sign_extended_into_its_register() {
    // (conversion, source set-up, store, bits stored): -62 is 0xc2 in 8 bits.
    let cases: &[(&str, &str, u64)] = &[
        ("cvt.s16.s8 %r2, %r1;", "mov.b32 %r1, -62;", 0xffff_ffc2),
        ("cvt.s8.s32 %r2, %r1;", "mov.b32 %r1, 0x1c2;", 0xffff_ffc2),
        ("cvt.s16.u8 %r2, %r1;", "mov.b32 %r1, 0x1c2;", 0x0000_00c2),
        ("cvt.u8.s32 %r2, %r1;", "mov.b32 %r1, -62;", 0x0000_00c2),
        ("cvt.u16.s8 %r2, %r1;", "mov.b32 %r1, -62;", 0x0000_ffc2),
        (
            "cvt.sat.s8.s32 %r2, %r1;",
            "mov.b32 %r1, -1000;",
            0xffff_ff80,
        ),
        ("cvt.sat.u8.s32 %r2, %r1;", "mov.b32 %r1, -1000;", 0),
        (
            "cvt.rzi.s16.f32 %r2, %f1;",
            "mov.b32 %f1, 0fBF800000;",
            0xffff_ffff,
        ),
        (
            "cvt.rni.s8.f64 %r2, %fd1;",
            "mov.b64 %fd1, 0dC05F000000000000;",
            0xffff_ff84,
        ),
    ];
    for &(cvt, setup, want) in cases {
        let body = format!("{setup}\n{cvt}\nst.global.b32 [%rd1], %r2;");
        assert_eq!(word(&body), want, "{cvt}");
    }
    // Into a 64-bit register, stored whole.
    let cases: &[(&str, u64)] = &[
        ("cvt.s8.s32 %rd2, %r1;", 0xffff_ffff_ffff_ffc2),
        ("cvt.s16.s32 %rd2, %r1;", 0xffff_ffff_ffff_ffc2),
        ("cvt.u16.s32 %rd2, %r1;", 0x0000_0000_0000_ffc2),
        ("cvt.s32.s8 %rd2, %r1;", 0xffff_ffff_ffff_ffc2),
    ];
    for &(cvt, want) in cases {
        let body = format!("mov.b32 %r1, -62;\n{cvt}\nst.global.b64 [%rd1], %rd2;");
        assert_eq!(word(&body), want, "{cvt}");
    }
}

#[test]
fn loads_and_stores_into_wider_registers_keep_the_bits_as_the_ptx_isa_says() {
    // The word at %rd1+8 is 0x0123456789abcdef before each case; %rd5 holds other bits.
    let set_up = "mov.b64 %rd2, 0x0123456789abcdef;\nst.global.b64 [%rd1+8], %rd2;\n\
                  mov.b64 %rd5, 0xfedcba9876543210;\n";
    let cases: &[(&str, u64)] = &[
        // A float type into a bit-size register: its raw bits, zero-extended, no conversion.
        ("ld.global.f32 %rd5, [%rd1+8];", 0x89ab_cdef),
        ("ld.global.b32 %rd5, [%rd1+8];", 0x89ab_cdef),
        // Signed types sign-extend, unsigned and bit-size types zero-extend.
        ("ld.global.s32 %rd5, [%rd1+8];", 0xffff_ffff_89ab_cdef),
        ("ld.global.s8 %rd5, [%rd1+8];", 0xffff_ffff_ffff_ffef),
        ("ld.global.u8 %rd5, [%rd1+8];", 0xef),
        ("ld.global.s16 %rd5, [%rd1+8];", 0xffff_ffff_ffff_cdef),
        ("ld.global.b16 %rd5, [%rd1+8];", 0xcdef),
        ("ld.global.u16 %rd5, [%rd1+12];", 0x4567),
    ];
    for &(ld, want) in cases {
        let body = format!("{set_up}{ld}\nst.global.b64 [%rd1], %rd5;");
        assert_eq!(word(&body), want, "{ld}");
    }
    // Into a 32-bit register, stored as 32 bits.
    let body = format!("{set_up}ld.global.s8 %r3, [%rd1+8];\nst.global.b32 [%rd1], %r3;");
    assert_eq!(word(&body), 0xffff_ffef);
    // A vector of f32 into 64-bit registers: each zero-extended.
    let body = format!(
        "{set_up}ld.global.v2.f32 {{%rd5, %rd6}}, [%rd1+8];\n\
         st.global.b64 [%rd1], %rd5;\nst.global.b64 [%rd1+16], %rd6;"
    );
    let out = run(&body, 1, 64).expect("no fault");
    let at = |i: usize| u64::from_le_bytes(out[i..i + 8].try_into().expect("8 bytes"));
    assert_eq!((at(0), at(16)), (0x89ab_cdef, 0x0123_4567));
    // A store of a narrower type from a wider register keeps its low bits.
    let body = format!("{set_up}st.global.f32 [%rd1], %rd5;");
    assert_eq!(word(&body), 0x7654_3210);
    let body = format!("{set_up}st.global.u8 [%rd1], %rd5;");
    assert_eq!(word(&body), 0x10);
}

#[test]
fn warp_sz_and_the_special_registers_read_as_on_an_h100() {
    assert_eq!(
        word("mov.u32 %r1, WARP_SZ;\nst.global.u32 [%rd1], %r1;"),
        32
    );
    assert_eq!(
        word("add.u32 %r1, %r1, WARP_SZ;\nsub.u32 %r1, %r1, WARP_SZ;\nst.global.u32 [%rd1], %r1;"),
        0
    );
    assert_eq!(
        word("mov.u32 %r1, %nsmid;\nst.global.u32 [%rd1], %r1;"),
        132
    );
    // The clocks only move forward.
    let body = "mov.u64 %rd2, %clock64;\nmov.u64 %rd3, %clock64;\nmov.u64 %rd4, %globaltimer;\n\
                mov.u64 %rd5, %globaltimer;\nsetp.gt.u64 %p1, %rd3, %rd2;\n\
                setp.gt.and.u64 %p1, %rd5, %rd4, %p1;\nselp.u32 %r1, 1, 0, %p1;\n\
                st.global.u32 [%rd1], %r1;";
    assert_eq!(word(body), 1);
}

/// Each thread: `%r1` its index, `%r2` 1; threads at or past `n` return, the others run
/// `tail` (which writes `%r3`), and store `%r3` at `p[index]`.
fn after_exits(n: u32, tail: &str) -> String {
    format!(
        "mov.u32 %r1, %tid.x;\nmov.u32 %r2, 1;\nsetp.ge.u32 %p1, %r1, {n};\n@%p1 bra $DONE;\n\
         {tail}\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r3;\n\
         $DONE:"
    )
}

fn words32(out: &[u8]) -> Vec<u32> {
    out.chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
        .collect()
}

#[test]
fn warp_instructions_run_when_their_mask_names_lanes_that_have_exited() {
    // 20 threads (a partial warp), 10 of which return before a full-mask shuffle down by 1:
    // lane 9 reads lane 10, which has exited, and gets its own value (the PTX ISA leaves it
    // undefined).
    let out = run(
        &after_exits(10, "shfl.sync.down.b32 %r3|%p2, %r1, 1, 31, -1;"),
        20,
        80,
    )
    .unwrap_or_else(|f| panic!("{}", f.message));
    let want: Vec<u32> = (0..20)
        .map(|l| {
            if l < 9 {
                l + 1
            } else if l == 9 {
                9
            } else {
                0
            }
        })
        .collect();
    assert_eq!(words32(&out), want);
    // A butterfly, an index and an up shuffle in a full warp of 32 where 5 have left.
    let out = run(
        &after_exits(27, "shfl.sync.bfly.b32 %r3, %r1, 16, 31, -1;"),
        32,
        128,
    )
    .unwrap_or_else(|f| panic!("{}", f.message));
    let got = words32(&out);
    for l in 0..27u32 {
        let partner = l ^ 16;
        assert_eq!(
            got[l as usize],
            if partner < 27 { partner } else { l },
            "lane {l}"
        );
    }
    // Votes and __syncwarp count the lanes that are left.
    for (tail, want) in [
        ("vote.sync.ballot.b32 %r3, %p3, -1;", 0x3ff),
        (
            "vote.sync.all.pred %p2, 1, -1;\nselp.u32 %r3, 7, 8, %p2;",
            7,
        ),
        (
            "vote.sync.any.pred %p2, 0, -1;\nselp.u32 %r3, 7, 8, %p2;",
            8,
        ),
        ("activemask.b32 %r3;", 0x3ff),
        ("bar.warp.sync -1;\nmov.u32 %r3, 5;", 5),
    ] {
        let tail = format!("setp.lt.u32 %p3, %r1, 32;\n{tail}");
        let out = run(&after_exits(10, &tail), 20, 80)
            .unwrap_or_else(|f| panic!("{tail}: {}", f.message));
        assert_eq!(words32(&out)[..10], [want; 10], "{tail}");
    }
}

#[test]
fn a_shuffle_whose_mask_leaves_out_its_own_lane_is_an_error() {
    let fault = run("shfl.sync.idx.b32 %r3, %r1, 0, 31, 0xfffffffe;", 32, 4)
        .expect_err("lane 0 is not in the mask");
    assert_eq!(fault.thread, [0, 0, 0]);
    assert!(
        fault
            .message
            .contains("in lane 0, which its mask 0xfffffffe does not name"),
        "{}",
        fault.message
    );
}

/// f64 values whose sums, products and fmas take every path: numbers, zeros, infinities
/// (`inf - inf` is the NaN the instruction makes) and NaNs of distinct payloads and signs,
/// quiet and signalling (with two NaN operands, the H100 takes one operand position's).
const F64_CASES: [u64; 12] = [
    0x3ff8_0000_0000_0000,
    0xc002_0000_0000_0000,
    0,
    0x8000_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff8_0000_0000_0001,
    0xfff8_0000_0000_0123,
    0x7ff0_0000_0000_0456,
    0x7ff8_dead_beef_0000,
    1,
    0x7fe1_ccf3_85eb_c8a0,
];

#[test]
fn f64_arithmetic_of_whole_warps_gives_each_lane_the_nan_one_lane_alone_gets() {
    use cpu_device::ir::{FloatOp, Rnd, Ty};
    use cpu_device::ops::float_op;
    // The interpreter runs a warp's arithmetic as a vector loop and looks for NaN results
    // after it: into a fresh register, into one that is also an operand, with an immediate,
    // on 3 lanes of 4 and on 5 lanes. Each lane must get what `float_op` gives it alone.
    const THREADS: usize = 64;
    const RESULTS: usize = 11;
    let row = |k: usize| k * THREADS * 8;
    let stores: String = (0..RESULTS)
        .map(|k| format!("st.global.f64 [%rd3+{}], %e{k};\n", row(3 + k)))
        .collect();
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 p)\n{{\n\
         .reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n.reg .f64 %fd<4>;\n.reg .f64 %e<{RESULTS}>;\n\
         .reg .pred %p<3>;\n\
         ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 8;\n\
         add.s64 %rd3, %rd1, %rd2;\nld.global.f64 %fd1, [%rd3];\n\
         ld.global.f64 %fd2, [%rd3+{}];\nld.global.f64 %fd3, [%rd3+{}];\n\
         add.rn.f64 %e0, %fd1, %fd2;\nsub.rn.f64 %e1, %fd1, %fd2;\n\
         mul.rn.f64 %e2, %fd1, %fd2;\nfma.rn.f64 %e3, %fd1, %fd2, %fd3;\n\
         mov.f64 %e4, %fd1;\nadd.rn.f64 %e4, %e4, %fd2;\n\
         mov.f64 %e5, %fd2;\nmul.rn.f64 %e5, %fd1, %e5;\n\
         mov.f64 %e6, %fd3;\nfma.rn.f64 %e6, %fd1, %fd2, %e6;\n\
         sub.rn.f64 %e7, %fd1, 0d7FF4000000000001;\n\
         and.b32 %r2, %r1, 3;\nsetp.ne.u32 %p1, %r2, 0;\n\
         mov.f64 %e8, %fd3;\n@%p1 add.rn.f64 %e8, %fd1, %fd2;\n\
         mov.f64 %e9, %fd1;\n@%p1 mul.rn.f64 %e9, %e9, %fd2;\n\
         setp.lt.u32 %p2, %r1, 5;\n\
         mov.f64 %e10, %fd3;\n@%p2 fma.rn.f64 %e10, %fd1, %fd2, %fd3;\n\
         {stores}ret;\n}}\n",
        row(1),
        row(2),
    );
    // Each thread's operands: both warps have lanes with two NaN operands of two payloads.
    let operands = |t: usize| {
        [
            F64_CASES[t % 12],
            F64_CASES[(5 * t + 7 + t / 12) % 12],
            F64_CASES[(7 * t + 3) % 12],
        ]
    };
    let memory = Memory::default();
    let module = load(&ptx, &memory).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    let buffer = memory
        .alloc(row(3 + RESULTS) as u64, "")
        .expect("allocated");
    for t in 0..THREADS {
        for (k, v) in operands(t).into_iter().enumerate() {
            let at = buffer.address + (row(k) + t * 8) as u64;
            memory.write(at, &v.to_le_bytes()).expect("written");
        }
    }
    let params = buffer.address.to_le_bytes();
    support::launch(&module, "k", [1, THREADS as u32], &params, &memory, 1)
        .unwrap_or_else(|f| panic!("{}", f.message));
    let out = support::read(&memory, buffer.address, row(3 + RESULTS));
    let op = |op, [x, y, z]: [u64; 3]| float_op(op, Ty::F64, Rnd::N, false, false, x, y, z);
    for t in 0..THREADS {
        let [x, y, z] = operands(t);
        let on = t % 4 != 0;
        let want: [u64; RESULTS] = [
            op(FloatOp::Add, [x, y, 0]),
            op(FloatOp::Sub, [x, y, 0]),
            op(FloatOp::Mul, [x, y, 0]),
            op(FloatOp::Fma, [x, y, z]),
            op(FloatOp::Add, [x, y, 0]),
            op(FloatOp::Mul, [x, y, 0]),
            op(FloatOp::Fma, [x, y, z]),
            op(FloatOp::Sub, [x, 0x7ff4_0000_0000_0001, 0]),
            if on { op(FloatOp::Add, [x, y, 0]) } else { z },
            if on { op(FloatOp::Mul, [x, y, 0]) } else { x },
            if t < 5 {
                op(FloatOp::Fma, [x, y, z])
            } else {
                z
            },
        ];
        for (k, want) in want.into_iter().enumerate() {
            let at = row(3 + k) + t * 8;
            let got = u64::from_le_bytes(out[at..at + 8].try_into().expect("8 bytes"));
            assert_eq!(
                got, want,
                "thread {t}, result {k} of {x:#x} {y:#x} {z:#x}: {got:#x}, want {want:#x}"
            );
        }
    }
}

/// Half precision through the loader and the interpreter, each word from the PTX ISA's
/// rules: a bfloat16 fma rounded once (7 * 37/256 - 2^-100 is just below a tie), an f32 tie
/// to binary16's even, a pair's halves each on their own (1 + 2^-24 is 1, inf + 1 is inf),
/// `set` writing binary16 1.0, two f32s into a pair (the first high), a register split into
/// halves and summed (1 + -1 = +0).
#[test]
fn half_precision_runs_as_the_ptx_isa_says() {
    let half = |body: &str| {
        word(&format!(
            ".reg .b16 %h<4>;\n{body}\nst.global.b16 [%rd1], %h3;"
        ))
    };
    let pair = |body: &str| word(&format!("{body}\nst.global.b32 [%rd1], %r3;"));
    assert_eq!(
        half(
            "mov.b16 %h0, 0x40e0;\nmov.b16 %h1, 0x3e14;\nmov.b16 %h2, 0x8d80;\n\
             fma.rn.bf16 %h3, %h0, %h1, %h2;"
        ),
        0x3f81
    );
    assert_eq!(
        half("mov.b32 %f1, 0f3F801000;\ncvt.rn.f16.f32 %h3, %f1;"),
        0x3c00
    );
    assert_eq!(
        pair("mov.b32 %r1, 0x7c003c00;\nmov.b32 %r2, 0x3c000001;\nadd.rn.f16x2 %r3, %r1, %r2;"),
        0x7c00_3c00
    );
    assert_eq!(
        pair("mov.b32 %f1, 0f3F800000;\nmov.b32 %f2, 0f33000000;\ncvt.rn.f16x2.f32 %r3, %f1, %f2;"),
        0x3c00_0000
    );
    assert_eq!(
        half("mov.b32 %r1, 0xbc003c00;\nmov.b32 {%h0, %h1}, %r1;\nadd.f16 %h3, %h0, %h1;"),
        0
    );
}
