"""House rules over the tracked files: code comments give reasons, not tracker numbers (history lives in git
and docs/), and no tracked file names a path of one machine (a default is a path inside the project or a fresh
temporary folder, resolved at run time); and over the imports (tests/house.py): every arrow between rooms runs
down, no modules import each other round a loop, and the registry sits below everything that reads it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

# the workflow's code, its comments and docstrings: pipeline/, rules/, the Snakefile, schemas/, params (Markdown
# is documentation, which may cite history: a family's README.md keeps its checklist's issue references)
CODE_PATHS = ("pipeline/", "rules/", "schemas/", "Snakefile", "snakemake_startup.py")
CODE_FILES = re.compile(r"^params[\w.]*\.yaml$")
TRACKER = re.compile(rb"issue [0-9]", re.IGNORECASE)
# pieces joined here so that this file does not name them itself
MACHINE_PATH = re.compile(rb"(?<![\w.:/-])(?:(?:/" + b"work/|/" + b"root/|/" + rb"home/)[\w.-]|/tmp/" + b"s3)")
# a fixed folder under the system temp folder as a default (a fresh one: tempfile.mkdtemp)
FIXED_TMP = re.compile(r"^/tmp(/|$)")
# `--configfile` takes every word after it up to the next option, so a target written after the files is read as
# one more config file (FileNotFoundError: 'fits'): a word after the files that is no YAML file and no option
SWALLOWED_TARGET = re.compile(rb"--configfile(?:\s+[\w./-]+\.ya?ml)+\s+"
                              rb"(?!-)[\w.]*[A-Za-z_][\w.]*(?<!\.yaml)(?<!\.yml)(?=[\s`'\")]|$)")


def tracked() -> list[str]:
    res = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    if res.returncode or not res.stdout:
        pytest.skip("not a git checkout")
    return [p for p in res.stdout.decode().split("\0") if p and (REPO / p).is_file()]


def text_of(rel: str) -> bytes | None:
    data = (REPO / rel).read_bytes()
    return None if b"\0" in data[:8192] else data


def hits(files: list[str], pattern: re.Pattern) -> list[str]:
    out = []
    for rel in files:
        data = text_of(rel)
        if data is None:
            continue
        for n, line in enumerate(data.splitlines(), 1):
            if pattern.search(line):
                out.append(f"{rel}:{n}: {line.decode(errors='replace').strip()[:160]}")
    return out


def test_workflow_comments_give_reasons_not_tracker_numbers():
    files = [p for p in tracked() if (p.startswith(CODE_PATHS) or CODE_FILES.match(p)) and not p.endswith(".md")]
    assert files, "no workflow files found"
    found = hits(files, TRACKER)
    assert not found, ("say the reason or the measured fact, not the issue number (history lives in git and "
                       "docs/):\n" + "\n".join(found))


def test_the_extract_cache_key_ignores_comments_docstrings_and_layout():
    """The extractor's cache key hashes its code's syntax trees, not its bytes (pipeline/extract/build.py
    `code_of`): a comment or docstring reworded there costs no corpus a re-extraction; a change of code does."""
    from pipeline.extract.build import _CODE, code_of

    src = 'import os\n\n\ndef f(x):\n    """Say what."""\n    return x + 1  # one more\n\n\nclass C:\n    "C."\n'
    same = ('"""A module docstring."""\nimport os\n\n\ndef f(x):  # reworded\n    """Say it otherwise,\n    over two lines."""'
            '\n\n    return (x +\n            1)\n\n\nclass C:\n    pass\n')
    assert code_of(src) == code_of(same)
    for changed in (src.replace("x + 1", "x + 2"), src.replace("import os", "import sys"),
                    src.replace('    return x + 1  # one more\n', '    "Say what."\n    return x + 1\n')):
        assert code_of(changed) != code_of(src), changed
    assert all((REPO / "pipeline" / "extract" / name).is_file() for name in _CODE)


def test_no_tracked_file_names_a_machine_path():
    found = hits(tracked(), MACHINE_PATH)
    assert not found, ("a path of one machine: use a path inside the project (git-ignored, resolved from the "
                       "repository root) or a fresh temporary folder:\n" + "\n".join(found))


def test_no_code_defaults_to_a_fixed_folder_under_the_temp_folder():
    """A work folder defaults to a fresh temporary folder (tempfile.mkdtemp: bench.work_dir), never a fixed name
    under /tmp that another run or user may hold: no string in the code of bench/, pipeline/ or tests/ starts so."""
    found = []
    for rel in tracked():
        if rel.endswith(".py") and rel.startswith(("bench/", "pipeline/", "tests/")):
            for node in ast.walk(ast.parse((REPO / rel).read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and FIXED_TMP.search(node.value):
                    found.append(f"{rel}:{node.lineno}: {node.value[:80]!r}")
    assert not found, "use tempfile.mkdtemp (bench.work_dir) or a folder given on the command line:\n" + "\n".join(found)


def test_bench_is_laid_out_by_purpose_and_its_readme_names_every_bench():
    """bench/ holds folders by purpose; each bench (a module of a folder, not `_helper`) has a docstring and a
    `main`, and bench/README.md's table names it; `python -m bench` finds exactly those."""
    import bench.__main__ as bm

    loose = sorted(p.name for p in (REPO / "bench").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "run_cost.py"], loose  # run_cost: the old command, kept
    readme = (REPO / "bench" / "README.md").read_text()
    found = []
    for name in bm.benches():
        group, module = name.split(".")
        path = REPO / "bench" / group / f"{module}.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not ast.get_docstring(tree) or not any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            found.append(f"{path.relative_to(REPO)}: no docstring or no main()")
        if f"`{group}/{module}.py`" not in readme:
            found.append(f"bench/README.md does not name {group}/{module}.py")
    assert not found, "\n".join(found)
    assert bm.resolve("manifest") == ["speed.manifest"] and bm.resolve("speed.manifest") == ["speed.manifest"]
    assert bm.resolve("scale") == ["scale.families", "scale.paper_estimate", "scale.scaling", "scale.shards"]
    assert bm.module_of("peers") == "bench.peers.__main__" and bm.module_of("bm25") == "bench.peers.bm25"
    with pytest.raises(SystemExit, match="no bench 'nothing'"):
        bm.resolve("nothing")


def test_no_command_gives_a_target_where_configfile_reads_it_as_a_file():
    files = [p for p in tracked() if p.endswith((".md", ".yaml", ".py", ".smk", ".sh")) or p == "Makefile"]
    found = [h for h in hits(files, SWALLOWED_TARGET) if not h.startswith("tests/test_house.py:")]
    assert not found, ("put the target before --configfile (`snakemake fits --cores 2 --configfile a.yaml b.yaml`): "
                       "after it, Snakemake reads the target as another config file:\n" + "\n".join(found))


def test_the_patterns_find_what_they_should():
    for line in (b"snakemake --cores 2 --configfile params.yaml examples/paper-probe.yaml probing",
                 b"`snakemake --configfile examples/anycorpus.yaml evaluation_sizes`"):
        assert SWALLOWED_TARGET.search(line), line
    for line in (b"snakemake fits --cores 2 --configfile params.yaml examples/paper-probe.yaml",
                 b"snakemake --configfile examples/anycorpus.yaml --cores 2 evaluation_sizes",
                 b"`snakemake --configfile params.yaml examples/real-models.yaml`", b"--configfile BAD.yaml`",
                 b"(`snakemake fits --cores 2 --configfile a.yaml b.yaml`)"):
        assert not SWALLOWED_TARGET.search(line), line
    assert TRACKER.search(b"# see Issue 26 item 5") and not TRACKER.search(b"# an issue with no number")
    for path in (b"/" + b"work/venvs/peers", b"x /" + b"root/parts", b"(/" + b"home/me/x)", b"/tmp/" + b"s3/y"):
        assert MACHINE_PATH.search(path), path
    for path in (b".peers/venv", b"https://example.org/" + b"home/x", b"/tmp/pwned", b"/" + b"work"):
        assert not MACHINE_PATH.search(path), path


# The house drawn from its own imports (tests/house.py; docs/architecture.md, "The house"): every arrow between
# rooms runs down, and no modules import each other round a loop.
def test_every_arrow_runs_down_and_no_module_circle():
    from tests.house import house

    drawn = house()
    assert {"pipeline.registry", "pipeline.families", "pipeline.runtime"} <= set(drawn.rooms)
    assert drawn.back == [] and drawn.circles == [], drawn.drawing()
    for user in ("runtime", "report", "warehouse", "config", "dvcgen", "families"):
        assert drawn.floors[f"pipeline.{user}"] > drawn.floors["pipeline.registry"], drawn.drawing()
    for below in ("runtime", "report", "warehouse", "config", "dvcgen"):  # they read the registry, not a family
        assert not drawn.rooms.has_edge(f"pipeline.{below}", "pipeline.families"), below


def test_the_house_counts_what_it_should(tmp_path, monkeypatch):
    """A toy package: `b` and `c` import each other (a circle; the rooms `b` and `c` loop), `c` imports the
    ground room `a` (by a lazy import inside a function)."""
    from tests.house import house

    pkg = tmp_path / "toyhouse"
    (pkg / "b").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("X = 1\n")
    (pkg / "b" / "__init__.py").write_text("")
    (pkg / "b" / "one.py").write_text("from toyhouse import c\nfrom toyhouse import a\n")
    (pkg / "b" / "two.py").write_text("from toyhouse.a import X\n")
    (pkg / "c.py").write_text("from toyhouse.b import one\n\ndef f():\n    from toyhouse import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    drawn = house("toyhouse")
    assert drawn.circles == [["toyhouse.b.one", "toyhouse.c"]]
    assert len(drawn.back) == 1 and drawn.floors["toyhouse.a"] == 0
    assert drawn.floors["toyhouse.b"] == drawn.floors["toyhouse.c"] == 1
    assert drawn.figures["rooms"] == 4 and drawn.figures["arrows running back up"] == 1


def test_the_registry_imports_no_family_and_no_torch():
    """The Snakefile reads the registry on every run: it stays cheap to import, and below the families."""
    code = ("import sys, pipeline.registry; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('pipeline.families')))")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout
