"""A source's license (SPDX) and release date, read as data from what was fetched and from its pins.

License: a PyPI sdist's PKG-INFO (`License-Expression`, else a `License` that names a license, else the
`License ::` classifiers, else the fingerprint of its LICENSE/COPYING file), an npm package.json's `license`,
CPython's PSF-2.0, OpenJDK's GPL-2.0-only WITH Classpath-exception-2.0; a params entry's `license:` wins;
`unknown` when none says. Release date: the params entry's `released:` (pinned beside the hash by
`python -m pipeline.corpus refresh`, never looked up at build time), for the JDK its build's `release` file
(JAVA_VERSION_DATE); None (unknown) otherwise. Archives are read, never extracted or executed."""

from __future__ import annotations

import datetime as dt
import email.parser
import email.policy
import json
import re
import tarfile
import zipfile
from pathlib import Path

UNKNOWN = "unknown"
MAX_META_BYTES = 1 << 20  # a PKG-INFO, package.json or LICENSE larger than this is not read
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# An SPDX expression as written: ids (letters, digits, . + -) joined by AND / OR / WITH, parentheses allowed
SPDX_EXPRESSION = re.compile(r"\(?[A-Za-z0-9.+-]+\)?(\s+(AND|OR|WITH)\s+\(?[A-Za-z0-9.+-]+\)?)*")
BUILTIN_LICENSES = {"stdlib": "PSF-2.0", "jdk": "GPL-2.0-only WITH Classpath-exception-2.0"}

# Free-text `License:` values and classifiers that name exactly one SPDX license (lower case). "BSD License" is
# not here: it does not say which BSD; the LICENSE file's fingerprint decides.
ALIASES = {
    "mit": "MIT", "mit license": "MIT", "the mit license": "MIT", "mit-0": "MIT-0", "expat": "MIT",
    "apache 2.0": "Apache-2.0", "apache-2.0": "Apache-2.0", "apache license 2.0": "Apache-2.0",
    "apache license, version 2.0": "Apache-2.0", "apache software license": "Apache-2.0", "apache 2": "Apache-2.0",
    "apache license version 2.0": "Apache-2.0", "asl 2.0": "Apache-2.0",
    "bsd-3-clause": "BSD-3-Clause", "bsd 3-clause": "BSD-3-Clause", "3-clause bsd": "BSD-3-Clause",
    "new bsd": "BSD-3-Clause", "new bsd license": "BSD-3-Clause", "modified bsd": "BSD-3-Clause",
    "bsd-2-clause": "BSD-2-Clause", "bsd 2-clause": "BSD-2-Clause", "simplified bsd": "BSD-2-Clause",
    "isc": "ISC", "isc license": "ISC", "isc license (iscl)": "ISC",
    "psf": "PSF-2.0", "psf-2.0": "PSF-2.0", "python software foundation license": "PSF-2.0",
    "mpl-2.0": "MPL-2.0", "mozilla public license 2.0 (mpl 2.0)": "MPL-2.0",
    "gnu general public license v2 (gplv2)": "GPL-2.0-only", "gnu general public license v3 (gplv3)": "GPL-3.0-only",
    "gnu lesser general public license v3 (lgplv3)": "LGPL-3.0-only",
    "gnu library or lesser general public license (lgpl)": "LGPL-2.0-or-later",
    "the unlicense (unlicense)": "Unlicense", "unlicense": "Unlicense", "0bsd": "0BSD",
    "zlib": "Zlib", "zlib/libpng license": "Zlib",
}


def spdx_of_text(value: str | None) -> str | None:
    """The SPDX id a short free-text license name stands for (None: not a name we can map)."""
    if not value:
        return None
    text = " ".join(value.split())
    key = text.lower().removeprefix("license :: osi approved :: ").removeprefix("license :: ")
    if key in ALIASES:
        return ALIASES[key]
    return None


def fingerprint(text: str) -> str | None:
    """The license a LICENSE/COPYING file's wording is (the clauses each license alone has), else None."""
    t = " ".join(text.split()).lower()
    if "apache license" in t and "version 2.0" in t:
        return "Apache-2.0"
    if "permission is hereby granted, free of charge" in t:
        return "MIT"
    if "permission to use, copy, modify, and/or distribute this software" in t or (
            "permission to use, copy, modify, and distribute this software for any purpose" in t and "isc" in t):
        return "ISC"
    if "redistribution and use in source and binary forms" in t:
        return "BSD-3-Clause" if ("neither the name" in t or "names of its contributors may" in t) else "BSD-2-Clause"
    if "python software foundation license" in t:
        return "PSF-2.0"
    return None


MAX_META_MEMBERS = 20_000  # tar headers read at most for the metadata


def _members(archive: Path) -> dict[str, bytes]:
    """The small top-level metadata members of an sdist or npm tarball (PKG-INFO, package.json, LICENSE*,
    COPYING*), at the archive's top or one folder down, read as bytes; links and large members skipped."""
    wanted = re.compile(r"(?:[^/]+/)?(PKG-INFO|package\.json|(?:LICEN[CS]E|COPYING)[^/]*)")
    out: dict[str, bytes] = {}
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for info in z.infolist():
                    m = wanted.fullmatch(info.filename)
                    if m and not info.is_dir() and info.file_size <= MAX_META_BYTES and m[1] not in out:
                        out[m[1]] = z.read(info)
        else:
            with tarfile.open(archive, "r:*") as tar:
                for seen, info in enumerate(tar):
                    if seen >= MAX_META_MEMBERS:  # metadata sits at the top; a tar keeps every header it reads
                        break
                    m = wanted.fullmatch(info.name.lstrip("./"))
                    if m and info.isreg() and info.size <= MAX_META_BYTES and m[1] not in out:
                        f = tar.extractfile(info)
                        if f is not None:
                            out[m[1]] = f.read(MAX_META_BYTES)
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, ValueError):  # ValueError: undecodable names
        return out
    return out


def bsd_variant(members: dict[str, bytes]) -> str | None:
    """BSD-3-Clause or BSD-2-Clause, from the BSD text in the archive's LICENSE/COPYING files (None: none)."""
    for name in sorted(members):
        if name not in ("PKG-INFO", "package.json"):
            t = " ".join(members[name].decode("utf-8", "replace").split()).lower()
            if "redistribution and use in source and binary forms" in t:
                return "BSD-3-Clause" if ("neither the name" in t or "names of its contributors may" in t) else "BSD-2-Clause"
    return None


def license_of_pkg_info(members: dict[str, bytes]) -> str:
    """An sdist's license from its PKG-INFO (as data), else its LICENSE file's fingerprint; `unknown`."""
    meta = members.get("PKG-INFO")
    classifiers: list[str] = []
    if meta is not None:
        msg = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(meta)
        expression = " ".join(str(msg.get("License-Expression") or "").split())
        if expression and SPDX_EXPRESSION.fullmatch(expression):
            return expression
        named = spdx_of_text(str(msg.get("License") or ""))
        if named:
            return named
        classifiers = [str(c) for c in msg.get_all("Classifier") or [] if str(c).startswith("License ::")]
        mapped_set = {spdx_of_text(c) for c in classifiers} - {None}
        if any(c.endswith(":: BSD License") for c in classifiers):  # which BSD: the LICENSE file's clauses say
            mapped_set |= {bsd_variant(members)} - {None}
        mapped = sorted(mapped_set)
        if len(mapped) == 1:
            return mapped[0]
        if len(mapped) > 1:
            return " OR ".join(mapped)
    for name in sorted(members):
        if name != "PKG-INFO" and name != "package.json":
            found = fingerprint(members[name].decode("utf-8", "replace"))
            if found:
                return found
    return UNKNOWN


def license_of_package_json(members: dict[str, bytes]) -> str:
    """An npm package's `license` (an SPDX expression, or the old `{"type": ...}` object); `unknown`."""
    raw = members.get("package.json")
    if raw is None:
        return UNKNOWN
    try:
        data = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return UNKNOWN
    value = data.get("license") if isinstance(data, dict) else None
    if isinstance(value, dict):
        value = value.get("type")
    if isinstance(value, str) and SPDX_EXPRESSION.fullmatch(value.strip()):
        return value.strip()
    return UNKNOWN


def license_of(spec: dict, archive: Path | None) -> str:
    """The source's license: params `license:` wins, then what the fetched archive says, then the built-ins'."""
    if spec.get("license"):
        return str(spec["license"])
    if spec.get("builtin") in BUILTIN_LICENSES:
        return BUILTIN_LICENSES[spec["builtin"]]
    if archive is None or not archive.is_file() or spec.get("kind") not in ("pypi", "npm"):
        return UNKNOWN  # only an sdist's or npm tarball's own metadata names a license; other archives: params
    members = _members(archive)
    return license_of_package_json(members) if spec.get("kind") == "npm" else license_of_pkg_info(members)


def released_of(spec: dict, pin: dict) -> str | None:
    """The release date (YYYY-MM-DD) of what was fetched: params `released:`, else a JDK's JAVA_VERSION_DATE."""
    value = spec.get("released")
    if isinstance(value, (dt.date, dt.datetime)):
        value = value.isoformat()[:10]
    if value:
        return str(value)
    return pin.get("java_version_date")


def jdk_version_date(src_zip: Path) -> str | None:
    """JAVA_VERSION_DATE from the JDK's `release` file beside lib/ (the build's release date)."""
    release = src_zip.parent.parent / "release"
    if release.is_file():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION_DATE="):
                value = line.split("=", 1)[1].strip().strip('"')
                return value if DATE.fullmatch(value) else None
    return None


def allowed(license_: str, allow: list[str] | None) -> bool:
    """corpus.licenses.allow: None or absent keeps every source; else the license (or, for an OR expression,
    one of its alternatives) must be listed."""
    if allow is None:
        return True
    if license_ in allow:
        return True
    return any(part.strip("() ") in allow for part in re.split(r"\s+OR\s+", license_)) if " OR " in license_ else False
