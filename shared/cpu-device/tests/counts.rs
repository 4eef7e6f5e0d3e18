//! The counts `--profile` reports, on a kernel small enough to count by hand: a warp that
//! splits on odd and even lanes and joins again, issuing each side's instructions for half
//! its lanes, then one store of 32 consecutive words.

use cpu_device::counts::{Class, WarpCount};
use cpu_device::exec::{self, Launch, Options};
use cpu_device::load::load;
use cpu_device::memory::Memory;
use cpu_device::profile::profile;

const SPLIT: &str = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry split(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra EVEN;
    add.u32 %r3, %r1, 100;
    bra.uni DONE;
EVEN:
    add.u32 %r3, %r1, 200;
DONE:
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"#;

/// One block of 48 threads: a full warp and a warp of 16 lanes. Each issues 5 instructions
/// together, the odd lanes' 2 and the even lanes' 1 apart, then 4 together: 12. The full
/// warp's lanes: 5 x 32 + 3 x 16 + 4 x 32 = 336; the half warp's, 168. The full warp's
/// store is 128 consecutive bytes (4 sectors), the half warp's 64 (2).
#[test]
fn a_split_warp_counts_each_side_for_its_own_lanes() {
    let memory = Memory::default();
    let module = load(SPLIT, &memory).expect("the PTX loads");
    let out = memory.alloc(48 * 4, "out").expect("allocated");
    let params = out.address.to_le_bytes();
    let snapshot = memory.snapshot().expect("a snapshot");
    let launch = Launch {
        module: &module,
        function: module.function("split").expect("the kernel"),
        grid: [1, 1, 1],
        block: [48, 1, 1],
        dynamic_shared: 0,
        params: &params,
        memory: &snapshot,
    };
    let options = Options {
        count: true,
        ..Options::default()
    };
    let ran = exec::run_with(&launch, 2, &options);
    assert!(ran.result.is_ok());
    let counts = ran.counts.expect("counted");
    assert_eq!(
        counts.warps,
        [
            WarpCount {
                block: 0,
                warp: 0,
                issued: 12,
                active: 336
            },
            WarpCount {
                block: 0,
                warp: 1,
                issued: 12,
                active: 168
            },
        ]
    );
    let p = profile(
        &module,
        "split",
        ([1, 1, 1], [48, 1, 1]),
        0,
        Some(16),
        &counts,
    );
    assert_eq!(p.issued, 24);
    assert_eq!(p.global.requests, 2);
    assert_eq!(p.global.sectors, 6);
    assert_eq!(p.global.bytes_written, 48 * 4);
    let branches = p
        .classes
        .iter()
        .find(|c| c.class == Class::Branch.name())
        .expect("branches");
    // `@p bra` (both warps, all lanes), `bra.uni` (the odd lanes), `ret` (all).
    assert_eq!(
        (branches.issued, branches.active_lanes),
        (6, 32 + 16 + 16 + 8 + 32 + 16)
    );
    // Set against itself, no class differs; against a reference that branches half as
    // often, the branches are what differs most.
    let mut same = p.clone();
    same.compare(&p);
    let against = same.against_reference.expect("compared");
    assert_eq!((&against.class, against.time_ratio), (&None, 1.0));
    assert_eq!(
        against.differs(),
        "as many instructions of each class as the reference"
    );
    let mut reference = p.clone();
    for class in &mut reference.classes {
        if class.class == Class::Branch.name() {
            class.issued /= 2;
        }
    }
    let mut more = p.clone();
    more.compare(&reference);
    let against = more.against_reference.expect("compared");
    assert_eq!(against.differs(), "2.00x the branch instructions");
    // Not counted, nothing is.
    let plain = exec::run_with(&launch, 2, &Options::default());
    assert!(plain.counts.is_none());
}
