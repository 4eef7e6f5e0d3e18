//! Hostile kernels: indices of -1 and -2, huge and misaligned offsets into local and shared
//! memory, through their own state spaces and through generic addresses, with loads, stores
//! and atomics. Each must stop with one line naming the access, never reach memory outside
//! the interpreter's own (a wrapped bounds check once turned a local store at -1 into a write
//! over the heap). Also: the GPU's limits, and what unwritten shared and local memory hold.

use std::time::{Duration, Instant};

use cpu_device::exec::{self, Fault, Launch, Options, UNWRITTEN};
use cpu_device::load::{load, Module};
use cpu_device::memory::Memory;

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

fn module(memory: &Memory, ptx: &str) -> Module {
    load(&format!("{HEADER}{ptx}"), memory).expect("the PTX loads")
}

/// Run `kernel` on two blocks of `block` threads with arguments (p: a zeroed 256-byte
/// allocation, offset), under `deadline` and initcheck if asked: the allocation afterwards,
/// or the fault.
fn run_with(
    ptx: &str,
    kernel: &str,
    block: u32,
    offset: i64,
    deadline: Option<Duration>,
    initcheck: bool,
) -> Result<Vec<u8>, Fault> {
    let memory = Memory::default();
    let module = module(&memory, ptx);
    let buffer = memory.alloc(256, "").expect("allocated");
    let mut params = buffer.address.to_le_bytes().to_vec();
    params.extend(offset.to_le_bytes());
    let snapshot = memory.snapshot().expect("a snapshot");
    let launch = Launch {
        module: &module,
        function: module.function(kernel).expect("the kernel exists"),
        grid: [2, 1, 1],
        block: [block, 1, 1],
        dynamic_shared: 0,
        params: &params,
        memory: &snapshot,
    };
    let options = Options {
        deadline,
        initcheck,
        ..Options::default()
    };
    exec::run_with(&launch, 2, &options).result?;
    let mut out = vec![0u8; 256];
    memory.read(buffer.address, &mut out).expect("read back");
    Ok(out)
}

fn run(ptx: &str, kernel: &str, offset: i64) -> Result<Vec<u8>, Fault> {
    run_with(ptx, kernel, 32, offset, None, false)
}

/// A kernel named `name` whose thread 0 makes `access` at byte `offset` (the second
/// parameter) from the start of a 64-byte local array (`%rd3` its local address, `%rd4` its
/// generic one) and a 64-byte shared array (`%rd5`, `%rd6`); `%r1` holds 7, `%rd1` the
/// output pointer.
fn kernel(name: &str, access: &str) -> String {
    format!(
        "
.visible .entry {name}(.param .u64 p, .param .s64 off)
{{
    .local .align 8 .b8 depot[64];
    .shared .align 8 .b8 tile[64];
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [p];
    ld.param.s64 %rd2, [off];
    mov.u32 %r2, %tid.x;
    setp.ne.s32 %p1, %r2, 0;
    @%p1 bra DONE;
    mov.u32 %r1, 7;
    mov.u64 %rd7, depot;
    add.s64 %rd3, %rd7, %rd2;
    cvta.local.u64 %rd8, %rd7;
    add.s64 %rd4, %rd8, %rd2;
    mov.u64 %rd9, tile;
    add.s64 %rd5, %rd9, %rd2;
    cvta.shared.u64 %rd10, %rd9;
    add.s64 %rd6, %rd10, %rd2;
    {access}
    st.global.u32 [%rd1], %r1;
DONE:
    ret;
}}
"
    )
}

/// Every kind of access, in each of local and shared memory, by its space and generically.
const ACCESSES: &[(&str, &str)] = &[
    ("local_store", "st.local.u32 [%rd3], %r1;"),
    ("local_load", "ld.local.u32 %r1, [%rd3];"),
    ("local_store_byte", "st.local.u8 [%rd3], %r1;"),
    ("local_load_vector", "ld.local.v2.u32 {%r1, %r3}, [%rd3];"),
    ("local_generic_store", "st.u32 [%rd4], %r1;"),
    ("local_generic_load", "ld.u64 %rd11, [%rd4];"),
    ("local_generic_atomic", "atom.add.u32 %r1, [%rd4], 1;"),
    ("shared_store", "st.shared.u32 [%rd5], %r1;"),
    ("shared_load", "ld.shared.u32 %r1, [%rd5];"),
    (
        "shared_store_vector",
        "st.shared.v2.u32 [%rd5], {%r1, %r1};",
    ),
    ("shared_atomic", "atom.shared.add.u32 %r1, [%rd5], 1;"),
    ("shared_cas", "atom.shared.cas.b32 %r1, [%rd5], 0, 1;"),
    ("shared_generic_store", "st.u32 [%rd6], %r1;"),
    ("shared_generic_atomic", "atom.add.u32 %r1, [%rd6], 1;"),
];

#[test]
fn every_access_inside_runs() {
    for (name, access) in ACCESSES {
        let out = run(&kernel(name, access), name, 8).unwrap_or_else(|f| panic!("{name}: {f:?}"));
        assert!(out[..4] != [0; 4], "{name} stored nothing");
    }
}

#[test]
fn every_access_outside_or_misaligned_is_one_line_fault() {
    // Index -1 and -2 of a u32 array, a byte before, huge offsets either way, one past the
    // end, and misaligned inside.
    let offsets: &[i64] = &[-4, -8, -1, -2, 1 << 40, i64::MIN, i64::MAX - 3, 64, 62, 2];
    for (name, access) in ACCESSES {
        for &offset in offsets {
            let aligned = offset.rem_euclid(8) == 0;
            let inside = (0..64).contains(&offset);
            if aligned && inside {
                continue;
            }
            let Err(fault) = run(&kernel(name, access), name, offset) else {
                // A byte access at an odd offset inside is no fault.
                assert!(
                    inside && access.contains(".u8"),
                    "{name} at {offset}: no fault"
                );
                continue;
            };
            let said = &fault.message;
            assert!(!said.contains('\n'), "{name} at {offset}: {said}");
            assert!(said.contains(name), "{name} at {offset}: {said}");
            assert_eq!(fault.thread, [0, 0, 0], "{name} at {offset}: {said}");
            let why = ["outside the", "misaligned", "out of bounds"];
            assert!(
                why.iter().any(|w| said.contains(w)),
                "{name} at {offset}: {said}"
            );
        }
    }
}

#[test]
fn an_index_of_minus_one_names_the_space_and_the_bounds() {
    let name = "local_store";
    let fault = run(&kernel(name, ACCESSES[0].1), name, -4).expect_err("outside");
    assert!(
        fault
            .message
            .contains("local store of 4 bytes at 0xfffffffffffffffc"),
        "{}",
        fault.message
    );
    assert!(
        fault
            .message
            .contains("outside the 64 bytes of local memory"),
        "{}",
        fault.message
    );
    let name = "shared_atomic";
    let fault = run(&kernel(name, ACCESSES[10].1), name, -8).expect_err("outside");
    assert!(
        fault
            .message
            .contains("outside the 64 bytes of shared memory of the block"),
        "{}",
        fault.message
    );
}

/// Thread t copies slot t of an unwritten shared array and of an unwritten local array to
/// `p[t]` and `p[64 + t]`.
const READ_UNWRITTEN: &str = "
.visible .entry read_unwritten(.param .u64 p, .param .s64 off)
{
    .local .align 4 .b8 depot[4];
    .shared .align 4 .b8 tile[256];
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    mov.u64 %rd3, tile;
    add.s64 %rd4, %rd3, %rd2;
    ld.shared.u32 %r2, [%rd4];
    add.s64 %rd5, %rd1, %rd2;
    st.global.u32 [%rd5], %r2;
    mov.u64 %rd6, depot;
    ld.local.u32 %r3, [%rd6];
    st.global.u32 [%rd5+128], %r3;
    mov.u32 %r2, 0;
    st.shared.u32 [%rd4], %r2;
    st.local.u32 [%rd6], %r2;
    ret;
}
";

#[test]
fn unwritten_shared_and_local_memory_hold_the_pattern_in_every_block() {
    // Each block zeroes its slots after reading them: the next block (on the same host
    // thread) still reads the pattern, as it would read another block's leftovers on a GPU
    // rather than zeros.
    let out = run_with(READ_UNWRITTEN, "read_unwritten", 32, 0, None, false).expect("runs");
    assert!(out[..256].iter().all(|&b| b == UNWRITTEN), "{out:?}");
}

#[test]
fn a_never_ending_kernel_stops_at_its_deadline() {
    let spin = "
.visible .entry spin(.param .u64 p, .param .s64 off)
{
    .reg .b32 %r<2>;
LOOP:
    bar.sync 0;
    bra LOOP;
}
";
    let start = Instant::now();
    let fault = run_with(spin, "spin", 64, 0, Some(Duration::from_millis(300)), false)
        .expect_err("stopped at the deadline");
    let took = start.elapsed();
    assert!(
        fault
            .message
            .contains("ran past its deadline of 0.3 s on the CPU device: does it end?"),
        "{}",
        fault.message
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");
    // A kernel that ends is not stopped by a deadline it meets.
    let out = run_with(
        READ_UNWRITTEN,
        "read_unwritten",
        32,
        0,
        Some(Duration::from_secs(60)),
        false,
    );
    assert!(out.is_ok(), "{out:?}");
}

#[test]
fn static_shared_memory_past_48_kib_is_refused_as_ptxas_refuses_it() {
    let memory = Memory::default();
    let big = |bytes: u32| {
        format!(
            ".visible .entry big(.param .u64 p)\n{{\n    .shared .align 4 .b8 tile[{bytes}];\n    ret;\n}}\n"
        )
    };
    let m = module(&memory, &big(0x10000));
    let said = exec::check_module(&m).expect_err("refused");
    assert!(
        said.contains("Entry function 'big' uses too much shared data (0x10000 bytes, 0xc000 max)"),
        "{said}"
    );
    let m = module(&memory, &big(0xc000));
    assert_eq!(exec::check_module(&m), Ok(()));
    // Declared at module scope, it counts too.
    let m = module(
        &memory,
        ".shared .align 4 .b8 tile[49153];\n.visible .entry k(.param .u64 p)\n{\n    ret;\n}\n",
    );
    assert!(exec::check_module(&m).is_err());
}

#[test]
fn launches_past_the_gpus_limits_are_refused() {
    let memory = Memory::default();
    let m = module(&memory, &kernel("k", "st.shared.u32 [%rd5], %r1;"));
    let params = [0u8; 16];
    let snapshot = memory.snapshot().expect("a snapshot");
    let launch = |block: [u32; 3], dynamic_shared: u32| Launch {
        module: &m,
        function: m.function("k").expect("the kernel"),
        grid: [1, 1, 1],
        block,
        dynamic_shared,
        params: &params,
        memory: &snapshot,
    };
    assert!(exec::limits(&launch([1024, 1, 1], 0)).is_ok());
    for block in [
        [1025, 1, 1],
        [32, 32, 2],
        [0, 1, 1],
        [u32::MAX, u32::MAX, 2],
    ] {
        let said = exec::limits(&launch(block, 0)).expect_err("too many threads");
        assert!(said.contains("a block 1 to 1024 threads"), "{said}");
        assert!(exec::run(&launch(block, 0), 1).is_err());
    }
    assert!(exec::limits(&launch([32, 1, 1], 227 * 1024 - 64)).is_ok());
    let said = exec::limits(&launch([32, 1, 1], 227 * 1024)).expect_err("too much");
    assert!(said.contains("227 KiB"), "{said}");
    assert!(exec::limits(&launch([32, 1, 1], u32::MAX)).is_err());
    let short = Launch {
        params: &params[..8],
        ..launch([32, 1, 1], 0)
    };
    assert!(exec::limits(&short).is_err(), "too few argument bytes");
}

#[test]
fn local_memory_past_512_kib_a_thread_is_refused() {
    let memory = Memory::default();
    let m = module(
        &memory,
        ".visible .entry k()\n{\n    .local .align 4 .b8 depot[600000];\n    ret;\n}\n",
    );
    let snapshot = memory.snapshot().expect("a snapshot");
    let launch = Launch {
        module: &m,
        function: m.function("k").expect("the kernel"),
        grid: [1, 1, 1],
        block: [1, 1, 1],
        dynamic_shared: 0,
        params: &[],
        memory: &snapshot,
    };
    let said = exec::limits(&launch).expect_err("too much local memory");
    assert!(said.contains("600000 bytes of local memory"), "{said}");
}

#[test]
fn a_parameter_or_local_named_with_a_huge_or_negative_offset_is_a_fault() {
    // The fuzzer's find: `[name+offset]` added the offset to the name's in 64-bit
    // arithmetic that overflowed, and wrapped back inside where it did not.
    for access in [
        "ld.param.u32 %r1, [p+-4];",
        "ld.param.u32 %r1, [off+9223372036854775807];",
        "ld.param.u32 %r1, [off+4294967296];",
        "st.local.u32 [depot+-4], %r1;",
        "st.local.u32 [depot+9223372036854775807], %r1;",
        "ld.local.u32 %r1, [depot+4294967296];",
    ] {
        let ptx = kernel("named", access);
        let fault = run(&ptx, "named", 0).expect_err(access);
        let said = &fault.message;
        assert!(
            said.contains("outside the") || said.contains("misaligned"),
            "{access}: {said}"
        );
    }
}

#[test]
fn initcheck_stops_a_load_of_memory_no_thread_wrote_and_passes_one_of_written_memory() {
    let fault = run_with(READ_UNWRITTEN, "read_unwritten", 32, 0, None, true)
        .expect_err("an unwritten shared load");
    assert_eq!(fault.block, [0, 0, 0]);
    assert_eq!(fault.thread, [0, 0, 0]);
    assert!(
        fault.message.contains(
            "shared load of 4 bytes at 0x0 in read_unwritten (PTX line 16), initcheck: it reads memory no thread of the block wrote in this launch"
        ),
        "{}",
        fault.message
    );
    // Written first (by another thread, across a barrier), the same loads are clean.
    let written = READ_UNWRITTEN.replace(
        "    ld.shared.u32 %r2, [%rd4];",
        "    st.shared.u32 [%rd4], %r1;\n    bar.sync 0;\n    ld.shared.u32 %r2, [%rd4+-4];",
    );
    let fault = run_with(&written, "read_unwritten", 32, 0, None, true)
        .expect_err("thread 0 reads below the array; the local load is unwritten");
    assert!(fault.message.contains("outside the"), "{}", fault.message);
    let written = written.replace("[%rd4+-4]", "[%rd4]").replace(
        "    ld.local.u32 %r3, [%rd6];",
        "    st.local.u32 [%rd6], %r1;\n    ld.local.u32 %r3, [%rd6];",
    );
    assert!(run_with(&written, "read_unwritten", 32, 0, None, true).is_ok());
    // The local load alone: the thread never wrote its slot.
    let local_only = READ_UNWRITTEN.replace("    ld.shared.u32 %r2, [%rd4];", "");
    let fault = run_with(&local_only, "read_unwritten", 32, 0, None, true)
        .expect_err("an unwritten local load");
    assert!(
        fault
            .message
            .contains("local load of 4 bytes at 0x0 in read_unwritten (PTX line 20), initcheck: it reads memory the thread never wrote"),
        "{}",
        fault.message
    );
}
