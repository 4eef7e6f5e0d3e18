#!/bin/sh
# Writes digests.txt: the SHA-256 of the PPM file the given program (mandelbrot.c) writes for
# each case below. lab01's tests render the same cases and compare, on every machine.
#
#   sh lab01-cpu-baseline/reference/digests.sh
#
# Each case is WIDTH HEIGHT, then optionally CX CY SCALE (the default view is -0.6 0 4/WIDTH):
# odd, non-square and one-pixel sizes, the default view, a view off the real axis (no mirror
# rows), the period-2 bulb and a deep zoom.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${CC:-cc}" -O2 -ffp-contract=off "$here/mandelbrot.c" -lm -o "$work/mandelbrot"
{
    echo "# SHA-256 of the files mandelbrot.c writes; regenerate with reference/digests.sh."
    echo "# sha256 width height [cx cy scale]"
    while read -r width height view; do
        # shellcheck disable=SC2086 # the view is three words on purpose
        "$work/mandelbrot" "$width" "$height" "$work/out.ppm" $view 2>/dev/null
        sum=$(sha256sum "$work/out.ppm" | cut -d' ' -f1)
        echo "$sum $width $height${view:+ $view}"
    done <<CASES
1 1
2 3
7 5
64 48
333 517
1024 1024
640 480 -0.6 0.3 0.00625
301 199 -1.25 0.05 0.0025
256 192 -0.743643 0.131825 0.00001
CASES
} > "$here/digests.txt"
