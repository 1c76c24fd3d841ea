"""Issue 37 item F: a full disk in any job is one line naming the stage and the path (pipeline/__init__.py's
excepthook, installed by every `python -m pipeline.<stage>`), not a 17-27-line traceback."""

from __future__ import annotations

import errno
import subprocess
import sys
import zipfile

import pytest

import pipeline
from pipeline.corpus import safety
from pipeline.corpus.fetch import fetch
from pipeline.corpus.safety import Limits
from tests.conftest import REPO
from tests.fixture_corpus import pin_archive

LIMITS = Limits(max_file_bytes=100_000, max_total_bytes=10_000_000, max_members=100)


def test_the_line_names_the_stage_and_the_path():
    exc = OSError(errno.ENOSPC, "No space left on device", "/data/corpus/x/a.py")
    line = pipeline.disk_full_line(exc, stage="pipeline.corpus.fetch", argv=[])
    assert line.startswith("error: pipeline.corpus.fetch: no space left") and "/data/corpus/x/a.py" in line
    # a write() error names no file: the job's outputs from its command line
    wrapped = RuntimeError("while writing")
    wrapped.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    line = pipeline.disk_full_line(wrapped, stage="s", argv=["--dest", "data/corpus/x", "--spec", "{}"])
    assert "data/corpus/x" in line and "{}" not in line
    assert pipeline.disk_full_line(OSError(errno.EACCES, "denied", "/x"), stage="s") is None


def test_a_full_disk_in_a_job_is_one_line_on_stderr(tmp_path):
    """A stage writing into /dev/full (every write fails with ENOSPC, as on a full disk)."""
    code = "import pipeline, runpy, sys; sys.argv = ['x', '--out', '/dev/full']; open('/dev/full', 'w').write('x' * 10**6)"
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert lines[0].startswith("error: ") and "no space left" in lines[0] and "/dev/full" in lines[0]


def test_a_full_disk_while_extracting_names_the_file(tmp_path, monkeypatch):
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("pkg/a.py", "x = 1\n")

    def full(open_src, dst, cap):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safety, "_copy_capped", full)
    out = tmp_path / "out"
    with pytest.raises(OSError) as caught:
        fetch(pin_archive({"name": "a", "kind": "local", "path": str(archive)}), LIMITS, out / "tree", out / "r.json",
              out / "r.parquet", tmp_path / "cache")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename.endswith("pkg/a.py")
    assert "pkg/a.py" in pipeline.disk_full_line(caught.value, stage="pipeline.corpus.fetch")
