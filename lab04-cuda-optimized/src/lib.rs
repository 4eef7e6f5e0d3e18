//! lab04's host-side plumbing, tested without a GPU: the kernel file and the options it is
//! compiled with, as data (`main.rs` compiles it for the GPU it runs on, the tests with
//! NVRTC for fixed architectures), and the chunks the image comes back in. The row plan and
//! the near-set box, shared with lab02, are in `shared::plan`.

use std::ops::Range;

use shared::nvrtc::KernelFile;

// BEGIN SOLUTION
// stub: /// NVRTC's options: which make every pixel equal lab01's, and which make it fast?
// stub: ///
/// `--use_fast_math` speeds up single-precision functions but also turns on fused
/// multiply-adds; `--fmad=false`, after it, turns them off again. One FMA rounds once where
/// lab01 rounds twice, and that last bit is enough to change some pixels (lab03 shows how
/// many). The kernel computes in double precision, which fast math leaves alone.
///
// END SOLUTION
/// The two shortcuts the command line can switch are `-D` options: the period-2 bulb early
/// exit (on by default) and the exact periodicity check (off by default).
pub fn kernel_file(period2_exit: bool, periodicity_check: bool) -> KernelFile {
    let mut kernel = KernelFile::new(
        "mandelbrot.cu",
        include_str!("../kernels/mandelbrot.cu"),
        // BEGIN SOLUTION
        // stub: &[],
        &["--use_fast_math", "--fmad=false"],
        // END SOLUTION
    );
    if !period2_exit {
        kernel = kernel.with_option("-DPERIOD2_EXIT=0");
    }
    if periodicity_check {
        kernel = kernel.with_option("-DPERIODICITY_CHECK=1");
    }
    kernel
}

/// Bytes per chunk of the copy back. Small enough that a few pinned buffers cost little to
/// allocate (page-locking 805 MB at once takes about 0.4 s), large enough to copy at full speed.
pub const CHUNK_BYTES: usize = 8 << 20;

/// How the image comes back: equal chunks of `size` bytes. A device-to-host copy fills its
/// whole destination buffer, so every copy moves one whole chunk: the image on the device is
/// padded to a whole number of chunks, and only the image's own bytes are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunks {
    /// Bytes per chunk.
    pub size: usize,
    /// The image's own bytes.
    pub image_bytes: usize,
}

impl Chunks {
    pub fn new(image_bytes: usize) -> Chunks {
        Chunks {
            size: image_bytes.clamp(1, CHUNK_BYTES),
            image_bytes,
        }
    }

    /// How many chunks cover the image.
    pub fn count(&self) -> usize {
        self.image_bytes.div_ceil(self.size)
    }

    /// The image's size on the device: a whole number of chunks.
    pub fn padded_bytes(&self) -> usize {
        self.count() * self.size
    }

    /// The device bytes chunk `index` copies.
    pub fn range(&self, index: usize) -> Range<usize> {
        index * self.size..(index + 1) * self.size
    }

    /// How many bytes of chunk `index` belong to the image (the rest is padding).
    pub fn image_bytes_in(&self, index: usize) -> usize {
        self.image_bytes.min((index + 1) * self.size) - index * self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every image byte is written once, in order, and every copy stays inside the padding.
    #[test]
    fn chunks_cover_the_image_exactly_once() {
        let sizes = [
            1,
            3,
            3 * 7 * 5,
            CHUNK_BYTES - 1,
            CHUNK_BYTES,
            CHUNK_BYTES + 1,
        ];
        for image_bytes in sizes
            .into_iter()
            .chain([3 * 16384 * 16384, 3 * 65536 * 16384])
        {
            let chunks = Chunks::new(image_bytes);
            let mut written = 0;
            for index in 0..chunks.count() {
                let range = chunks.range(index);
                assert_eq!(range.start, written, "{image_bytes}: chunk {index} starts");
                assert_eq!(range.len(), chunks.size);
                assert!(range.end <= chunks.padded_bytes());
                let own = chunks.image_bytes_in(index);
                assert!(
                    own > 0 && own <= chunks.size,
                    "{image_bytes}: chunk {index}"
                );
                written += own;
            }
            assert_eq!(written, image_bytes);
            assert!(chunks.padded_bytes() - image_bytes < chunks.size);
            assert!(chunks.size <= CHUNK_BYTES);
        }
    }

    #[test]
    fn a_small_image_is_one_chunk_without_padding() {
        let chunks = Chunks::new(3 * 333 * 517);
        assert_eq!((chunks.count(), chunks.padded_bytes()), (1, 3 * 333 * 517));
        assert_eq!(Chunks::new(CHUNK_BYTES + 1).padded_bytes(), 2 * CHUNK_BYTES);
    }
}
