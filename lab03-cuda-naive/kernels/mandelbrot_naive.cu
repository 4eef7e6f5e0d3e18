// lab03: the first GPU port of lab01's per-pixel loop, as literal as it gets.
//
// One block per image row, one thread per column: the launch mirrors the double loop of
// the CPU program (blockIdx.x is the row i, threadIdx.x the column j). The palette arrives
// as an ordinary pointer into global memory, and NVRTC compiles with its default options,
// which let it fuse a multiply and an add into one FMA instruction. An FMA rounds once
// where lab01 rounds twice, so some pixels come out differently: `cargo xtask verify`
// counts them, and lab04 makes every multiply and add round on its own again.

extern "C" __global__ void escape_colour_naive(unsigned char *image,
                                               const unsigned char *palette,
                                               int width, int height,
                                               double cx, double cy, double scale)
{
    // BEGIN SOLUTION
    // stub: // UNFINISHED: the kernel body: lab01's pixel loop for pixel (row blockIdx.x, column threadIdx.x)
    const int i = blockIdx.x;   // image row
    const int j = threadIdx.x;  // image column

    const double y = (i - height / 2) * scale + cy;
    const double x = (j - width / 2) * scale + cx;

    unsigned char iter = 0;
    double zx = hypot(x - 0.25, y);
    if (x < zx - 2 * zx * zx + 0.25) iter = 255;
    if ((x + 1) * (x + 1) + y * y < 1 / 16) iter = 255;  // 1/16 is integer 0, as in lab01

    double zy = 0, zx2 = 0, zy2 = 0;
    zx = 0;
    do {
        zy = 2 * zx * zy + y;
        zx = zx2 - zy2 + x;
        zx2 = zx * zx;
        zy2 = zy * zy;
    } while (iter++ < 255 && zx2 + zy2 < 4);

    // Rows go out in file order (bottom row first), so the host writes the image at once.
    unsigned char *px = image + 3 * ((size_t)(height - 1 - i) * width + j);
    if (iter == 0 || iter == 255) {
        px[0] = px[1] = px[2] = 0;
    } else {
        const unsigned char *colour = palette + 3 * (iter % 16);
        px[0] = colour[0];
        px[1] = colour[1];
        px[2] = colour[2];
    }
    // END SOLUTION
}
