#!/usr/bin/env bash
# The CPU device beside lab02 (rayon) on the same work, on this machine's cores: the median of
# RUNS runs each, the two alternated so that a busy moment hits both. Prints one Markdown
# table of whole-process wall times and the labs' own compute phase.
#
#   cargo build --release && shared/cpu-device/bench.sh [BIN_DIR] [RUNS]
#
# NVRTC must load (see the README's "Run a kernel without a GPU").
set -euo pipefail
bin=${1:-target/release}
runs=${2:-5}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# median FILE: the middle line of a file of numbers.
median() { sort -g "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# time_one NAME PHASE CMD...: one run; appends wall ms and the JSON's PHASE ms to NAME's files.
time_one() {
    local name=$1 phase=$2
    shift 2
    local start end
    start=$(date +%s%N)
    "$@" --json >"$scratch/out.json" 2>/dev/null
    end=$(date +%s%N)
    echo $(((end - start) / 1000000)) >>"$scratch/$name.wall"
    grep -o "\"$phase\":[0-9.]*" "$scratch/out.json" | cut -d: -f2 >>"$scratch/$name.phase"
}

# case NAME CPU_PHASE DEVICE_PHASE CPU_CMD -- DEVICE_CMD: one line of the table.
case_row() {
    local name=$1 cpu_phase=$2 dev_phase=$3
    shift 3
    local cpu=() dev=()
    while [[ $1 != -- ]]; do cpu+=("$1"); shift; done
    shift
    dev=("$@")
    for _ in $(seq "$runs"); do
        time_one "$name-cpu" "$cpu_phase" "${cpu[@]}"
        time_one "$name-dev" "$dev_phase" "${dev[@]}"
    done
    local cw dw cp dp
    cw=$(median "$scratch/$name-cpu.wall"); dw=$(median "$scratch/$name-dev.wall")
    cp=$(median "$scratch/$name-cpu.phase"); dp=$(median "$scratch/$name-dev.phase")
    printf '| %s | %s | %s | %.1fx | %.0f | %.0f | %.1fx |\n' "$name" "$cw" "$dw" \
        "$(echo "$dw / $cw" | bc -l)" "$cp" "$dp" "$(echo "$dp / $cp" | bc -l)"
}

o=$scratch/image.ppm
zoom=(3001 2001 --cx -0.74364 --cy 0.13182 --scale 1e-9)
echo "$(nproc) cores, median of $runs runs"
echo
echo "| case | CPU wall ms | CPU device wall ms | ratio | CPU phase ms | CPU device phase ms | ratio |"
echo "|---|---|---|---|---|---|---|"
case_row "lab04 1024x1024" compute kernel "$bin/lab02" -o "$o" -- "$bin/lab04" --emulate -o "$o"
case_row "lab04 3001x2001 zoom" compute kernel "$bin/lab02" "${zoom[@]}" -o "$o" \
    -- "$bin/lab04" --emulate "${zoom[@]}" -o "$o"
canvas=(--samples 4000000 --seed 7 -o "$scratch/canvas.png")
case_row "lab05 grader's canvas" total total "$bin/lab05" --backend cpu "${canvas[@]}" \
    -- "$bin/lab05" --backend gpu --emulate "${canvas[@]}"
sums=(--n 1000003 --reps 1)
case_row "lab06 grader's length" total total "$bin/lab06" --cpu-only "${sums[@]}" \
    -- "$bin/lab06" --gpu-only --emulate "${sums[@]}"
