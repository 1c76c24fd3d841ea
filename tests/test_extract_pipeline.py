"""The extract and apiquiz rules through real Snakemake on a tiny fixture corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parents[1]

FILES = {
    "pkg/__init__.py": "",
    "pkg/a/__init__.py": "",
    "pkg/b/__init__.py": "",
    "pkg/a/core.py": '"""Core A."""\ndef run():\n    """Run A."""\n',
    "pkg/b/core.py": '"""Core B."""\ndef run():\n    """Run B."""\n',
    # identical bytes in two packages: analysed once, resolved per path
    "pkg/a/util.py": "from . import core\nimport json as js\ncore.run()\njs.dumps(1)\n",
    "pkg/b/util.py": "from . import core\nimport json as js\ncore.run()\njs.dumps(1)\n",
    "pkg/broken.py": "def f(:\n",
    "pkg/py2.py": 'print "hello"\n',
    "pkg/deep.py": "x = " + "(" * 10_000 + "1" + ")" * 10_000 + "\n",
}


def run_snakemake(workdir: Path, *targets: str) -> None:
    cmd = [str(Path(sys.executable).parent / "snakemake"), "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(workdir), "--configfile", str(workdir / "params.yaml"), "--cores", "2", *targets]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_extract_and_apiquiz_rules(tmp_path):
    src = tmp_path / "fixture"
    for rel, text in FILES.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["corpus"]["sources"] = [{"name": "fixture", "kind": "local", "path": str(src)}]
    params["apirec"]["domains"] = {}  # the default's name the default's sources
    params["corpus"]["cache_dir"] = str(tmp_path / "cache")
    params["manifest"]["languages"] = ["python"]
    params["extract"].update(workers=2, cache_dir=str(tmp_path / "cache" / "extract"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    run_snakemake(work, "apiquiz")

    rejects = pq.read_table(work / "data/extract/rejects.parquet").to_pylist()
    assert sorted((r["path"], r["stage"], r["reason"]) for r in rejects) == [
        ("pkg/broken.py", "extract", "syntax_error"),
        ("pkg/deep.py", "extract", "too_deep"),
        ("pkg/py2.py", "extract", "syntax_error"),
    ]
    usages = pq.read_table(work / "data/extract/usages.parquet").to_pylist()
    assert sorted((u["path"], u["fqn"], u["category"], u["alias"]) for u in usages) == [
        ("pkg/a/util.py", "json.dumps", "stdlib", "js"),
        ("pkg/a/util.py", "pkg.a.core.run", "user_defined", None),
        ("pkg/b/util.py", "json.dumps", "stdlib", "js"),
        ("pkg/b/util.py", "pkg.b.core.run", "user_defined", None),
    ]
    inventory = pq.read_table(work / "data/extract/inventory.parquet").to_pylist()
    assert {(i["fqn"], i["doc"]) for i in inventory if i["kind"] == "function"} == {
        ("pkg.a.core.run", "Run A."), ("pkg.b.core.run", "Run B.")}
    metrics = json.loads((work / "reports/metrics/extract.json").read_text())
    # the three empty __init__.py and the two util.py share contents: 7 distinct of 10 files
    assert (metrics["python_files"], metrics["unique_contents"], metrics["files_analysed"]) == (10, 7, 7)
    assert metrics["rejects_by_reason"] == {"syntax_error": 2, "too_deep": 1}

    quizzes = pq.read_table(work / "data/families/apiquiz/quizzes.parquet")
    assert set(quizzes.column("api").to_pylist()) == {"json.dumps", "pkg.a.core.run", "pkg.b.core.run"}
    texts = set(quizzes.column("text").to_pylist())
    assert {"import json as js\njs.<mask>(", "# Run A.\npkg.a.core.<mask>(", "from pkg.b.core import <mask>"} <= texts
    first = {p: (work / p).read_bytes() for p in ("data/extract/usages.parquet", "data/families/apiquiz/quizzes.parquet",
                                                 "data/families/apiquiz/quiz_tokens.parquet")}

    assert "7 files analysed (0 cached)" in (work / "logs/extract/build.log").read_text()
    run_snakemake(work, "apiquiz", "--forcerun", "extract")
    assert {p: (work / p).read_bytes() for p in first} == first  # byte-identical rerun
    # nothing re-parsed: rejects by content are cached too (timeouts are not)
    assert "7 files analysed (7 cached)" in (work / "logs/extract/build.log").read_text()
