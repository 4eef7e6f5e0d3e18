//! Kernels the grader plants in a GPU lab's host code. The image points of lab03 and lab04
//! come from this workspace's host code running the student's kernel, so they prove the
//! kernel; the student's host code (launch, arguments, NVRTC options, copy back) is proven
//! by running it with a kernel of the lab's signature that the grader writes anew in each
//! grade (a key and a constant drawn by the grade): it must write exactly what this
//! workspace's host code writes with that kernel. A host that computes the image another way
//! (on the CPU, from an embedded file) cannot know that kernel's output.

use crate::rubric::Size;

/// The planted kernel of `lab`, for the grade's `key`, and the size of the image both hosts
/// run it at (the default view); `None` for a lab without one. The image is as wide as `extent`, the widest image the
/// lab is graded at, and a few rows taller than the tallest (drawn from the key): a launch
/// that covers only part of a graded image (a cap on its columns, a grid that stops short)
/// writes other bytes than this workspace's host code.
pub fn kernel(lab: &str, key: u64, extent: Size) -> Option<(String, Size)> {
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
    Some((source, Size { width, height }))
}

/// lab06: the header the grader plants beside the student's `reduce.cu`, and the name of the
/// function its `add` calls. That function is kept out of line (`__noinline__`) and named
/// for the grade (`extern "C"`, so the PTX names it as written), so the PTX shows every
/// kernel that reaches it, and how ([`super::ptx`]); it adds, so every sum stays exact.
pub fn lab06_header(key: u64) -> (String, String) {
    let name = format!("grade_add_{key:016x}");
    let header = format!(
        "// The grader's add.cuh: add() calls a function of this grade's own name.\n\
         #pragma once\n\
         extern \"C\" __device__ __noinline__ float {name}(float acc, float x) {{ return acc + x; }}\n\
         __device__ float add(float acc, float x) {{ return {name}(acc, x); }}\n"
    );
    (header, name)
}

/// lab06's CPU harness: its files, planted into the student's build under
/// [`LAB06_HARNESS_DIR`], which makes the binary [`LAB06_HARNESS`].
pub const LAB06_HARNESS: &str = "grade-lab06-variants";
pub const LAB06_HARNESS_DIR: &str = "lab06-generics-vs-virtual/src/bin/grade-lab06-variants";
pub const LAB06_HARNESS_FILES: [(&str, &str); 2] = [
    ("main.rs", include_str!("planted/lab06_variants.rs")),
    ("data.rs", include_str!("planted/lab06_data.rs")),
];

/// Where a grade builds: its workspace, target folder, vendored sources and time.
pub struct Build<'a> {
    pub jail: &'a crate::sandbox::Jail,
    pub work: &'a std::path::Path,
    pub target: &'a std::path::Path,
    pub vendor: &'a std::path::Path,
    pub limit: std::time::Duration,
}

/// Plant lab06's CPU harness in the student's built workspace and build it alone (the
/// student's `variants.rs` may not build beside the grader's `Combine`, which costs the
/// variants' checks, not the lab), into `bins`: the binary, or the compiler's first error as
/// `<harness>.error` for the checks to report. Err: the grader's own failure.
pub fn build_lab06_harness(build: &Build, bins: &std::path::Path) -> Result<(), String> {
    let dir = build.work.join(LAB06_HARNESS_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot plant lab06's harness: {e}"))?;
    for (name, text) in LAB06_HARNESS_FILES {
        std::fs::write(dir.join(name), text)
            .map_err(|e| format!("cannot plant lab06's harness: {e}"))?;
    }
    let lab = xtask::labs::find("lab06").map_err(|e| format!("{e:#}"))?;
    let built = super::compile::build_bin(
        build.jail,
        build.work,
        build.target,
        build.vendor,
        lab,
        LAB06_HARNESS,
        build.limit,
    );
    let copied = match built {
        Ok(()) => std::fs::copy(
            build.target.join("release").join(LAB06_HARNESS),
            bins.join(LAB06_HARNESS),
        )
        .map(drop),
        Err(super::fault::Fault::Student(error)) => {
            std::fs::write(bins.join(format!("{LAB06_HARNESS}.error")), error)
        }
        Err(super::fault::Fault::Grader(error)) => return Err(error),
    };
    copied.map_err(|e| format!("cannot keep lab06's harness: {e}"))
}

#[path = "planted/lab06_data.rs"]
mod lab06_data;

/// What lab06's harness is run with in one grade: the elements' seed and count, and the
/// grader's operation `acc + f(x)` as `f(1), f(2), f(3)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lab06Draw {
    pub seed: u64,
    pub n: u64,
    pub image: [u64; 3],
}

/// The permutations of 1, 2, 3 but the identity, one of which is the grade's `f`.
const PERMUTATIONS: [[u64; 3]; 5] = [[1, 3, 2], [2, 1, 3], [2, 3, 1], [3, 1, 2], [3, 2, 1]];

impl Lab06Draw {
    /// The draw for the grade's `key`: an odd length (so no multiple of the 16 lanes) of 3001
    /// to 302999 elements, and the first permutation from the key's on whose total differs
    /// from the plain total (a variant that adds by itself then gives a wrong sum); should
    /// every permutation give the plain total (equally many 1s, 2s and 3s), the next seed.
    pub fn new(key: u64) -> Lab06Draw {
        Lab06Draw::drawn(key, lab06_data::elements)
    }

    fn drawn(key: u64, elements: impl Fn(u64, usize) -> Vec<f32>) -> Lab06Draw {
        let n = 3001 + 2 * ((key >> 8) % 150_000);
        let mut seed = key;
        loop {
            let data = elements(seed, n as usize);
            let plain: u64 = data.iter().map(|&x| x as u64).sum();
            for i in 0..PERMUTATIONS.len() {
                let draw = Lab06Draw {
                    seed,
                    n,
                    image: PERMUTATIONS[(key as usize + i) % PERMUTATIONS.len()],
                };
                if draw.total_of(&data) != plain {
                    return draw;
                }
            }
            seed = seed.wrapping_add(1);
        }
    }

    /// The harness's arguments after the variant's function: `SEED N F1 F2 F3`.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![self.seed.to_string(), self.n.to_string()];
        args.extend(self.image.iter().map(u64::to_string));
        args
    }

    /// What a variant folding with `acc + f(x)` returns: the total of `f` over the elements.
    pub fn expected(&self) -> u64 {
        self.total_of(&lab06_data::elements(self.seed, self.n as usize))
    }

    fn total_of(&self, data: &[f32]) -> u64 {
        data.iter()
            .map(|&x| match x as usize {
                0 => 0,
                v => self.image[v - 1],
            })
            .sum()
    }
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
                let (_, size) = kernel("lab03", key, extent).expect("a planted kernel");
                let Size { width, height } = size;
                assert_eq!(width, extent.width, "{key:#x}");
                assert!(
                    (extent.height + 1..=extent.height + 16).contains(&height),
                    "{size:?}"
                );
                assert_ne!(width, height, "a square image for key {key:#x}");
                heights.insert(height - extent.height);
            }
        }
        assert!(heights.len() >= 16, "drawn from the key: {heights:?}");
    }

    /// The extent comes from the rubric: lab04's widest image is 4097 columns, its tallest
    /// 2001 rows; lab03's at most 1024 columns, the most its launch takes. On the CPU device,
    /// of the smaller work it grades: as wide (4097x3 is cheap there), less tall.
    #[test]
    fn the_rubric_gives_each_gpu_lab_its_largest_graded_image() {
        let rubric = crate::rubric::Rubric::load().expect("the rubric");
        let extent = |name, cpu_device| {
            let lab = xtask::labs::LABS
                .iter()
                .find(|lab| lab.name == name)
                .expect("a lab");
            rubric
                .image_extent(lab, cpu_device)
                .map(|size| (size.width, size.height))
        };
        assert_eq!(extent("lab04", false), Some((4097, 2001)));
        assert_eq!(extent("lab03", false), Some((1024, 1024)));
        assert_eq!(extent("lab04", true), Some((4097, 512)));
        assert_eq!(extent("lab03", true), Some((512, 512)));
        assert_eq!(extent("lab05", false), None);
    }

    /// Each planted kernel compiles with NVRTC, and its product-and-sum is fused by default
    /// and not under `--fmad=false`: a host whose options fuse writes other bits.
    #[test]
    #[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
    fn the_planted_kernels_compile_and_show_fused_multiply_adds() {
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

    #[test]
    fn lab06s_header_names_its_function_for_the_grade() {
        let (header, name) = lab06_header(0x0123_4567_89ab_cdef);
        assert_eq!(name, "grade_add_0123456789abcdef");
        assert!(header.contains("__noinline__ float grade_add_0123456789abcdef("));
        assert!(header.contains(
            "float add(float acc, float x) { return grade_add_0123456789abcdef(acc, x); }"
        ));
        assert_ne!(lab06_header(1).0, header);
    }

    /// The draw: an odd length in range, a permutation that is not the identity and moves the
    /// total, and the expected total is that of f over the very elements the harness makes.
    #[test]
    fn lab06s_draw_moves_the_total_and_changes_with_the_key() {
        let mut lengths = std::collections::BTreeSet::new();
        let mut images = std::collections::BTreeSet::new();
        for key in (0..64u64).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15)) {
            let draw = Lab06Draw::new(key);
            assert!(
                (3001..=302_999).contains(&draw.n) && draw.n % 2 == 1,
                "{draw:?}"
            );
            assert_ne!(draw.image, [1, 2, 3]);
            let data = lab06_data::elements(draw.seed, draw.n as usize);
            assert_eq!(data.len() as u64, draw.n);
            assert!(data.iter().all(|x| [0.0, 1.0, 2.0, 3.0].contains(x)));
            let plain: u64 = data.iter().map(|&x| x as u64).sum();
            let by_hand: u64 = data
                .iter()
                .map(|&x| [0, draw.image[0], draw.image[1], draw.image[2]][x as usize])
                .sum();
            assert_eq!(draw.expected(), by_hand);
            assert_ne!(by_hand, plain, "{draw:?}");
            assert!(by_hand < 1 << 24);
            assert_eq!(draw.args()[1], draw.n.to_string());
            lengths.insert(draw.n);
            images.insert(draw.image);
        }
        assert!(lengths.len() > 60 && images.len() == 5, "{images:?}");
    }

    /// Equally many 1s, 2s and 3s: no permutation moves the total, so the next seed is drawn.
    #[test]
    fn a_draw_whose_permutations_all_keep_the_plain_total_takes_the_next_seed() {
        let key = 77;
        let elements = |seed: u64, n: usize| match seed == key {
            true => [1.0, 2.0, 3.0].repeat(n / 3),
            false => lab06_data::elements(seed, n),
        };
        let draw = Lab06Draw::drawn(key, elements);
        assert_eq!(draw.seed, key + 1);
        assert_ne!(draw.expected(), {
            let data = lab06_data::elements(draw.seed, draw.n as usize);
            data.iter().map(|&x| x as u64).sum::<u64>()
        });
    }
}
