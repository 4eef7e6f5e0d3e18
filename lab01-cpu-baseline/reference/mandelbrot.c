/* The compute loop of lab01, written in C as the original program was, for timing only:
 * `cargo xtask`-independent, no output file. It answers one question: is the Rust
 * reference as fast as the C it stands for?
 *
 *   gcc -O2 mandelbrot.c -lm -o mandelbrot && ./mandelbrot 4096 4096
 *   gcc -O2 -fopenmp mandelbrot.c -lm -o mandelbrot_omp && ./mandelbrot_omp 4096 4096
 *
 * The second line is the same loop with OpenMP over rows, dynamic schedule: lab02's
 * counterpart. It prints the compute time in milliseconds and a checksum of the counters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s WIDTH HEIGHT\n", argv[0]);
        return 2;
    }
    const int width = atoi(argv[1]), height = atoi(argv[2]);
    const unsigned char max_iter = 255;
    const double cx = -0.6, cy = 0.0, scale = 4.0 / width;
    unsigned char *counters = calloc((size_t)width * height, 1);
    if (width < 1 || height < 1 || !counters) {
        fprintf(stderr, "bad size\n");
        return 2;
    }

    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < height; i++) {
        const double y = (i - height / 2) * scale + cy;
        for (int j = 0; j < width; j++) {
            const double x = (j - width / 2) * scale + cx;
            unsigned char iter = 0;
            double zx = hypot(x - 0.25, y), zy, zx2, zy2;
            if (x < zx - 2 * zx * zx + 0.25) iter = max_iter;
            if ((x + 1) * (x + 1) + y * y < 1 / 16) iter = max_iter;
            zx = zy = zx2 = zy2 = 0;
            do {
                zy = 2 * zx * zy + y;
                zx = zx2 - zy2 + x;
                zx2 = zx * zx;
                zy2 = zy * zy;
            } while (iter++ < max_iter && zx2 + zy2 < 4);
            counters[(size_t)i * width + j] = iter;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);

    unsigned long sum = 0;
    for (size_t k = 0; k < (size_t)width * height; k++) sum += counters[k];
    printf("compute %.1f ms, checksum %lu\n",
           (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6, sum);
    free(counters);
    return 0;
}
