//! The CPU side: the same sum written five ways in Rust, each run on one thread and on every
//! core (rayon), and a streaming read of the same buffer that sets the peak. The four
//! abstract ways are in `cpu/variants.rs`; this file hands each of them the operation
//! (`Add`, `add`), and holds the plain loop, the timing and the peak.
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
use std::time::Instant;

use rayon::prelude::*;

use shared::error::try_alloc_bytes;
use shared::Result;

use crate::report::{gbps, is_exact, median, Measured};

mod variants;

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

/// The same addition as a plain function, for the `fn` pointer variant.
fn add(acc: f32, x: f32) -> f32 {
    acc + x
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
pub fn sum(sum: CpuSum, cores: Cores, data: &[f32]) -> f32 {
    let data = black_box(data);
    match sum {
        CpuSum::Plain => split(cores, data, sum_plain),
        CpuSum::Generic => split(cores, data, |part| variants::sum_generic(part, &Add)),
        CpuSum::Dyn => {
            let op: &(dyn Combine + Sync) = black_box(&Add);
            split(cores, data, |part| variants::sum_dyn(part, op))
        }
        CpuSum::BoxFn => {
            let closure: Box<dyn Fn(f32, f32) -> f32 + Sync> =
                black_box(Box::new(|acc, x| acc + x));
            split(cores, data, |part| variants::sum_boxed(part, &*closure))
        }
        CpuSum::FnPtr => {
            let pointer = black_box(add as fn(f32, f32) -> f32);
            split(cores, data, |part| variants::sum_fn_ptr(part, pointer))
        }
    }
}

/// Run `sum` over the whole buffer on this thread, or over chunks on every core and add the
/// chunk totals (whole numbers, so their order does not matter either).
fn split(cores: Cores, data: &[f32], sum: impl Fn(&[f32]) -> f32 + Sync) -> f32 {
    match cores {
        Cores::One => sum(data),
        Cores::All => data
            .par_chunks(CHUNK)
            .map(&sum)
            .reduce(|| 0.0, |a, b| a + b),
    }
}

/// Plain: the loop written out by hand. Kept out of its caller (`inline(never)`), as each
/// variant is, so that each is one symbol in the assembly (`--emit asm`), where what it
/// compiled to can be read.
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
pub fn measure(runs: &[CpuRun], data: &[f32], reps: usize, expected: u64) -> Result<Vec<Measured>> {
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
                CpuRun::Sum(how, cores) => Some(sum(how, cores, data)),
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
                    let got = sum(variant, cores, &data);
                    assert_eq!(
                        f64::from(got),
                        expected as f64,
                        "{variant:?} {cores:?} n={n}"
                    );
                }
            }
        }
    }

    /// Each abstract variant folds with the operation it is handed, once per element, the
    /// tail's too: handed `acc + 1`, each returns the number of elements (not their sum),
    /// having called it that many times.
    #[test]
    fn every_abstract_variant_calls_its_operation_once_per_element() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        fn count(acc: f32, _: f32) -> f32 {
            CALLS.fetch_add(1, Ordering::Relaxed);
            acc + 1.0
        }
        struct Count;
        impl Combine for Count {
            fn combine(&self, acc: f32, x: f32) -> f32 {
                count(acc, x)
            }
        }
        for n in [1, 15, 16, 17, 1000, CHUNK + 17] {
            let (data, total) = crate::data::make(n).unwrap();
            assert_ne!(total, n as u64, "the sum must differ from the count");
            type Variant = fn(&[f32]) -> f32;
            let ran: [(&str, Variant); 4] = [
                ("generic", |d| variants::sum_generic(d, &Count)),
                ("dyn", |d| variants::sum_dyn(d, &Count)),
                ("boxed", |d| variants::sum_boxed(d, &count)),
                ("fn_ptr", |d| variants::sum_fn_ptr(d, count)),
            ];
            for (name, variant) in ran {
                CALLS.store(0, Ordering::Relaxed);
                let got = variant(&data);
                let calls = CALLS.load(Ordering::Relaxed);
                assert_eq!((got, calls), (n as f32, n), "{name} n={n}");
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
