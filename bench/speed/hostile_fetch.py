"""Peak memory and time of the fetch stage on hostile inputs (issue 15 item 6).

Each input is small on disk (its deflate stream repeats one flushed block) and huge inside:
a zip whose symlink entry is 2 GiB of zeros, a .jsonl.gz with a 1 GiB line, a .tar.gz of
1,048,576 empty members. Each is fetched by `python -m pipeline.corpus.fetch` in a child process
(peak RSS from getrusage of its children), with this checkout's code and, as the baseline in the
same run, with the code of `--before` (a commit; its `pipeline/` is exported with `git archive`).
A benign fetch (a 10-file zip) is the floor both share (the interpreter, pyarrow).

Usage: python -m bench.speed.hostile_fetch [--before 107a680] [--cap-mb 8000] [--only zip jsonl tar]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from pipeline.corpus.safety import Limits
from tests import hostile_inputs as H
from tests.conftest import REPO

LIMITS = Limits(max_file_bytes=1_000_000, max_total_bytes=2_000_000_000, max_members=200_000)  # params.yaml's


def inputs(root: Path) -> dict[str, dict]:
    root.mkdir(parents=True, exist_ok=True)
    benign = H.write_zip(root / "benign.zip", [{"name": f"p/m{i}.py".encode(), "data": b"x = 1\n" * 100}
                                               for i in range(10)])
    return {
        "benign zip (10 files)": {"name": "benign", "kind": "local", "path": str(benign)},
        "zip: symlink entry of 2 GiB zeros": {"name": "zip", "kind": "local",
                                              "path": str(H.zip_symlink_bomb(root / "bomb.zip", gib=2))},
        "jsonl.gz: one 1 GiB line": {"name": "jsonl", "kind": "jsonl",
                                     "path": str(H.jsonl_giant_line(root / "big.jsonl.gz", mib=1024))},
        "tar.gz: 1,048,576 empty members": {"name": "tar", "kind": "local",
                                            "path": str(H.tar_many_members(root / "many.tar.gz", 1 << 20))},
    }


def export(commit: str, into: Path) -> Path:
    """`pipeline/` (and what the fetch imports) at `commit`, as plain files."""
    into.mkdir(parents=True)
    tar = subprocess.run(["git", "archive", "--format=tar", commit, "pipeline"], cwd=REPO, check=True,
                         capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return into


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="107a680", help="baseline commit (default: the one before issue 15's fetch work)")
    ap.add_argument("--cap-mb", type=int, default=8000, help="address-space cap of each fetch (a runaway baseline "
                    "fails with MemoryError instead of taking the machine)")
    ap.add_argument("--only", nargs="*", default=["benign", "zip", "jsonl", "tar"])
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        before = export(args.before, tmp / "before")
        specs = {k: v for k, v in inputs(tmp / "inputs").items() if v["name"] in args.only}
        print(f"{'input':36} {'on disk':>9} | {'before MB':>9} {'s':>6} | {'after MB':>8} {'s':>6} | RSS ratio")
        for label, spec in specs.items():
            size = Path(spec["path"]).stat().st_size
            row = []
            for code in (before, None):
                work = tmp / "runs" / (spec["name"] + ("-before" if code else "-after"))
                rc, peak, seconds, err = H.fetch_peak_rss(spec, LIMITS, work, code=code, timeout=900,
                                                          memory_cap_mb=args.cap_mb)
                failed = "" if rc == 0 else " (exit %d: %s)" % (rc, (err.strip().splitlines() or ["?"])[-1][:60])
                row.append((peak, seconds, failed))
            (b_mb, b_s, b_fail), (a_mb, a_s, a_fail) = row
            print(f"{label:36} {size / 1e6:7.1f}MB | {b_mb:9.0f} {b_s:6.1f} | {a_mb:8.0f} {a_s:6.1f} | "
                  f"{b_mb / a_mb:5.1f}x{b_fail}{a_fail}")


if __name__ == "__main__":
    main()
