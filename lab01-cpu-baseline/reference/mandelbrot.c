/* The given program: the sequential Mandelbrot in C, as the coursework handed it out.
 *
 * It computes every pixel's escape counter, colours the image in a second pass over the row
 * pointers, and writes a binary PPM, rows from the last to the first. lab01 is its Rust
 * retelling, and the tests hold lab01 to it byte for byte (see digests.txt beside it).
 *
 *   cc -O2 -ffp-contract=off mandelbrot.c -lm -o mandelbrot
 *   ./mandelbrot WIDTH HEIGHT [OUTPUT [CX CY SCALE]]
 *
 * OUTPUT defaults to cpu-mandelbrot.ppm; the view defaults to cx = -0.6, cy = 0, and
 * scale = 4 / WIDTH. -ffp-contract=off keeps the compiler from fusing a multiply and an add
 * (GCC does by default where the CPU has FMA): every operation is rounded on its own, as in
 * lab01. Built with -fopenmp as well, the compute loop runs on every core (lab02's
 * counterpart, for timing); the compute time is printed on stderr.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef unsigned char uchar;
typedef struct { uchar r, g, b; } rgb_t;

rgb_t **row_ptrs = 0;
rgb_t *img_data = 0;

int width, height;
double cx = -0.6, cy = 0, scale;
const uchar max_iter = 255;

void alloc_image(void)
{
    img_data = malloc(sizeof(rgb_t) * width * height);
    row_ptrs = malloc(sizeof(rgb_t *) * height);
    if (!img_data || !row_ptrs) {
        fprintf(stderr, "mandelbrot: not enough memory for a %d x %d image\n", width, height);
        exit(1);
    }
    for (int i = 0; i < height; i++)
        row_ptrs[i] = img_data + (size_t)i * width;
}

void calc_mandel(void)
{
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < height; i++) {
        rgb_t *px = row_ptrs[i];
        const double y = (i - height / 2) * scale + cy;
        for (int j = 0; j < width; j++, px++) {
            const double x = (j - width / 2) * scale + cx;
            uchar iter = 0;
            double zx, zy, zx2, zy2;

            zx = hypot(x - .25, y);
            if (x < zx - 2 * zx * zx + .25) iter = max_iter;
            if ((x + 1) * (x + 1) + y * y < 1 / 16) iter = max_iter;

            zx = zy = zx2 = zy2 = 0;
            do {
                zy = 2 * zx * zy + y;
                zx = zx2 - zy2 + x;
                zx2 = zx * zx;
                zy2 = zy * zy;
            } while (iter++ < max_iter && zx2 + zy2 < 4);

            px->r = iter;
            px->g = iter;
            px->b = iter;
        }
    }
}

void map_colour(rgb_t * const px)
{
    const uchar num_shades = 16;
    const rgb_t mapping[16] =
    { { 66, 30, 15 }, { 25, 7, 26 }, { 9, 1, 47 }, { 4, 4, 73 }, { 0, 7, 100 },
      { 12, 44, 138 }, { 24, 82, 177 }, { 57, 125, 209 }, { 134, 181, 229 }, { 211, 236, 248 },
      { 241, 233, 191 }, { 248, 201, 95 }, { 255, 170, 0 }, { 204, 128, 0 }, { 153, 87, 0 },
      { 106, 52, 3 } };

    if (px->r == max_iter || px->r == 0) {
        px->r = 0;
        px->g = 0;
        px->b = 0;
    } else {
        *px = mapping[px->r % num_shades];
    }
}

void screen_dump(const char *filename)
{
    FILE *fp = fopen(filename, "wb");
    if (!fp) {
        perror(filename);
        exit(1);
    }
    fprintf(fp, "P6\n%d %d\n255\n", width, height);
    for (int i = height - 1; i >= 0; i--)
        fwrite(row_ptrs[i], 1, width * sizeof(rgb_t), fp);
    if (fclose(fp) != 0) {
        perror(filename);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const char *filename = "cpu-mandelbrot.ppm";
    if (argc != 3 && argc != 4 && argc != 7) {
        fprintf(stderr, "usage: %s WIDTH HEIGHT [OUTPUT [CX CY SCALE]]\n", argv[0]);
        return 2;
    }
    width = atoi(argv[1]);
    height = atoi(argv[2]);
    if (width < 1 || height < 1) {
        fprintf(stderr, "mandelbrot: the width and height must be positive whole numbers\n");
        return 2;
    }
    scale = 4.0 / width;
    if (argc >= 4)
        filename = argv[3];
    if (argc == 7) {
        cx = atof(argv[4]);
        cy = atof(argv[5]);
        scale = atof(argv[6]);
    }

    alloc_image();

    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    calc_mandel();
    clock_gettime(CLOCK_MONOTONIC, &end);
    fprintf(stderr, "compute: %.1f ms\n",
            (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6);

    for (int i = 0; i < height; i++) {
        rgb_t *px = row_ptrs[i];
        for (int j = 0; j < width; j++, px++)
            map_colour(px);
    }

    screen_dump(filename);
    free(row_ptrs);
    free(img_data);
    return 0;
}
