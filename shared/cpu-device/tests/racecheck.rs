//! Racecheck (`LABS_EMULATE_RACECHECK=1`): an access to shared memory that races with
//! another warp's stops the launch, naming both accesses' threads and lines. Each kernel is
//! CUDA C++ compiled by NVRTC with its line table, as a student's is.

use cpu_device::exec::{self, Fault, Launch, Options};
use cpu_device::load::load;
use cpu_device::memory::Memory;
use shared::nvrtc::KernelFile;

const SOURCE: &str = r#"
// A block's sum of 256 words, halving the active threads each step.
__device__ void reduce(const unsigned *in, unsigned *out, bool synced)
{
    __shared__ unsigned s[256];
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    if (synced) __syncthreads();
    for (unsigned half = 128; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        if (synced) __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_synced(const unsigned *in, unsigned *out)
{
    reduce(in, out, true);
}

extern "C" __global__ void reduce_racy(const unsigned *in, unsigned *out)
{
    reduce(in, out, false);
}

// Thread 0 stores a word every thread then loads, with no barrier between.
extern "C" __global__ void broadcast_racy(const unsigned *in, unsigned *out)
{
    __shared__ unsigned s;
    if (threadIdx.x == 0) s = in[0];
    out[threadIdx.x] = s;
}

// Two warps store the same word, with no barrier between.
extern "C" __global__ void both_store(const unsigned *in, unsigned *out)
{
    __shared__ unsigned s;
    if (threadIdx.x % 32 == 0) s = threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = s;
}

// Every thread adds to one word atomically: atomics do not race.
extern "C" __global__ void atomic_count(const unsigned *in, unsigned *out)
{
    __shared__ unsigned s;
    if (threadIdx.x == 0) s = 0;
    __syncthreads();
    atomicAdd(&s, in[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = s;
}

// One warp's threads pass words to their neighbours, with no barrier between.
extern "C" __global__ void one_warp_passes(const unsigned *in, unsigned *out)
{
    __shared__ unsigned s[32];
    unsigned t = threadIdx.x;
    s[t] = in[t];
    out[t] = s[(t + 1) % 32];
}

// Across a barrier in each block, warp 0 stores a word and warp 1 loads it: clean in every
// block, whichever ran before on the same host thread.
extern "C" __global__ void blocks_apart(const unsigned *in, unsigned *out)
{
    __shared__ unsigned s[8];
    if (threadIdx.x == 0) s[5] = in[blockIdx.x];
    __syncthreads();
    if (threadIdx.x == 32) out[blockIdx.x] = s[5];
}
"#;

/// The lines of `SOURCE` that hold `text` (1-based, as NVRTC numbers them).
fn line_of(text: &str) -> usize {
    SOURCE
        .lines()
        .position(|l| l.contains(text))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("{text:?} is in the source"))
}

/// Run `kernel` on `grid` blocks of `threads` threads with `input` and an output of `words`
/// words, under racecheck if asked, on one host thread (so blocks follow one another on one
/// worker): the output, or the fault.
fn run(
    kernel: &str,
    grid: u32,
    threads: u32,
    input: &[u32],
    words: usize,
    racecheck: bool,
) -> Result<Vec<u32>, Fault> {
    let ptx = KernelFile::new("races.cu", SOURCE, &["-lineinfo"])
        .ptx("compute_90")
        .unwrap_or_else(|e| panic!("{e}"));
    let memory = Memory::default();
    let module = load(&ptx, &memory).expect("the PTX loads");
    let bytes: Vec<u8> = input.iter().flat_map(|w| w.to_le_bytes()).collect();
    let d_in = memory.alloc(bytes.len() as u64, "").expect("allocated");
    memory.write(d_in.address, &bytes).expect("written");
    let d_out = memory.alloc(words as u64 * 4, "").expect("allocated");
    let mut params = d_in.address.to_le_bytes().to_vec();
    params.extend(d_out.address.to_le_bytes());
    let snapshot = memory.snapshot().expect("a snapshot");
    let launch = Launch {
        module: &module,
        function: module.function(kernel).expect("the kernel exists"),
        grid: [grid, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared: 0,
        params: &params,
        memory: &snapshot,
    };
    let options = Options {
        racecheck,
        ..Options::default()
    };
    exec::run_with(&launch, 1, &options).result?;
    let mut out = vec![0u8; words * 4];
    memory.read(d_out.address, &mut out).expect("read back");
    Ok(out
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
}

/// 256 words per block, summing to 256 * 257 / 2 + block * 256.
fn words(blocks: u32) -> Vec<u32> {
    (0..blocks * 256).map(|i| i % 256 + 1 + i / 256).collect()
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn a_reduction_without_its_barriers_is_a_race_named_with_both_lines() {
    let fault = run("reduce_racy", 1, 256, &words(1), 1, true).expect_err("a race");
    let said = &fault.message;
    // Warp 0 runs first here, through every step: at the third it loads s[32] (thread 0
    // adds s[0 + 32]); warp 1 then stores s[32] from its input, and the race shows there.
    assert_eq!(fault.thread, [32, 0, 0], "{said}");
    let load_store = line_of("s[t] = in[blockIdx.x * 256 + t];");
    let add = line_of("if (t < half) s[t] += s[t + half];");
    for part in [
        "shared store of 4 bytes at 0x80 in reduce_racy".to_string(),
        format!("races.cu line {load_store}"),
        "racecheck: thread (0, 0, 0), of another warp, loaded these bytes".to_string(),
        format!("races.cu line {add}"),
        "write-after-read".to_string(),
    ] {
        assert!(said.contains(&part), "{part:?} in {said}");
    }
    // Without racecheck the same kernel runs, and gives a sum: the warps run in one order
    // here, so only the check shows that the GPU may run them in another.
    assert!(run("reduce_racy", 1, 256, &words(1), 1, false).is_ok());
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn the_same_reduction_with_its_barriers_is_clean_in_every_block() {
    let sums = run("reduce_synced", 3, 256, &words(3), 3, true).expect("no race");
    let expected: Vec<u32> = (0..3).map(|b| 256 * 257 / 2 + b * 256).collect();
    assert_eq!(sums, expected);
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn a_load_of_a_word_another_warp_stored_is_a_read_after_write() {
    let fault = run("broadcast_racy", 1, 64, &[7], 64, true).expect_err("a race");
    // Warp 0 stores and loads; warp 1's first thread is the first to load another's store.
    assert_eq!(fault.thread, [32, 0, 0], "{}", fault.message);
    let stored = format!(
        "races.cu line {}",
        line_of("if (threadIdx.x == 0) s = in[0];")
    );
    for part in [
        // At the word's place among the module's shared variables.
        "shared load of 4 bytes at 0x",
        "in broadcast_racy",
        "racecheck: thread (0, 0, 0), of another warp, stored these bytes",
        &stored,
        "read-after-write",
    ] {
        assert!(
            fault.message.contains(part),
            "{part:?} in {}",
            fault.message
        );
    }
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn two_warps_storing_one_word_is_a_write_after_write() {
    let fault = run("both_store", 1, 64, &[0; 64], 1, true).expect_err("a race");
    assert_eq!(fault.thread, [32, 0, 0], "{}", fault.message);
    assert!(
        fault
            .message
            .contains("racecheck: thread (0, 0, 0), of another warp, stored these bytes")
            && fault.message.contains("write-after-write"),
        "{}",
        fault.message
    );
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn atomics_one_warps_lanes_and_stretches_between_barriers_do_not_race() {
    let ones = vec![1; 256];
    assert_eq!(
        run("atomic_count", 1, 256, &ones, 1, true).expect("atomics"),
        [256]
    );
    let input: Vec<u32> = (0..32).collect();
    let passed: Vec<u32> = (0..32).map(|t| (t + 1) % 32).collect();
    assert_eq!(
        run("one_warp_passes", 1, 32, &input, 32, true).expect("one warp"),
        passed
    );
    // Block 1 follows block 0 on the same host thread: block 0's last load (warp 1's) is
    // not held against block 1's first store (warp 0's).
    assert_eq!(
        run("blocks_apart", 2, 64, &[3, 4], 2, true).expect("a block apart"),
        [3, 4]
    );
}

/// The two reductions on the GPU, for compute-sanitizer's racecheck to hold the CPU
/// device's verdicts to (on a GPU machine: `compute-sanitizer --tool racecheck` on this test
/// binary, `--ignored --exact` with each test's name): hazards in the racy one, none in the
/// one with its barriers, whose sums are checked here.
fn reduce_on_the_gpu(kernel: &str) -> Vec<u32> {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    use shared::gpu::Gpu;

    if shared::testing::on_cpu_device() {
        shared::gpu::use_cpu_device().expect("the CPU device loads");
    }
    let gpu = Gpu::open().unwrap_or_else(|e| panic!("{e}"));
    let compiled = gpu
        .compile("races.cu", SOURCE, &["-lineinfo"])
        .unwrap_or_else(|e| panic!("{e}"));
    let function = compiled.function(kernel).expect("the kernel");
    let stream = &gpu.stream;
    let d_in = stream.clone_htod(&words(3)).expect("copied in");
    let mut d_out = stream.clone_htod(&[0u32; 3]).expect("copied in");
    let config = LaunchConfig {
        grid_dim: (3, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&function);
    launch.arg(&d_in).arg(&mut d_out);
    // SAFETY: the kernel reads 256 words of `in` per block (3 blocks: all of it) and writes
    // one word of `out` per block.
    unsafe { launch.launch(config) }.expect("launched");
    stream.clone_dtoh(&d_out).expect("copied back")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn on_the_gpu_the_reduction_with_its_barriers_sums() {
    let expected: Vec<u32> = (0..3).map(|b| 256 * 257 / 2 + b * 256).collect();
    assert_eq!(reduce_on_the_gpu("reduce_synced"), expected);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn on_the_gpu_the_reduction_without_them_runs() {
    assert_eq!(reduce_on_the_gpu("reduce_racy").len(), 3);
}
