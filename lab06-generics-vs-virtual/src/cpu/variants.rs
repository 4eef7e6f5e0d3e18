//! The four abstract ways of writing the sum: a generic `impl Combine`, `&dyn Combine`, a
//! boxed closure and a `fn` pointer, and the walk they share.
//!
//! This file uses only `super::{Combine, LANES}` and std, nothing else of `cpu.rs`: it is
//! compiled on its own by whoever hands it an operation. `cpu::sum` hands every variant
//! addition; a grader may hand it another operation and count its calls, so each variant
//! must fold with the operation it is handed, once per element (see `fold`).

// `LANES` is named where `fold` uses it (`super::LANES`), not imported: the hand-out's
// `fold` is a stub that does not use it.
use super::Combine;

// Each variant is its own function, kept out of its caller (`inline(never)`), so that each
// is one symbol in the assembly (`--emit asm`), where what it compiled to can be read.

/// Generic: compiled once per `C`; for `Add`, `combine` is a known function and is inlined.
#[inline(never)]
pub(super) fn sum_generic(data: &[f32], op: &impl Combine) -> f32 {
    // BEGIN SOLUTION
    // stub: shared::unfinished!(
    // stub:     "the generic variant: fold, combining with op",
    // stub:     data,
    // stub:     op,
    // stub:     <dyn Combine>::combine
    // stub: )
    fold(data, |acc, x| op.combine(acc, x))
    // END SOLUTION
}

/// `&dyn Combine`: compiled once; each `combine` is an indirect call through the vtable.
#[inline(never)]
pub(super) fn sum_dyn(data: &[f32], op: &dyn Combine) -> f32 {
    // BEGIN SOLUTION
    // stub: shared::unfinished!("the &dyn variant: fold with op's combine", data, op)
    fold(data, |acc, x| op.combine(acc, x))
    // END SOLUTION
}

/// `Box<dyn Fn>`: the caller owns the boxed closure; calling it goes through its vtable
/// exactly as `&dyn` does, so this takes a plain borrow of it.
#[inline(never)]
pub(super) fn sum_boxed(data: &[f32], op: &dyn Fn(f32, f32) -> f32) -> f32 {
    // BEGIN SOLUTION
    // stub: shared::unfinished!("the Box<dyn Fn> variant: fold with the closure", data, op)
    fold(data, op)
    // END SOLUTION
}

/// `fn` pointer: each call jumps to an address held in a register.
#[inline(never)]
pub(super) fn sum_fn_ptr(data: &[f32], op: fn(f32, f32) -> f32) -> f32 {
    // BEGIN SOLUTION
    // stub: shared::unfinished!("the fn pointer variant: fold with the pointer", data, op)
    fold(data, op)
    // END SOLUTION
}

// BEGIN SOLUTION
// stub: /// The walk every abstract variant shares: `LANES` running values, each element folded
// stub: /// into one of them with one call of `combine`, then the elements after the last whole row
// stub: /// of `LANES` (the tail), one call each too; then the lanes and the tail added up with `+`.
// stub: /// One call per element, no more and no fewer: the operation is how each element is folded
// stub: /// in, and the sum of the partial results is a sum whatever the operation (`sum_plain` is
// stub: /// this walk with `+` throughout).
// stub: #[allow(dead_code)] // until the variants above call it
// stub: fn fold(data: &[f32], combine: impl Fn(f32, f32) -> f32) -> f32 {
// stub:     shared::unfinished!("fold: the walk the abstract variants share", data, combine)
// stub: }
/// The walk every abstract variant shares: `LANES` running sums, each element folded in with
/// one call of `combine`. `combine` is a type parameter, so this is copied for each caller
/// with that caller's closure inlined: the only call left per element is whatever the
/// closure itself calls.
///
/// One call per element, no more and no fewer: the lanes and the tail are added up with `+`
/// at the end, not with `combine`. The operation is how each element is folded in; the
/// partial results are sums, whatever the operation.
fn fold(data: &[f32], combine: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; super::LANES];
    let mut rows = data.chunks_exact(super::LANES);
    for row in &mut rows {
        for (lane, &x) in lanes.iter_mut().zip(row) {
            *lane = combine(*lane, x);
        }
    }
    let tail = rows.remainder().iter().fold(0.0, |acc, &x| combine(acc, x));
    lanes.iter().sum::<f32>() + tail
}
// END SOLUTION
