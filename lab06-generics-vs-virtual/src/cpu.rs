//! The CPU side: the same sum written five ways in Rust, each run on one thread and on every
//! core (rayon), and a streaming read of the same buffer that sets the peak.
//!
//! Every variant keeps `LANES` running sums instead of one. Float addition is not
//! associative, so with a single accumulator the compiler must add the elements one after
//! the other, in order: one add per element, each waiting for the last, and no SIMD. With
//! independent lanes it may put them side by side in vector registers, if it can see what
//! each step does. The lab's data sums exactly in any order (see `data`), so the lanes change
//! nothing in the result.
//!
//! Whether it can see what each step does is the lesson: a generic type parameter or a
//! closure is known at compile time and inlined; `&dyn Trait`, `Box<dyn Fn>` and `fn`
//! pointers are called through an address read at run time.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use shared::error::try_alloc_bytes;
use shared::Result;

use crate::report::{gbps, is_exact, median, Measured};

/// Running sums per loop: 16 `f32` are two AVX registers, four SSE ones.
const LANES: usize = 16;

/// Elements per rayon task: 256 KiB, large enough that scheduling costs nothing.
const CHUNK: usize = 1 << 16;

/// The ways to write the sum, as the command line names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuSum {
    /// The loop written out, `+` on floats.
    Plain,
    /// `impl Combine`: one copy of the code per type (monomorphisation).
    Generic,
    /// `&dyn Combine`: one copy of the code, the method called through its vtable.
    Dyn,
    /// `Box<dyn Fn(f32, f32) -> f32>`: a boxed closure, called through its vtable.
    BoxFn,
    /// `fn(f32, f32) -> f32`: a plain function pointer.
    FnPtr,
}

/// Where a CPU variant runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cores {
    One,
    All,
}

/// How two floats combine: the one operation every abstract variant calls per element.
trait Combine {
    fn combine(&self, acc: f32, x: f32) -> f32;
}

/// The lab's operation: addition.
struct Add;

impl Combine for Add {
    fn combine(&self, acc: f32, x: f32) -> f32 {
        acc + x
    }
}

fn add(acc: f32, x: f32) -> f32 {
    acc + x
}

/// How the elements are combined: addition (the lab's sum), or addition modulo a whole
/// number (`--modulus`), with which a grader checks that each variant calls the operation
/// it is given. Both are exact on the lab's data, in any order, and 0 is neutral to both.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Add,
    AddModulo(f32),
}

impl Op {
    /// Two partial results combined (the chunk totals of the rayon variants).
    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            Op::Add => a + b,
            Op::AddModulo(m) => (a + b) % m,
        }
    }
}

/// Addition modulo `.0`: exact while `.0` is a whole number below 2^24 - 3.
struct AddModulo(f32);

impl Combine for AddModulo {
    fn combine(&self, acc: f32, x: f32) -> f32 {
        (acc + x) % self.0
    }
}

/// A `fn` pointer carries no data: `add_modulo`'s modulus is here, set by `sum` (as bits).
static MODULUS: AtomicU32 = AtomicU32::new(0);

fn add_modulo(acc: f32, x: f32) -> f32 {
    (acc + x) % f32::from_bits(MODULUS.load(Ordering::Relaxed))
}

/// Sum `data` the way `sum` says, on `cores`.
///
/// `black_box` hides from the optimiser what it could otherwise prove, so that what is
/// measured is what the source says, whatever the code around it looks like:
/// - around each abstract operation it hides which function is behind it. The optimiser
///   could otherwise see that `op` is always `&Add` (a constant vtable) or always `add` (a
///   constant address), make the indirect call direct, inline it and vectorise the loop:
///   the `&dyn` variant would silently become the generic one. Whether it does depends on
///   the code around the call: here, where `op` reaches the loop through a closure and
///   rayon, rustc 1.95 kept the indirect calls even without `black_box`; in a program that
///   calls `sum_dyn(data, &Add)` from one place, it removed them.
/// - around `data`, it hides that the same unchanged buffer is summed in every
///   repetition, so no repetition can be answered from an earlier one.
///
/// `op` is what each variant is handed (`Op::Add` unless `--modulus` was given).
pub fn sum(sum: CpuSum, cores: Cores, data: &[f32], op: Op) -> f32 {
    let data = black_box(data);
    let modulo = AddModulo(match op {
        Op::Add => 1.0,
        Op::AddModulo(m) => m,
    });
    match (sum, op) {
        (CpuSum::Plain, Op::Add) => split(cores, data, op, sum_plain),
        (CpuSum::Plain, Op::AddModulo(m)) => split(cores, data, op, |part| sum_plain(part) % m),
        (CpuSum::Generic, Op::Add) => split(cores, data, op, |part| sum_generic(part, &Add)),
        (CpuSum::Generic, Op::AddModulo(_)) => {
            split(cores, data, op, |part| sum_generic(part, &modulo))
        }
        (CpuSum::Dyn, _) => {
            let op_object: &(dyn Combine + Sync) = match op {
                Op::Add => black_box(&Add),
                Op::AddModulo(_) => black_box(&modulo),
            };
            split(cores, data, op, |part| sum_dyn(part, op_object))
        }
        (CpuSum::BoxFn, _) => {
            let closure: Box<dyn Fn(f32, f32) -> f32 + Sync> = match op {
                Op::Add => black_box(Box::new(|acc, x| acc + x)),
                Op::AddModulo(m) => black_box(Box::new(move |acc, x| (acc + x) % m)),
            };
            split(cores, data, op, |part| sum_boxed(part, &*closure))
        }
        (CpuSum::FnPtr, _) => {
            let pointer = match op {
                Op::Add => add as fn(f32, f32) -> f32,
                Op::AddModulo(m) => {
                    MODULUS.store(m.to_bits(), Ordering::Relaxed);
                    add_modulo
                }
            };
            let pointer = black_box(pointer);
            split(cores, data, op, |part| sum_fn_ptr(part, pointer))
        }
    }
}

/// Run `sum` over the whole buffer on this thread, or over chunks on every core and combine
/// the chunk totals with `op` (whole numbers, so their order does not matter either).
fn split(cores: Cores, data: &[f32], op: Op, sum: impl Fn(&[f32]) -> f32 + Sync) -> f32 {
    match cores {
        Cores::One => sum(data),
        Cores::All => data
            .par_chunks(CHUNK)
            .map(&sum)
            .reduce(|| 0.0, |a, b| op.apply(a, b)),
    }
}

// Each variant is its own function, kept out of its caller (`inline(never)`), so that each
// is one symbol in the assembly (`--emit asm`), where what it compiled to can be read.

/// Plain: the loop written out by hand.
#[inline(never)]
fn sum_plain(data: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut rows = data.chunks_exact(LANES);
    for row in &mut rows {
        for (lane, &x) in lanes.iter_mut().zip(row) {
            *lane += x;
        }
    }
    let tail: f32 = rows.remainder().iter().sum();
    lanes.iter().sum::<f32>() + tail
}

/// Generic: compiled once per `C`; for `Add`, `combine` is a known function and is inlined.
#[inline(never)]
fn sum_generic(data: &[f32], op: &impl Combine) -> f32 {
    // BEGIN SOLUTION
    // stub: shared::unfinished!(
    // stub:     "the generic variant: fold, combining with op",
    // stub:     data,
    // stub:     op,
    // stub:     <Add as Combine>::combine
    // stub: )
    fold(data, |acc, x| op.combine(acc, x))
    // END SOLUTION
}

/// `&dyn Combine`: compiled once; each `combine` is an indirect call through the vtable.
#[inline(never)]
fn sum_dyn(data: &[f32], op: &dyn Combine) -> f32 {
    // BEGIN SOLUTION
    // stub: shared::unfinished!("the &dyn variant: fold with op's combine", data, op)
    fold(data, |acc, x| op.combine(acc, x))
    // END SOLUTION
}

/// `Box<dyn Fn>`: the caller owns the boxed closure; calling it goes through its vtable
/// exactly as `&dyn` does, so this takes a plain borrow of it.
#[inline(never)]
fn sum_boxed(data: &[f32], op: &dyn Fn(f32, f32) -> f32) -> f32 {
    // BEGIN SOLUTION
    // stub: shared::unfinished!("the Box<dyn Fn> variant: fold with the closure", data, op)
    fold(data, op)
    // END SOLUTION
}

/// `fn` pointer: each call jumps to an address held in a register.
#[inline(never)]
fn sum_fn_ptr(data: &[f32], op: fn(f32, f32) -> f32) -> f32 {
    // BEGIN SOLUTION
    // stub: shared::unfinished!("the fn pointer variant: fold with the pointer", data, op)
    fold(data, op)
    // END SOLUTION
}

// BEGIN SOLUTION
// stub: /// The walk every abstract variant shares: `LANES` running values, each step
// stub: /// `combine(value, element)`, then the tail (the elements after the last whole row of
// stub: /// `LANES`), then the lanes combined into one. `sum_plain` is this walk with `+`.
// stub: #[allow(dead_code)] // until the variants above call it
// stub: fn fold(data: &[f32], combine: impl Fn(f32, f32) -> f32) -> f32 {
// stub:     shared::unfinished!("fold: the walk the abstract variants share", data, combine)
// stub: }
/// The walk every abstract variant shares: `LANES` running sums, each step `combine`.
/// `combine` is a type parameter, so this is copied for each caller with that caller's
/// closure inlined: the only call left per element is whatever the closure itself calls.
fn fold(data: &[f32], combine: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut rows = data.chunks_exact(LANES);
    for row in &mut rows {
        for (lane, &x) in lanes.iter_mut().zip(row) {
            *lane = combine(*lane, x);
        }
    }
    let tail = rows.remainder().iter().fold(0.0, |acc, &x| combine(acc, x));
    lanes.iter().fold(tail, |acc, &lane| combine(acc, lane))
}
// END SOLUTION

/// The peak: every core reads its chunks the way the sums do (`LANES` running values), but
/// ORs the bits together: the cheapest work that still needs every byte. Returns the OR of
/// all bits, which the caller passes to `black_box`.
pub fn read_peak(data: &[f32]) -> u32 {
    black_box(data)
        .par_chunks(CHUNK)
        .map(or_bits)
        .reduce(|| 0, |a, b| a | b)
}

fn or_bits(data: &[f32]) -> u32 {
    let mut lanes = [0u32; LANES];
    let mut rows = data.chunks_exact(LANES);
    for row in &mut rows {
        for (lane, x) in lanes.iter_mut().zip(row) {
            *lane |= x.to_bits();
        }
    }
    let tail = rows.remainder().iter().fold(0, |acc, x| acc | x.to_bits());
    lanes.iter().fold(tail, |acc, lane| acc | lane)
}

/// The processor's model name and the threads rayon uses, e.g. "AMD EPYC, 2 threads".
pub fn describe() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name")?.split(':').nth(1))
        .map_or("CPU", str::trim);
    format!("{model}, {} threads", rayon::current_num_threads())
}

/// One thing to time: the peak read, or a sum on some cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuRun {
    Peak,
    Sum(CpuSum, Cores),
}

/// Time each of `runs` over `data`: one warm-up round (page faults, rayon's threads
/// starting), then `reps` timed rounds; GB/s from each run's median.
///
/// Two things keep the comparison fair when two variants are to be compared within a few
/// percent:
/// - the runs take turns, one of each per round, so whatever drifts during the measurement
///   (other work on the machine, clock speeds) affects every variant alike;
/// - before each run, `evict_caches` reads another buffer twice the size of the last-level
///   cache, so every run finds the data in memory. Without it, a run profits from whatever its
///   predecessor left in the cache: a run after a multi-threaded one finds pieces of the
///   whole buffer there, a run after a single-threaded one only its end, already evicted by
///   the time it gets there.
pub fn measure(
    runs: &[CpuRun],
    data: &[f32],
    reps: usize,
    expected: u64,
    op: Op,
) -> Result<Vec<Measured>> {
    let flush = try_alloc_bytes(2 * last_level_cache_bytes(), "the cache-flush buffer")?;
    let mut times = vec![Vec::with_capacity(reps); runs.len()];
    let mut sums: Vec<Option<f32>> = vec![None; runs.len()];
    for round in 0..=reps {
        for (i, &run) in runs.iter().enumerate() {
            evict_caches(&flush);
            let start = Instant::now();
            let got = match run {
                CpuRun::Peak => {
                    black_box(read_peak(data));
                    None
                }
                CpuRun::Sum(how, cores) => Some(sum(how, cores, data, op)),
            };
            if round > 0 {
                times[i].push(start.elapsed().as_secs_f64() * 1e3);
            }
            // Keep a wrong sum if any round got one.
            if sums[i].is_none_or(|s| is_exact(s, expected)) {
                sums[i] = got;
            }
        }
    }
    Ok(times
        .into_iter()
        .zip(sums)
        .map(|(mut times, sum)| Measured {
            gbps: gbps(data.len(), median(&mut times)),
            sum,
            launch: None,
        })
        .collect())
}

/// Read one byte of every 64-byte cache line of `flush` (a whole line is fetched for it).
fn evict_caches(flush: &[u8]) {
    let lines = flush
        .par_chunks(4096)
        .map(|page| page.iter().step_by(64).fold(0, |acc, &b| acc ^ b))
        .reduce(|| 0, |a, b| a ^ b);
    black_box(lines);
}

/// The size of the largest cache Linux reports for CPU 0 (the last level), or 64 MiB if it
/// reports none.
fn last_level_cache_bytes() -> usize {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let size = |index: std::fs::DirEntry| -> Option<usize> {
        let text = std::fs::read_to_string(index.path().join("size")).ok()?;
        let text = text.trim();
        let (digits, scale) = match text.strip_suffix('K') {
            Some(kib) => (kib, 1 << 10),
            None => (text.strip_suffix('M')?, 1 << 20),
        };
        Some(digits.parse::<usize>().ok()? * scale)
    };
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(size)
        .max()
        .unwrap_or(64 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CpuSum; 5] = [
        CpuSum::Plain,
        CpuSum::Generic,
        CpuSum::Dyn,
        CpuSum::BoxFn,
        CpuSum::FnPtr,
    ];

    #[test]
    fn every_variant_sums_exactly_on_awkward_lengths() {
        // Lengths around the lane width and the rayon chunk, so that every tail is used.
        for n in [1, 15, 16, 17, 1000, CHUNK - 1, CHUNK + 17, 3 * CHUNK + 5] {
            let (data, expected) = crate::data::make(n).unwrap();
            for variant in ALL {
                for cores in [Cores::One, Cores::All] {
                    let got = sum(variant, cores, &data, Op::Add);
                    assert_eq!(
                        f64::from(got),
                        expected as f64,
                        "{variant:?} {cores:?} n={n}"
                    );
                }
            }
        }
    }

    /// Each variant combines with the operation it is handed, in its lanes, its tail and its
    /// chunks: modulo M, every result is the total modulo M (moduli below and above it).
    #[test]
    fn every_variant_combines_with_the_operation_it_is_given() {
        for n in [17, CHUNK + 17, 3 * CHUNK + 5] {
            let (data, total) = crate::data::make(n).unwrap();
            for modulus in [7u64, 1009, 65521] {
                let expected = total % modulus;
                for variant in ALL {
                    for cores in [Cores::One, Cores::All] {
                        let got = sum(variant, cores, &data, Op::AddModulo(modulus as f32));
                        assert_eq!(
                            f64::from(got),
                            expected as f64,
                            "{variant:?} {cores:?} n={n} modulo {modulus}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_peak_reads_every_element() {
        let mut data = vec![0.0f32; 3 * CHUNK + 1];
        assert_eq!(read_peak(&data), 0);
        data[3 * CHUNK] = 1.0;
        assert_eq!(read_peak(&data), 1.0f32.to_bits());
    }
}
