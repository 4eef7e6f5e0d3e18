//! Kernels the grader plants in a GPU lab's host code. The image points of lab03 and lab04
//! come from this workspace's host code running the student's kernel, so they prove the
//! kernel; the student's host code (launch, arguments, NVRTC options, copy back) is proven
//! by running it with a kernel of the lab's signature that the grader writes anew in each
//! grade (a key and a constant drawn by the grade): it must write exactly what this
//! workspace's host code writes with that kernel. A host that computes the image another way
//! (on the CPU, from an embedded file) cannot know that kernel's output.

use crate::rubric::Size;

/// The planted kernel of `lab`, for the grade's `key`, and the arguments both hosts run it
/// with; `None` for a lab without one. The image is as wide as `extent`, the widest image the
/// lab is graded at, and a few rows taller than the tallest (drawn from the key): a launch
/// that covers only part of a graded image (a cap on its columns, a grid that stops short)
/// writes other bytes than this workspace's host code.
pub fn kernel(lab: &str, key: u64, extent: Size) -> Option<(String, Vec<String>)> {
    let template = match lab {
        "lab03" => include_str!("planted/lab03.cu"),
        "lab04" => include_str!("planted/lab04.cu"),
        _ => return None,
    };
    // Not wider than the widest graded image: lab03 takes at most 1024 columns, which its
    // rubric grades. 1 to 16 rows more, odd or even by the key: the default view is
    // symmetric about the real axis (lab04's mirror rows) and crosses the near-set box.
    let width = extent.width;
    let height = match extent.height + 1 + (key >> 8) as u32 % 16 {
        // Never square: a launch with its grid and block swapped (lab03) covers a square alike.
        square if square == width => square + 1,
        height => height,
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

    const EXTENT: Size = Size {
        width: 1024,
        height: 1024,
    };

    #[test]
    fn each_gpu_lab_with_host_code_has_a_planted_kernel_that_changes_with_the_key() {
        for lab in ["lab03", "lab04"] {
            let (a, _) = kernel(lab, 1, EXTENT).expect("a planted kernel");
            let (b, _) = kernel(lab, 0x1234_5678_9abc, EXTENT).expect("a planted kernel");
            assert_ne!(a, b, "{lab}");
            assert!(a.starts_with("#define PLANTED_KEY 0x00000001u\n"), "{a}");
        }
        assert!(kernel("lab05", 1, EXTENT).is_none());
    }

    /// The planted image covers every column and row of the largest graded image, and is
    /// never square (where a swapped grid and block would cover it alike).
    #[test]
    fn the_planted_image_covers_the_largest_graded_image() {
        let mut heights = std::collections::BTreeSet::new();
        for key in (0..1 << 12).map(|k: u64| k.wrapping_mul(0x9e37_79b9_7f4a_7c15)) {
            for extent in [
                EXTENT,
                Size {
                    width: 4097,
                    height: 2001,
                },
            ] {
                let (_, args) = kernel("lab03", key, extent).expect("a planted kernel");
                let width: u32 = args[0].parse().expect("a width");
                let height: u32 = args[1].parse().expect("a height");
                assert_eq!(width, extent.width, "{key:#x}");
                assert!(
                    (extent.height + 1..=extent.height + 16).contains(&height),
                    "{args:?}"
                );
                assert_ne!(width, height, "a square image for key {key:#x}");
                heights.insert(height - extent.height);
            }
        }
        assert!(heights.len() >= 16, "drawn from the key: {heights:?}");
    }

    /// The extent comes from the rubric: lab04's widest image is 4097 columns, its tallest
    /// 2001 rows; lab03's at most 1024 columns, the most its launch takes.
    #[test]
    fn the_rubric_gives_each_gpu_lab_its_largest_graded_image() {
        let rubric = crate::rubric::Rubric::load().expect("the rubric");
        let extent = |name| {
            let lab = xtask::labs::LABS
                .iter()
                .find(|lab| lab.name == name)
                .expect("a lab");
            rubric.image_extent(lab)
        };
        assert_eq!(
            extent("lab04"),
            Some(Size {
                width: 4097,
                height: 2001
            })
        );
        assert_eq!(
            extent("lab03"),
            Some(Size {
                width: 1024,
                height: 1024
            })
        );
        assert_eq!(extent("lab05"), None);
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
            let (source, _) = kernel(lab, 0xfeed_beef_cafe, EXTENT).expect("a planted kernel");
            let compile = |options: &[&str]| {
                shared::nvrtc::KernelFile {
                    name: "planted.cu",
                    source: source.clone().into(),
                    headers: Vec::new(),
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
