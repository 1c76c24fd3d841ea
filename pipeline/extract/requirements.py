"""What a distribution declares it needs installed: the required dependencies of its metadata, as top-level
import names. A module of the corpus that imports, at its top level, a distribution that is neither in the
corpus, nor the standard library, nor one of these fails to import wherever its own distribution is installed
without extras: its names are `optional_dependency` (`pipeline.extract.availability`).

Read, never run: the sdist's `PKG-INFO` (`Requires-Dist:`), else `pyproject.toml`'s `[project] dependencies`.
A requirement with an `extra == ...` marker is optional (an extra); any other marker is evaluated on the
pinned interpreter and platform (`importlib-metadata; python_version < "3.10"` is not needed on 3.11). A
distribution's import name is its normalized name (`charset-normalizer` -> `charset_normalizer`) unless
`IMPORT_NAMES` says otherwise (`python-dateutil` -> `dateutil`).
"""

from __future__ import annotations

import email.parser
import re
import tomllib
from pathlib import Path

# distributions whose import name is not their normalized name (the common ones)
IMPORT_NAMES = {"python-dateutil": "dateutil", "pyyaml": "yaml", "beautifulsoup4": "bs4", "pillow": "PIL",
                "scikit-learn": "sklearn", "protobuf": "google", "pyjwt": "jwt", "pyopenssl": "OpenSSL",
                "attrs": "attr", "typing-extensions": "typing_extensions", "importlib-metadata": "importlib_metadata",
                "msgpack-python": "msgpack", "pycryptodome": "Crypto", "python-multipart": "multipart",
                "opencv-python": "cv2", "setuptools": "setuptools", "pywin32": "win32api"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def import_name(distribution: str) -> str:
    key = normalize(distribution)
    return IMPORT_NAMES.get(key, key.replace("-", "_"))


def required(requirement: str) -> str | None:
    """The distribution a requirement line needs here, or None (an extra, or a marker false here)."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    if req.marker is not None:
        if "extra" in str(req.marker):
            return None
        try:
            if not req.marker.evaluate({"extra": ""}):
                return None
        except Exception:  # an undefined marker variable: not judged, not needed
            return None
    return req.name


def declared(root: Path | None) -> frozenset[str]:
    """Top-level import names of the required dependencies declared in `root`'s metadata (empty when none is
    found or it cannot be read)."""
    if root is None:
        return frozenset()
    lines: list[str] = []
    pkg_info = root / "PKG-INFO"
    pyproject = root / "pyproject.toml"
    try:
        if pkg_info.is_file():
            message = email.parser.Parser().parsestr(pkg_info.read_text(encoding="utf-8", errors="replace"))
            lines = message.get_all("Requires-Dist") or []
        elif pyproject.is_file():
            project = tomllib.loads(pyproject.read_text(encoding="utf-8", errors="replace")).get("project") or {}
            lines = [d for d in project.get("dependencies") or [] if isinstance(d, str)]
    except (OSError, ValueError, tomllib.TOMLDecodeError):
        return frozenset()
    return frozenset(import_name(name) for name in map(required, lines) if name)
