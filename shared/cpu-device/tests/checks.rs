//! The CPU device's checks, each on a small hand-written kernel: every wrong access or
//! misuse is one error naming the kernel, block, thread and address; right programs give
//! right answers. (The labs' kernels, compiled by NVRTC, run in the labs' own tests.)

mod support;

use cpu_device::exec::Fault;
use cpu_device::load::load;
use cpu_device::memory::Memory;

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Run `kernel` of `ptx` on `grid` x `block` threads with one pointer argument, to a
/// zeroed allocation of `bytes`: its contents afterwards, or the fault.
fn run(ptx: &str, kernel: &str, grid: u32, block: u32, bytes: u64) -> Result<Vec<u8>, Fault> {
    let memory = Memory::default();
    let module = load(&format!("{HEADER}{ptx}"), &memory).expect("the PTX loads");
    let buffer = memory.alloc(bytes, "").expect("allocated");
    let params = buffer.address.to_le_bytes();
    support::launch(&module, kernel, [grid, block], &params, &memory, 2)?;
    Ok(support::read(&memory, buffer.address, bytes as usize))
}

/// Each thread stores its index (a byte) at `p[global index]`.
const STORE_INDEX: &str = "
.visible .entry store_index(.param .u64 p)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    cvt.u64.u32 %rd2, %r4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u8 [%rd3], %r4;
    ret;
}
";

#[test]
fn every_thread_runs_once_in_every_block() {
    let out = run(STORE_INDEX, "store_index", 3, 40, 120).expect("no fault");
    let expected: Vec<u8> = (0..120).collect();
    assert_eq!(out, expected);
}

#[test]
fn a_store_past_the_end_names_the_kernel_block_thread_and_allocation() {
    // 2 blocks of 40 threads, 70 bytes: block 1's thread 30 is the first past the end.
    let fault = run(STORE_INDEX, "store_index", 2, 40, 70).expect_err("out of bounds");
    assert_eq!(fault.block, [1, 0, 0]);
    assert_eq!(fault.thread, [30, 0, 0], "{}", fault.message);
    for part in [
        "global store of 1 bytes",
        "store_index",
        "out of bounds",
        "past the end of allocation 1 (70 bytes",
    ] {
        assert!(fault.message.contains(part), "{part}: {}", fault.message);
    }
}

#[test]
fn a_misaligned_load_is_refused() {
    let ptx = "
.visible .entry misaligned(.param .u64 p)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    add.s64 %rd2, %rd1, 2;
    ld.global.u32 %r1, [%rd2];
    st.global.u32 [%rd1], %r1;
    ret;
}
";
    let fault = run(ptx, "misaligned", 1, 1, 64).expect_err("misaligned");
    assert!(fault.message.contains("misaligned"), "{}", fault.message);
    assert!(
        fault.message.contains("global load of 4 bytes"),
        "{}",
        fault.message
    );
}

#[test]
fn a_barrier_that_some_threads_skip_is_an_error() {
    // Threads 0 to 15 wait at the barrier; the rest leave.
    let ptx = "
.visible .entry half_barrier(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 16;
    @%p1 bra $DONE;
    bar.sync 0;
$DONE:
    ret;
}
";
    let fault = run(ptx, "half_barrier", 1, 64, 4).expect_err("a barrier not every thread reaches");
    assert!(
        fault
            .message
            .contains("not every thread of the block reaches"),
        "{}",
        fault.message
    );
    assert!(
        fault.thread[0] >= 16,
        "the thread named is one that left: {:?}",
        fault.thread
    );
}

#[test]
fn a_barrier_every_thread_reaches_orders_shared_memory() {
    // Each thread writes its index to shared memory, waits, and reads its neighbour's:
    // without the barrier's ordering, a warp would read a slot not yet written.
    let ptx = "
.shared .align 4 .b8 slots[256];
.visible .entry neighbours(.param .u64 p)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mov.u64 %rd2, slots;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.shared.u32 [%rd4], %r1;
    bar.sync 0;
    add.s32 %r2, %r1, 33;
    rem.u32 %r3, %r2, 64;
    mul.wide.u32 %rd3, %r3, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.shared.u32 %r4, [%rd4];
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd5, %rd1, %rd3;
    st.global.u32 [%rd5], %r4;
    ret;
}
";
    let out = run(ptx, "neighbours", 1, 64, 256).expect("no fault");
    for t in 0..64u32 {
        let got = u32::from_le_bytes(out[t as usize * 4..][..4].try_into().unwrap());
        assert_eq!(got, (t + 33) % 64, "thread {t}");
    }
}

#[test]
fn a_shuffle_whose_mask_names_a_lane_that_diverged_is_an_error() {
    // Odd lanes branch away to a shuffle of their own; even lanes shuffle with the full
    // mask, which names the odd lanes: the even lanes wait for them there, but the odd lanes
    // reach their own shuffle, whose mask names the even lanes, waiting at the other: the
    // lanes never meet. (Lanes that branch to the kernel's end have left: `tests/bits.rs`.)
    let ptx = "
.visible .entry odd_shuffle(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    mov.u32 %r1, %laneid;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 1;
    @%p1 bra $ODD;
    shfl.sync.down.b32 %r3, %r1, 1, 31, -1;
    bra.uni $DONE;
$ODD:
    shfl.sync.up.b32 %r3, %r1, 1, 0, -1;
$DONE:
    ret;
}
";
    let fault = run(ptx, "odd_shuffle", 1, 32, 4).expect_err("diverged lanes");
    for part in [
        "shfl.sync (PTX line 16)",
        "names lane 0 in its mask, which has not exited",
        "diverged",
    ] {
        assert!(fault.message.contains(part), "{part}: {}", fault.message);
    }
}

#[test]
fn a_shuffle_waits_for_lanes_on_a_path_laid_out_after_it() {
    // Odd lanes take a path placed after the shuffle (as libdevice places `powf`'s rare
    // paths), then jump back to it: the even lanes, first by the lowest counter, wait there
    // for them, as an H100's shfl.sync gathers its mask's lanes. Catches a shuffle run
    // without the odd lanes (their values missing, or a fault naming them).
    let ptx = "
.visible .entry late_join(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %laneid;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 1;
    mov.u32 %r3, 10;
    @%p1 bra $RARE;
$JOIN:
    shfl.sync.down.b32 %r4, %r3, 1, 31, -1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    ret;
$RARE:
    mov.u32 %r3, 20;
    bra.uni $JOIN;
}
";
    let out = run(ptx, "late_join", 1, 32, 128).expect("the lanes meet at the shuffle");
    for lane in 0..32usize {
        let got = u32::from_le_bytes(out[lane * 4..][..4].try_into().unwrap());
        let from = (lane + 1).min(31);
        assert_eq!(got, if from % 2 == 1 { 20 } else { 10 }, "lane {lane}");
    }
}

#[test]
fn a_warp_sums_with_shuffles_and_blocks_add_atomically() {
    // Each warp sums its lanes' indices with shfl.sync.down, lane 0 adds the warp's sum to
    // p[0] atomically: 4 blocks of 64 threads give 4 times the sum of 0 to 63.
    let ptx = "
.visible .entry warp_sums(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    shfl.sync.down.b32 %r2, %r1, 16, 31, -1;
    add.s32 %r1, %r1, %r2;
    shfl.sync.down.b32 %r2, %r1, 8, 31, -1;
    add.s32 %r1, %r1, %r2;
    shfl.sync.down.b32 %r2, %r1, 4, 31, -1;
    add.s32 %r1, %r1, %r2;
    shfl.sync.down.b32 %r2, %r1, 2, 31, -1;
    add.s32 %r1, %r1, %r2;
    shfl.sync.down.b32 %r2, %r1, 1, 31, -1;
    add.s32 %r1, %r1, %r2;
    mov.u32 %r3, %laneid;
    setp.ne.u32 %p1, %r3, 0;
    @%p1 bra $DONE;
    atom.global.add.u32 %r4, [%rd1], %r1;
$DONE:
    ret;
}
";
    let out = run(ptx, "warp_sums", 4, 64, 4).expect("no fault");
    let total = u32::from_le_bytes(out[..4].try_into().unwrap());
    assert_eq!(total, 4 * (0..64).sum::<u32>());
}

#[test]
fn an_instruction_it_does_not_know_is_refused_by_name_before_anything_runs() {
    let ptx = format!(
        "{HEADER}.visible .entry texture(.param .u64 p)\n{{\n.reg .b32 %r<2>;\ntestp.finite.f32 %r1, %r1;\nret;\n}}\n"
    );
    let error = load(&ptx, &Memory::default()).expect_err("refused");
    assert!(error.contains("testp.finite.f32"), "{error}");
    assert!(error.contains("texture"), "{error}");
    assert!(
        error.contains("refuses to run the kernel rather than guess"),
        "{error}"
    );
}

/// `source` compiled by NVRTC with its line information (as the labs compile for the CPU
/// device), loaded, and its kernel `k(int *p)` run on one block of 32 threads.
fn run_cuda(source: &'static str, options: &[&str]) -> Result<Result<(), Fault>, String> {
    let mut all = vec!["--generate-line-info"];
    all.extend(options);
    let ptx = shared::nvrtc::KernelFile::new("lines.cu", source, &all)
        .ptx("compute_90")
        .expect("NVRTC compiles it");
    let memory = Memory::default();
    let module = load(&ptx, &memory)?;
    let buffer = memory.alloc(128, "p").expect("allocated");
    let params = buffer.address.to_le_bytes();
    Ok(support::launch(&module, "k", [1, 32], &params, &memory, 1))
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn a_fault_and_a_refusal_name_the_cu_files_line() {
    // Line 5 stores at index -1 of a shared array.
    let store = "extern \"C\" __global__ void k(int *p)\n\
                 {\n\
                 \x20   __shared__ int slots[32];\n\
                 \x20   int i = threadIdx.x - p[0] - 1;\n\
                 \x20   slots[i] = 1;\n\
                 \x20   __syncthreads();\n\
                 \x20   p[threadIdx.x] = slots[threadIdx.x];\n\
                 }\n";
    let fault = run_cuda(store, &[])
        .expect("the PTX loads")
        .expect_err("an index of -1");
    assert!(
        fault.message.contains("(lines.cu line 5; PTX line "),
        "{}",
        fault.message
    );
    // Line 3's `rsqrt.approx.f64` (without `.ftz`) is an approximation the CPU device refuses.
    let fast = "extern \"C\" __global__ void k(double *p)\n\
                {\n\
                \x20   asm(\"rsqrt.approx.f64 %0, %1;\" : \"=d\"(p[1]) : \"d\"(p[0]));\n\
                }\n";
    let refused = run_cuda(fast, &[]).expect_err("rsqrt.approx.f64 is refused");
    assert!(refused.contains("lines.cu line 3; PTX line "), "{refused}");
}
