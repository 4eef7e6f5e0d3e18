// A submission for trying the grader on the GPU machine: lab04's kernel written as lab03's
// naive one. The same signature as the solution's (the host passes these arguments), but
// lab03's body: every pixel iterated in full, no early exit, every pixel stored, black ones
// too. Put over lab04-cuda-optimized/kernels/mandelbrot.cu of a `handout --solved` copy, it
// keeps the solution's launch and options, so its images stay identical and only the speed
// check should lose points.

__constant__ unsigned char palette[16][3];

extern "C" __global__ void escape_colour(unsigned char *image,
                                         const double *xs, const double *ys,
                                         const int *rows, const int *mirrors, int row_count,
                                         int width, int height,
                                         int near_j0, int near_j1, int near_i0, int near_i1)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (j >= width || r >= row_count) return;
    const int i = rows[r];
    const int m = mirrors[r];
    const double x = xs[j];
    const double y = ys[i];

    unsigned char iter = 0;
    double zx = hypot(x - 0.25, y);
    if (x < zx - 2 * zx * zx + 0.25) iter = 255;
    if ((x + 1) * (x + 1) + y * y < 1 / 16) iter = 255;

    double zy = 0, zx2 = 0, zy2 = 0;
    zx = 0;
    do {
        zy = 2 * zx * zy + y;
        zx = zx2 - zy2 + x;
        zx2 = zx * zx;
        zy2 = zy * zy;
    } while (iter++ < 255 && zx2 + zy2 < 4);

    unsigned char colour[3] = {0, 0, 0};
    if (iter != 0 && iter != 255) {
        colour[0] = palette[iter % 16][0];
        colour[1] = palette[iter % 16][1];
        colour[2] = palette[iter % 16][2];
    }
    unsigned char *px = image + 3 * ((size_t)(height - 1 - i) * width + j);
    px[0] = colour[0];
    px[1] = colour[1];
    px[2] = colour[2];
    if (m >= 0) {
        unsigned char *mirror = image + 3 * ((size_t)(height - 1 - m) * width + j);
        mirror[0] = colour[0];
        mirror[1] = colour[1];
        mirror[2] = colour[2];
    }
}
