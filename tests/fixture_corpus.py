"""A small corpus built entirely on this machine: one source of every kind, with the
bad inputs a real corpus has. Used by the manifest, determinism and DVC tests."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

from tests.conftest import git

LATIN1 = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1")
NOT_UTF8 = b"x = '\xff\xfe not utf-8'\n"
SETUP_PY = b"open('EXECUTED', 'w').write('corpus code ran')\n"  # must never run


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pin_archive(spec: dict) -> dict:
    """A `local` source naming a zip or tar, pinned by its sha256 as every archive must be (a folder, a missing
    path, a pinned or knowingly unpinned entry: as given)."""
    path = Path(spec.get("path", ""))
    if spec.get("kind") == "local" and spec.get("path") and path.is_file() and not ({"sha256", "unpinned"} & set(spec)):
        return {**spec, "sha256": sha256(path)}
    return spec


def add_tar_file(tar: tarfile.TarFile, name: str, data: bytes, **attrs) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    for k, v in attrs.items():
        setattr(info, k, v)
    tar.addfile(info, io.BytesIO(data))


def make_git_repo(root: Path) -> tuple[Path, str]:
    """Two commits; the first is the pinned one."""
    repo = root / "gitrepo"
    (repo / "pkg").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "mod.py").write_text("import os\n\n\ndef f():\n    return os.getcwd()\n")
    (repo / "Main.java").write_text("class Main {\n  int f() { return 1; }\n}\n")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    pinned = git("rev-parse", "HEAD", cwd=repo)
    (repo / "pkg" / "mod.py").write_text("changed after the pin\n")
    (repo / "pkg" / "later.py").write_text("x = 2\n")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "two", cwd=repo)
    return repo, pinned


def make_sdist_index(root: Path) -> tuple[str, str]:
    """A PEP 503 simple index on disk serving demo-1.0.tar.gz; returns (index url, sha256)."""
    files = root / "files"
    files.mkdir(parents=True)
    sdist = files / "demo-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        add_tar_file(tar, "demo-1.0/PKG-INFO", b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        add_tar_file(tar, "demo-1.0/setup.py", SETUP_PY)
        add_tar_file(tar, "demo-1.0/src/demo/__init__.py", b"from .core import run\n")
        add_tar_file(tar, "demo-1.0/src/demo/core.py", b"def run():\n    return 1\n")
    digest = sha256(sdist)
    page = root / "simple" / "demo"
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        f'<html><body><a href="../../files/demo-1.0.tar.gz#sha256={digest}">demo-1.0.tar.gz</a></body></html>')
    return (root / "simple").as_uri(), digest


def make_zip(root: Path) -> Path:
    path = root / "zipproj.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in [
            ("zipproj/a.py", b"def a():\n    return 1\n"),
            ("zipproj/b.py", b"def a():\n    return 1\n"),  # same content as a.py: a duplicate
            ("zipproj/latin.py", LATIN1),
            ("zipproj/notutf8.py", NOT_UTF8),
            ("zipproj/nul.py", b"x = 1\x00\n"),
            ("zipproj/big.py", b"#" * 5000 + b"\n"),
            ("zipproj/README.md", b"# readme\n"),
            ("zipproj/tool", b"#!/usr/bin/env python3\nprint('hi')\n"),
            ("zipproj/web/app.js", b"console.log(1);\n"),
        ]:
            info = zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0))
            zf.writestr(info, data)
    return path


def make_evil_tar(root: Path) -> tuple[str, str]:
    path = root / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        add_tar_file(tar, "ok/good.py", b"y = 1\n")
        add_tar_file(tar, "ok/../../escape.py", b"bad = 1\n")
        add_tar_file(tar, "/abs.py", b"bad = 1\n")
        add_tar_file(tar, "ok/link", b"", type=tarfile.SYMTYPE, linkname="../../../etc/passwd")
    return path.as_uri(), sha256(path)


def make_jsonl(root: Path) -> Path:
    path = root / "functions.jsonl.gz"
    lines = [
        json.dumps({"repo": "octo/alpha", "path": "src/util.py", "code": "def g(x):\n    return x + 1\n",
                    "language": "python", "func_name": "g"}),
        json.dumps({"repo": "octo/beta", "path": "src/Util.java", "code": "int h() { return 2; }\n",
                    "language": "java"}),
        "{not json",
    ]
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def build_sources(root: Path) -> list[dict]:
    """Every source kind, all local. Returns the corpus.sources entries."""
    root.mkdir(parents=True, exist_ok=True)
    repo, pinned = make_git_repo(root)
    index, sdist_sha = make_sdist_index(root)
    evil_url, evil_sha = make_evil_tar(root)
    return [
        {"name": "gitsrc", "kind": "git", "url": repo.as_uri(), "commit": pinned},
        {"name": "demo", "kind": "pypi", "package": "demo==1.0", "sha256": sdist_sha, "index_url": index},
        pin_archive({"name": "zipsrc", "kind": "local", "path": str(make_zip(root))}),
        {"name": "dump", "kind": "jsonl", "path": str(make_jsonl(root))},
        {"name": "evil", "kind": "url", "url": evil_url, "sha256": evil_sha},
    ]


def npm_tarball(files: dict[str, bytes], top: str = "package") -> bytes:
    """An npm package tarball (`<top>/` prefix, as `npm pack` writes), byte-identical for the same
    files: members in the given order, mtime 0, the gzip header's mtime 0."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            add_tar_file(tar, f"{top}/{name}", data, mode=0o644)
    return gzip.compress(buf.getvalue(), compresslevel=9, mtime=0)


def npm_integrity(data: bytes) -> str:
    """The registry's `dist.integrity` of a tarball."""
    import base64

    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def publish_npm(registry: Path, name: str, version: str, files: dict[str, bytes]) -> str:
    """Put `name@version` into a folder laid out as an npm registry's tarball URLs
    (`<registry>/<name>/-/<basename>-<version>.tgz`); returns its integrity."""
    data = npm_tarball(files)
    path = registry / name / "-" / f"{name.rsplit('/', 1)[-1]}-{version}.tgz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return npm_integrity(data)


def lifecycle_package_json(name: str, version: str, marker: Path) -> bytes:
    """A package.json whose lifecycle scripts would each leave a marker file if anything ran them."""
    scripts = {hook: f"node -e \"require('fs').writeFileSync('{marker}.{hook}', 'ran')\" && touch {marker}"
               for hook in ("preinstall", "install", "postinstall", "prepare")}
    return json.dumps({"name": name, "version": version, "main": "index.js", "scripts": scripts}, indent=2).encode()


# The npm package of the checked-in .test configuration (.test/npm, a registry folder): rebuilt
# byte-identically from these files by tests/test_corpus_npm.py. Its postinstall would leave a file
# if anything ran it.
TEST_NPM_PACKAGE = ("tiny-js", "1.0.0")
TEST_NPM_FILES = {
    "package.json": json.dumps({"name": "tiny-js", "version": "1.0.0", "main": "lib/index.js",
                                "scripts": {"postinstall": "node -e \"require('fs').writeFileSync('EXECUTED', 'x')\""}},
                               indent=2).encode() + b"\n",
    "lib/index.js": b"""'use strict';
const { Counter } = require('./counter');

/** Count the words of a text; returns the most frequent ones first. */
function topWords(text, limit = 10) {
  const counter = new Counter();
  for (const word of text.toLowerCase().split(/\\W+/)) {
    if (word.length > 0) counter.add(word);
  }
  return counter.mostCommon(limit);
}

module.exports = { topWords, Counter };
""",
    "lib/counter.js": b"""'use strict';

class Counter {
  #counts = new Map();

  add(key, amount = 1) {
    const previous = this.#counts.get(key) || 0;
    this.#counts.set(key, previous + amount);
    return this;
  }

  get size() {
    return this.#counts.size;
  }

  mostCommon(limit) {
    const entries = [...this.#counts.entries()];
    entries.sort(([leftKey, left], [rightKey, right]) => right - left || leftKey.localeCompare(rightKey));
    return entries.slice(0, limit).map(([key, count]) => ({ key, count }));
  }
}

module.exports = { Counter };
""",
    "test/counter.test.js": b"const assert = require('assert');\nassert.ok(true);\n",
}


# Issue 50's first-time corpus in small: three sdists whose split once fell on code that is not the library.
ANYCORPUS = {
    # setuptools' bootstrap at the sdist root beside a one-module library: its metadata says `xmlt`
    "xmlt": {
        "PKG-INFO": "Metadata-Version: 1.1\nName: xmlt\nVersion: 1.0\n",
        "xmlt.egg-info/top_level.txt": "xmlt\n",
        "setup.py": "from ez_setup import use_setuptools\nuse_setuptools()\n",
        "ez_setup.py": ("import os\nimport sys\nimport shutil\n\n\ndef use_setuptools(version='0.6'):\n"
                        "    here = os.path.dirname(os.path.abspath(__file__))\n    sys.path.insert(0, here)\n"
                        "    shutil.rmtree(os.path.join(here, 'build'), ignore_errors=True)\n"
                        "    return os.path.exists(os.path.join(here, 'setuptools'))\n"),
        "xmlt.py": ("import io\nimport re\nimport json\nfrom xml.parsers import expat\n\n"
                    "_SPACE = re.compile(r'\\s+')\n\n\n"
                    "def parse(text):\n    \"\"\"Parse XML text into a dict of element names to their text.\"\"\"\n"
                    "    parser = expat.ParserCreate()\n    out = {}\n    parser.CharacterDataHandler = lambda data: "
                    "out.setdefault('text', []).append(data.strip())\n    parser.Parse(text, True)\n    return out\n\n\n"
                    "def unparse(data):\n    \"\"\"Write a dict back as indented JSON text.\"\"\"\n"
                    "    buffer = io.StringIO()\n    json.dump(data, buffer, indent=2, sort_keys=True)\n"
                    "    return normalise(buffer.getvalue())\n\n\n"
                    "def normalise(text):\n    \"\"\"Collapse the whitespace of a text.\"\"\"\n"
                    "    return _SPACE.sub(' ', text).strip().lower()\n"),
    },
    # its test suite inside the package (`webenc/tests.py`), two library modules, and a generator script in the package
    # (`webenc/mklabels.py`, as webencodings' `mklabels.py` regenerates its `labels.py`: a `__main__` guard, imported
    # and named by nothing)
    "webenc": {
        "PKG-INFO": "Metadata-Version: 1.1\nName: webenc\nVersion: 1.0\n",
        "webenc.egg-info/top_level.txt": "webenc\n",
        "setup.py": "from setuptools import setup\nsetup(name='webenc')\n",
        "webenc/__init__.py": ("import codecs\nimport re\n\nfrom .labels import LABELS\n\n\n"
                               "def lookup(label):\n    \"\"\"Find the codec named by an encoding label.\"\"\"\n"
                               "    name = LABELS.get(label.strip().lower())\n"
                               "    return codecs.lookup(name) if name else None\n\n\n"
                               "def decode(data, label='utf-8'):\n    \"\"\"Decode bytes with the codec of a label.\"\"\"\n"
                               "    codec = lookup(label)\n    text, _ = codec.decode(data)\n"
                               "    return re.sub(r'^\\ufeff', '', text)\n"),
        "webenc/labels.py": ("# generated by mklabels.py: do not edit\nimport os\nimport collections\n\n"
                             "LABELS = collections.OrderedDict([('utf-8', 'utf-8'), ('latin1', 'cp1252')])\n\n\n"
                             "def labels_file(folder):\n    \"\"\"Path of the labels file in a folder.\"\"\"\n"
                             "    return os.path.join(os.path.abspath(folder), 'labels.json')\n\n\n"
                             "def names():\n    \"\"\"Every encoding name, sorted.\"\"\"\n"
                             "    return sorted(set(LABELS.values()), key=str.lower)\n"),
        "webenc/mklabels.py": ("\"\"\"Regenerate the webenc.labels module from the encodings list.\"\"\"\n\n"
                               "import json\nfrom urllib.request import urlopen\n\n\n"
                               "def assert_lower(string):\n    assert string == string.lower()\n    return string\n\n\n"
                               "def generate(url):\n    rows = json.loads(urlopen(url).read().decode('ascii'))\n"
                               "    labels = [(repr(assert_lower(label)), repr(e['name'])) for c in rows\n"
                               "              for e in c['encodings'] for label in e['labels']]\n"
                               "    return ''.join('    %s: %s,\\n' % pair for pair in sorted(labels))\n\n\n"
                               "if __name__ == '__main__':\n    print(generate('http://example.org/encodings.json'))\n"),
        "webenc/tests.py": ("import unittest\n\nfrom webenc import decode, lookup\n\n\n"
                            "class TestDecode(unittest.TestCase):\n    def test_utf8(self):\n"
                            "        self.assertEqual(decode(b'a'), 'a')\n        self.assertIsNone(lookup('x'))\n"
                            "        self.assertTrue(lookup('utf-8'))\n        self.assertEqual(lookup('UTF-8').name, 'utf-8')\n"),
    },
    # an `__init__.py` of re-exports only, the library's code in its modules
    "csss": {
        "PKG-INFO": "Metadata-Version: 1.1\nName: csss\nVersion: 1.0\n",
        "csss.egg-info/top_level.txt": "csss\n",
        "setup.py": "from setuptools import setup\nsetup(name='csss')\n",
        "csss/__init__.py": ("\"\"\"CSS selectors.\"\"\"\n\nfrom csss.parser import parse, Selector, SelectorError\n"
                             "from csss.xpath import GenericTranslator, HTMLTranslator\n\n"
                             "__all__ = ('parse', 'Selector', 'SelectorError', 'GenericTranslator', 'HTMLTranslator')\n"
                             "VERSION = '1.0'\n__version__ = VERSION\n"),
        "csss/parser.py": ("import re\nimport operator\nfrom collections import namedtuple\n\n"
                           "Token = namedtuple('Token', 'kind value')\n_TOKEN = re.compile(r'[#.]?[\\w-]+|\\s+|[>+~*]')\n\n\n"
                           "class SelectorError(SyntaxError):\n    pass\n\n\n"
                           "class Selector:\n    def __init__(self, tokens):\n        self.tokens = list(tokens)\n\n"
                           "    def specificity(self):\n        \"\"\"Count ids, classes and elements.\"\"\"\n"
                           "        kinds = [t.value[:1] for t in self.tokens]\n"
                           "        return (kinds.count('#'), kinds.count('.'), len(kinds) - kinds.count('#'))\n\n\n"
                           "def tokenize(text):\n    \"\"\"Split a selector into tokens.\"\"\"\n"
                           "    for match in _TOKEN.finditer(text.strip()):\n"
                           "        yield Token(match.group().strip() and 'name' or 'space', match.group())\n\n\n"
                           "def parse(text):\n    \"\"\"Parse a selector group into selectors.\"\"\"\n"
                           "    parts = [p for p in re.split(r'\\s*,\\s*', text.strip()) if p]\n"
                           "    if not parts:\n        raise SelectorError(repr(text))\n"
                           "    return sorted((Selector(tokenize(p)) for p in parts), key=operator.methodcaller('specificity'))\n"),
        "csss/xpath.py": ("import re\nimport functools\n\nfrom csss.parser import parse\n\n\n"
                          "class GenericTranslator:\n    def css_to_xpath(self, css, prefix='descendant-or-self::'):\n"
                          "        \"\"\"Translate a selector to an XPath expression.\"\"\"\n"
                          "        selectors = parse(css)\n"
                          "        return ' | '.join(prefix + self.xpath(s) for s in selectors)\n\n"
                          "    def xpath(self, selector):\n"
                          "        names = [t.value for t in selector.tokens if t.value.strip()]\n"
                          "        return '/'.join(re.sub(r'^[#.]', '', n).lower() for n in names)\n\n\n"
                          "class HTMLTranslator(GenericTranslator):\n    @functools.lru_cache(maxsize=64)\n"
                          "    def xpath(self, selector):\n        return super().xpath(selector).lower().strip()\n"),
    },
}


def make_anycorpus(root: Path) -> list[dict]:
    """Issue 50's fixture corpus under `root`: three local sdists (`ANYCORPUS`); their source entries."""
    sources = []
    for name, files in ANYCORPUS.items():
        for rel, text in files.items():
            (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / name / rel).write_text(text)
        sources.append({"name": name, "kind": "local", "path": str(root / name), "license": "MIT",
                        "released": "2024-01-01"})
    return sources
