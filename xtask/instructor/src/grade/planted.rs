//! Kernels the grader plants in a GPU lab's host code. The image points of lab03 and lab04
//! come from this workspace's host code running the student's kernel, so they prove the
//! kernel; the student's host code (launch, arguments, NVRTC options, copy back) is proven
//! by running it with a kernel of the lab's signature that the grader writes anew in each
//! grade (a key and a constant drawn by the grade): it must write exactly what this
//! workspace's host code writes with that kernel. A host that computes the image another way
//! (on the CPU, from an embedded file) cannot know that kernel's output.

/// The planted kernel of `lab`, for the grade's `key`, and the arguments both hosts run it
/// with (a small image, its size drawn from the key too); `None` for a lab without one.
pub fn kernel(lab: &str, key: u64) -> Option<(String, Vec<String>)> {
    let template = match lab {
        "lab03" => include_str!("planted/lab03.cu"),
        "lab04" => include_str!("planted/lab04.cu"),
        _ => return None,
    };
    // Small enough to cost a fraction of a second on the CPU device; the default view, which
    // is symmetric about the real axis (lab04's mirror rows) and crosses the near-set box.
    let height = 21 + (key >> 8) % 48;
    // Never square: a launch with its grid and block swapped (lab03) covers a square alike.
    let width = match 33 + key % 64 {
        square if square == height => square + 1,
        width => width,
    };
    // Of the size of the products x * y in the default view, so that rounding the product
    // before the add (lab01's way) and fusing the two give different bits at most pixels.
    let add = 0.05 + ((key >> 16) % 100_000) as f64 / 1e6;
    let source = format!(
        "#define PLANTED_KEY 0x{:08x}u\n#define PLANTED_ADD {add:.17e}\n{template}",
        (key >> 32) as u32 ^ key as u32
    );
    Some((source, vec![width.to_string(), height.to_string()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gpu_lab_with_host_code_has_a_planted_kernel_that_changes_with_the_key() {
        for lab in ["lab03", "lab04"] {
            let (a, args) = kernel(lab, 1).expect("a planted kernel");
            let (b, _) = kernel(lab, 0x1234_5678_9abc).expect("a planted kernel");
            assert_ne!(a, b, "{lab}");
            assert!(a.starts_with("#define PLANTED_KEY 0x00000001u\n"), "{a}");
            let width: u32 = args[0].parse().expect("a width");
            assert!((33..=97).contains(&width), "{args:?}");
        }
        for key in (0..1 << 16).map(|k: u64| k.wrapping_mul(0x9e37_79b9_7f4a_7c15)) {
            let (_, args) = kernel("lab03", key).expect("a planted kernel");
            assert_ne!(args[0], args[1], "a square image for key {key:#x}");
        }
        assert!(kernel("lab05", 1).is_none());
    }

    /// Each planted kernel compiles with NVRTC (where it is found), and its product-and-sum
    /// is fused by default and not under `--fmad=false`: a host whose options fuse writes
    /// other bits.
    #[test]
    fn the_planted_kernels_compile_and_show_fused_multiply_adds() {
        if !shared::nvrtc::is_present() {
            shared::cli::eprint_line("NVRTC not found: the planted kernels were not compiled");
            return;
        }
        for lab in ["lab03", "lab04"] {
            let (source, _) = kernel(lab, 0xfeed_beef_cafe).expect("a planted kernel");
            let compile = |options: &[&str]| {
                shared::nvrtc::KernelFile {
                    name: "planted.cu",
                    source: source.clone().into(),
                    options: options.iter().map(|o| o.to_string()).collect(),
                }
                .ptx("compute_90")
                .unwrap_or_else(|e| panic!("{lab}'s planted kernel: {e}"))
            };
            assert!(compile(&[]).contains("fma.rn.f64"), "{lab}");
            assert!(!compile(&["--fmad=false"]).contains("fma.rn.f64"), "{lab}");
        }
    }
}
