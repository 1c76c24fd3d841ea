"""Safe materialisation of untrusted trees (archives, folders): nothing escapes the
destination, nothing is executed, and every refused member is recorded."""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int
    max_total_bytes: int
    max_members: int


@dataclass(frozen=True)
class Refusal:
    path: str
    reason: str
    detail: str = ""
    bytes: int | None = None


@dataclass(frozen=True)
class Member:
    """One entry of a tree, whatever its container."""

    name: str  # as stored in the container
    kind: str  # file / dir / symlink / hardlink / special
    size: int
    link_target: str = ""
    open: Callable[[], BinaryIO] | None = None


@dataclass
class Selection:
    """Which members to keep, by glob on the path relative to the tree root."""

    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)

    def keeps(self, rel: str) -> bool:
        if self.include and not any(fnmatchcase(rel, p) for p in self.include):
            return False
        return not any(fnmatchcase(rel, p) for p in self.exclude)


def _clean(name: str) -> tuple[str | None, str]:
    """Normalise a member name; return (relative path, "") or (None, reason)."""
    name = name.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None, "absolute_path"
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None, "parent_traversal"
    return "/".join(parts), ""


def _common_top(members: Iterable[Member]) -> str:
    """The single top-level folder that every member lives under, or "".

    A folder entry at the top (`h11-0.14.0/`, which many sdists list on its own) names that
    folder; only a top-level *file* (or link) means the tree has no common top folder.
    """
    tops = set()
    for m in members:
        rel, _ = _clean(m.name)
        if not rel:
            continue
        head, sep, _ = rel.partition("/")
        tops.add(head if sep or m.kind == "dir" else "")
        if len(tops) > 1:
            return ""
    return next(iter(tops), "")


def materialise(
    members: list[Member],
    dest: Path,
    limits: Limits,
    selection: Selection | None = None,
    strip_top: bool = True,
) -> tuple[list[Refusal], int, int]:
    """Write the regular files of `members` under `dest`.

    Returns (refusals, files written, bytes written). Links are never created:
    a link inside the tree is recorded as `link_internal` (its target is kept
    as the file it is), one leaving the tree as `link_escapes_tree`.
    """
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    selection = selection or Selection()
    top = _common_top(members) if strip_top else ""
    refusals: list[Refusal] = []
    files = total = 0
    for index, m in enumerate(members):
        rel, why = _clean(m.name)
        if rel is None:
            refusals.append(Refusal(m.name, why, bytes=m.size))
            continue
        if top and (rel == top or rel.startswith(top + "/")):
            rel = rel[len(top) + 1 :]
        if not rel or m.kind == "dir":
            continue
        if not selection.keeps(rel):
            continue
        if m.kind in ("symlink", "hardlink"):
            base = posixpath.dirname(rel) if m.kind == "symlink" else ""
            target = posixpath.normpath(posixpath.join(base, m.link_target.replace("\\", "/")))
            if m.link_target.startswith("/") or target == ".." or target.startswith("../"):
                refusals.append(Refusal(rel, "link_escapes_tree", f"-> {m.link_target}"))
            else:
                refusals.append(Refusal(rel, "link_internal", f"-> {m.link_target}"))
            continue
        if m.kind != "file":
            refusals.append(Refusal(rel, "special_file", m.kind))
            continue
        if files >= limits.max_members:
            remaining = sum(1 for x in members[index:] if x.kind == "file")
            refusals.append(Refusal(rel, "member_limit", f"{remaining} more files not extracted"))
            break
        if m.size > limits.max_file_bytes:
            refusals.append(Refusal(rel, "too_large", f"{m.size} > {limits.max_file_bytes}", m.size))
            continue
        if total + m.size > limits.max_total_bytes:
            refusals.append(Refusal(rel, "size_limit", f"total would pass {limits.max_total_bytes}", m.size))
            continue
        out = (dest / rel).resolve()
        if not str(out).startswith(str(dest) + os.sep):  # defence in depth against odd names
            refusals.append(Refusal(rel, "parent_traversal", "resolves outside the destination"))
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        assert m.open is not None
        with m.open() as src, open(out, "wb") as dst:
            written = _copy_capped(src, dst, limits.max_file_bytes)
        if written is None:  # the header lied about the size
            out.unlink()
            refusals.append(Refusal(rel, "too_large", "content longer than its header said"))
            continue
        files += 1
        total += written
    return refusals, files, total


def _copy_capped(src: BinaryIO, dst: BinaryIO, cap: int) -> int | None:
    n = 0
    while chunk := src.read(1 << 20):
        n += len(chunk)
        if n > cap:
            return None
        dst.write(chunk)
    return n


def tar_members(tar: tarfile.TarFile) -> list[Member]:
    out = []
    for info in tar.getmembers():
        if info.isreg():
            kind = "file"
        elif info.isdir():
            kind = "dir"
        elif info.issym():
            kind = "symlink"
        elif info.islnk():
            kind = "hardlink"
        else:
            kind = "special"
        out.append(
            Member(
                info.name,
                kind,
                info.size,
                info.linkname,
                (lambda i=info: tar.extractfile(i)) if kind == "file" else None,
            )
        )
    return out


def zip_members(zf: zipfile.ZipFile) -> list[Member]:
    out = []
    for info in zf.infolist():
        mode = info.external_attr >> 16
        file_type = stat.S_IFMT(mode)  # 0 when the archiver recorded permissions only
        if info.is_dir():
            kind, target = "dir", ""
        elif stat.S_ISLNK(mode):
            kind, target = "symlink", zf.read(info)[:4096].decode("utf-8", "replace")
        elif file_type and file_type != stat.S_IFREG:
            kind, target = "special", ""
        else:
            kind, target = "file", ""
        out.append(Member(info.filename, kind, info.file_size, target, (lambda i=info: zf.open(i)) if kind == "file" else None))
    return out


def extract_archive(path: Path, dest: Path, limits: Limits, selection: Selection | None = None, strip_top: bool = True):
    """Extract a .tar(.gz/.bz2/.xz) or .zip safely; see `materialise`."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            return materialise(zip_members(zf), dest, limits, selection, strip_top)
    try:
        tar = tarfile.open(path, "r:*")
    except tarfile.TarError as exc:
        raise ValueError(f"{path} is neither a zip nor a tar archive: {exc}") from exc
    with tar:
        return materialise(tar_members(tar), dest, limits, selection, strip_top)


def folder_members(root: Path) -> Iterator[Member]:
    """Walk a folder without following links, in sorted order."""
    root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        here = Path(dirpath)
        # links to folders show up in dirnames; report them as links, do not descend
        for name in sorted(filenames + [d for d in dirnames if (here / d).is_symlink()]):
            p = here / name
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                yield Member(rel, "symlink", 0, os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                yield Member(rel, "file", st.st_size, open=lambda p=p: open(p, "rb"))
            else:
                yield Member(rel, "special", 0)
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]


def copy_folder(root: Path, dest: Path, limits: Limits, selection: Selection | None = None):
    """Copy a local folder safely; see `materialise`."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder")
    return materialise(list(folder_members(root)), dest, limits, selection, strip_top=False)


def reset_dir(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
