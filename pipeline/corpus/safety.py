"""Safe materialisation of untrusted trees (archives, folders): nothing escapes the
destination, nothing is executed, and every refused member is recorded.

Archives are read as streams, one member at a time: a member's bytes are read only up to the
caps (`Limits`), headers are read only up to the entry cap (`entry_cap`), so memory stays
bounded whatever the archive claims (a zip or tar bomb cannot exhaust it). A name that is not UTF-8, two members
with the same path, a file and a folder of the same name, a member whose bytes do not check
out, an archive that breaks off: each is a reject row, never an exception that stops the run and
never a file silently overwritten or dropped.
"""

from __future__ import annotations

import errno
import io
import lzma
import os
import posixpath
import shutil
import stat
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

# Snakemake writes this into every directory output; a corpus file of that name at the top of a
# tree would be overwritten by it, so it is refused (`reserved_name`).
RESERVED_NAMES = frozenset({".snakemake_timestamp"})
# Longest symlink target read from a zip entry (a link's "content" is its target).
MAX_LINK_TARGET = 4096
# Entries of any kind (files, folders, links, refused members) read before an archive is cut off:
# this multiple of limits.max_members.
ENTRY_FACTOR = 2
# What reading a member's or an archive's bytes raises when they are corrupt or cut short.
READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError,
               NotImplementedError, RuntimeError)


class ArchiveError(ValueError):
    """The file is not an archive this module can read (or its directory is unreadable)."""


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int
    max_total_bytes: int
    max_members: int

    @property
    def entry_cap(self) -> int:
        return ENTRY_FACTOR * self.max_members


@dataclass(frozen=True)
class Refusal:
    path: str
    reason: str
    detail: str = ""
    bytes: int | None = None
    # a cap's row (member_limit): how many members were kept and how many were seen in all (kept + the
    # ones past the cap, counted without being read), so no loss is uncounted
    kept: int | None = None
    seen: int | None = None


@dataclass(frozen=True)
class Member:
    """One entry of a tree, whatever its container."""

    name: str  # as stored in the container (bytes that are not UTF-8 as surrogate escapes)
    # file / dir / symlink / hardlink / special; corrupt (this entry's bytes), broken (the archive from
    # here on), too_many (a zip listing more entries than are read)
    kind: str
    size: int
    link_target: str = ""
    open: Callable[[], BinaryIO] | None = None
    detail: str = ""  # why a corrupt or broken entry is so


@dataclass
class Selection:
    """Which members to keep, by glob on the path relative to the tree root."""

    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)

    def keeps(self, rel: str) -> bool:
        if self.include and not any(fnmatchcase(rel, p) for p in self.include):
            return False
        return not any(fnmatchcase(rel, p) for p in self.exclude)


def shown(name: str) -> str:
    """A name as a reject row shows it: bytes that are not UTF-8 and control characters escaped
    (`caf\\xe9.py`), so every row is valid UTF-8 on one line."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no byte produced
        return name.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    text = raw.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}" for c in text)


def name_problem(rel: str) -> str:
    """Why a path cannot be a corpus file name ("" when it can): names must be UTF-8 (the
    manifest, Parquet and the warehouse hold text) without control characters."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return "the name is not UTF-8"
    if any(ord(c) < 32 or ord(c) == 127 for c in rel):
        return "control character in the name"
    return ""


def clean_member_name(name: str) -> tuple[str | None, str]:
    """Normalise a member name; return (relative path, "") or (None, reason). A backslash is refused
    (`backslash_in_name`): a folder separator to Windows tools, a plain character to POSIX ones, so
    the same name would be a folder or a file depending on who reads it."""
    if "\\" in name:
        return None, "backslash_in_name"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None, "absolute_path"
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None, "parent_traversal"
    return "/".join(parts), ""


class _NoCommonTop(Exception):
    """The top folder guessed from the first members is not shared by a later one."""


def materialise(
    members: Iterable[Member] | Callable[[], Iterator[Member]],
    dest: Path,
    limits: Limits,
    selection: Selection | None = None,
    strip_top: bool = True,
) -> tuple[list[Refusal], int, int]:
    """Write the regular files of `members` under `dest`.

    `members`: a list, or a function returning a fresh stream of them (an archive read once,
    member by member). Returns (refusals, files written, bytes written). Links are never created:
    a link inside the tree is recorded as `link_internal` (its target is kept as the file it is),
    one leaving the tree as `link_escapes_tree`. With `strip_top`, the single top-level folder
    every member lives under is left out; it is guessed from the first member and, in the rare
    case a later member proves the guess wrong, the tree is written again without stripping.
    """
    stream = members if callable(members) else (lambda: iter(members))
    if strip_top:
        try:
            return _materialise(stream(), dest, limits, selection or Selection(), None)
        except _NoCommonTop:
            reset_dir(dest)
    return _materialise(stream(), dest, limits, selection or Selection(), "")


def _head(rel: str, kind: str) -> str:
    head, sep, _ = rel.partition("/")
    return head if sep or kind == "dir" else ""  # a top-level file (or link): no common top folder


def _materialise(members: Iterator[Member], dest: Path, limits: Limits, selection: Selection,
                 top: str | None) -> tuple[list[Refusal], int, int]:
    """One pass; `top` None guesses the top folder (raising _NoCommonTop when a member has another)."""
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    refusals: list[Refusal] = []
    files = total = entries = 0
    written: set[str] = set()  # files, by path under dest
    folders: set[str] = set()  # the folders those files made
    cap: tuple[str, str] | None = None  # (first member past a cap, which cap): from there on members are counted only
    past = 0  # files past the cap (their headers read, their bytes not)
    try:
        for m in members:
            entries += 1
            if cap is None and entries > limits.entry_cap:
                cap = (shown(m.name), f"more than {limits.entry_cap} entries (limits.max_members x {ENTRY_FACTOR}; "
                       "folders, links and refusals included)")
            if m.kind in ("broken", "too_many"):
                reason = "corrupt_archive" if m.kind == "broken" else "member_limit"
                refusals.append(Refusal(shown(m.name), reason, m.detail[:300], seen=m.size if m.kind == "too_many"
                                        else None, kept=0 if m.kind == "too_many" else None))
                break
            if cap is not None:
                past += _counted(m, top, selection)
                continue
            rel, why = clean_member_name(m.name)
            if rel is None:
                refusals.append(Refusal(shown(m.name), why, bytes=m.size))
                continue
            if top is None and rel:
                top = _head(rel, m.kind)
                if not top:
                    raise _NoCommonTop
            if top and rel:
                if _head(rel, m.kind) != top:
                    raise _NoCommonTop
                rel = rel[len(top) + 1 :]
            if not rel or m.kind == "dir":
                continue
            problem = name_problem(rel)
            if problem:
                refusals.append(Refusal(shown(rel), "bad_name", problem, m.size))
                continue
            if not selection.keeps(rel):
                continue
            if rel in RESERVED_NAMES:
                refusals.append(Refusal(rel, "reserved_name", "the pipeline's own bookkeeping name", m.size))
                continue
            if m.kind in ("symlink", "hardlink"):
                base = posixpath.dirname(rel) if m.kind == "symlink" else ""
                target = posixpath.normpath(posixpath.join(base, m.link_target.replace("\\", "/")))
                if m.link_target.startswith("/") or target == ".." or target.startswith("../"):
                    refusals.append(Refusal(rel, "link_escapes_tree", shown(f"-> {m.link_target}")[:300]))
                else:
                    refusals.append(Refusal(rel, "link_internal", shown(f"-> {m.link_target}")[:300]))
                continue
            if m.kind == "corrupt":
                refusals.append(Refusal(rel, "corrupt_member", m.detail[:300], m.size))
                continue
            if m.kind != "file":
                refusals.append(Refusal(rel, "special_file", m.kind))
                continue
            if rel in written:
                refusals.append(Refusal(rel, "duplicate_member", "an earlier member has this path (the first is kept)",
                                        m.size))
                continue
            ancestors = [rel[:i] for i, c in enumerate(rel) if c == "/"]
            if rel in folders or any(a in written for a in ancestors):
                refusals.append(Refusal(rel, "path_collision", "a file and a folder of this name (the first is kept)",
                                        m.size))
                continue
            if files >= limits.max_members:
                cap = (rel, f"{limits.max_members} files extracted (limits.max_members)")
                past = 1
                continue
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
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                dst = open(out, "xb")
            except OSError as exc:
                if exc.errno not in (errno.ENAMETOOLONG, errno.EILSEQ, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                    raise
                refusals.append(Refusal(rel, "bad_name", f"cannot be a file here: {exc.strerror}", m.size))
                continue
            assert m.open is not None
            try:
                with dst:
                    written_bytes, problem = _copy_capped(m.open, dst, limits.max_file_bytes)
            except OSError as exc:  # a full disk: name the file (a write() error names none)
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or exc.filename:
                    raise
                raise OSError(exc.errno, exc.strerror, str(out)) from exc
            if problem:
                out.unlink()
                refusals.append(Refusal(rel, "too_large" if written_bytes is None else "corrupt_member", problem, m.size))
                continue
            files += 1
            total += written_bytes
            written.add(rel)
            folders.update(ancestors)
    finally:
        close = getattr(members, "close", None)
        if close:
            close()
    if cap is not None:
        refusals.append(Refusal(cap[0], "member_limit", f"{cap[1]}: kept {files} of {files + past} files seen; the "
                                f"other {past} were counted, not extracted (raise corpus.limits.max_members to keep them)",
                                kept=files, seen=files + past))
    return refusals, files, total


def _counted(m: Member, top: str | None, selection: Selection) -> int:
    """1 when a member past a cap is a file the source would have kept, else 0 (its bytes are not read)."""
    rel, _ = clean_member_name(m.name)
    if m.kind != "file" or not rel:
        return 0
    if top:
        rel = rel[len(top) + 1 :] if rel.startswith(top + "/") else rel
    return int(selection.keeps(rel))


def _copy_capped(open_src: Callable[[], BinaryIO], dst: BinaryIO, cap: int) -> tuple[int | None, str]:
    """Copy at most `cap` bytes: (bytes, "") or (None, why) past the cap or (n, why) on a read error."""
    n = 0
    try:
        with open_src() as src:
            while chunk := src.read(1 << 20):
                n += len(chunk)
                if n > cap:
                    return None, "content longer than its header said"
                dst.write(chunk)
    except READ_ERRORS as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        return n, f"{type(exc).__name__}: {exc}"[:300]
    return n, ""


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    if info.issym():
        return "symlink"
    if info.islnk():
        return "hardlink"
    return "special"


def _open_tar(path: Path, label: str) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:*")
    except READ_ERRORS as exc:
        raise ArchiveError(f"{label} is neither a zip nor a tar archive: {exc}") from exc


def tar_members(path: Path, label: str = "") -> Iterator[Member]:
    """The members of a tar (any compression), read one header at a time; a file's bytes must be
    read before the next member is asked for. Raises ArchiveError when `path` is no tar at all."""
    yield from _tar_stream(_open_tar(path, label or path.name), label or path.name)


def _tar_stream(tar: tarfile.TarFile, label: str) -> Iterator[Member]:
    with tar:
        while True:
            try:
                info = tar.next()
            except READ_ERRORS as exc:
                yield Member(label, "broken", 0, detail=f"unreadable after this point: {type(exc).__name__}: {exc}")
                return
            if info is None:
                return
            tar.members.clear()  # TarFile keeps every header it has read; one at a time is all we need
            kind = _tar_kind(info)
            yield Member(info.name, kind, info.size, info.linkname,
                         (lambda i=info: tar.extractfile(i)) if kind == "file" else None)


def _zip_directory(path: Path) -> tuple[int, int, int]:
    """(start, size, entries) of a zip's central directory, from its end record (zip64 too)."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        length = f.tell()
        tail_at = max(0, length - (22 + 65535))
        f.seek(tail_at)
        tail = f.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            raise ArchiveError(f"{path.name}: no zip end record")
        _, _, _, _, entries, size, start, _ = struct.unpack("<4s4H2LH", tail[at : at + 22])
        end_at = tail_at + at
        locator = tail[at - 20 : at] if at >= 20 else b""
        if locator.startswith(b"PK\x06\x07"):  # zip64: the real counts are in the zip64 end record
            (z64_at,) = struct.unpack("<Q", locator[8:16])
            f.seek(z64_at)
            rec = f.read(56)
            if len(rec) == 56 and rec.startswith(b"PK\x06\x06"):
                entries, size, start = struct.unpack("<Q", rec[32:40])[0], *struct.unpack("<2Q", rec[40:56])
                end_at = z64_at
        return max(0, end_at - size), size, entries


def _bad_utf8_flags(path: Path) -> set[int]:
    """File offsets of the flag bytes of central-directory entries flagged UTF-8 whose names are not."""
    start, size, _ = _zip_directory(path)
    with open(path, "rb") as f:
        f.seek(start)
        cd = f.read(size)
    out, at = set(), 0
    while at + 46 <= len(cd) and cd[at : at + 4] == b"PK\x01\x02":
        flags, = struct.unpack("<H", cd[at + 8 : at + 10])
        n, extra, comment = struct.unpack("<3H", cd[at + 28 : at + 34])
        name = cd[at + 46 : at + 46 + n]
        if flags & 0x800:
            try:
                name.decode("utf-8")
            except UnicodeDecodeError:
                out.add(start + at + 9)  # bit 11 lives in the high byte
        at += 46 + n + extra + comment
    return out


class _ClearedFlags(io.RawIOBase):
    """A zip file read with the UTF-8 flag cleared on the given entries, so that zipfile decodes
    their names as bytes (they become `bad_name` rejects) instead of failing on the whole archive."""

    def __init__(self, path: Path, offsets: set[int]):
        self._f = open(path, "rb")
        self._offsets = sorted(offsets)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._f.seek(pos, whence)

    def tell(self) -> int:
        return self._f.tell()

    def readinto(self, buffer) -> int:
        at = self._f.tell()
        n = self._f.readinto(buffer)
        for off in self._offsets:
            if at <= off < at + n:
                buffer[off - at] &= 0xF7
        return n

    def close(self) -> None:
        self._f.close()
        super().close()


def _open_zip(path: Path, limits: Limits, label: str) -> zipfile.ZipFile | Member:
    """The open zip, or a `too_many` member when it lists more than `limits.entry_cap` entries
    (refused before its directory is read). Raises ArchiveError for no zip at all."""
    try:
        entries = _zip_directory(path)[2]
        if entries > limits.entry_cap:
            return Member(label, "too_many", entries, detail=f"the zip lists {entries} entries, more than the "
                          f"{limits.entry_cap} read (limits.max_members x {ENTRY_FACTOR}); nothing extracted")
        try:
            return zipfile.ZipFile(path)
        except UnicodeDecodeError:
            return zipfile.ZipFile(_ClearedFlags(path, _bad_utf8_flags(path)))
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, struct.error) as exc:
        raise ArchiveError(f"{label}: unreadable zip: {exc}") from exc


def zip_members(path: Path, limits: Limits, label: str = "") -> Iterator[Member]:
    """The members of a zip. Names without the UTF-8 flag are read as UTF-8 when they are (as
    unzip does), else kept as bytes (a `bad_name` reject); a name flagged UTF-8 that is not is
    a reject too, not an unreadable archive."""
    zf = _open_zip(path, limits, label or path.name)
    if isinstance(zf, Member):
        yield zf
        return
    yield from _zip_stream(zf)


def _zip_name(info: zipfile.ZipInfo) -> str:
    if info.flag_bits & 0x800:
        return info.orig_filename
    raw = info.orig_filename.encode("cp437")  # zipfile decoded the stored bytes as cp437
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape")


def _zip_stream(zf: zipfile.ZipFile) -> Iterator[Member]:
    with zf:
        for info in zf.infolist():
            name, mode = _zip_name(info), info.external_attr >> 16
            file_type = stat.S_IFMT(mode)  # 0 when the archiver recorded permissions only
            if info.is_dir():
                yield Member(name, "dir", 0)
            elif stat.S_ISLNK(mode):
                try:  # a link's content is its target: read no more of it than a target can be
                    with zf.open(info) as f:
                        target = f.read(MAX_LINK_TARGET).decode("utf-8", "replace")
                except READ_ERRORS as exc:
                    yield Member(name, "corrupt", info.file_size, detail=f"{type(exc).__name__}: {exc}")
                    continue
                yield Member(name, "symlink", info.file_size, target)
            elif file_type and file_type != stat.S_IFREG:
                yield Member(name, "special", info.file_size)
            else:
                yield Member(name, "file", info.file_size, open=lambda i=info: zf.open(i))


def extract_archive(path: Path, dest: Path, limits: Limits, selection: Selection | None = None, strip_top: bool = True,
                    label: str = ""):
    """Extract a .tar(.gz/.bz2/.xz) or .zip safely; see `materialise`. Raises ArchiveError when
    `path` is neither; an archive that breaks off later is a `corrupt_archive` reject (its path:
    `label`, default the file's name)."""
    label = label or path.name
    if zipfile.is_zipfile(path):
        probe = _open_zip(path, limits, label)  # no zip at all: ArchiveError, before anything is written
        if isinstance(probe, zipfile.ZipFile):
            probe.close()
        return materialise(lambda: zip_members(path, limits, label), dest, limits, selection, strip_top)
    _open_tar(path, label).close()
    return materialise(lambda: tar_members(path, label), dest, limits, selection, strip_top)


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
    return materialise(lambda: folder_members(root), dest, limits, selection, strip_top=False)


def reset_dir(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
