//! `--emulate --profile`: the CPU device counts what each launch does and predicts its time
//! on an H100 (the `cpu-device` crate's `counts`, `model` and `profile`); this side starts
//! the counting, tells the CPU device each kernel's registers (from NVRTC's cubin for the
//! H100, the one thing the PTX it runs does not say), and takes the profiles for the lab's
//! report.

use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use crate::output::Output;
use crate::{Error, Result};

/// The CPU device's own calls beside the driver's (`cpu_device::driver`).
const START: &[u8] = b"cpuDeviceProfileStart";
const SET_REGISTERS: &[u8] = b"cpuDeviceSetRegisters";
const TAKE: &[u8] = b"cpuDeviceProfileTake";
const FREE: &[u8] = b"cpuDeviceFree";
const PICTURE: &[u8] = b"cpuDeviceProfilePicture";
const PICTURE_AT: &[u8] = b"cpuDeviceProfilePictureAt";
const FREE_BYTES: &[u8] = b"cpuDeviceFreeBytes";

/// Where `--profile-png` draws the first launch's warps: opened when the lab starts (a path
/// that cannot be written fails before the work), written when it reports.
static DRAW_TO: Mutex<Option<Output>> = Mutex::new(None);

/// Draw the first profiled launch to `path` when the lab reports ([`draw`]).
pub(crate) fn draw_to(path: &Path) -> Result<()> {
    let output = Output::create(path)?;
    if let Ok(mut slot) = DRAW_TO.lock() {
        *slot = Some(output);
    }
    Ok(())
}

/// A picture laid out by the lab ([`place`]): its size, and the pixel of each thread.
struct Layout {
    width: u32,
    height: u32,
    places: Vec<u32>,
}

/// The lab's layout for the picture, if it gave one; else the launch's grid lays it out.
static LAYOUT: Mutex<Option<Layout>> = Mutex::new(None);

/// Whether `--profile-png` draws a picture: a lab that lays the picture out itself works
/// out its places ([`place`]) only then.
pub fn drawing() -> bool {
    DRAW_TO.lock().is_ok_and(|slot| slot.is_some())
}

/// Draw the first launch's threads on a `width` x `height` picture, thread `k` at pixel
/// `places[k]` (`y * width + x`; `u32::MAX` for none), instead of where its grid puts them:
/// for a kernel whose threads are not the output's pixels (lab05's samples, drawn where
/// their points lie). A list longer than the launch's threads goes round them again (a
/// grid-stride loop's later turns); several threads on a pixel give the average of their
/// warps' colours. The CPU device's `picture::render_at` draws it.
pub fn place(width: u32, height: u32, places: Vec<u32>) {
    if let Ok(mut slot) = LAYOUT.lock() {
        *slot = Some(Layout {
            width,
            height,
            places,
        });
    }
}

/// With `--profile-png`: the picture of the first launch profiled (the CPU device's
/// `picture`), laid out by its grid or by the lab ([`place`]), as a PNG where
/// `--profile-png` said; nothing otherwise.
pub fn draw() -> Result<()> {
    let Some(mut output) = DRAW_TO.lock().ok().and_then(|mut slot| slot.take()) else {
        return Ok(());
    };
    let library = crate::gpu::cpu_device_library().ok_or_else(|| {
        Error::Usage("--profile-png draws on the CPU device: add --emulate".to_string())
    })?;
    let layout = LAYOUT.lock().ok().and_then(|mut slot| slot.take());
    // SAFETY: the CPU device's functions of these names, with their signatures.
    let (picture, picture_at, free) = unsafe {
        (
            library
                .get::<unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> *mut u8>(PICTURE)
                .map_err(too_old)?,
            library
                .get::<unsafe extern "C" fn(c_uint, c_uint, *const u32, usize) -> *mut u8>(
                    PICTURE_AT,
                )
                .map_err(too_old)?,
            library
                .get::<unsafe extern "C" fn(*mut u8, usize)>(FREE_BYTES)
                .map_err(too_old)?,
        )
    };
    let (mut width, mut height) = (0, 0);
    let drawn = match &layout {
        Some(layout) => {
            (width, height) = (layout.width, layout.height);
            let places = &layout.places;
            // SAFETY: `places` is valid for its length during the call.
            unsafe { picture_at(width, height, places.as_ptr(), places.len()) }
        }
        // SAFETY: two valid places for the sizes.
        None => unsafe { picture(&mut width, &mut height) },
    };
    if drawn.is_null() {
        return Err(Error::Usage(
            "--profile-png: no kernel was launched, so there is no picture to draw".to_string(),
        ));
    }
    let len = width as usize * height as usize * 3;
    // SAFETY: the CPU device's `len` bytes, copied before they are freed, once.
    let pixels = unsafe { std::slice::from_raw_parts(drawn, len) }.to_vec();
    // SAFETY: as returned, with its length.
    unsafe { free(drawn, len) };
    use image::codecs::png::PngEncoder;
    use image::{ExtendedColorType, ImageEncoder};
    let path = output.path().to_path_buf();
    let mut writer = std::io::BufWriter::new(&mut output);
    PngEncoder::new(&mut writer)
        .write_image(&pixels, width, height, ExtendedColorType::Rgb8)
        .map_err(|e| match e {
            image::ImageError::IoError(e) => e,
            other => std::io::Error::other(other),
        })
        .and_then(|()| writer.flush())
        .map_err(|e| Error::output(&path, e))?;
    drop(writer);
    output.commit()
}

/// Start counting every launch on the CPU device `library`.
pub(crate) fn start(library: &libloading::Library) -> Result<()> {
    // SAFETY: the CPU device's function of this name takes nothing and returns nothing.
    let start = unsafe { library.get::<extern "C" fn()>(START) }.map_err(too_old)?;
    start();
    Ok(())
}

/// Tell the CPU device how many registers a thread of each kernel in `cubin` has.
pub(crate) fn set_registers(library: &libloading::Library, cubin: &[u8]) -> Result<()> {
    // SAFETY: the CPU device's function of this name, with its signature.
    let set = unsafe { library.get::<unsafe extern "C" fn(*const c_char, c_uint)>(SET_REGISTERS) }
        .map_err(too_old)?;
    for (kernel, registers) in registers(cubin) {
        let Ok(name) = CString::new(kernel) else {
            continue;
        };
        // SAFETY: a NUL-terminated name, read during the call only.
        unsafe { set(name.as_ptr(), registers) };
    }
    Ok(())
}

/// The reference solution's profiles (`cargo xtask model --record-reference`): a JSON
/// object of labs, each of argument lists, each the profiles of its launches.
const REFERENCE: &str = include_str!("../reference-profiles.json");

/// The profiles of `lab`'s launches since the last call: JSON (an array, one object a
/// launch) or tables; none when the CPU device is not loaded or not counting. Each launch is
/// set against the reference solution's at the same arguments, where those are recorded;
/// `size` is the lab's width and height, for arguments that leave them to their defaults.
pub fn take(lab: &str, size: (u32, u32), json: bool) -> Option<String> {
    let library = crate::gpu::cpu_device_library()?;
    // SAFETY: the CPU device's functions of these names, with their signatures.
    let (take, free) = unsafe {
        (
            library
                .get::<unsafe extern "C" fn(c_int, *const c_char) -> *mut c_char>(TAKE)
                .ok()?,
            library
                .get::<unsafe extern "C" fn(*mut c_char)>(FREE)
                .ok()?,
        )
    };
    let arguments = arguments(std::env::args().skip(1));
    let (reference, recorded) = reference(lab, &keys(&arguments, size));
    let reference = reference.and_then(|r| CString::new(r).ok());
    let pointer = reference.as_ref().map_or(std::ptr::null(), |r| r.as_ptr());
    // SAFETY: `pointer` is null or a NUL-terminated string that outlives the call.
    let text = unsafe { take(c_int::from(json), pointer) };
    if text.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string the CPU device made, freed by it below.
    let owned = unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: returned by `take`, freed once.
    unsafe { free(text) };
    if reference.is_none() && !json && !owned.is_empty() {
        let shown: Vec<String> = recorded.iter().take(4).map(|a| format!("`{a}`")).collect();
        let more = if recorded.len() > shown.len() {
            ", ..."
        } else {
            ""
        };
        return Some(format!(
            "{owned}\n  no reference solution is recorded at these arguments{}",
            if shown.is_empty() {
                String::new()
            } else {
                format!(" (it is at {}{more})", shown.join(", "))
            }
        ));
    }
    Some(owned)
}

/// The keys a run's `arguments` may be recorded under: as given, and, where they do not
/// start with the size (a Mandelbrot lab's width and height are its first arguments), with
/// the size the lab ran at in front (`lab04` alone is `lab04 1024 1024`).
fn keys(arguments: &str, (width, height): (u32, u32)) -> Vec<String> {
    let sized = arguments
        .split(' ')
        .next()
        .is_none_or(|first| first.parse::<u32>().is_err());
    let mut keys = vec![arguments.to_string()];
    if sized {
        keys.push(
            format!("{width} {height} {arguments}")
                .trim_end()
                .to_string(),
        );
    }
    keys
}

/// The reference's profiles of `lab` at the first of `keys` recorded (JSON), if one is, and
/// the argument lists that are ("(defaults)" for none).
fn reference(lab: &str, keys: &[String]) -> (Option<String>, Vec<String>) {
    let all: serde_json::Value = serde_json::from_str(REFERENCE).unwrap_or_default();
    let Some(runs) = all.get(lab).and_then(|l| l.as_object()) else {
        return (None, Vec::new());
    };
    let recorded = runs
        .keys()
        .map(|k| {
            if k.is_empty() {
                "(defaults)".to_string()
            } else {
                k.clone()
            }
        })
        .collect();
    let found = keys.iter().find_map(|key| runs.get(key));
    (found.map(|r| r.to_string()), recorded)
}

/// A lab's arguments as the reference is keyed by them: what it computes, without where it
/// writes, whether it prints JSON, runs on the CPU device or profiles, or which kernel file
/// it compiles (`--kernel`: yours, set against the reference's).
pub fn arguments(args: impl Iterator<Item = String>) -> String {
    let mut kept = Vec::new();
    let mut skip_value = false;
    for arg in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        match arg.as_str() {
            "-o" | "--output" | "--raw" | "--kernel" => skip_value = true,
            "--json" | "--emulate" | "--profile" => {}
            a if ["--output=", "--raw=", "--kernel="]
                .iter()
                .any(|p| a.starts_with(p)) => {}
            a if a.starts_with("-o") && !a.starts_with("--") => {}
            _ => kept.push(arg),
        }
    }
    kept.join(" ")
}

fn too_old(e: libloading::Error) -> Error {
    Error::NoGpu(format!(
        "the CPU device cannot profile ({e}): rebuild it with `cargo build --release -p cpu-device`"
    ))
}

/// Each kernel's registers a thread in a cubin (an ELF file), as ptxas recorded them:
/// `EIATTR_REGCOUNT` (0x2f) attributes in its `.nv.info` sections, each a kernel's symbol
/// and its count (what `cuobjdump --dump-resource-usage` prints as `REG`). A file that is
/// not such an ELF gives none.
pub fn registers(cubin: &[u8]) -> Vec<(String, u32)> {
    let bytes = |at: usize, n: usize| cubin.get(at..at.checked_add(n)?);
    let u16_at = |at| Some(u16::from_le_bytes(bytes(at, 2)?.try_into().ok()?) as usize);
    let u32_at = |at| Some(u32::from_le_bytes(bytes(at, 4)?.try_into().ok()?));
    let u64_at = |at| usize::try_from(u64::from_le_bytes(bytes(at, 8)?.try_into().ok()?)).ok();
    let c_string = |at: usize| -> Option<&[u8]> { cubin.get(at..)?.split(|&b| b == 0).next() };
    let found = || -> Option<Vec<(String, u32)>> {
        // 64-bit little-endian ELF only (every cubin NVRTC makes).
        if bytes(0, 6)? != b"\x7fELF\x02\x01" {
            return None;
        }
        let (table, size, count, names) =
            (u64_at(0x28)?, u16_at(0x3A)?, u16_at(0x3C)?, u16_at(0x3E)?);
        // A section header: name, type, link, file offset and size.
        let section = |i: usize| -> Option<(u32, u32, usize, usize, usize)> {
            let at = table.checked_add(i.checked_mul(size)?)?;
            Some((
                u32_at(at)?,
                u32_at(at + 4)?,
                u32_at(at + 40)? as usize,
                u64_at(at + 24)?,
                u64_at(at + 32)?,
            ))
        };
        let names_at = section(names)?.3;
        let name_of =
            |i| -> Option<&[u8]> { c_string(names_at.checked_add(section(i)?.0 as usize)?) };
        // The symbol table (type 2) and its strings.
        let symbols = (0..count).find_map(|i| section(i).filter(|s| s.1 == 2))?;
        let strings = section(symbols.2)?.3;
        let symbol = |index: u32| -> Option<String> {
            let at = symbols.3.checked_add((index as usize).checked_mul(24)?)?;
            let name = c_string(strings.checked_add(u32_at(at)? as usize)?)?;
            Some(String::from_utf8_lossy(name).into_owned())
        };
        let mut out = Vec::new();
        for i in 0..count {
            if !name_of(i)?.starts_with(b".nv.info") {
                continue;
            }
            let (_, _, _, start, length) = section(i)?;
            let end = start.checked_add(length)?;
            let mut at = start;
            // Attributes: a format byte, an attribute byte, then two bytes of value, or for
            // format 4 (a sized value) the size and as many bytes.
            while at + 4 <= end {
                let (format, attribute) = (*cubin.get(at)?, *cubin.get(at + 1)?);
                let sized = if format == 4 { u16_at(at + 2)? } else { 0 };
                if format == 4 && attribute == 0x2f && sized == 8 {
                    out.push((symbol(u32_at(at + 4)?)?, u32_at(at + 8)?));
                }
                at += 4 + sized;
            }
        }
        Some(out)
    };
    found().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a lab writes and how it reports are not what it computes: the same key.
    #[test]
    fn arguments_key_what_is_computed() {
        let key = |line: &str| arguments(line.split_whitespace().map(String::from));
        assert_eq!(
            key("4096 4096 -o x.ppm --json --emulate --profile"),
            "4096 4096"
        );
        assert_eq!(
            key("--profile --emulate -ox.ppm 640 --block 8x8"),
            "640 --block 8x8"
        );
        assert_eq!(
            key("--backend gpu --raw r.bin --output=a.png --samples 9"),
            "--backend gpu --samples 9"
        );
        assert_eq!(key("-o out.ppm"), "");
        assert_eq!(key("1024 1024 --kernel mine.cu"), "1024 1024");
    }

    /// A run that leaves the size to its default is found under the size it ran at; one
    /// that gives it, or gives other flags first, as given (and with the size in front).
    #[test]
    fn a_default_size_is_keyed_by_the_size_run() {
        assert_eq!(keys("", (1024, 1024)), ["", "1024 1024"]);
        assert_eq!(keys("4096 4096", (4096, 4096)), ["4096 4096"]);
        assert_eq!(
            keys("--block 8x8", (1024, 1024)),
            ["--block 8x8", "1024 1024 --block 8x8"]
        );
    }

    /// Not an ELF, a truncated one: no registers, no panic.
    #[test]
    fn a_file_that_is_not_a_cubin_has_no_registers() {
        assert!(registers(b"").is_empty());
        assert!(registers(b"\x7fELF\x02\x01\0\0").is_empty());
        assert!(registers(&[0xFF; 4096]).is_empty());
    }
}
