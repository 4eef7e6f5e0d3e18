//! The grader's harness for lab06's CPU variants, planted into a grade's build as
//! `lab06-generics-vs-virtual/src/bin/grade-lab06-variants/main.rs` (never in the hand-out).
//!
//! It compiles the student's `src/cpu/variants.rs` beside its own `Combine` and `LANES`, as
//! that file's opening comment says it may be, and hands the variant named on its command
//! line the grader's operation instead of addition: `acc + f(x)`, `f` a permutation of 1, 2
//! and 3 drawn in each grade (0 stays 0), counting its calls. A variant that folds with the
//! operation it is handed, once per element, returns the total of `f` over the elements and
//! makes as many calls as there are elements; one that adds by itself, or answers from
//! anything but the operation, cannot. The lab's own `cpu::sum` is not compiled here, so
//! none of the hand-out's code can answer for a variant.
//!
//! `grade-lab06-variants FUNCTION SEED N F1 F2 F3` prints `SUM CALLS`.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

mod data;

#[path = "../../cpu/variants.rs"]
mod variants;

/// Any lane count serves; the lab's own.
const LANES: usize = 16;

/// What `variants.rs` takes from its parent module: `cpu.rs`'s trait, the same signature.
trait Combine {
    fn combine(&self, acc: f32, x: f32) -> f32;
}

static CALLS: AtomicU64 = AtomicU64::new(0);

/// `f(0..=3)`, set once from the command line (a `fn` pointer carries no data).
static IMAGE: OnceLock<[f32; 4]> = OnceLock::new();

/// The grader's operation, counted: `acc + f(x)`; NaN for an `x` that is no element.
fn operation(acc: f32, x: f32) -> f32 {
    CALLS.fetch_add(1, Ordering::Relaxed);
    let image = IMAGE.get().copied().unwrap_or([f32::NAN; 4]);
    let fx = match (0.0..=3.0).contains(&x) && x.fract() == 0.0 {
        true => image[x as usize],
        false => f32::NAN,
    };
    acc + fx
}

struct Operation;

impl Combine for Operation {
    fn combine(&self, acc: f32, x: f32) -> f32 {
        operation(acc, x)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let (Some(function), Some(seed), Some(n), Some(f1), Some(f2), Some(f3)) = (
        args.first(),
        number(1),
        number(2),
        number(3),
        number(4),
        number(5),
    ) else {
        eprintln!("usage: grade-lab06-variants FUNCTION SEED N F1 F2 F3");
        return ExitCode::from(2);
    };
    let _ = IMAGE.set([0.0, f1 as f32, f2 as f32, f3 as f32]);
    let data = data::elements(seed, n as usize);
    // Each operation is hidden from the optimiser as `cpu::sum` hides addition: the calls
    // are counted either way, this keeps each variant the code the lab times.
    let sum = match function.as_str() {
        "sum_generic" => variants::sum_generic(&data, &Operation),
        "sum_dyn" => variants::sum_dyn(&data, std::hint::black_box(&Operation)),
        "sum_boxed" => {
            let closure: Box<dyn Fn(f32, f32) -> f32> =
                std::hint::black_box(Box::new(|acc, x| operation(acc, x)));
            variants::sum_boxed(&data, &*closure)
        }
        "sum_fn_ptr" => {
            let pointer = std::hint::black_box(operation as fn(f32, f32) -> f32);
            variants::sum_fn_ptr(&data, pointer)
        }
        other => {
            eprintln!("grade-lab06-variants: no variant {other}");
            return ExitCode::from(2);
        }
    };
    println!("{sum} {}", CALLS.load(Ordering::Relaxed));
    ExitCode::SUCCESS
}
