//! Kernel by kernel, the CPU device's outcome against the GPU's, and the summary: identical,
//! differing (the first differing buffer and element, both values), refused by the CPU
//! device (grouped by the reason in its line), failed on one side, failed on both.
//!
//! A kernel marked `order_dependent` (atomics whose order is open: a slot taken with
//! `atomicAdd`, a list built in whatever order threads arrive) has each buffer compared as a
//! multiset of its elements: equal after sorting, it counts as identical ("same elements,
//! in another order"). Its float elements may also differ in rounding alone (a sum of
//! floats by `atomicAdd` rounds as its order falls, on the GPU from one run to the next):
//! within a relative 1e-5 of each other, that is its own verdict, said apart and not failing
//! the crosscheck; further apart, it differs.

use std::collections::BTreeMap;

use anyhow::Result;

use super::manifest::{Elem, Kernel};
use super::record::{Outcome, Status, Stored};

/// What a side did: its device and each kernel's outcome, by index.
#[derive(Debug, Clone)]
pub struct Side {
    pub device: String,
    pub arch: String,
    pub outcomes: Vec<Outcome>,
}

/// One kernel's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every buffer and the printf output alike (`reordered`: only as multisets).
    Identical { reordered: bool },
    /// Both ran; the line says where they first differ.
    Differs(String),
    /// An order-dependent kernel's float elements differ in rounding alone (the line says
    /// where first).
    Rounding(String),
    /// The CPU device refused the kernel where the GPU ran it.
    CpuRefused,
    /// It faulted, timed out or crashed on the CPU device where the GPU ran it.
    CpuFailed,
    /// It ran on the CPU device but not on the GPU.
    GpuFailed,
    /// Neither ran it.
    BothFailed,
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Identical { reordered: false } => "identical",
            Verdict::Identical { reordered: true } => "identical up to order",
            Verdict::Differs(_) => "differing",
            Verdict::Rounding(_) => "differing in rounding where atomics' order is open",
            Verdict::CpuRefused => "refused by the CPU device",
            Verdict::CpuFailed => "failed on the CPU device only",
            Verdict::GpuFailed => "failed on the GPU",
            Verdict::BothFailed => "failed on both",
        }
    }

    /// Whether this verdict fails the crosscheck: a wrong answer, or a refusal (or failure)
    /// of the CPU device where the GPU ran the kernel.
    pub fn fails(&self) -> bool {
        matches!(
            self,
            Verdict::Differs(_) | Verdict::CpuRefused | Verdict::CpuFailed
        )
    }
}

/// Where a side's stored bytes are read from.
pub trait Bytes {
    fn bytes(&self, stored: &Stored) -> Result<Vec<u8>>;
}

/// The verdict on one kernel.
pub fn verdict(
    kernel: &Kernel,
    cpu: &Outcome,
    gpu: &Outcome,
    cpu_bytes: &dyn Bytes,
    gpu_bytes: &dyn Bytes,
) -> Result<Verdict> {
    let (cpu_ok, gpu_ok) = (cpu.status == Status::Ok, gpu.status == Status::Ok);
    Ok(match (cpu_ok, gpu_ok) {
        (false, false) => Verdict::BothFailed,
        (true, false) => Verdict::GpuFailed,
        (false, true) if cpu.status == Status::Refused => Verdict::CpuRefused,
        (false, true) => Verdict::CpuFailed,
        (true, true) => compare_outputs(kernel, cpu, gpu, cpu_bytes, gpu_bytes)?,
    })
}

fn compare_outputs(
    kernel: &Kernel,
    cpu: &Outcome,
    gpu: &Outcome,
    cpu_bytes: &dyn Bytes,
    gpu_bytes: &dyn Bytes,
) -> Result<Verdict> {
    let mut reordered = false;
    let mut rounding = None;
    for ((arg, buffer), (c, g)) in kernel.buffers().zip(cpu.buffers.iter().zip(&gpu.buffers)) {
        if c.digest == g.digest {
            continue;
        }
        let (c, g) = (cpu_bytes.bytes(c)?, gpu_bytes.bytes(g)?);
        let size = buffer.elem.size();
        if kernel.order_dependent && sorted(&c, size) == sorted(&g, size) {
            reordered = true;
            continue;
        }
        if kernel.order_dependent && rounded_alike(buffer.elem, &c, &g) {
            rounding.get_or_insert_with(|| first_difference(arg, buffer.elem, &c, &g));
            continue;
        }
        let mut line = first_difference(arg, buffer.elem, &c, &g);
        if kernel.order_dependent {
            line.push_str("; order-dependent, and the elements differ beyond their order");
        }
        return Ok(Verdict::Differs(line));
    }
    if cpu.buffers.len() != gpu.buffers.len() {
        return Ok(Verdict::Differs(format!(
            "{} buffers came back from the CPU device, {} from the GPU",
            cpu.buffers.len(),
            gpu.buffers.len()
        )));
    }
    let printed = |outcome: &Outcome, side: &dyn Bytes| -> Result<Vec<u8>> {
        outcome
            .printf
            .as_ref()
            .map_or(Ok(Vec::new()), |s| side.bytes(s))
    };
    let same_printf = match (&cpu.printf, &gpu.printf) {
        (Some(c), Some(g)) => c.digest == g.digest,
        (None, None) => true,
        _ => false,
    };
    if !same_printf {
        let (c, g) = (printed(cpu, cpu_bytes)?, printed(gpu, gpu_bytes)?);
        if let Some(line) = printf_difference(&c, &g) {
            return Ok(Verdict::Differs(line));
        }
    }
    Ok(match rounding {
        Some(line) => Verdict::Rounding(line),
        None => Verdict::Identical { reordered },
    })
}

/// Whether two float buffers differ in rounding alone: element by element within a relative
/// 1e-5 of the larger (NaNs and infinities where both have them, never otherwise).
fn rounded_alike(elem: Elem, cpu: &[u8], gpu: &[u8]) -> bool {
    let values = |bytes: &[u8]| -> Option<Vec<f64>> {
        match elem {
            Elem::F32 => Some(
                bytes
                    .chunks_exact(4)
                    .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                    .collect(),
            ),
            Elem::F64 => Some(
                bytes
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                    .collect(),
            ),
            _ => None,
        }
    };
    let (Some(c), Some(g)) = (values(cpu), values(gpu)) else {
        return false;
    };
    c.len() == g.len()
        && c.iter().zip(&g).all(|(&c, &g)| {
            c.to_bits() == g.to_bits()
                || (c.is_finite() && g.is_finite() && (c - g).abs() <= 1e-5 * c.abs().max(g.abs()))
        })
}

/// The elements of `bytes`, `size` bytes each, sorted.
fn sorted(bytes: &[u8], size: usize) -> Vec<&[u8]> {
    let mut elements: Vec<&[u8]> = bytes.chunks(size).collect();
    elements.sort_unstable();
    elements
}

/// The first element where `cpu` and `gpu` differ, both values, and how many differ.
pub fn first_difference(arg: usize, elem: Elem, cpu: &[u8], gpu: &[u8]) -> String {
    let size = elem.size();
    let count = cpu.len().max(gpu.len()) / size;
    let pairs = || cpu.chunks(size).zip(gpu.chunks(size));
    let differing = pairs().filter(|(c, g)| c != g).count();
    match pairs().position(|(c, g)| c != g) {
        Some(i) => format!(
            "argument {arg} ({}), element {i} of {count} ({differing} differ): CPU device {}, GPU {}",
            elem.name(),
            elem.show(&cpu[i * size..(i + 1) * size]),
            elem.show(&gpu[i * size..(i + 1) * size])
        ),
        None => format!(
            "argument {arg}: {} bytes from the CPU device, {} from the GPU",
            cpu.len(),
            gpu.len()
        ),
    }
}

/// Where the printf outputs differ, taken as sets of lines (the GPU prints warps' lines in
/// an order of its own), or None where they are the same lines.
pub fn printf_difference(cpu: &[u8], gpu: &[u8]) -> Option<String> {
    let lines = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort_unstable();
        lines
    };
    let (c, g) = (lines(cpu), lines(gpu));
    if c == g {
        return None;
    }
    let shown = |line: Option<&String>| match line {
        Some(line) => format!("{:?}", clip(line, 60)),
        None => "nothing".to_string(),
    };
    let at = (0..c.len().max(g.len()))
        .find(|&i| c.get(i) != g.get(i))
        .unwrap_or(0);
    Some(format!(
        "printf: {} lines from the CPU device, {} from the GPU; sorted, line {at}: CPU device {}, GPU {}",
        c.len(),
        g.len(),
        shown(c.get(at)),
        shown(g.get(at))
    ))
}

fn clip(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// The reason in a refusal's line, to group refusals by: the instruction the CPU device
/// does not know, or its words without the place (kernel, file, line) and the numbers.
pub fn reason(line: &str) -> String {
    // "CUDA_ERROR_INVALID_PTX: kernel (file.cu line 3; PTX line 40): what"
    let mut what = line;
    if let Some((code, rest)) = what.split_once(": ") {
        if code.starts_with("CUDA_ERROR_") {
            what = rest;
        }
    }
    if let Some(at) = what.find("PTX line ") {
        if let Some((_, rest)) = what[at..].split_once("): ") {
            what = rest;
        }
    }
    // The loader's own: "line 12: ...".
    if let Some(rest) = what.strip_prefix("line ") {
        if let Some((number, rest)) = rest.split_once(": ") {
            if number.chars().all(|c| c.is_ascii_digit()) {
                what = rest;
            }
        }
    }
    if let Some(at) = what.find("does not know the instruction `") {
        let rest = &what[at + "does not know the instruction `".len()..];
        if let Some(end) = rest.find('`') {
            return format!("instruction `{}`", &rest[..end]);
        }
    }
    // The reason, without what follows it (what the CPU device does run, say).
    let what = what.split("; ").next().unwrap_or(what);
    // Numbers outside backquotes (sizes, lines) become N; a name in backquotes stays.
    let mut out = String::new();
    let (mut digits, mut quoted) = (false, false);
    for c in what.chars() {
        if c.is_ascii_digit() && !quoted {
            if !digits {
                out.push('N');
            }
            digits = true;
        } else {
            digits = false;
            quoted ^= c == '`';
            out.push(c);
        }
    }
    clip(out.trim(), 110)
}

/// Kernels' names grouped by a key, most first.
pub fn grouped<'a>(
    items: impl IntoIterator<Item = (String, &'a str)>,
) -> Vec<(String, Vec<&'a str>)> {
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (key, name) in items {
        groups.entry(key).or_default().push(name);
    }
    let mut groups: Vec<(String, Vec<&str>)> = groups.into_iter().collect();
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    groups
}

/// Up to `most` names, and how many more.
pub fn some_names(names: &[&str], most: usize) -> String {
    let mut shown = names
        .iter()
        .take(most)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > most {
        shown.push_str(&format!(", and {} more", names.len() - most));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crosscheck::manifest::Suite;

    struct Memory(Vec<Vec<u8>>);

    impl Bytes for Memory {
        fn bytes(&self, stored: &Stored) -> Result<Vec<u8>> {
            Ok(self.0[stored.offset as usize].clone())
        }
    }

    fn kernel(order_dependent: bool) -> Kernel {
        let text = format!(
            "[[kernel]]\nname = \"k\"\nfile = \"k.cu\"\ngrid = 1\nblock = 1\n\
             order_dependent = {order_dependent}\n\
             args = [{{ i32 = 1 }}, {{ bytes = 8, type = \"f32\" }}]\n"
        );
        Suite::parse(std::path::Path::new("."), &text)
            .unwrap()
            .kernels
            .remove(0)
    }

    fn ran(bytes: &[u8], slot: u64, printf: Option<(&[u8], u64)>) -> Outcome {
        let stored = |arg, bytes: &[u8], offset| Stored {
            arg,
            offset,
            len: bytes.len() as u64,
            digest: crate::crosscheck::record::digest(bytes),
        };
        Outcome {
            buffers: vec![stored(1, bytes, slot)],
            printf: printf.map(|(p, slot)| stored(0, p, slot)),
            ..Outcome::failed(0, Status::Ok, "")
        }
    }

    fn floats(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn the_first_differing_element_is_named_with_both_values() {
        let (a, b) = (floats(&[1.0, 2.0]), floats(&[1.0, 2.5]));
        let memory = Memory(vec![a.clone(), b.clone()]);
        let verdict = verdict(
            &kernel(false),
            &ran(&a, 0, None),
            &ran(&b, 1, None),
            &memory,
            &memory,
        )
        .unwrap();
        assert_eq!(
            verdict,
            Verdict::Differs(
                "argument 1 (f32), element 1 of 2 (1 differ): CPU device 0x40000000 (2e0), \
                 GPU 0x40200000 (2.5e0)"
                    .into()
            )
        );
        assert!(verdict.fails());
        let same = super::verdict(
            &kernel(false),
            &ran(&a, 0, None),
            &ran(&a, 0, None),
            &memory,
            &memory,
        );
        assert_eq!(same.unwrap(), Verdict::Identical { reordered: false });
    }

    /// A sum of floats by atomics, a unit in the last place apart: the rounding of an
    /// order-dependent kernel, its own verdict that does not fail; the same kernel not marked,
    /// or one a percent apart, differs.
    #[test]
    fn an_order_dependent_float_sum_may_differ_in_rounding_alone() {
        let a = floats(&[131.75229, 2.0]);
        let ulp = floats(&[f32::from_bits(131.75229f32.to_bits() + 3), 2.0]);
        let far = floats(&[133.0, 2.0]);
        let memory = Memory(vec![a.clone(), ulp.clone(), far.clone()]);
        let judge = |order_dependent, slot, bytes: &[u8]| {
            verdict(
                &kernel(order_dependent),
                &ran(&a, 0, None),
                &ran(bytes, slot, None),
                &memory,
                &memory,
            )
            .unwrap()
        };
        let rounding = judge(true, 1, &ulp);
        assert!(matches!(rounding, Verdict::Rounding(_)), "{rounding:?}");
        assert!(!rounding.fails());
        assert!(matches!(judge(false, 1, &ulp), Verdict::Differs(_)));
        assert!(matches!(judge(true, 2, &far), Verdict::Differs(_)));
    }

    #[test]
    fn an_order_dependent_kernel_compares_as_a_multiset() {
        let (a, b) = (floats(&[1.0, 2.0]), floats(&[2.0, 1.0]));
        let memory = Memory(vec![a.clone(), b.clone(), floats(&[2.0, 3.0])]);
        let v = verdict(
            &kernel(true),
            &ran(&a, 0, None),
            &ran(&b, 1, None),
            &memory,
            &memory,
        );
        assert_eq!(v.unwrap(), Verdict::Identical { reordered: true });
        let v = verdict(
            &kernel(false),
            &ran(&a, 0, None),
            &ran(&b, 1, None),
            &memory,
            &memory,
        );
        assert!(v.unwrap().fails());
        let c = floats(&[2.0, 3.0]);
        let v = verdict(
            &kernel(true),
            &ran(&a, 0, None),
            &ran(&c, 2, None),
            &memory,
            &memory,
        );
        let Verdict::Differs(line) = v.unwrap() else {
            panic!("differs")
        };
        assert!(line.ends_with("differ beyond their order"), "{line}");
    }

    #[test]
    fn printf_lines_compare_in_any_order() {
        let a = floats(&[1.0, 2.0]);
        let memory = Memory(vec![
            a.clone(),
            b"x\ny\n".to_vec(),
            b"y\nx\n".to_vec(),
            b"y\n".to_vec(),
        ]);
        let v = verdict(
            &kernel(false),
            &ran(&a, 0, Some((b"x\ny\n", 1))),
            &ran(&a, 0, Some((b"y\nx\n", 2))),
            &memory,
            &memory,
        );
        assert_eq!(v.unwrap(), Verdict::Identical { reordered: false });
        let v = verdict(
            &kernel(false),
            &ran(&a, 0, Some((b"x\ny\n", 1))),
            &ran(&a, 0, Some((b"y\n", 3))),
            &memory,
            &memory,
        );
        let Verdict::Differs(line) = v.unwrap() else {
            panic!("differs")
        };
        assert!(
            line.starts_with("printf: 2 lines from the CPU device, 1 from the GPU"),
            "{line}"
        );
    }

    #[test]
    fn failures_on_either_side_are_told_apart() {
        let memory = Memory(vec![]);
        let ok = Outcome::failed(0, Status::Ok, "");
        let refused = Outcome::failed(0, Status::Refused, "x");
        let fault = Outcome::failed(0, Status::Fault, "x");
        let k = kernel(false);
        let v = |c: &Outcome, g: &Outcome| verdict(&k, c, g, &memory, &memory).unwrap();
        assert_eq!(v(&refused, &ok), Verdict::CpuRefused);
        assert_eq!(v(&fault, &ok), Verdict::CpuFailed);
        assert_eq!(v(&ok, &fault), Verdict::GpuFailed);
        assert_eq!(v(&refused, &refused), Verdict::BothFailed);
        assert!(!Verdict::GpuFailed.fails() && !Verdict::BothFailed.fails());
    }

    #[test]
    fn refusals_group_by_instruction_or_by_words_without_places() {
        assert_eq!(
            reason("CUDA_ERROR_INVALID_PTX: k (k.cu line 3; PTX line 40): the CPU device does not know the instruction `cvt.rn.satfinite.e4m3x2.f32`, so it refuses to run the kernel rather than guess"),
            "instruction `cvt.rn.satfinite.e4m3x2.f32`"
        );
        assert_eq!(
            reason("CUDA_ERROR_INVALID_PTX: k (PTX line 12): the special register `%clock64` is not known to the CPU device"),
            "the special register `%clock64` is not known to the CPU device"
        );
        assert_eq!(
            reason("CUDA_ERROR_INVALID_PTX: line 7: `.alias` at 12 is not known to the CPU device"),
            "`.alias` at N is not known to the CPU device"
        );
        let groups = grouped([
            ("a".to_string(), "k1"),
            ("b".to_string(), "k2"),
            ("b".to_string(), "k3"),
        ]);
        assert_eq!(groups[0], ("b".to_string(), vec!["k2", "k3"]));
        assert_eq!(some_names(&["a", "b", "c"], 2), "a, b, and 1 more");
    }
}
