"""The README, run literally (issue #47 item 4): every shell block of README.md and the quick start of
docs/setup.md, in order, in one shell, as a user types them on a fresh clone.

The clone is the committed project with `.test`'s params as its params.yaml (the tiny configuration), so
`make run` builds what it builds on the default, at the test's size. It starts from the session's end-to-end
build of that same configuration (data/, reports/, .snakemake/ copied with their mtimes), so `make run` plans
every job and finds each done: what it runs is its adoption into DVC (`python -m pipeline.adopt`). Every other
block runs for real: the Snakemake no-op, the DVC experiment (it reruns its jobs), the metrics diff, the query.

A block or a line that cannot run here is named by a marker in the Markdown, with its reason, kept to a
minimum: `<!-- readme-test: skip LINE-PREFIX (why) -->` before a block skips that block's lines that start with
LINE-PREFIX (`make test` is the suite this test is part of). Nothing else is skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCS = [(REPO / "README.md", None), (REPO / "docs/setup.md", "## Set-up: two commands")]
MARKER = re.compile(r"<!--\s*readme-test:\s*skip\s+(.+?)\s+\((.+?)\)\s*-->")
FENCE = re.compile(r"^```(bash|sh|shell)\s*\n(.*?)^```", re.S | re.M)


@dataclass
class Block:
    doc: str
    line: int
    text: str
    skip: list[tuple[str, str]] = field(default_factory=list)  # (line prefix, why)

    def script(self) -> str:
        """The block as run: each skipped line becomes a comment saying so."""
        out = []
        for line in self.text.splitlines():
            why = next((w for p, w in self.skip if line.strip().startswith(p)), None)
            out.append(f"# readme-test skipped ({why}): {line}" if why else line)
        return "\n".join(out) + "\n"


def blocks(path: Path, section: str | None = None) -> list[Block]:
    """The shell blocks of `path` (only those under the heading `section`, up to the next heading of its level,
    when given), with the skip markers between the previous block and each."""
    text = path.read_text()
    start, end = 0, len(text)
    if section:
        start = text.index(section)
        level = section.split()[0] + " "
        nxt = text.find("\n" + level, start + len(section))
        end = nxt if nxt >= 0 else len(text)
    found, previous = [], start
    for m in FENCE.finditer(text, start, end):
        markers = MARKER.findall(text[previous:m.start()])
        found.append(Block(path.relative_to(REPO).as_posix(), text.count("\n", 0, m.start()) + 1, m.group(2),
                           [(p.strip("`"), w) for p, w in markers]))
        previous = m.end()
    return found


def all_blocks() -> list[Block]:
    return [b for path, section in DOCS for b in blocks(path, section)]


def test_every_shell_block_is_found_and_every_skip_names_a_line_and_why():
    found = all_blocks()
    readme = [b for b in found if b.doc == "README.md"]
    assert len(readme) >= 4 and any("dvc exp run" in b.text for b in readme), [b.text for b in readme]
    for b in found:
        for prefix, why in b.skip:
            assert why and any(line.strip().startswith(prefix) for line in b.text.splitlines()), (b.doc, b.line, prefix)
    skipped = [(b.doc, p) for b in found for p, _ in b.skip]
    # kept to a minimum: only `make test` (this suite itself) is skipped, once per document
    assert {p for _, p in skipped} <= {"make test"} and len(skipped) <= len(DOCS), skipped


def thin_venv(project: Path) -> Path:
    """project/.venv as `make install` leaves it, without an install: a venv whose packages are this
    interpreter's (a .pth naming its site-packages), its console scripts beside its python, and make's stamp."""
    venv = project / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(subprocess.run([str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "_shared_packages.pth").write_text(sysconfig.get_path("purelib") + "\n")
    for name in ("snakemake", "dvc"):
        script = (Path(sys.executable).parent / name).read_text().split("\n", 1)[1]
        (venv / "bin" / name).write_text(f"#!{venv / 'bin/python'}\n{script}")
        (venv / "bin" / name).chmod(0o755)
    import yaml

    pin = yaml.safe_load((project / "params.yaml").read_text())["python"]["require"]
    (venv / f".installed-{pin}").touch()  # newer than the requirements files: make installs nothing
    return venv


def readme_clone(e2e_project: Path, root: Path) -> Path:
    """A fresh clone of the project at `.test` size, its build made (the session's end-to-end build, mtimes
    and Snakemake's records kept): committed files, `.test`'s params as params.yaml, dvc.yaml generated for it."""
    from pipeline.dvcgen import generate
    from tests.conftest import git
    from tests.test_dvc import copy_project

    project = root / "project"
    copy_project(project)
    shared = (REPO.parent / "shared").resolve()  # the params name datasets as ../shared/... (a clone's layout)
    if shared.is_dir():
        (root / "shared").symlink_to(shared, target_is_directory=True)
    for name in ("corpus", "npm", "params.yaml"):  # .test's inputs are committed files of this clone
        src = e2e_project / name
        (shutil.copytree(src, project / name, symlinks=True, dirs_exist_ok=True) if src.is_dir()
         else shutil.copy2(src, project / name))
    (project / "dvc.yaml").write_text(generate(project / "params.yaml", perturb=False))
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    git("commit", "-qm", "a fresh clone", cwd=project)
    for name in ("data", "reports", ".snakemake"):  # the build, mtimes kept
        shutil.copytree(e2e_project / name, project / name, symlinks=True, dirs_exist_ok=True)
    venv = thin_venv(project)
    # Two of the build's records name the folder of the Snakefile it ran (the repository's, not this clone's):
    # fetch_dataset's `base` param and the warehouse's SQL inputs, relative to the working folder. A clone that
    # built itself records its own; Snakemake forgets these (it then has no record to compare), so the clone's
    # `make run` plans what a clone's second `make run` plans: nothing.
    import yaml

    datasets = [d["name"] for d in yaml.safe_load((project / "params.yaml").read_text()).get("datasets") or []]
    forget = [f"data/datasets/{name}{ext}" for name in datasets for ext in ("", ".json")] + ["data/warehouse.duckdb"]
    subprocess.run([str(venv / "bin/snakemake"), "--cleanup-metadata", *forget, "--cores", "1"], cwd=project,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, check=True, capture_output=True)
    return project


# checks run between the blocks (not README commands: they only read), each printed under its own marker
PROBES = {
    "make run": "dvc status; snakemake -n 2>&1 | tail -3",
    "dvc exp run": "dvc exp show --only-changed --csv | sed -n 1p",  # sed reads all: no broken pipe under pipefail
}


def run_readme(project: Path) -> dict[str, str]:
    """Every block in order in one shell (as typed in one terminal: `source .venv/bin/activate` holds for the
    blocks after it), then the probes; {marker: output}. Fails with the output when a command fails."""
    script = ["set -eo pipefail"]
    for i, b in enumerate(all_blocks()):
        script += [f"echo '@@@ block {i} {b.doc}:{b.line}'", b.script()]
        for key, probe in PROBES.items():
            if key in b.text:
                script += [f"echo '@@@ probe {key}'", f"( PATH=$PWD/.venv/bin:$PATH; {probe} )"]
    script.append("echo '@@@ end'")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update({"DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@u", "GIT_COMMITTER_NAME": "u",
                "GIT_COMMITTER_EMAIL": "u@u", "GIT_CONFIG_NOSYSTEM": "1", "CORES": "2", "MAKEFLAGS": "", "PAGER": "cat"})
    here = Path(sys.executable).parent  # the test's own venv is not on the user's PATH
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if Path(p) != here)
    res = subprocess.run(["bash", "-c", "\n".join(script)], cwd=project, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=1500)  # one stream, in the order printed
    assert res.returncode == 0 and "@@@ end" in res.stdout, f"exit {res.returncode}:\n{res.stdout[-12000:]}"
    return dict(re.findall(r"^@@@ (.+?)\n(.*?)(?=^@@@ )", res.stdout, re.S | re.M))


def check(parts: dict[str, str]) -> None:
    """What the README promises of its commands, read from their outputs."""
    # `make run`: the build is adopted into DVC, so neither tool has anything to do
    status = parts["probe make run"]
    assert "Data and pipelines are up to date" in status and "Nothing to be done" in status, status
    found = all_blocks()
    # ... and its last words are the warnings summary, also on this run, where Snakemake had nothing to do
    run = parts[next(f"block {i} {b.doc}:{b.line}" for i, b in enumerate(found) if "make run" in b.text)]
    tail = run.rstrip().splitlines()
    assert tail and (tail[-1] == "no warnings" or any("warning(s) from this build" in line for line in tail)), run[-3000:]
    i = next(i for i, b in enumerate(found) if "dvc exp run" in b.text)
    exp = parts[f"block {i} {found[i].doc}:{found[i].line}"]
    # the experiment reruns its model's predictions and the aggregates, never the corpus, the scans or the split
    ran = re.findall(r"Running stage '([^']+)'", exp)
    assert ran and not {"corpus", "scan", "manifest", "extract"} & set(ran), exp[-3000:]
    assert "Ran experiment(s)" in exp, exp[-3000:]
    # `dvc metrics diff` lists only what changed: no row whose HEAD value is missing ("-")
    diff = exp.split("Experiment results have been applied to your workspace.", 1)[1]
    for line in diff.splitlines():
        if line.startswith("reports/metrics/scores.json"):
            assert line.split()[2] != "-", line
    # `dvc exp show --only-changed`: at most 15 columns (its CSV adds rev and typ)
    columns = next(line for line in parts["probe dvc exp run"].splitlines() if line.startswith("Experiment,")).split(",")
    assert len(columns) - 2 <= 15, columns


def transcript(parts: dict[str, str]) -> dict:
    """Each block's commands with its exit code (the shell runs under `set -e`, so every block that printed its
    successor's marker exited 0) and the size of its output: the record of one literal run."""
    found = all_blocks()
    out = []
    for i, b in enumerate(found):
        text = parts.get(f"block {i} {b.doc}:{b.line}")
        if text is None:
            continue
        out.append({"doc": b.doc, "line": b.line,
                    "commands": [line for line in b.script().splitlines() if line.strip() and not line.startswith("#")],
                    "exit": 0, "output_lines": len(text.splitlines()), "output_bytes": len(text.encode())})
    return {"configuration": ".test (tests/test_readme.py: .test's params as the clone's params.yaml)", "blocks": out}


@pytest.mark.slow  # ~180 CPU-s on top of the session's .test build (its 22 jobs rerun); .ci/run runs it after make test
def test_the_readme_runs_literally(e2e_project, tmp_path):
    parts = run_readme(readme_clone(e2e_project, tmp_path))
    if os.environ.get("README_TRANSCRIPT"):  # docs/results/readme_transcript_test.json: README_TRANSCRIPT=that path
        import json

        Path(os.environ["README_TRANSCRIPT"]).write_text(json.dumps(transcript(parts), indent=1) + "\n")
    check(parts)
