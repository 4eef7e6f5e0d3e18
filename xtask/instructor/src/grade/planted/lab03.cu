// A kernel the grader plants in lab03's host code, in place of the student's (`--kernel`):
// lab03's signature and launch (one block per row, one thread per column), and a pixel that
// depends on every argument and on PLANTED_KEY and PLANTED_ADD, which the grader defines
// above this text, drawn anew in each grade. The student's binary must write exactly what
// this workspace's lab03 writes with it: then its launch, its arguments and its copy back
// run whatever kernel they are given, on the device, and no image was made another way.

__device__ unsigned int planted_mix(unsigned int h)
{
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

__device__ unsigned int planted_bits(double d)
{
    const unsigned long long b = (unsigned long long)__double_as_longlong(d);
    return (unsigned int)b ^ (unsigned int)(b >> 32);
}

extern "C" __global__ void escape_colour_naive(unsigned char *image,
                                               const unsigned char *palette,
                                               int width, int height,
                                               double cx, double cy, double scale)
{
    const int i = blockIdx.x;
    const int j = threadIdx.x;
    if (i >= height || j >= width) return;
    unsigned int h = planted_mix(PLANTED_KEY ^ (unsigned int)j);
    h = planted_mix(h ^ (unsigned int)i);
    h = planted_mix(h ^ (unsigned int)width ^ ((unsigned int)height << 16));
    h = planted_mix(h ^ planted_bits(cx));
    h = planted_mix(h ^ planted_bits(cy));
    h = planted_mix(h ^ planted_bits(scale));
    // A product and a sum of like size: the host's compile options decide whether they are
    // rounded once (fused) or twice, and this byte shows which.
    const double x = (j - width / 2) * scale + cx;
    const double y = (i - height / 2) * scale + cy;
    const unsigned int v = planted_bits(x * y + PLANTED_ADD);
    const unsigned char *colour = palette + 3 * (h % 16);
    unsigned char *px = image + 3 * ((size_t)(height - 1 - i) * width + j);
    px[0] = colour[0] ^ (unsigned char)(h >> 8);
    px[1] = colour[1] ^ (unsigned char)(h >> 16);
    px[2] = (unsigned char)(v ^ (v >> 8) ^ (v >> 16) ^ (v >> 24));
}
