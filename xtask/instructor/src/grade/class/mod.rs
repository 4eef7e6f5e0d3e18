//! `cargo instructor grade-class DIR --out OUT`: every submission of a class, one row each.
//!
//! 1. Read DIR ([`entries`]): one submission per folder, zip or tarball, in the layouts of
//!    Gradescope's export and Classroom 50's download; a digest of each.
//! 2. Pass over the submissions already graded with the same content by the same grader
//!    (an interrupted class resumes where it stopped).
//! 3. Grade the others ([`one`]): each by this same binary, `grade SUBMISSION --gradescope
//!    FILE`, in a subprocess with a time limit, into `OUT/students/KEY/`; one submission per
//!    GPU at once ([`gpus`]), or as a Slurm job array (`--slurm`, [`super::slurm`]).
//! 4. Write the gradebook from every results.json ([`gradebook`]): `OUT/grades.csv` and
//!    `OUT/summary.md`.
//!
//! A submission that does not build, hangs or attacks costs its own row; the command fails
//! only when it cannot grade the class at all.

mod classroom50;
mod entries;
mod gpus;
mod gradebook;
mod gradescope;
mod one;
mod unpack;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::inert;
use super::slurm;
use super::Common;
use crate::rubric::Rubric;
use entries::Entry;
use gpus::{Gpus, Slot};
use one::Settings;
use shared::output::Output;

#[derive(clap::Args)]
pub struct ClassArgs {
    /// The class: every entry of DIR (a folder, a .zip or a tarball) is one submission, as
    /// Gradescope's "Export Submissions" or Classroom 50's `gh teacher download` lays them
    /// out. On a machine without Rust, give --prebuilt and folders made by `grade SUBMISSION
    /// --build-only` where Rust is (with --bin-dir from `cargo xtask dist`)
    #[arg(value_name = "DIR")]
    pub class: PathBuf,
    /// How DIR is laid out; `auto` reads it from DIR itself (its submission_metadata.yml,
    /// Classroom 50's scores.csv or its `_submissions_TIMESTAMP` name), never from inside a
    /// submission
    #[arg(long, value_enum, default_value_t)]
    pub layout: entries::Layout,
    /// DIR's entries are folders you made with `grade SUBMISSION --build-only` (for a
    /// machine without Rust): their binaries are graded as they are. Never for folders a
    /// student made: a folder is graded as pre-built only when you say so
    #[arg(long)]
    pub prebuilt: bool,
    /// Where the class's gradebook goes: grades.csv, summary.md, students/*/ (results.json,
    /// feedback.md); run again to resume
    #[arg(long, value_name = "OUT")]
    pub out: PathBuf,
    /// GPUs to grade on, one submission each at once: a number or all [default: all]
    #[arg(long, value_name = "N|all", conflicts_with = "slurm")]
    pub gpus: Option<Gpus>,
    /// Seconds one submission may take, building and every check together [default: what
    /// the rubric's limits add up to]
    #[arg(long, value_name = "SECONDS", value_parser = xtask::values::at_least_one("the submission time limit", 7 * 86_400))]
    pub submission_time_limit: Option<u64>,
    /// Grade on a Slurm cluster: one job-array task per submission (sbatch --wait), the
    /// gradebook gathered when the array ends; this binary, DIR and OUT must be on a file
    /// system every node shares
    #[arg(long)]
    pub slurm: bool,
    /// The Slurm partition to run the tasks in
    #[arg(long, value_name = "P", requires = "slurm")]
    pub partition: Option<String>,
    /// The Slurm generic resources each task asks for, e.g. gpu:1
    #[arg(long, value_name = "GRES", requires = "slurm")]
    pub gres: Option<String>,
    // The options each grade of the class is given, as `grade` takes them.
    #[command(flatten)]
    pub common: Common,
}

/// The plan of a Slurm array: what each task grades, and how.
#[derive(Serialize, Deserialize)]
struct Plan {
    settings: Settings,
    tasks: Vec<(Entry, String)>,
}

/// Grade a class: read its folder, grade what is not graded yet, write the gradebook.
pub fn run(args: ClassArgs) -> Result<()> {
    let (dir, out, forward) = (&args.class, &args.out, &args.common);
    let rubric = Rubric::load()?;
    let dir = std::fs::canonicalize(dir)
        .with_context(|| format!("cannot read the class folder {}", dir.display()))?;
    let (out, grades_csv, summary_md) = lay_out(&dir, out)?;

    let mut class = entries::discover(&dir, args.layout)?;
    for note in &class.notes {
        shared::cli::eprint_line(&inert::line(&format!("xtask: {note}")));
    }
    // The reference binaries (built now where no --bin-dir or dist gives them): the CPU
    // device beside them says what grades the GPU checks here.
    let bins = xtask::bins::Bins::locate(
        super::reference_dir(forward.bin_dir.as_deref())?,
        reference_labs(&rubric),
    )?;
    let (slots, where_, _protection) = if args.slurm {
        (
            Vec::new(),
            "a Slurm cluster (each grade says what graded its GPU checks)".to_string(),
            None,
        )
    } else {
        // A sandbox that cannot start fails every submission alike: say so once, now.
        let jail = crate::sandbox::Jail::detect(forward.unsandboxed)?;
        // Without Landlock, the class folder, OUT (every student's copy and results), the
        // workspace and the references are unreadable to every sandbox of the class until
        // its last grade ends (each grade protects its own paths too).
        let mut roots = vec![dir.clone(), out.clone()];
        roots.extend(xtask::bins::workspace());
        roots.extend(forward.bin_dir.clone());
        let protection = jail.protect(&roots)?;
        let slots = local_slots(&jail, args.gpus)?;
        let where_ = where_graded(&slots, &gpu_checks_here(forward, bins.dir()));
        (slots, where_, protection)
    };
    // Where the class is graded is part of the grader's identity: what grades the GPU
    // checks (a GPU, which one, or the CPU device with NVRTC) decides every grade of them.
    let settings = settings(
        &rubric,
        &out,
        forward,
        args.submission_time_limit,
        &where_,
        args.prebuilt,
        &bins,
    )?;
    shared::cli::eprint_line(&format!(
        "xtask: {} submissions in {} ({}); grading on {where_}",
        class.entries.len(),
        dir.display(),
        class.layout
    ));

    let (pending, reused) = to_grade(&settings, &mut class.entries)?;
    let graded_now = pending.len();
    if args.slurm {
        on_slurm(&settings, pending, &args)?;
    } else {
        on_this_machine(&settings, pending, &slots)?;
    }

    let run = gradebook::Run {
        layout: class.layout,
        submissions: class.entries.len(),
        graded_now,
        reused,
        where_: &where_,
    };
    write_gradebook(
        &settings,
        &out,
        &class.entries,
        &run,
        grades_csv,
        summary_md,
    )
}

/// Make OUT (made absolute) and open its gradebook's two files, `grades.csv` and
/// `summary.md`, before any grade: a class that cannot write its gradebook fails now.
///
/// An OUT inside the class folder is refused before anything is made: it would be graded as
/// a student's entry by the next run.
fn lay_out(dir: &Path, out: &Path) -> Result<(PathBuf, Output, Output)> {
    let inside = |out: &Path| -> Result<()> {
        if out.starts_with(dir) {
            bail!(
                "{} is inside the class folder {}; give an OUT outside it",
                out.display(),
                dir.display()
            );
        }
        Ok(())
    };
    inside(&resolved(out)?)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let out =
        std::fs::canonicalize(out).with_context(|| format!("cannot use {}", out.display()))?;
    inside(&out)?;
    // Every path checked before any work: the gradebook's files can be written, and are
    // regular files or new (a FIFO would block the first write, a link lead elsewhere).
    for name in ["grades.csv", "summary.md"] {
        let path = out.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if !meta.is_file() {
                bail!(
                    "{} is not a regular file; remove it, or give another OUT",
                    path.display()
                );
            }
        }
    }
    let grades_csv = Output::create(&out.join("grades.csv"))?;
    let summary_md = Output::create(&out.join("summary.md"))?;
    Ok((out, grades_csv, summary_md))
}

/// This machine's slots for the class's grades (`gpus` of them, all by default), said on
/// the class log with the sandbox each grade runs in.
fn local_slots(jail: &crate::sandbox::Jail, gpus: Option<Gpus>) -> Result<Vec<Slot>> {
    let (slots, line) = gpus::slots(gpus.unwrap_or(Gpus::All))?;
    shared::cli::eprint_line(&format!("xtask: {line}"));
    // Which sandbox, and what it lacks next to bubblewrap: the class log says it once
    // (each student's results.json too), with the first grade's user.
    if let Some(slot) = slots.first() {
        let described = jail.clone().for_user(slot.user).map(|j| j.describe());
        shared::cli::eprint_line(&format!(
            "xtask: {}",
            described.unwrap_or_else(|_| jail.describe())
        ));
    }
    if slots.len() > 1 && jail.shares_one_user() {
        shared::cli::eprint_line(
            "xtask: warning: not run by root, every sandbox is your user: the submissions \
             graded at once share one process limit (run as root to give each its own)",
        );
    }
    Ok(slots)
}

/// Where the class is graded on this machine, for the log, the summary and the grader's
/// identity: its GPUs, or what grades the GPU checks without one (`gpu_checks`).
fn where_graded(slots: &[Slot], gpu_checks: &str) -> String {
    match slots.len() {
        _ if slots.iter().all(|s| s.gpu.is_none()) => {
            format!("this machine, without a GPU: {gpu_checks}")
        }
        1 => format!("one GPU: {gpu_checks}"),
        n => format!("{n} GPUs, one submission on each at once: {gpu_checks}"),
    }
}

/// What grades the GPU checks of this class's grades here ([`super::gpu_checks`]), found
/// as each grade finds it: the GPU, else the CPU device beside the reference binaries in
/// `reference`.
fn gpu_checks_here(forward: &Common, reference: &Path) -> String {
    let probe = xtask::gpu::probe();
    let device =
        (probe.is_err() && !forward.no_cpu_device).then(|| super::checks::cpu_device(reference));
    super::gpu_checks(probe.as_deref().map_err(String::as_str), device.as_ref())
}

/// The labs whose reference binaries a grade of `rubric` runs.
fn reference_labs(rubric: &Rubric) -> Vec<&'static xtask::labs::Lab> {
    xtask::labs::LABS
        .iter()
        .filter(|lab| {
            *lab == xtask::labs::REFERENCE.lab
                || *lab == xtask::labs::REFERENCE.stand_in
                || rubric.checks.iter().any(|c| c.lab.name == lab.name)
        })
        .collect()
}

/// The entries still to grade, each with its digest, and how many were graded before with
/// the same content (kept, and said so); an entry to grade again loses its old results.
fn to_grade(settings: &Settings, entries: &mut [Entry]) -> Result<(Vec<(Entry, String)>, usize)> {
    let mut pending = Vec::new();
    let mut reused = 0;
    for entry in entries {
        // An entry the digest cannot read whole (too large, unreadable) is refused: its row
        // says why, and no grade of part of it is ever kept.
        let digest = match entries::digest(entry) {
            Ok(digest) => digest,
            Err(why) => {
                entry.form = entries::Form::Refused(why);
                entries::digest(entry).unwrap_or_default()
            }
        };
        if one::done(settings, entry, &digest).is_some() {
            reused += 1;
        } else {
            one::forget(settings, entry)?;
            pending.push((entry.clone(), digest));
        }
    }
    if reused > 0 {
        shared::cli::eprint_line(&format!(
            "xtask: {reused} submissions graded before with the same content: kept"
        ));
    }
    Ok((pending, reused))
}

/// Write `grades.csv` and `summary.md` from every entry's results in OUT, print the summary
/// and say where the gradebook is.
fn write_gradebook(
    settings: &Settings,
    out: &Path,
    entries: &[Entry],
    run: &gradebook::Run,
    mut grades_csv: Output,
    mut summary_md: Output,
) -> Result<()> {
    let checks: Vec<String> = settings.checks.iter().map(|(n, _)| n.clone()).collect();
    let rows = gradebook::rows(out, entries);
    let summary = gradebook::summary(&checks, &rows, run);
    grades_csv.write_all(gradebook::csv(&checks, &rows).as_bytes())?;
    summary_md.write_all(summary.as_bytes())?;
    shared::output::commit_all(vec![grades_csv, summary_md])?;
    shared::cli::print_line(summary.trim_end())?;
    shared::cli::eprint_line(&format!(
        "xtask: wrote {0}/grades.csv, {0}/summary.md and each student's results.json and \
         feedback.md in {0}/students",
        out.display()
    ));
    Ok(())
}

/// Where `path` is, whether it exists or not: each existing step made canonical (links
/// resolved, as the kernel will), `.` and `..` of the steps still to make taken as they read.
fn resolved(path: &Path) -> Result<PathBuf> {
    use std::path::Component;
    let absolute =
        std::path::absolute(path).with_context(|| format!("cannot use {}", path.display()))?;
    let mut at = PathBuf::from("/");
    for component in absolute.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(name) => {
                let next = at.join(name);
                at = std::fs::canonicalize(&next).unwrap_or(next);
            }
        }
    }
    Ok(at)
}

/// What every grade of this class shares, the grader's identity included: this binary, the
/// options passed on (`--bin-dir` made absolute: each grade runs in a folder of its own), and
/// where it is graded (`where_`: a class graded without a GPU, or
/// without NVRTC, is graded again where GPUs or NVRTC are).
fn settings(
    rubric: &Rubric,
    out: &Path,
    forward: &Common,
    limit: Option<u64>,
    where_: &str,
    prebuilt: bool,
    bins: &xtask::bins::Bins,
) -> Result<Settings> {
    let exe = std::env::current_exe().context("cannot find this program's own path")?;
    let bin_dir = match &forward.bin_dir {
        Some(dir) => Some(
            std::fs::canonicalize(dir).with_context(|| format!("--bin-dir {}", dir.display()))?,
        ),
        None => None,
    };
    let passed = Common {
        bin_dir,
        ..forward.clone()
    };
    let mut hash = Sha256::new();
    hash.update(std::fs::read(&exe).with_context(|| format!("cannot read {}", exe.display()))?);
    for arg in passed.to_args() {
        hash.update(arg.as_encoded_bytes());
        hash.update([0]);
    }
    hash.update(where_.as_bytes());
    hash.update([0]);
    hash.update(if prebuilt { "prebuilt" } else { "built here" });
    // What else decides a grade, so that a kept grade is the one a fresh run would give:
    // the rubric (compiled in, said again), the hand-out the submission is laid into, and
    // the reference binaries every output is compared with (--bin-dir's, or this
    // workspace's release build, built now as each grade would).
    hash.update(b"\0rubric\0");
    hash.update(crate::rubric::RUBRIC.as_bytes());
    hash.update(b"\0hand-out\0");
    hash.update(crate::files::handout_digest()?.as_bytes());
    hash.update(b"\0reference\0");
    let labs = reference_labs(rubric);
    let names = labs.iter().map(|lab| lab.name).chain(["libcpu_device.so"]);
    for name in names {
        let path = bins.dir().join(name);
        hash.update(name.as_bytes());
        hash.update([0]);
        match std::fs::read(&path) {
            Ok(bytes) => hash.update(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => hash.update(b"absent"),
            Err(e) => bail!("cannot read the reference {} ({e})", path.display()),
        }
    }
    let labs = rubric
        .checks
        .iter()
        .map(|c| c.lab.name)
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64;
    let build = forward
        .build_time_limit
        .unwrap_or(rubric.build_time_limit_s);
    // The grade's own limits, all spent: the cache's build and the student's, then every
    // check; the subprocess limit is a backstop behind them.
    let default = 2 * labs * build + rubric.checks.len() as u64 * rubric.time_limit_s + 300;
    Ok(Settings {
        exe,
        out: out.to_path_buf(),
        forward: passed,
        limit_s: limit.unwrap_or(default),
        grader: entries::hex(&hash.finalize()),
        prebuilt,
        checks: rubric.checks.iter().map(|c| (c.name(), c.points)).collect(),
    })
}

/// Grade `pending` here, one submission per slot at once.
fn on_this_machine(
    settings: &Settings,
    pending: Vec<(Entry, String)>,
    slots: &[Slot],
) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let total = pending.len();
    let progress = Progress::new(total, slots.len());
    let queue = Arc::new(Mutex::new(pending.into_iter()));
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for slot in slots {
            let queue = Arc::clone(&queue);
            let (progress, failure) = (&progress, &failure);
            scope.spawn(move || loop {
                let next = queue.lock().ok().and_then(|mut q| q.next());
                let Some((entry, digest)) = next else {
                    break;
                };
                progress.start(&entry, slot);
                match one::grade(settings, &entry, &digest, slot) {
                    Ok(record) => progress.done(settings, &entry, &record, slot),
                    Err(e) => {
                        // The class's own folder failed (disk full): stop taking more.
                        if let Ok(mut first) = failure.lock() {
                            first.get_or_insert(e);
                        }
                        if let Ok(mut q) = queue.lock() {
                            q.by_ref().for_each(drop);
                        }
                    }
                }
            });
        }
    });
    progress.finish();
    match failure.into_inner().ok().flatten() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Grade `pending` as a Slurm job array.
fn on_slurm(settings: &Settings, pending: Vec<(Entry, String)>, args: &ClassArgs) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let class_dir = settings.out.join(".class");
    std::fs::create_dir_all(&class_dir)
        .with_context(|| format!("cannot create {}", class_dir.display()))?;
    let plan_path = class_dir.join("plan.json");
    let plan = Plan {
        settings: settings.clone(),
        tasks: pending,
    };
    let json = serde_json::to_string_pretty(&plan).context("cannot encode the plan")?;
    shared::output::write_file(&plan_path, json.as_bytes())?;
    let options = slurm::Options {
        partition: args.partition.clone(),
        gres: args.gres.clone(),
    };
    let progress = Progress::new(plan.tasks.len(), 1);
    let mut counted = 0;
    slurm::run_array(
        &settings.exe,
        &plan_path,
        plan.tasks.len(),
        Duration::from_secs(settings.limit_s),
        &options,
        &class_dir.join("slurm"),
        || {
            let now = plan
                .tasks
                .iter()
                .filter(|(entry, _)| {
                    std::fs::metadata(one::folder(&settings.out, &entry.key).join("record.json"))
                        .is_ok()
                })
                .count();
            if now > counted {
                progress.advance(now - counted);
                counted = now;
            }
        },
    )?;
    progress.finish();
    Ok(())
}

/// One task of a Slurm array: grade its submission; exit 0 once its record is written.
pub fn task(plan: &Path) -> Result<()> {
    let text = std::fs::read_to_string(plan)
        .with_context(|| format!("cannot read the plan {}", plan.display()))?;
    let plan: Plan = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a class plan", plan.display()))?;
    let index = slurm::task_index()?;
    let Some((entry, digest)) = plan.tasks.get(index) else {
        bail!("the plan has {} tasks, not {}", plan.tasks.len(), index + 1);
    };
    // Slurm has set CUDA_VISIBLE_DEVICES to the task's GPUs (--gres): nothing to add. Tasks
    // that share a node run as users of their own.
    let record = one::grade(&plan.settings, entry, digest, &Slot::numbered(index))?;
    shared::cli::eprint_line(&inert::line(&format!(
        "xtask: {}: {}",
        entry.students.join(", "),
        record.not_graded.as_deref().unwrap_or("graded")
    )));
    Ok(())
}

/// N of M and the time left, on a terminal; one line per submission in a log.
struct Progress {
    bar: ProgressBar,
    total: usize,
    done: AtomicUsize,
    started: Instant,
    slots: usize,
}

impl Progress {
    fn new(total: usize, slots: usize) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{bar:30} {pos} of {len} submissions graded, {msg}")
        {
            bar.set_style(style);
        }
        bar.set_message("the time left known after the first");
        Progress {
            bar,
            total,
            done: AtomicUsize::new(0),
            started: Instant::now(),
            slots: slots.max(1),
        }
    }

    fn advance(&self, n: usize) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        self.bar.set_position(done as u64);
        self.bar.set_message(self.time_left(done));
    }

    /// The time left if the rest take as long as those done so far did.
    fn time_left(&self, done: usize) -> String {
        if done == 0 {
            return "the time left known after the first".to_string();
        }
        let each = self.started.elapsed().as_secs_f64() * self.slots.min(done) as f64 / done as f64;
        let left = each * (self.total - done.min(self.total)) as f64 / self.slots as f64;
        format!("about {} left", duration(left))
    }

    /// A line in a log when a submission starts (a terminal has the bar instead).
    fn start(&self, entry: &Entry, slot: &Slot) {
        if self.bar.is_hidden() {
            shared::cli::eprint_line(&inert::line(&format!(
                "xtask: grading {} ({}){}",
                entry.students.join(", "),
                entry.name,
                slot.describe()
                    .map(|gpu| format!(" on {gpu}"))
                    .unwrap_or_default()
            )));
        }
    }

    fn done(&self, settings: &Settings, entry: &Entry, record: &one::Record, slot: &Slot) {
        let results =
            one::read_results(&one::folder(&settings.out, &entry.key).join("results.json"));
        let score = match (&record.not_graded, results) {
            (Some(why), _) => format!("not graded: {why}"),
            (None, Ok(json)) => {
                let max: f64 = json["tests"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t["max_score"].as_f64())
                    .sum();
                format!(
                    "{} of {} points",
                    gradebook::number(json["score"].as_f64().unwrap_or(0.0)),
                    gradebook::number(max)
                )
            }
            (None, Err(why)) => format!("no results: {why}"),
        };
        let score = match record.grader_failed.len() {
            0 => score,
            n => {
                format!("{score}; {n} checks not graded: the grader failed (graded again next run)")
            }
        };
        let done = self.done.load(Ordering::Relaxed) + 1;
        let line = format!(
            "xtask: [{done}/{}] {}: {score} ({:.0} s{})",
            self.total,
            entry.students.join(", "),
            record.seconds,
            slot.describe()
                .map(|gpu| format!(" on {gpu}"))
                .unwrap_or_default()
        );
        // Names, reasons and archive members are the submission's: one inert line each.
        let line = inert::line(&line);
        self.bar.suspend(|| shared::cli::eprint_line(&line));
        self.advance(1);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// `1 h 05 min`, `12 min`, `40 s`.
fn duration(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s.div_ceil(60)),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After --bin-dir changed, every grade was kept: the reference binaries are part of
    /// the grader's identity (the rubric and the hand-out are hashed beside them).
    #[test]
    fn the_grader_changes_with_its_reference_binaries() {
        let top = tempfile::tempdir().expect("a temp folder");
        let bins = top.path().join("dist");
        std::fs::create_dir(&bins).expect("created");
        for lab in &xtask::labs::LABS {
            std::fs::write(bins.join(lab.name), lab.name).expect("written");
        }
        let rubric = Rubric::load().expect("the rubric");
        let forward = Common {
            bin_dir: Some(bins.clone()),
            ..Common::default()
        };
        let located = xtask::bins::Bins::locate(Some(bins.clone()), reference_labs(&rubric))
            .expect("the references");
        let where_ = "this machine, without a GPU: the GPU checks ran on the CPU device";
        let grader = |prebuilt: bool| {
            settings(
                &rubric,
                top.path(),
                &forward,
                None,
                where_,
                prebuilt,
                &located,
            )
            .expect("settings")
            .grader
        };
        let first = grader(false);
        assert_eq!(grader(false), first, "the same grader twice");
        std::fs::write(bins.join("lab02"), "another lab02").expect("written");
        let second = grader(false);
        assert_ne!(second, first, "a new reference lab02");
        std::fs::write(bins.join("libcpu_device.so"), "a device").expect("written");
        let third = grader(false);
        assert_ne!(third, second, "a new CPU device");
        assert_ne!(grader(true), third, "pre-built or not");
    }

    /// A class graded again once NVRTC was installed kept the grades made without it (14 of
    /// 38, every GPU column empty): what grades the GPU checks is part of the grader.
    #[test]
    fn the_grader_changes_with_what_grades_the_gpu_checks() {
        let top = tempfile::tempdir().expect("a temp folder");
        let bins = top.path().join("dist");
        std::fs::create_dir(&bins).expect("created");
        for lab in &xtask::labs::LABS {
            std::fs::write(bins.join(lab.name), lab.name).expect("written");
        }
        let rubric = Rubric::load().expect("the rubric");
        let forward = Common {
            bin_dir: Some(bins.clone()),
            ..Common::default()
        };
        let located = xtask::bins::Bins::locate(Some(bins.clone()), reference_labs(&rubric))
            .expect("the references");
        let no_gpu = Err("no CUDA driver");
        let without_nvrtc = Err("NVRTC not found".to_string());
        let with_nvrtc = Ok(crate::grade::checks::CpuDevice {
            library: bins.join("libcpu_device.so"),
            nvrtc: Some(top.path().join("nvrtc")),
        });
        let wheres = [
            super::super::gpu_checks(no_gpu, Some(&without_nvrtc)),
            super::super::gpu_checks(no_gpu, Some(&with_nvrtc)),
            super::super::gpu_checks(no_gpu, None),
            super::super::gpu_checks(Ok("NVIDIA H100 80GB HBM3"), None),
            super::super::gpu_checks(Ok("NVIDIA H200"), None),
        ];
        let graders: std::collections::BTreeSet<String> = wheres
            .iter()
            .map(|where_| {
                let where_ = where_graded(&[Slot::numbered(0)], where_);
                settings(&rubric, top.path(), &forward, None, &where_, true, &located)
                    .expect("settings")
                    .grader
            })
            .collect();
        assert_eq!(graders.len(), wheres.len(), "{wheres:#?}");
        // And the summary says which, never "not graded" where the CPU device graded them.
        assert_eq!(
            where_graded(&[Slot::numbered(0)], &wheres[1]),
            format!(
                "this machine, without a GPU: the GPU checks ran on the CPU device, with \
                 NVRTC from {} (no GPU opens here: no CUDA driver); the kernels' speed is not \
                 graded",
                top.path().join("nvrtc").display()
            )
        );
        assert_eq!(
            wheres[0],
            "the GPU checks were not graded (no GPU opens here: no CUDA driver; the CPU \
             device cannot stand in: NVRTC not found)"
        );
        assert_eq!(
            wheres[3],
            "the GPU checks ran on the GPU (NVIDIA H100 80GB HBM3)"
        );
    }

    #[test]
    fn a_path_to_make_is_resolved_as_the_kernel_will() {
        let top = tempfile::tempdir().expect("a temp folder");
        let top = std::fs::canonicalize(top.path()).expect("canonical");
        std::fs::create_dir(top.join("class")).expect("created");
        std::os::unix::fs::symlink(top.join("class"), top.join("link")).expect("a link");
        let cases = [
            ("link/out", "class/out"),
            ("new/../class/./out", "class/out"),
            ("class/a/b/../c", "class/a/c"),
            ("link/../other", "other"),
        ];
        for (given, want) in cases {
            assert_eq!(
                resolved(&top.join(given)).expect("resolved"),
                top.join(want),
                "{given}"
            );
        }
    }

    #[test]
    fn durations_are_read_at_a_glance() {
        assert_eq!(duration(40.2), "40 s");
        assert_eq!(duration(61.0), "2 min");
        assert_eq!(duration(3900.0), "1 h 05 min");
    }

    #[test]
    fn the_time_left_counts_every_slot() {
        let progress = Progress::new(10, 2);
        assert_eq!(progress.time_left(0), "the time left known after the first");
        assert!(
            progress.time_left(4).starts_with("about "),
            "{}",
            progress.time_left(4)
        );
        assert_eq!(progress.bar.length(), Some(10));
    }
}
