//! The driver's own checks, through its C entry points as a lab calls them: the deadline that
//! `LABS_EMULATE_DEADLINE` gives a launch, and dynamic shared memory past 48 KiB only after
//! `cuFuncSetAttribute`. One test sets the variable, so that it races with no other reader.

use std::ffi::{c_char, c_void, CStr};
use std::time::{Duration, Instant};

use cpu_device::driver::*;

const PTX: &CStr = c".version 8.0
.target sm_90
.address_size 64
.visible .entry spin(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, 0;
LOOP:
    add.s32 %r2, %r2, 1;
    setp.ne.s32 %p1, %r2, %r1;
    @%p1 bra LOOP;
    ret;
}
";

fn error_string(code: i32) -> String {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: a pointer to write the message's address to.
    unsafe { cuGetErrorString(code, &mut text) };
    // SAFETY: the driver's message, NUL-terminated, alive until the next error.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// Launch `spin` with `n` (0: never ends, it counts past 2^32 and on) and `shared` bytes of
/// dynamic shared memory.
fn launch(function: *mut c_void, n: u32, shared: u32) -> i32 {
    let mut n = n;
    let mut args = [(&raw mut n).cast::<c_void>()];
    // SAFETY: a function handle of this driver, and a pointer to each argument.
    unsafe {
        cuLaunchKernel(
            function,
            2,
            1,
            1,
            64,
            1,
            1,
            shared,
            std::ptr::null_mut(),
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
}

#[test]
fn the_driver_stops_a_launch_at_its_deadline_and_keeps_the_gpus_shared_memory_limits() {
    let mut module = std::ptr::null_mut();
    let mut function = std::ptr::null_mut();
    // SAFETY: NUL-terminated PTX, pointers to write the handles to.
    unsafe {
        assert_eq!(cuModuleLoadData(&mut module, PTX.as_ptr().cast()), 0);
        assert_eq!(
            cuModuleGetFunction(&mut function, module, c"spin".as_ptr()),
            0
        );
    }
    // SAFETY: no other thread reads the environment (this binary's one test).
    unsafe { std::env::set_var(DEADLINE_VARIABLE, "0.5") };
    assert_eq!(launch(function, 1000, 0), 0, "{}", error_string(702));
    let start = Instant::now();
    let code = launch(function, 0, 0);
    let took = start.elapsed();
    let said = error_string(code);
    assert_eq!(code, 702, "CUDA_ERROR_LAUNCH_TIMEOUT: {said}");
    assert!(
        said.contains("kernel `spin`") && said.contains("ran past its deadline of 0.5 s"),
        "{said}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");

    // SAFETY: as above.
    unsafe { std::env::set_var(DEADLINE_VARIABLE, "soon") };
    assert_eq!(launch(function, 1, 0), 1);
    assert!(error_string(1).contains("a positive number of seconds"));
    // SAFETY: as above.
    unsafe { std::env::remove_var(DEADLINE_VARIABLE) };

    assert_eq!(launch(function, 1, 48 * 1024), 0);
    assert_eq!(launch(function, 1, 48 * 1024 + 1), 1);
    let said = error_string(1);
    assert!(said.contains("cuFuncSetAttribute"), "{said}");
    // SAFETY: the function handle.
    unsafe {
        assert_eq!(cuFuncSetAttribute(function, 8, 227 * 1024), 0);
        assert_eq!(cuFuncSetAttribute(function, 8, 227 * 1024 + 1), 1);
        assert_eq!(cuFuncSetAttribute(function, 8, -1), 1);
    }
    assert_eq!(launch(function, 1, 227 * 1024), 0);
    assert_eq!(launch(function, 1, 227 * 1024 + 1), 1);
    // SAFETY: the module handle, unloaded once.
    assert_eq!(unsafe { cuModuleUnload(module) }, 0);
}

#[test]
fn the_variables_are_the_ones_the_labs_the_grader_and_xtask_name() {
    assert_eq!(DEADLINE_VARIABLE, shared::gpu::EMULATE_DEADLINE_VARIABLE);
    assert_eq!(RACECHECK_VARIABLE, shared::gpu::EMULATE_RACECHECK_VARIABLE);
}
