"""Hostile corpus inputs built on this machine (issue 15): odd names, collisions, duplicates,
corrupt and truncated archives, broken jsonl, decompression bombs. Bombs stay small on disk:
their deflate streams repeat one flushed block, so a GiB of zeros costs a few MB and ~1 s.
Used by tests/test_hostile.py and bench/speed/hostile_fetch.py."""

from __future__ import annotations

import gzip
import io
import json
import stat
import struct
import tarfile
import zlib
from pathlib import Path

from tests.conftest import git
from tests.fixture_corpus import add_tar_file, sha256

LATIN1_NAME = b"caf\xe9.py"  # a Latin-1 file name: not UTF-8
UTF8_FLAG = 0x800


def _flushed_block(data: bytes, final: bool = False) -> bytes:
    """`data` as raw deflate blocks ending byte-aligned (a full flush), so blocks concatenate."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush(zlib.Z_FINISH if final else zlib.Z_FULL_FLUSH)


def repeated_deflate(head: bytes, chunk: bytes, times: int, tail: bytes = b"") -> tuple[bytes, int, int]:
    """Raw deflate of head + chunk * times + tail without compressing it all: (stream, crc32, size)."""
    block = _flushed_block(chunk)
    crc = zlib.crc32(head)
    for _ in range(times):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(tail, crc)
    stream = _flushed_block(head) + block * times + _flushed_block(tail, final=True)
    return stream, crc, len(head) + len(chunk) * times + len(tail)


def gzip_repeat(path: Path, head: bytes, chunk: bytes, times: int, tail: bytes = b"") -> Path:
    stream, crc, size = repeated_deflate(head, chunk, times, tail)
    path.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + stream + struct.pack("<II", crc, size & 0xFFFFFFFF))
    return path


def write_zip(path: Path, entries: list[dict]) -> Path:
    """A zip written byte by byte, for what zipfile will not write: raw name bytes with or without
    the UTF-8 flag, a wrong CRC, a symlink entry, a pre-built deflate stream. Each entry: name (bytes),
    data (bytes) or deflate=(stream, crc, size), flags, mode (st_mode), crc (override)."""
    out, central = io.BytesIO(), io.BytesIO()
    for e in entries:
        name = e["name"]
        if "deflate" in e:
            payload, crc, size = e["deflate"]
            method = 8
        else:
            payload, size, method = e["data"], len(e["data"]), 0
            crc = zlib.crc32(payload)
        crc = e.get("crc", crc)
        flags = e.get("flags", 0)
        offset = out.tell()
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, flags, method, 0, 0x21, crc, len(payload), size,
                              len(name), 0) + name + payload)
        mode = e.get("mode", stat.S_IFREG | 0o644)
        central.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 0x0314, 20, flags, method, 0, 0x21, crc, len(payload),
                                  size, len(name), 0, 0, 0, 0, mode << 16, offset) + name)
    cd = central.getvalue()
    start = out.tell()
    out.write(cd + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(cd), start, 0))
    path.write_bytes(out.getvalue())
    return path


def tar_with(path: Path, members: list[tuple[bytes | str, bytes]], mode: str = "w") -> Path:
    """A tar of regular files; bytes names are written as they are (not UTF-8 ones included)."""
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape") as tar:
        for name, data in members:
            if isinstance(name, bytes):
                name = name.decode("utf-8", "surrogateescape")
            add_tar_file(tar, name, data)
    return path


def non_utf8_folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "ok.py").write_bytes(b"x = 1\n")
    with open(bytes(root) + b"/" + LATIN1_NAME, "wb") as f:
        f.write(b"y = 2\n")
    return root


def non_utf8_git_repo(root: Path) -> tuple[Path, str]:
    repo = non_utf8_folder(root)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "names", cwd=repo)
    return repo, git("rev-parse", "HEAD", cwd=repo)


def collision_tar(path: Path) -> Path:
    """A file then a folder of the same name, and a folder then a file."""
    return tar_with(path, [("p/x.py", b"a = 1\n"), ("p/x.py/y.py", b"b = 2\n"),
                           ("q/y/z.py", b"c = 3\n"), ("q/y", b"d = 4\n"), ("ok.py", b"e = 5\n")])


def duplicate_tar(path: Path) -> Path:
    return tar_with(path, [("pkg/a.py", b"first = 1\n"), ("pkg/dup.py", b"one = 1\n"), ("pkg/dup.py", b"two = 2\n"),
                           ("pkg/./dup.py", b"three = 3\n"), ("pkg/b.py", b"b = 1\n")])


def bad_crc_zip(path: Path) -> Path:
    return write_zip(path, [{"name": b"z/good.py", "data": b"g = 1\n"},
                            {"name": b"z/bad.py", "data": b"b = 2\n", "crc": 0xDEADBEEF}])


def bad_name_zips(root: Path) -> tuple[Path, Path]:
    """(flagged UTF-8 with a Latin-1 name, unflagged with a Latin-1 name), each beside a good member."""
    flagged = write_zip(root / "flagged.zip", [{"name": b"ok.py", "data": b"x = 1\n"},
                                               {"name": LATIN1_NAME, "data": b"y = 2\n", "flags": UTF8_FLAG}])
    plain = write_zip(root / "plain.zip", [{"name": b"ok.py", "data": b"x = 1\n"},
                                           {"name": LATIN1_NAME, "data": b"y = 2\n"},
                                           {"name": "né.py".encode(), "data": b"z = 3\n"}])  # UTF-8, no flag
    return flagged, plain


def truncated_targz(path: Path) -> Path:
    """Three members of incompressible bytes; the archive is cut inside the third."""
    import random

    rng = random.Random(0)
    data = [bytes(rng.getrandbits(8) for _ in range(30_000)) for _ in range(3)]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for i, d in enumerate(data):
            add_tar_file(tar, f"t/f{i}.py", d)
    whole = buf.getvalue()
    path.write_bytes(whole[: int(len(whole) * 0.8)])
    return path


def broken_jsonl(path: Path) -> Path:
    good = json.dumps({"repo": "o/r", "path": "a.py", "code": "def f():\n    return 1\n", "language": "python"})
    lines = [
        good.encode(),
        b'{"repo": "o/r", "path": "b.py", "code": "x = \xff\xfe", "language": "python"}',  # not UTF-8
        b'{"repo": "o/r", "path": "c.py", "code": "x = \\ud800", "language": "python"}',  # lone surrogate
        b"[" * 100_000 + b"]" * 100_000,  # nested too deep for any parser
        b'{"repo": "o/r", "code": "x = 1\\n", "language": "python"}',  # no path
        json.dumps({"repo": "o/r", "path": "d.py", "code": "y = 2\n", "language": "python"}).encode(),
    ]
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n", mtime=0))
    return path


def zip_symlink_bomb(path: Path, gib: int = 2) -> Path:
    """A zip whose symlink entry decompresses to `gib` GiB of zeros (a few MB on disk)."""
    deflate = repeated_deflate(b"", bytes(1 << 20), gib << 10)
    return write_zip(path, [{"name": b"p/a.py", "data": b"a = 1\n"},
                            {"name": b"p/link", "deflate": deflate, "mode": stat.S_IFLNK | 0o777}])


def jsonl_giant_line(path: Path, mib: int = 1024) -> Path:
    """A .jsonl.gz whose second line carries `mib` MiB of code (about 1 MB on disk per GiB)."""
    first = json.dumps({"repo": "o/r", "path": "a.py", "code": "a = 1\n", "language": "python"}).encode() + b"\n"
    head = first + b'{"repo": "o/r", "path": "big.py", "language": "python", "code": "'
    last = b'"}\n' + json.dumps({"repo": "o/r", "path": "z.py", "code": "z = 1\n", "language": "python"}).encode() + b"\n"
    return gzip_repeat(path, head, b"a" * (1 << 20), mib, last)


def tar_many_members(path: Path, members: int = 1_000_000) -> Path:
    """A .tar.gz of `members` empty members all named pkg/same.py (512 MB of headers, ~1 MB on disk)."""
    info = tarfile.TarInfo("pkg/same.py")
    info.size, info.mtime = 0, 0
    header = info.tobuf(tarfile.GNU_FORMAT)
    per_chunk = 2048
    assert members % per_chunk == 0
    return gzip_repeat(path, b"", header * per_chunk, members // per_chunk, b"\0" * 1024)


def crafted_origins_sdist(root: Path) -> tuple[Path, str]:
    """An sdist with a `.origins.parquet` claiming its notes.txt is requests/api.py of repository
    `requests`, and a `.snakemake_timestamp` of its own (the names the pipeline used for bookkeeping)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import schemas

    buf = io.BytesIO()
    pq.write_table(pa.table({"location": ["notes.txt", "mod.py"], "repository": ["requests", "requests"],
                             "path": ["requests/api.py", "requests/models.py"], "language": ["python", "python"]},
                            schema=schemas.ORIGINS), buf)
    path = root / "spoof-1.0.tar.gz"
    tar_with(path, [("spoof-1.0/.origins.parquet", buf.getvalue()), ("spoof-1.0/.snakemake_timestamp", b"x"),
                    ("spoof-1.0/notes.txt", b"print('hi')\n"), ("spoof-1.0/mod.py", b"m = 1\n")], mode="w:gz")
    return path, sha256(path)


# A child process runs `python -m pipeline.corpus.fetch` (from `code`, default this checkout) and
# prints its children's peak RSS: the fetch's own, as the wrapper itself stays small.
_PEAK = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
         "r = subprocess.run(sys.argv[1:], stderr=subprocess.PIPE, text=True); "
         "sys.stderr.write(r.stderr); "
         "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t)")


def fetch_peak_rss(spec: dict, limits, tmp: Path, code: Path | None = None, timeout: float = 600,
                   memory_cap_mb: int | None = None) -> tuple[int, float, float, str]:
    """Fetch `spec` in a child process; (exit status, peak RSS in MB, seconds, stderr). Outputs go
    under tmp/rss. `memory_cap_mb` sets the child's address-space limit (a runaway baseline then
    fails with MemoryError instead of taking the machine)."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    out = tmp / "rss"
    cmd = [sys.executable, "-m", "pipeline.corpus.fetch", "--spec", json.dumps(spec), "--limits",
           json.dumps(limits.__dict__), "--cache", str(tmp / "rss-cache"), "--dest", str(out / "tree"),
           "--record", str(out / "record.json"), "--rejects", str(out / "rejects.parquet")]
    if code is None or (Path(code) / "pipeline/corpus/fetch.py").read_text().count("--origins"):
        cmd += ["--origins", str(out / "origins.parquet")]
    env = {**os.environ, "PYTHONPATH": str(code or REPO)}
    prefix = []
    if memory_cap_mb:
        prefix = ["prlimit", f"--as={memory_cap_mb << 20}"]
    res = subprocess.run([*prefix, sys.executable, "-c", _PEAK, *cmd], capture_output=True, text=True,
                         cwd=code or REPO, env=env, timeout=timeout)
    rc, kib, seconds = res.stdout.split()[-3:]
    return int(rc), int(kib) / 1024, float(seconds), res.stderr
