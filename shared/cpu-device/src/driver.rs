//! The CUDA driver calls the labs make (`shared::gpu::DRIVER_FUNCTIONS`), answered on the
//! CPU. cudarc calls them through the library it loads as `libcuda.so`; under `--emulate`
//! that is this one. Everything runs at once and in order: a "stream" is the calling
//! thread, an event is the moment it was recorded, and a kernel time is wall time here.
//!
//! Every function returns a `CUresult` that exists in the driver's own list, and a launch
//! that faults returns `CUDA_ERROR_ILLEGAL_ADDRESS` (or `_ILLEGAL_INSTRUCTION` for a trap,
//! `_LAUNCH_TIMEOUT` past its deadline) with `cuGetErrorString` giving the fault in words:
//! kernel, block, thread, address, allocation.
//!
//! No panic crosses into the caller: every entry point runs its body in [`guarded`], which
//! turns one (a bug of the CPU device, never of the program) into an error code and a line.
//! Device memory is touched by one call at a time ([`State::device`]): a launch's kernel
//! reaches allocations through their addresses, so nothing may free or copy into them
//! while it runs.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::exec::{self, FaultKind, Launch, MAX_SHARED_OPT_IN, MAX_STATIC_SHARED};
use crate::ir::Function;
use crate::load::{load_with, Module};
use crate::memory::Memory;
use crate::profile::{profile, Profile};

type CuResult = c_int;
const SUCCESS: CuResult = 0;
const INVALID_VALUE: CuResult = 1;
const OUT_OF_MEMORY: CuResult = 2;
const INVALID_DEVICE: CuResult = 101;
const INVALID_IMAGE: CuResult = 200;
const INVALID_PTX: CuResult = 218;
const INVALID_HANDLE: CuResult = 400;
const NOT_FOUND: CuResult = 500;
const ILLEGAL_ADDRESS: CuResult = 700;
const LAUNCH_TIMEOUT: CuResult = 702;
const ASSERT: CuResult = 710;
const ILLEGAL_INSTRUCTION: CuResult = 715;
const UNKNOWN: CuResult = 999;

/// The environment variable that gives every launch a deadline, in seconds (a decimal
/// number): a kernel still running then stops with `CUDA_ERROR_LAUNCH_TIMEOUT` and a line
/// saying so. Unset, a launch runs as long as it takes. The grader sets it from the
/// reference solution's own time.
pub const DEADLINE_VARIABLE: &str = "LABS_EMULATE_DEADLINE";

/// Set to 1, a launch stops at a load of shared or local memory that no thread of the block
/// (or, for local memory, the thread itself) wrote in this launch, as compute-sanitizer's
/// initcheck reports it.
pub const INITCHECK_VARIABLE: &str = "LABS_EMULATE_INITCHECK";

/// Set to 1, a launch stops at an access to shared memory that races with another warp's
/// (no barrier between, one of the two a store), as compute-sanitizer's racecheck reports it.
pub const RACECHECK_VARIABLE: &str = "LABS_EMULATE_RACECHECK";

/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
const MAX_DYNAMIC_SHARED_ATTRIBUTE: c_int = 8;

/// The device's name, as the labs report it: never mistaken for a GPU's.
pub const NAME: &str = "CPU device (PTX interpreter)";

struct State {
    memory: Memory,
    /// Held by every call that reads, writes or frees device memory, launches included.
    device: Mutex<()>,
    host: Mutex<HashMap<usize, usize>>,
    /// The last error in words, for `cuGetErrorString`.
    last: Mutex<Option<(CuResult, CString)>>,
    /// What kernels' `printf`s printed since the last synchronisation.
    printf: Mutex<Vec<u8>>,
    /// Once profiling ([`cpuDeviceProfileStart`]), the launches' profiles since the last
    /// [`cpuDeviceProfileTake`].
    profiles: Mutex<Option<Vec<Profile>>>,
    /// Registers a thread of each kernel, by name, as ptxas allocates them for the H100
    /// ([`cpuDeviceSetRegisters`]).
    registers: Mutex<HashMap<String, u32>>,
    /// Whether the modules loaded next fuse loose multiplies into adds, as ptxas does unless
    /// NVRTC's options say not to ([`cpuDeviceSetContraction`]).
    contract: AtomicBool,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| State {
        memory: Memory::default(),
        device: Mutex::new(()),
        host: Mutex::new(HashMap::new()),
        last: Mutex::new(None),
        printf: Mutex::new(Vec::new()),
        profiles: Mutex::new(None),
        registers: Mutex::new(HashMap::new()),
        contract: AtomicBool::new(true),
    })
}

/// Write what kernels printed to stdout: the GPU's printf buffer is flushed when a kernel
/// is launched, at a synchronisation (context, stream, event) and when a module is loaded
/// (CUDA C++ Programming Guide, "Formatted Output"), not as the kernel runs.
fn flush_printf() {
    let Ok(mut pending) = state().printf.lock() else {
        return;
    };
    if pending.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    // Output that cannot be written is lost, as the GPU's would be; the call succeeds.
    let _ = out.write_all(&pending).and_then(|()| out.flush());
    pending.clear();
}

/// Device memory, to this caller alone until the guard is dropped. A call that panicked
/// while holding it left nothing half done that matters (memory is bytes), so a poisoned
/// lock is taken as it is.
fn device() -> MutexGuard<'static, ()> {
    state()
        .device
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Run a driver call's body; a panic inside (a bug of the CPU device) becomes
/// `CUDA_ERROR_UNKNOWN` and one line, instead of unwinding into C, which would abort.
fn guarded(body: impl FnOnce() -> CuResult) -> CuResult {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(code) => code,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            fail(
                UNKNOWN,
                format!("the CPU device failed inside itself ({what}): a bug of the CPU device, not of the program; please report it with the kernel"),
            )
        }
    }
}

/// The deadline `DEADLINE_VARIABLE` gives, if it is set to a positive number of seconds.
fn deadline() -> Result<Option<Duration>, String> {
    let Some(text) = std::env::var_os(DEADLINE_VARIABLE) else {
        return Ok(None);
    };
    let text = text.to_string_lossy();
    text.trim()
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|d| !d.is_zero())
        .map(Some)
        .ok_or_else(|| {
            format!("{DEADLINE_VARIABLE}={text}: give the deadline as a positive number of seconds")
        })
}

/// A memory call's answer: success, or its one line as CUDA_ERROR_INVALID_VALUE.
fn answer(result: Result<(), String>) -> CuResult {
    match result {
        Ok(()) => SUCCESS,
        Err(e) => fail(INVALID_VALUE, e),
    }
}

fn fail(code: CuResult, message: String) -> CuResult {
    if let Ok(mut last) = state().last.lock() {
        let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
        *last = Some((code, text));
    }
    code
}

struct ModuleHandle {
    module: Arc<Module>,
}

struct FunctionHandle {
    module: Arc<Module>,
    index: usize,
    /// The most dynamic shared memory a launch may ask for: 48 KiB less the static, unless
    /// raised with `cuFuncSetAttribute`, as on the GPU.
    max_dynamic_shared: AtomicU32,
}

struct Event {
    at: Mutex<Instant>,
}

/// The one context's handle: any non-null address will do, it is never read.
fn context() -> *mut c_void {
    static CONTEXT: u8 = 0;
    std::ptr::addr_of!(CONTEXT).cast_mut().cast()
}

/// Host threads the interpreter runs blocks on: every core, or `CPU_DEVICE_THREADS`.
pub fn threads() -> usize {
    std::env::var("CPU_DEVICE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// # Safety
/// `p` must be null or valid for one write of `T`.
unsafe fn put<T>(p: *mut T, v: T) -> CuResult {
    if p.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: the caller's promise, and not null.
    unsafe { p.write(v) };
    SUCCESS
}

#[no_mangle]
pub extern "C" fn cuInit(_flags: c_uint) -> CuResult {
    guarded(|| SUCCESS)
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CuResult {
    guarded(|| {
        if ordinal != 0 {
            return fail(
                INVALID_DEVICE,
                format!("the CPU device is device 0 only (asked for {ordinal})"),
            );
        }
        // SAFETY: the caller's pointer.
        unsafe { put(device, 0) }
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CuResult {
    guarded(|| {
        // SAFETY: the caller's pointer.
        unsafe { put(count, 1) }
    })
}

/// The attributes the labs and cudarc ask for, with an H100's values where one matters to
/// a launch's shape (so the labs choose the same blocks), and 0 for memory pools (cudarc
/// then allocates with plain `cuMemAlloc`).
fn attribute(attrib: c_int) -> c_int {
    match attrib {
        1 => 1024,     // max threads per block
        2 => 1024,     // max block dim x
        3 => 1024,     // max block dim y
        4 => 64,       // max block dim z
        5 => i32::MAX, // max grid dim x
        6 => 65535,    // max grid dim y
        7 => 65535,    // max grid dim z
        8 => 49152,    // max shared memory per block
        10 => 32,      // warp size
        12 => 65536,   // registers per block
        16 => 132,     // multiprocessors
        39 => 2048,    // max threads per multiprocessor
        75 => 9,       // compute capability major
        76 => 0,       // compute capability minor
        81 => 233472,  // shared memory per multiprocessor
        82 => 65536,   // registers per multiprocessor
        _ => 0,
    }
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    pi: *mut c_int,
    attrib: c_int,
    _dev: c_int,
) -> CuResult {
    guarded(|| {
        // SAFETY: the caller's pointer.
        unsafe { put(pi, attribute(attrib)) }
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, _dev: c_int) -> CuResult {
    guarded(|| {
        if name.is_null() || len <= 0 {
            return INVALID_VALUE;
        }
        let text = format!("{NAME}, {} threads", threads());
        let bytes = text.as_bytes();
        let n = bytes.len().min(len as usize - 1);
        // SAFETY: `name` holds `len` bytes, the caller's promise; n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), name, n);
            *name.add(n) = 0;
        }
        SUCCESS
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut *mut c_void, _dev: c_int) -> CuResult {
    guarded(|| {
        // SAFETY: the caller's pointer.
        unsafe { put(pctx, context()) }
    })
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(_dev: c_int) -> CuResult {
    guarded(|| {
        flush_printf();
        SUCCESS
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut *mut c_void) -> CuResult {
    guarded(|| {
        // SAFETY: the caller's pointer.
        unsafe { put(pctx, context()) }
    })
}

#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(_ctx: *mut c_void) -> CuResult {
    guarded(|| SUCCESS)
}

#[no_mangle]
pub extern "C" fn cuCtxSynchronize() -> CuResult {
    guarded(|| {
        flush_printf();
        SUCCESS
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(error: CuResult, p_str: *mut *const c_char) -> CuResult {
    guarded(|| {
        static GENERIC: &CStr = c"the CPU device failed";
        let text = match state().last.lock() {
            Ok(last) => match last.as_ref() {
                Some((code, text)) if *code == error => text.as_ptr(),
                _ => GENERIC.as_ptr(),
            },
            Err(_) => GENERIC.as_ptr(),
        };
        // SAFETY: the caller's pointer. The text lives until the next error replaces it, which
        // outlasts the error's one message.
        unsafe { put(p_str, text) }
    })
}

fn meminfo(key: &str) -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CuResult {
    guarded(|| {
        let all = meminfo("MemTotal:").unwrap_or(16 << 30);
        let available = meminfo("MemAvailable:").unwrap_or(all / 2);
        // SAFETY: the caller's pointers.
        unsafe {
            put(free, available);
            put(total, all)
        }
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut u64, bytesize: usize) -> CuResult {
    guarded(|| {
        match state().memory.alloc(bytesize as u64, "") {
            // SAFETY: the caller's pointer.
            Ok(region) => unsafe { put(dptr, region.address) },
            Err(e) => fail(OUT_OF_MEMORY, e),
        }
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut u64,
    bytesize: usize,
    _stream: *mut c_void,
) -> CuResult {
    guarded(|| {
        // SAFETY: the caller's pointer.
        unsafe { cuMemAlloc_v2(dptr, bytesize) }
    })
}

#[no_mangle]
pub extern "C" fn cuMemFree_v2(dptr: u64) -> CuResult {
    guarded(|| {
        let _device = device();
        answer(state().memory.free(dptr))
    })
}

#[no_mangle]
pub extern "C" fn cuMemFreeAsync(dptr: u64, _stream: *mut c_void) -> CuResult {
    guarded(|| cuMemFree_v2(dptr))
}

#[no_mangle]
pub extern "C" fn cuMemsetD8Async(dst: u64, value: u8, n: usize, _stream: *mut c_void) -> CuResult {
    guarded(|| {
        let _device = device();
        answer(state().memory.fill(dst, value, n as u64))
    })
}

/// # Safety
/// A driver call: `src` holds `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: u64,
    src: *const c_void,
    n: usize,
    _stream: *mut c_void,
) -> CuResult {
    guarded(|| {
        if n == 0 {
            return SUCCESS;
        }
        if src.is_null() {
            return INVALID_VALUE;
        }
        // SAFETY: the caller's promise.
        let bytes = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), n) };
        let _device = device();
        answer(state().memory.write(dst, bytes))
    })
}

/// # Safety
/// A driver call: `dst` holds `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: u64,
    n: usize,
    _stream: *mut c_void,
) -> CuResult {
    guarded(|| {
        if n == 0 {
            return SUCCESS;
        }
        if dst.is_null() {
            return INVALID_VALUE;
        }
        // SAFETY: the caller's promise.
        let out = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), n) };
        let _device = device();
        answer(state().memory.read(src, out))
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    bytesize: usize,
    _flags: c_uint,
) -> CuResult {
    guarded(|| {
        let Ok(layout) = std::alloc::Layout::from_size_align(bytesize.max(1), 64) else {
            return INVALID_VALUE;
        };
        // SAFETY: a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return fail(
                OUT_OF_MEMORY,
                format!("out of host memory allocating {bytesize} bytes"),
            );
        }
        if let Ok(mut host) = state().host.lock() {
            host.insert(p as usize, bytesize.max(1));
        }
        // SAFETY: the caller's pointer.
        unsafe { put(pp, p.cast()) }
    })
}

/// # Safety
/// A driver call: `p` from `cuMemHostAlloc`.
#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CuResult {
    guarded(|| {
        let size = state()
            .host
            .lock()
            .ok()
            .and_then(|mut h| h.remove(&(p as usize)));
        match size.and_then(|s| std::alloc::Layout::from_size_align(s, 64).ok()) {
            // SAFETY: allocated above with this layout, and removed from the map: freed once.
            Some(layout) => unsafe {
                std::alloc::dealloc(p.cast(), layout);
                SUCCESS
            },
            None => INVALID_VALUE,
        }
    })
}

/// # Safety
/// A driver call: `image` is NUL-terminated PTX text.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(
    module: *mut *mut c_void,
    image: *const c_void,
) -> CuResult {
    guarded(|| {
        if image.is_null() {
            return INVALID_VALUE;
        }
        flush_printf();
        // SAFETY: the caller's promise: an image, PTX text ending with a NUL or a cubin,
        // whose ELF magic holds no NUL, so reading up to the first NUL stays inside either.
        let text = unsafe { CStr::from_ptr(image.cast::<c_char>()) };
        if text.to_bytes().starts_with(b"\x7fELF") {
            return fail(
            INVALID_IMAGE,
            "the CPU device runs PTX, not a cubin: compile the kernel to PTX (shared::gpu does under --emulate)".to_string(),
        );
        }
        let Ok(text) = text.to_str() else {
            return fail(INVALID_PTX, "the PTX is not UTF-8 text".to_string());
        };
        let contract = state().contract.load(Ordering::Relaxed);
        let loaded =
            load_with(text, &state().memory, contract).and_then(|m| match exec::check_module(&m) {
                Ok(()) => Ok(m),
                Err(e) => {
                    let _device = device();
                    for region in &m.regions {
                        let _ = state().memory.free(region.address);
                    }
                    Err(e)
                }
            });
        match loaded {
            Ok(m) => {
                let handle = Box::new(ModuleHandle {
                    module: Arc::new(m),
                });
                // SAFETY: the caller's pointer.
                unsafe { put(module, Box::into_raw(handle).cast()) }
            }
            Err(e) => fail(
                INVALID_PTX,
                format!("the CPU device cannot run this PTX: {e}"),
            ),
        }
    })
}

/// # Safety
/// A driver call: `hmod` from `cuModuleLoadData`, `name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    hfunc: *mut *mut c_void,
    hmod: *mut c_void,
    name: *const c_char,
) -> CuResult {
    guarded(|| {
        if hmod.is_null() || name.is_null() {
            return INVALID_HANDLE;
        }
        // SAFETY: a handle this library made, still loaded (the caller's promise).
        let m = unsafe { &*hmod.cast::<ModuleHandle>() };
        // SAFETY: NUL-terminated, the caller's promise.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        match m.module.by_name.get(name.as_ref()) {
            Some(&i) if m.module.functions[i as usize].entry => {
                let index = i as usize;
                let static_shared = exec::static_shared(&m.module, &m.module.functions[index]);
                let handle = Box::new(FunctionHandle {
                    module: Arc::clone(&m.module),
                    index,
                    // At most 48 KiB (`check_module`).
                    max_dynamic_shared: AtomicU32::new((MAX_STATIC_SHARED - static_shared) as u32),
                });
                // SAFETY: the caller's pointer. Function handles live as long as the process,
                // as the driver's do while their module is loaded.
                unsafe { put(hfunc, Box::into_raw(handle).cast()) }
            }
            _ => fail(
                NOT_FOUND,
                format!("the module has no kernel named `{name}`"),
            ),
        }
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut u64,
    bytes: *mut usize,
    hmod: *mut c_void,
    name: *const c_char,
) -> CuResult {
    guarded(|| {
        if hmod.is_null() || name.is_null() {
            return INVALID_HANDLE;
        }
        // SAFETY: as in cuModuleGetFunction.
        let m = unsafe { &*hmod.cast::<ModuleHandle>() };
        // SAFETY: as in cuModuleGetFunction.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        match m
            .module
            .variables
            .iter()
            .find(|v| v.name == name && v.space != crate::ir::Space::Shared)
        {
            Some(v) => {
                // SAFETY: the caller's pointers; either may be null.
                unsafe {
                    if !dptr.is_null() {
                        put(dptr, v.address);
                    }
                    if !bytes.is_null() {
                        put(bytes, v.size as usize);
                    }
                }
                SUCCESS
            }
            None => fail(
                NOT_FOUND,
                format!("the module has no global variable named `{name}`"),
            ),
        }
    })
}

/// # Safety
/// A driver call: `hmod` from `cuModuleLoadData`, unloaded once.
#[no_mangle]
pub unsafe extern "C" fn cuModuleUnload(hmod: *mut c_void) -> CuResult {
    guarded(|| {
        if hmod.is_null() {
            return INVALID_HANDLE;
        }
        // SAFETY: made by Box::into_raw in cuModuleLoadData, unloaded once.
        let m = unsafe { Box::from_raw(hmod.cast::<ModuleHandle>()) };
        let _device = device();
        for region in &m.module.regions {
            let _ = state().memory.free(region.address);
        }
        SUCCESS
    })
}

/// # Safety
/// A driver call: `f` from `cuModuleGetFunction`; `kernel_params` holds a pointer to each
/// argument, as the kernel's parameters say.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuLaunchKernel(
    f: *mut c_void,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_mem_bytes: c_uint,
    _stream: *mut c_void,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    guarded(|| {
        if f.is_null() {
            return INVALID_HANDLE;
        }
        if !extra.is_null() {
            return fail(
                INVALID_VALUE,
                "the CPU device takes kernel arguments as kernelParams only".to_string(),
            );
        }
        // SAFETY: a handle this library made.
        let handle = unsafe { &*f.cast::<FunctionHandle>() };
        let module = &handle.module;
        let function = &module.functions[handle.index];
        let grid = [grid_x, grid_y, grid_z];
        let block = [block_x, block_y, block_z];
        let threads_per_block = u64::from(block_x) * u64::from(block_y) * u64::from(block_z);
        if grid.contains(&0)
            || block.contains(&0)
            || threads_per_block > 1024
            || block_z > 64
            || grid_y > 65535
            || grid_z > 65535
        {
            return fail(INVALID_VALUE, format!(
            "launching `{}` with grid {grid:?} and block {block:?}: a block holds 1 to 1024 threads, and a grid is at most 65535 blocks in y and z",
            function.name
        ));
        }
        let allowed = handle.max_dynamic_shared.load(Ordering::Relaxed);
        if shared_mem_bytes > allowed {
            return fail(INVALID_VALUE, format!(
                "launching `{}` with {shared_mem_bytes} bytes of dynamic shared memory, where it may have {allowed}: past 48 KiB in all, raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES with cuFuncSetAttribute first, as on the GPU (227 KiB at most)",
                function.name
            ));
        }
        let deadline = match deadline() {
            Ok(deadline) => deadline,
            Err(e) => return fail(INVALID_VALUE, e),
        };
        // SAFETY: the caller's promise, passed on.
        let params = match unsafe { kernel_arguments(function, kernel_params) } {
            Ok(params) => params,
            Err(code) => return code,
        };
        let _device = device();
        let snapshot = match state().memory.snapshot() {
            Ok(s) => s,
            Err(e) => return fail(INVALID_VALUE, e),
        };
        let launch = Launch {
            module,
            function,
            grid,
            block,
            dynamic_shared: shared_mem_bytes,
            params: &params,
            memory: &snapshot,
        };
        if let Err(e) = exec::limits(&launch) {
            return fail(INVALID_VALUE, e);
        }
        let profiling = state().profiles.lock().is_ok_and(|p| p.is_some());
        let options = exec::Options {
            deadline,
            initcheck: std::env::var_os(INITCHECK_VARIABLE).is_some_and(|v| v == "1"),
            racecheck: std::env::var_os(RACECHECK_VARIABLE).is_some_and(|v| v == "1"),
            printf_room: crate::printf::FIFO_BYTES,
            count: profiling,
        };
        flush_printf();
        let ran = exec::run_with(&launch, threads(), &options);
        if let Ok(mut pending) = state().printf.lock() {
            pending.extend_from_slice(&ran.printed);
        }
        if let Some(counts) = &ran.counts {
            let registers = registers_of(&function.name);
            let shared = exec::static_shared(module, function) + u64::from(shared_mem_bytes);
            let profile = profile(
                module,
                &function.name,
                (grid, block),
                shared,
                registers,
                counts,
            );
            if let Ok(mut profiles) = state().profiles.lock() {
                profiles.get_or_insert_with(Vec::new).push(profile);
            }
        }
        match ran.result {
            Ok(()) => SUCCESS,
            Err(fault) => launch_failed(&function.name, &fault),
        }
    })
}

/// The kernel's parameter buffer: each argument copied to its parameter's offset.
///
/// # Safety
/// `kernel_params` as `cuLaunchKernel` takes it: a pointer to each argument, as `function`'s
/// parameters say.
unsafe fn kernel_arguments(
    function: &Function,
    kernel_params: *mut *mut c_void,
) -> Result<Vec<u8>, CuResult> {
    let size = function
        .params
        .iter()
        .map(|&(off, size, _)| u64::from(off) + u64::from(size))
        .max()
        .unwrap_or(0);
    if size > exec::MAX_PARAM_BYTES {
        return Err(fail(
            INVALID_VALUE,
            format!(
                "`{}` takes {size} bytes of parameters, more than the {} a kernel takes",
                function.name,
                exec::MAX_PARAM_BYTES
            ),
        ));
    }
    let mut params = vec![0u8; size as usize];
    if !function.params.is_empty() && kernel_params.is_null() {
        return Err(fail(
            INVALID_VALUE,
            format!("`{}` takes arguments, and none were given", function.name),
        ));
    }
    for (i, &(off, size, _)) in function.params.iter().enumerate() {
        // SAFETY: the caller's promise: one pointer per parameter, each to its value.
        let arg = unsafe { *kernel_params.add(i) };
        if arg.is_null() {
            return Err(fail(
                INVALID_VALUE,
                format!("argument {i} of `{}` is missing", function.name),
            ));
        }
        // SAFETY: as above, `size` bytes as the kernel declares the parameter.
        unsafe {
            std::ptr::copy_nonoverlapping(
                arg.cast::<u8>(),
                params.as_mut_ptr().add(off as usize),
                size as usize,
            );
        }
    }
    Ok(params)
}

/// The registers a thread of `kernel` has on the H100, if the lab said.
fn registers_of(kernel: &str) -> Option<u32> {
    state().registers.lock().ok()?.get(kernel).copied()
}

/// Count every launch from now on, for [`cpuDeviceProfileTake`] (`--emulate --profile`).
/// Not a driver call: the labs' `shared::gpu` makes it.
#[no_mangle]
pub extern "C" fn cpuDeviceProfileStart() {
    if let Ok(mut profiles) = state().profiles.lock() {
        profiles.get_or_insert_with(Vec::new);
    }
}

/// Registers a thread of the kernel named `name`, as ptxas allocates them for the H100
/// (from NVRTC's cubin for sm_90): the occupancy the model assumes, and what
/// `cuFuncGetAttribute` answers. Not a driver call.
///
/// # Safety
/// `name` must be null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cpuDeviceSetRegisters(name: *const c_char, registers: c_uint) {
    if name.is_null() {
        return;
    }
    // SAFETY: the caller's promise.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    if let Ok(mut known) = state().registers.lock() {
        known.insert(name, registers);
    }
}

/// Whether the modules loaded from now on fuse loose multiplies into adds (`contract`
/// non-zero, the default) or not, as ptxas does with the NVRTC options the kernel was
/// compiled with: the GPU runs what NVRTC and ptxas made of the kernel, the CPU device the
/// PTX alone. Not a driver call.
#[no_mangle]
pub extern "C" fn cpuDeviceSetContraction(contract: c_int) {
    state().contract.store(contract != 0, Ordering::Relaxed);
}

/// The profiles of the launches since the last call, as a JSON array (`json` non-zero) or
/// as tables, one a launch; null if not profiling. `reference`, if not null, is the JSON
/// array of the reference solution's profiles at the same arguments, in launch order: each
/// launch of the same kernel is set against its own. Free the text with [`cpuDeviceFree`].
/// Not a driver call.
///
/// # Safety
/// `reference` must be null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cpuDeviceProfileTake(
    json: c_int,
    reference: *const c_char,
) -> *mut c_char {
    let taken = match state().profiles.lock() {
        Ok(mut profiles) => profiles.as_mut().map(std::mem::take),
        Err(_) => None,
    };
    let Some(mut taken) = taken else {
        return std::ptr::null_mut();
    };
    let references: Vec<Profile> = if reference.is_null() {
        Vec::new()
    } else {
        // SAFETY: the caller's promise. A reference that does not parse compares nothing.
        let text = unsafe { CStr::from_ptr(reference) };
        serde_json::from_slice(text.to_bytes()).unwrap_or_default()
    };
    for (launch, reference) in taken.iter_mut().zip(&references) {
        if launch.kernel == reference.kernel {
            launch.compare(reference);
        }
    }
    let text = if json != 0 {
        serde_json::to_string(&taken).unwrap_or_default()
    } else {
        taken
            .iter()
            .map(Profile::table)
            .collect::<Vec<_>>()
            .join("\n")
    };
    CString::new(text).map_or(std::ptr::null_mut(), CString::into_raw)
}

/// The picture of the first launch profiled since the last [`cpuDeviceProfileTake`]
/// ([`crate::picture`]): RGB bytes, `width` x `height`, rows top to bottom; null if none.
/// Free it with [`cpuDeviceFreeBytes`] and its length. Not a driver call.
///
/// # Safety
/// `width` and `height` must be valid for one write each.
#[no_mangle]
pub unsafe extern "C" fn cpuDeviceProfilePicture(
    width: *mut c_uint,
    height: *mut c_uint,
) -> *mut u8 {
    let drawn = match state().profiles.lock() {
        Ok(profiles) => profiles
            .as_ref()
            .and_then(|p| p.first())
            .map(|p| crate::picture::render(p.grid, p.block, &p.per_warp)),
        Err(_) => None,
    };
    let Some((w, h, pixels)) = drawn else {
        return std::ptr::null_mut();
    };
    // SAFETY: the caller's pointers.
    if unsafe { put(width, w) } != SUCCESS || unsafe { put(height, h) } != SUCCESS {
        return std::ptr::null_mut();
    }
    Box::into_raw(pixels.into_boxed_slice()).cast::<u8>()
}

/// The picture of the first launch profiled since the last [`cpuDeviceProfileTake`], laid
/// out by the lab ([`crate::picture::render_at`]): `width` x `height` RGB bytes, rows top to
/// bottom, where `places` (`len` of them) says which pixel each thread stands for; null if
/// no launch was profiled. Free it with [`cpuDeviceFreeBytes`] and its length,
/// `width * height * 3`. Not a driver call.
///
/// # Safety
/// `places` must be valid for `len` reads (or null with `len` 0).
#[no_mangle]
pub unsafe extern "C" fn cpuDeviceProfilePictureAt(
    width: c_uint,
    height: c_uint,
    places: *const u32,
    len: usize,
) -> *mut u8 {
    let places = if places.is_null() || len == 0 {
        &[][..]
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(places, len) }
    };
    let drawn = match state().profiles.lock() {
        Ok(profiles) => profiles.as_ref().and_then(|p| p.first()).map(|p| {
            crate::picture::render_at(width, height, p.grid, p.block, &p.per_warp, places)
        }),
        Err(_) => None,
    };
    drawn.map_or(std::ptr::null_mut(), |pixels| {
        Box::into_raw(pixels.into_boxed_slice()).cast::<u8>()
    })
}

/// Free the bytes [`cpuDeviceProfilePicture`] or [`cpuDeviceProfilePictureAt`] returned,
/// `len` of them.
///
/// # Safety
/// `bytes` must be null or what that call returned, with its length, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cpuDeviceFreeBytes(bytes: *mut u8, len: usize) {
    if !bytes.is_null() {
        // SAFETY: the caller's promise: a boxed slice of `len` bytes this library made.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(bytes, len)) });
    }
}

/// Free a string [`cpuDeviceProfileTake`] returned.
///
/// # Safety
/// `text` must be null or a pointer that call returned, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cpuDeviceFree(text: *mut c_char) {
    if !text.is_null() {
        // SAFETY: the caller's promise: a CString this library made.
        drop(unsafe { CString::from_raw(text) });
    }
}

/// The error for a launch that faulted, as a GPU gives it: a trap is an illegal
/// instruction, a failed assert an assert (its report on stderr first, as the GPU's
/// driver prints it), anything else an illegal address.
fn launch_failed(kernel: &str, fault: &exec::Fault) -> CuResult {
    let code = match &fault.kind {
        FaultKind::Address => ILLEGAL_ADDRESS,
        FaultKind::Trap => ILLEGAL_INSTRUCTION,
        FaultKind::Deadline => LAUNCH_TIMEOUT,
        FaultKind::Assert { report } => {
            let mut err = std::io::stderr().lock();
            // A report that cannot be written is lost, as the GPU's would be.
            let _ = err.write_all(report.as_bytes()).and_then(|()| err.flush());
            ASSERT
        }
    };
    fail(
        code,
        format!(
            "the CPU device stopped kernel `{kernel}` at block ({}, {}, {}), thread ({}, {}, {}): {}",
            fault.block[0], fault.block[1], fault.block[2],
            fault.thread[0], fault.thread[1], fault.thread[2],
            fault.message
        ),
    )
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSizeWithFlags(
    min_grid_size: *mut c_int,
    block_size: *mut c_int,
    _func: *mut c_void,
    _b2d: *mut c_void,
    _dynamic_smem: usize,
    limit: c_int,
    _flags: c_uint,
) -> CuResult {
    guarded(|| {
        // An H100's answer for a kernel of few registers: the largest block allowed.
        let size = if limit > 0 { limit.min(1024) } else { 1024 };
        // SAFETY: the caller's pointers.
        unsafe {
            put(min_grid_size, 132 * (2048 / size));
            put(block_size, size)
        }
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    num_blocks: *mut c_int,
    _func: *mut c_void,
    block_size: c_int,
    _dynamic_smem: usize,
    _flags: c_uint,
) -> CuResult {
    guarded(|| {
        // SAFETY: the caller's pointer.
        unsafe { put(num_blocks, (2048 / block_size.max(1)).clamp(1, 32)) }
    })
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuFuncGetAttribute(
    pi: *mut c_int,
    attrib: c_int,
    hfunc: *mut c_void,
) -> CuResult {
    guarded(|| {
        if hfunc.is_null() {
            return INVALID_HANDLE;
        }
        // SAFETY: a handle this library made.
        let handle = unsafe { &*hfunc.cast::<FunctionHandle>() };
        let function = &handle.module.functions[handle.index];
        let value = match attrib {
            0 => 1024,                                // max threads per block
            1 => handle.module.shared_bytes as c_int, // static shared bytes
            3 => function.local_bytes as c_int,       // local bytes per thread
            // Registers per thread: ptxas's count where the lab gave it, else a guess.
            4 => registers_of(&function.name)
                .map_or((function.regs as c_int).clamp(16, 255), |r| r as c_int),
            5 | 6 => 90, // PTX and binary versions
            _ => 0,
        };
        // SAFETY: the caller's pointer.
        unsafe { put(pi, value) }
    })
}

/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`, the one attribute a kernel sets: how
/// much dynamic shared memory its launches may ask for, up to 227 KiB with the static.
///
/// # Safety
/// A driver call: `hfunc` from `cuModuleGetFunction`.
#[no_mangle]
pub unsafe extern "C" fn cuFuncSetAttribute(
    hfunc: *mut c_void,
    attrib: c_int,
    value: c_int,
) -> CuResult {
    guarded(|| {
        if hfunc.is_null() {
            return INVALID_HANDLE;
        }
        // SAFETY: a handle this library made.
        let handle = unsafe { &*hfunc.cast::<FunctionHandle>() };
        let function = &handle.module.functions[handle.index];
        let most = MAX_SHARED_OPT_IN - exec::static_shared(&handle.module, function);
        match (attrib, u64::try_from(value)) {
            (MAX_DYNAMIC_SHARED_ATTRIBUTE, Ok(bytes)) if bytes <= most => {
                handle
                    .max_dynamic_shared
                    .store(bytes as u32, Ordering::Relaxed);
                SUCCESS
            }
            (MAX_DYNAMIC_SHARED_ATTRIBUTE, _) => fail(
                INVALID_VALUE,
                format!(
                    "`{}` may have at most {most} bytes of dynamic shared memory (227 KiB less its {} static), not {value}",
                    function.name,
                    exec::static_shared(&handle.module, function)
                ),
            ),
            _ => fail(
                INVALID_VALUE,
                format!("the CPU device sets no function attribute {attrib} (only the dynamic shared memory size, 8)"),
            ),
        }
    })
}

#[no_mangle]
pub extern "C" fn cuStreamSynchronize(_stream: *mut c_void) -> CuResult {
    guarded(|| {
        flush_printf();
        SUCCESS
    })
}

#[no_mangle]
pub extern "C" fn cuStreamWaitEvent(
    _stream: *mut c_void,
    _event: *mut c_void,
    _flags: c_uint,
) -> CuResult {
    guarded(|| SUCCESS)
}

/// # Safety
/// A driver call: pointers as the CUDA driver API documents them.
#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(ph_event: *mut *mut c_void, _flags: c_uint) -> CuResult {
    guarded(|| {
        let event = Box::new(Event {
            at: Mutex::new(Instant::now()),
        });
        // SAFETY: the caller's pointer.
        unsafe { put(ph_event, Box::into_raw(event).cast()) }
    })
}

/// # Safety
/// A driver call: `event` from `cuEventCreate`.
#[no_mangle]
pub unsafe extern "C" fn cuEventRecord(event: *mut c_void, _stream: *mut c_void) -> CuResult {
    guarded(|| {
        if event.is_null() {
            return INVALID_HANDLE;
        }
        // SAFETY: a handle this library made.
        let event = unsafe { &*event.cast::<Event>() };
        if let Ok(mut at) = event.at.lock() {
            *at = Instant::now();
        }
        SUCCESS
    })
}

#[no_mangle]
pub extern "C" fn cuEventSynchronize(_event: *mut c_void) -> CuResult {
    guarded(|| {
        flush_printf();
        SUCCESS
    })
}

/// # Safety
/// A driver call: events from `cuEventCreate`.
#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut f32,
    start: *mut c_void,
    end: *mut c_void,
) -> CuResult {
    guarded(|| {
        if start.is_null() || end.is_null() {
            return INVALID_HANDLE;
        }
        // SAFETY: handles this library made.
        let (start, end) = unsafe { (&*start.cast::<Event>(), &*end.cast::<Event>()) };
        let (Ok(a), Ok(b)) = (start.at.lock(), end.at.lock()) else {
            return INVALID_HANDLE;
        };
        let elapsed = b.saturating_duration_since(*a).as_secs_f64() * 1e3;
        // SAFETY: the caller's pointer.
        unsafe { put(ms, elapsed as f32) }
    })
}

/// # Safety
/// A driver call: `event` from `cuEventCreate`, destroyed once.
#[no_mangle]
pub unsafe extern "C" fn cuEventDestroy_v2(event: *mut c_void) -> CuResult {
    guarded(|| {
        if event.is_null() {
            return INVALID_HANDLE;
        }
        // SAFETY: made by Box::into_raw in cuEventCreate, destroyed once.
        drop(unsafe { Box::from_raw(event.cast::<Event>()) });
        SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_is_an_error_code_and_a_line_not_an_unwind_into_c() {
        let code = guarded(|| panic!("an invariant broke"));
        assert_eq!(code, UNKNOWN);
        let mut text = std::ptr::null();
        // SAFETY: a pointer to write the message's address to.
        unsafe { cuGetErrorString(code, &mut text) };
        // SAFETY: the message, NUL-terminated.
        let said = unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned();
        assert!(
            said.contains("(an invariant broke): a bug of the CPU device"),
            "{said}"
        );
    }
}
