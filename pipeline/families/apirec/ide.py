"""The IDE baseline (the paper measured PyCharm by hand on 500 points): jedi's static completion at
the recommendation point, automated over the points.

Jedi sees the file alone, as text, cut at the point; for a dotted callee the qualifier typed so far
is kept (`os.path.` for `os.path.join`, as a developer would have typed it before the completion
pops up), a bare callee completes from an empty prefix. Completions are mapped to their full names
(jedi's order: its own ranking), classes and functions only. Jedi parses and infers; it never
imports or runs the corpus's code (the project is an empty folder, so no sys.path entry of the
corpus is added, and unsafe extension loading stays off; tests/test_apirec.py checks a file that
writes a marker when run leaves none).
"""

from __future__ import annotations

import logging
import tempfile

log = logging.getLogger("pipeline.families.apirec.ide")

KINDS = ("function", "class")


def complete(text_before: str, written: str, project) -> list[str]:
    """Ranked full names jedi offers at the end of `text_before` + the callee's qualifier."""
    import jedi

    qualifier = written.rsplit(".", 1)[0] + "." if "." in written else ""
    code = text_before + qualifier
    lines = code.split("\n")
    try:
        script = jedi.Script(code=code, project=project)
        completions = script.complete(len(lines), len(lines[-1]))
    except Exception as exc:  # jedi's inference can fail on odd code: no completions
        log.debug("jedi failed: %s", exc)
        return []
    out, seen = [], set()
    for c in completions:
        if c.type in KINDS and c.full_name and c.full_name not in seen:
            seen.add(c.full_name)
            out.append(c.full_name)
    return out


def project():
    """A jedi project rooted in an empty temporary folder (nothing of the corpus on its path)."""
    import jedi

    return jedi.Project(tempfile.mkdtemp(prefix="apirec-jedi-"), load_unsafe_extensions=False,
                        smart_sys_path=False)
