//! A fuzzer of hostile PTX: the labs' own kernels (NVRTC's PTX) mutated line by line and
//! token by token, and random instruction streams, each loaded and launched on the CPU
//! device on a small grid under a deadline. Errors are expected, and fine; a panic is a
//! bug (the driver would turn it into an error, but it means a check is missing), and a
//! crash ends the run.
//!
//! Deterministic: iteration `i` of seed `s` makes the same program on every machine. A run
//! lasts `CPU_DEVICE_FUZZ_SECONDS` (3 by default: CI), from `CPU_DEVICE_FUZZ_SEED`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cpu_device::exec::{self, Launch};
use cpu_device::load::load;
use cpu_device::memory::Memory;
use shared::nvrtc::KernelFile;

use shared::random::SplitMix64 as Rng;

/// Numbers that break arithmetic: around 0, the signed and unsigned edges, the limits.
const HOSTILE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "-2",
    "-4",
    "-8",
    "3",
    "7",
    "31",
    "32",
    "33",
    "255",
    "1024",
    "1025",
    "49152",
    "65536",
    "2147483647",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "0x7fffffff",
    "0xffffffffffffffff",
    "0f7F800000",
    "0fFFFFFFFF",
    "0d7FF8000000000000",
];

const TYPES: &[&str] = &[
    ".u8", ".s8", ".b8", ".u16", ".s16", ".b16", ".u32", ".s32", ".b32", ".u64", ".s64", ".b64",
    ".f32", ".f64", ".pred", ".v2.u32", ".v4.u32", ".v2.f64", ".v4.f32",
];

const SPACES: &[&str] = &[".global", ".shared", ".local", ".param", ".const", ""];

const REGISTERS: &[&str] = &[
    "%r1", "%r2", "%r3", "%rd1", "%rd2", "%rd3", "%f1", "%fd1", "%p1", "%r0", "%r99", "%rd99",
];

/// One random instruction, of the kinds that touch memory, control flow and lanes.
fn instruction(rng: &mut Rng) -> String {
    let space = rng.pick(SPACES);
    let ty = rng.pick(TYPES);
    let r = |rng: &mut Rng| rng.pick(REGISTERS).to_string();
    let n = |rng: &mut Rng| rng.pick(HOSTILE_NUMBERS).to_string();
    match rng.below(16) {
        0 => format!("ld{space}{ty} {}, [{}+{}];", r(rng), r(rng), n(rng)),
        1 => format!("st{space}{ty} [{}+{}], {};", r(rng), n(rng), r(rng)),
        2 => format!("atom{space}.add{ty} {}, [{}], {};", r(rng), r(rng), r(rng)),
        3 => format!(
            "atom{space}.cas.b32 {}, [{}], {}, {};",
            r(rng),
            r(rng),
            r(rng),
            n(rng)
        ),
        4 => format!("ld{space}.v4.u32 {{%r1, %r2, %r3, %r4}}, [{}];", r(rng)),
        5 => format!("st{space}.v2.u64 [{}+{}], {{%rd1, %rd2}};", r(rng), n(rng)),
        6 => format!("cvta{space}.u64 {}, {};", r(rng), r(rng)),
        7 => format!("cvta.to{space}.u64 {}, {};", r(rng), r(rng)),
        8 => format!("mov.u64 {}, {};", r(rng), n(rng)),
        9 => format!("add.s64 {}, {}, {};", r(rng), r(rng), n(rng)),
        10 => "bar.sync 0;".to_string(),
        11 => format!(
            "shfl.sync.down.b32 {}|%p1, {}, {}, 31, {};",
            r(rng),
            r(rng),
            n(rng),
            n(rng)
        ),
        12 => format!("vote.sync.ballot.b32 {}, %p1, {};", r(rng), n(rng)),
        13 => format!("@%p1 bra L{};", rng.below(3)),
        14 => format!("L{}:", rng.below(3)),
        _ => format!("call.uni (retval0), f{}, (param0);", rng.below(2)),
    }
}

/// A kernel of `count` random instructions, with every register `instruction` names.
fn random_kernel(rng: &mut Rng, count: usize) -> String {
    let mut body = String::new();
    for _ in 0..count {
        body.push_str("    ");
        body.push_str(&instruction(rng));
        body.push('\n');
    }
    format!(
        ".version 8.0
.target sm_90
.address_size 64
.shared .align 8 .b8 tile[256];
.visible .entry random(.param .u64 p, .param .u32 n)
{{
    .local .align 8 .b8 depot[64];
    .reg .pred %p<3>;
    .reg .b32 %r<100>;
    .reg .b64 %rd<100>;
    .reg .f32 %f<3>;
    .reg .f64 %fd<3>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u64 %rd2, depot;
    mov.u64 %rd3, tile;
    mov.u32 %r2, %tid.x;
    setp.lt.u32 %p1, %r2, 16;
{body}L0:
L1:
L2:
    ret;
}}
"
    )
}

/// `ptx` with one to four mutations.
fn mutate(rng: &mut Rng, ptx: &str) -> String {
    let mut lines: Vec<String> = ptx.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(lines.len());
        let j = rng.below(lines.len());
        match rng.below(8) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let line = lines[i].clone();
                lines.insert(j, line);
            }
            2 => lines.swap(i, j),
            3 => lines[i] = replace_token(rng, &lines[i], |c| c.is_ascii_digit(), HOSTILE_NUMBERS),
            4 => lines[i] = replace_token(rng, &lines[i], |c| c == '%', REGISTERS),
            5 => {
                let ty = rng.pick(TYPES);
                lines[i] = replace_word(rng, &lines[i], TYPES, ty);
            }
            6 => {
                let space = rng.pick(SPACES);
                lines[i] = replace_word(rng, &lines[i], SPACES, space);
            }
            _ => {
                let inst = instruction(rng);
                lines.insert(i, inst);
            }
        }
        if lines.is_empty() {
            break;
        }
    }
    lines.join("\n")
}

/// `line` with one token that starts with a character `starts` accepts replaced by one of
/// `with`.
fn replace_token(
    rng: &mut Rng,
    line: &str,
    starts: impl Fn(char) -> bool,
    with: &[&str],
) -> String {
    let bounds: Vec<(usize, usize)> = token_bounds(line)
        .into_iter()
        .filter(|&(a, _)| line[a..].starts_with(&starts))
        .collect();
    if bounds.is_empty() {
        return line.to_string();
    }
    let (a, b) = *rng.pick(&bounds);
    format!("{}{}{}", &line[..a], rng.pick(with), &line[b..])
}

/// `line` with its first word among `words` (types, spaces) replaced by `with`.
fn replace_word(rng: &mut Rng, line: &str, words: &[&str], with: &str) -> String {
    let found: Vec<&&str> = words
        .iter()
        .filter(|w| !w.is_empty() && line.contains(**w))
        .collect();
    match found.is_empty() {
        true => line.to_string(),
        false => line.replacen(*rng.pick(&found), with, 1),
    }
}

/// Where the tokens of `line` are: runs of letters, digits, `%`, `.`, `_`, `$`, `-`.
fn token_bounds(line: &str) -> Vec<(usize, usize)> {
    let word = |c: char| c.is_ascii_alphanumeric() || "%._$-".contains(c);
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                out.push((a, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(a) = start {
        out.push((a, line.len()));
    }
    out
}

#[derive(Default, Debug)]
struct Tally {
    runs: u64,
    refused: u64,
    faulted: u64,
    ran: u64,
    panics: Vec<String>,
}

/// Load `ptx` and launch each of its kernels on 2 blocks of `block` threads under a short
/// deadline, each 8-byte argument pointing at 4 KiB of its own, each other a small number.
fn try_program(rng: &mut Rng, ptx: &str, tally: &mut Tally) {
    let memory = Memory::default();
    let module = match load(ptx, &memory).and_then(|m| exec::check_module(&m).map(|()| m)) {
        Ok(m) => m,
        Err(_) => {
            tally.refused += 1;
            return;
        }
    };
    let block = *rng.pick(&[1u32, 31, 32, 33, 64, 128]);
    for function in module.functions.iter().filter(|f| f.entry) {
        let mut params = Vec::new();
        let mut buffers = Vec::new();
        for &(off, size, _) in &function.params {
            let at = off as usize;
            if params.len() < at + size as usize {
                params.resize((at + size as usize).min(1 << 16), 0);
            }
            let value = if size == 8 {
                let region = memory.alloc(4096, "").expect("4 KiB");
                buffers.push(region.address);
                region.address
            } else {
                *rng.pick(&[0, 1, 2, 7, 16, 64, u64::MAX])
            };
            let bytes = value.to_le_bytes();
            let n = (size as usize).min(8);
            if at + n <= params.len() {
                params[at..at + n].copy_from_slice(&bytes[..n]);
            }
        }
        let snapshot = memory.snapshot().expect("a snapshot");
        let launch = Launch {
            module: &module,
            function,
            grid: [2, 1, 1],
            block: [block, 1, 1],
            dynamic_shared: *rng.pick(&[0, 4, 1024]),
            params: &params,
            memory: &snapshot,
        };
        tally.runs += 1;
        let options = exec::Options {
            deadline: Some(Duration::from_millis(100)),
            initcheck: rng.below(2) == 0,
            racecheck: rng.below(2) == 0,
            // Counting watches every access too: it must not fail where running does not.
            count: rng.below(2) == 0,
            ..exec::Options::default()
        };
        match exec::run_with(&launch, 2, &options).result {
            Ok(()) => tally.ran += 1,
            Err(fault) => {
                assert!(!fault.message.contains('\n'), "{}", fault.message);
                tally.faulted += 1;
            }
        }
        for address in buffers {
            memory.free(address).expect("freed");
        }
    }
    for region in &module.regions {
        let _ = memory.free(region.address);
    }
}

/// Fuzz from `seeds` (PTX texts) for the configured time; panics with every panic found.
fn fuzz(seeds: &[String]) {
    // One fuzzer at a time: the panic hook is the process's.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let seconds: f64 = std::env::var("CPU_DEVICE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let seed: u64 = std::env::var("CPU_DEVICE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    // Panics are counted, not printed: the hook keeps the last one's place.
    let last_panic = Arc::new(Mutex::new(String::new()));
    let hook_panic = Arc::clone(&last_panic);
    std::panic::set_hook(Box::new(move |info| {
        if let Ok(mut last) = hook_panic.lock() {
            *last = info.to_string();
        }
    }));
    let mut tally = Tally::default();
    let start = Instant::now();
    let mut iteration = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        let mut rng = Rng(seed ^ iteration.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let ptx = if iteration % 4 == 3 {
            let count = 1 + rng.below(24);
            random_kernel(&mut rng, count)
        } else {
            let base = rng.pick(seeds).clone();
            mutate(&mut rng, &base)
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| try_program(&mut rng, &ptx, &mut tally)));
        if outcome.is_err() {
            let said = last_panic.lock().map(|s| s.clone()).unwrap_or_default();
            tally.panics.push(format!(
                "iteration {iteration} of seed {seed:#x}: {said}\n{ptx}"
            ));
        }
        iteration += 1;
    }
    let _ = std::panic::take_hook();
    shared::cli::eprint_line(&format!(
        "fuzz: {iteration} programs in {:.1} s from seed {seed:#x}: {} refused at load, {} launches ({} ran, {} faulted), {} panics",
        start.elapsed().as_secs_f64(),
        tally.refused,
        tally.runs,
        tally.ran,
        tally.faulted,
        tally.panics.len()
    ));
    // Each place that panicked once, with the first program that made it panic there.
    let mut places: Vec<(&str, &String)> = Vec::new();
    for p in &tally.panics {
        let place = p
            .split(" panicked at ")
            .nth(1)
            .and_then(|s| s.lines().next())
            .unwrap_or(p);
        if !places.iter().any(|(q, _)| *q == place) {
            places.push((place, p));
        }
    }
    let first = places
        .iter()
        .map(|(place, _)| *place)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        tally.panics.is_empty(),
        "{} panics at {} places:\n{first}\nthe first:\n{}",
        tally.panics.len(),
        places.len(),
        tally.panics.first().map_or("", |p| p.as_str())
    );
}

/// Hand-written PTX, as seeds beside the random streams, for machines without NVRTC.
const HAND_WRITTEN: &str = ".version 8.0
.target sm_90
.address_size 64
.shared .align 4 .b8 tile[128];
.visible .entry sum(.param .u64 p, .param .u32 n)
{
    .local .align 4 .b8 depot[16];
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd2, %r2, 4;
    mov.u64 %rd3, tile;
    add.s64 %rd4, %rd3, %rd2;
    st.shared.u32 [%rd4], %r2;
    mov.u64 %rd5, depot;
    st.local.u32 [%rd5+4], %r2;
    bar.sync 0;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    ld.shared.u32 %r3, [%rd4];
    ld.local.u32 %r4, [%rd5+4];
    add.s32 %r5, %r3, %r4;
    shfl.sync.down.b32 %r6|%p2, %r5, 1, 31, -1;
    atom.global.add.u32 %r7, [%rd1], %r6;
DONE:
    ret;
}
";

#[test]
fn hostile_instruction_streams_never_panic() {
    fuzz(&[HAND_WRITTEN.to_string()]);
}

/// The labs' kernels, as NVRTC compiles them for the H100 with each lab's own options.
fn lab_kernels() -> Vec<String> {
    let files = [
        KernelFile::new(
            "mandelbrot_naive.cu",
            include_str!("../../../lab03-cuda-naive/kernels/mandelbrot_naive.cu"),
            &[],
        ),
        KernelFile::new(
            "mandelbrot.cu",
            include_str!("../../../lab04-cuda-optimized/kernels/mandelbrot.cu"),
            &["--use_fast_math", "--fmad=false"],
        ),
        KernelFile::new(
            "buddhabrot.cu",
            include_str!("../../../lab05-buddhabrot/kernels/buddhabrot.cu"),
            // The cell constants the lab passes (orbit.rs).
            &["--fmad=false", "-DVISIT_LOG2=5", "-DGRID_LOG2=10"],
        ),
        KernelFile::new(
            "reduce.cu",
            include_str!("../../../lab06-generics-vs-virtual/kernels/reduce.cu"),
            &["--std=c++17"],
        )
        .with_header(
            "add.cuh",
            include_str!("../../../lab06-generics-vs-virtual/kernels/add.cuh"),
        ),
    ];
    files
        .iter()
        .map(|f| {
            f.ptx("compute_90")
                .unwrap_or_else(|e| panic!("{}: {e}", f.name))
        })
        .collect()
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn the_labs_kernels_mutated_never_panic() {
    let mut seeds = lab_kernels();
    seeds.push(HAND_WRITTEN.to_string());
    fuzz(&seeds);
}
