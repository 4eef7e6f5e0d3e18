// lab06: the one operation every abstract variant of reduce.cu folds its elements with:
// `add(acc, x)`, addition. The generic, virtual and pointer kernels each call it through
// their own abstraction (a functor, an Adder's virtual method, a device function pointer),
// which is what the lab measures; the plain kernel writes `+` itself.
//
// A plain device function, neither forced inline nor kept out of line: where its caller is
// known at compile time (the functor) the compiler inlines it, so the generic kernel is the
// plain loop; where it is called through a vtable or a pointer, it stays a function.

#pragma once

__device__ float add(float acc, float x) { return acc + x; }
