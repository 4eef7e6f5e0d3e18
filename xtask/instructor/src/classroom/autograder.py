#!/usr/bin/env python3
"""The labs' Classroom 50 autograder, written by `cargo instructor classroom`.

Classroom 50's runner runs it in the student's checkout on every submission, with the
submission's identity in its environment (CLASSROOM, ASSIGNMENT, SUBMISSION_TAG, OWNER or
USERNAME, ASSIGNMENT_TYPE, COMMIT_URL, RELEASE_URL, REVIEW_URL). It runs the set-up and each
check of checks.json, beside it, and writes ./result.json of schema classroom50/result/v1:
one row per check, worth its points when its command exits 0. This is feedback, run by the
student's own repository on the student's own code: the grade of record is the instructor's
`cargo instructor grade-class`, in a sandbox.

Exit 0 whenever the checks ran (the score is in result.json); 1 when it cannot grade at all
(no identity, no checks.json): Classroom 50 reports that as an error, not a score.
"""

import datetime
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SCHEMA = "classroom50/result/v1"
# The tail of a command's output kept in its row (Classroom 50's runner keeps 2000 too).
MAX_OUTPUT = 2000


def fail(message):
    print(f"::error::{message}", file=sys.stderr)
    sys.exit(1)


def identity():
    """The submission's identity, from the runner's environment."""
    env = os.environ
    missing = [
        name
        for name in ("CLASSROOM", "ASSIGNMENT", "SUBMISSION_TAG", "COMMIT_URL", "RELEASE_URL")
        if not env.get(name)
    ]
    owner = env.get("OWNER") or env.get("USERNAME")
    if not owner:
        missing.append("OWNER")
    kind = env.get("ASSIGNMENT_TYPE") or ""
    if kind not in ("individual", "group"):
        missing.append("ASSIGNMENT_TYPE (individual or group)")
    if missing:
        fail(
            "the autograder runs under Classroom 50's runner, which sets "
            + ", ".join(missing)
        )
    return {
        "classroom": env["CLASSROOM"],
        "assignment": env["ASSIGNMENT"],
        "assignment_type": kind,
        "owner": owner,
        "submission": env["SUBMISSION_TAG"],
        "commit": env["COMMIT_URL"],
        "release": env["RELEASE_URL"],
        "review": env.get("REVIEW_URL") or env["COMMIT_URL"],
    }


def utc(moment):
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def submitted_at(now):
    """The graded commit's committer date, as Classroom 50 dates a submission; now where
    git cannot say."""
    try:
        out = subprocess.run(
            ["git", "log", "-1", "--format=%ct", "HEAD"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.strip()
        return utc(datetime.datetime.fromtimestamp(int(out), datetime.timezone.utc))
    except (OSError, ValueError, subprocess.SubprocessError):
        return utc(now)


def run(command, timeout, env):
    """Run `command` with bash; whether it exited 0, and the tail of its output. On a
    timeout its whole process group is killed (cargo and the lab it started)."""
    try:
        process = subprocess.Popen(
            ["bash", "-c", command], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
    except OSError as error:
        return False, f"cannot run bash: {error}"
    try:
        output, _ = process.communicate(timeout=timeout)
        text = output.decode("utf-8", "replace")
        passed = process.returncode == 0
        if not passed:
            text += f"\n(exit status {process.returncode})"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        text = output.decode("utf-8", "replace") + f"\n(timed out after {timeout} s)"
        passed = False
    return passed, text[-MAX_OUTPUT:]


def main():
    who = identity()
    try:
        plan = json.loads((HERE / "checks.json").read_text(encoding="utf-8"))
        setup = plan["setup"]
        checks = plan["checks"]
    except (OSError, ValueError, KeyError) as error:
        fail(f"cannot read checks.json beside the autograder: {error}")
    now = datetime.datetime.now(datetime.timezone.utc)

    env = dict(os.environ, CARGO_TERM_COLOR="never")
    library = str(pathlib.Path.cwd() / plan["library_path"])
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (library, os.environ.get("LD_LIBRARY_PATH", "")) if p
    )

    # The set-up is a row worth nothing, as Classroom 50 keeps a set-up command: its
    # failure shows, and the checks it would have served are not run.
    ready, output = run(setup["command"], setup["timeout"], env)
    tests = [{"test-name": setup["name"], "passed": ready, "score": 0, "max-score": 0,
              "output": output}]
    print(f"{'ok  ' if ready else 'FAIL'} {setup['name']}", flush=True)
    for check in checks:
        if ready:
            passed, output = run(check["command"], check["timeout"], env)
        else:
            passed, output = False, f"not run: {setup['name']} failed"
        print(f"{'ok  ' if passed else 'FAIL'} {check['name']}", flush=True)
        tests.append({
            "test-name": check["name"],
            "passed": passed,
            "score": check["points"] if passed else 0,
            "max-score": check["points"],
            "output": output,
        })

    result = {"schema": SCHEMA, **who, "datetime": submitted_at(now),
              "graded_at": utc(now),
              "score": sum(t["score"] for t in tests),
              "max-score": sum(t["max-score"] for t in tests),
              "tests": tests}
    # A new file put in place: a result.json the student committed (a link, say) is
    # replaced, never written through.
    with tempfile.NamedTemporaryFile("w", dir=".", prefix=".result-", suffix=".json",
                                     delete=False, encoding="utf-8") as out:
        json.dump(result, out, indent=2)
        out.write("\n")
    os.replace(out.name, "result.json")
    print(f"{result['score']} of {result['max-score']} points", flush=True)


if __name__ == "__main__":
    main()
