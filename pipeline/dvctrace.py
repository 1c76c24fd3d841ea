"""Which params.yaml keys each Snakemake rule reads, traced while Snakemake plans the whole DAG.

`python -m pipeline.dvctrace --configfile params.yaml [--directory D]` runs a dry run of every job
(`snakemake -n --forceall`) in this process with `config` replaced by a dict that records every key
read, and prints JSON: per rule, the keys its directives read (`params`, `input`, `output`, ... at
definition and, for functions, per job), the keys read outside any rule (module-level code such as
the zoo parse), and every planned job (rule, outputs, params). `pipeline.dvcgen` turns this into
dvc.yaml. A read of a list reads the whole list (DVC names params by dotted keys, never by index);
a dict used whole (serialised, iterated, compared) is a read of that dict's key. A key read but not written
(`.get(key, default)`) is listed under `absent` with the files whose code holds its default.

Directives that never change a result (`threads`, `resources`, `log`, `conda`, ...) are reported
apart: Snakemake does not rerun a job when they change, and neither should DVC.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _repo_relative(path: str) -> str:
    """A path that leaves the working directory (``../..``) named relative to the repository instead."""
    if not path.startswith(".."):
        return path
    return os.path.relpath(Path(path).resolve(), REPO)


# directives whose values Snakemake never compares when it decides what to rerun
NEUTRAL_DIRECTIVES = ("threads", "resources", "log", "conda", "message", "benchmark", "priority", "group",
                      "localrule", "retries", "envmodules", "container", "containerized", "handover",
                      "default_target_rule", "cache_rule", "shadow", "docstring", "norun")
# Snakemake's rule directives (Workflow methods a rule's compiled code calls as decorators)
DIRECTIVES = ("input", "output", "params", "register_wildcard_constraints", "name", "shellcmd", "script",
              "notebook", "wrapper", "cwl", "template_engine", "rule_pathvars", *NEUTRAL_DIRECTIVES)


class Reads:
    """The key paths read, by context: (rule or None, directive)."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.by_context: dict[tuple[str | None, str, str | None], set[str]] = {}
        self.paused = 0
        self.rule: str | None = None  # the rule being defined or evaluated
        # keys read but not written in the params file (`.get(key, default)`, `key in ...`): key -> the files
        # whose code supplied the default (a .smk file, a module under pipeline/)
        self.absent: dict[str, set[str]] = {}
        self.pending_absent: dict[str, set[str]] = {}

    def record(self, path: str) -> None:
        if self.paused or (self.rule is None and not _from_workflow_code()):
            return
        self.pending.add(path or ALL)

    def record_absent(self, path: str, depth: int = 2) -> None:
        """A read of a key the params file does not write: the key is read (as `record`), and the file of the
        code that asked for it (`depth` frames up) holds the default it gets instead."""
        if self.paused or (self.rule is None and not _from_workflow_code()):
            return
        self.record(path)
        self.pending_absent.setdefault(path, set()).add(sys._getframe(depth).f_code.co_filename)

    def flush(self, rule: str | None, directive: str, job: str | None = None) -> None:
        """Attribute the pending reads to a rule's directive (at its definition, or for one job)."""
        if self.pending:
            self.by_context.setdefault((rule, directive, job), set()).update(self.pending)
        if directive not in NEUTRAL_DIRECTIVES:  # a worker count's default changes no result
            for path, files in self.pending_absent.items():
                self.absent.setdefault(path, set()).update(files)
        self.pending = set()
        self.pending_absent = {}

    @contextlib.contextmanager
    def pause(self):
        self.paused += 1
        try:
            yield
        finally:
            self.paused -= 1


READS = Reads()
ALL = "*"  # the whole config read (e.g. passed as one param)


def _from_workflow_code() -> bool:
    """Whether a read outside any rule comes from the workflow's code (not Snakemake's own config hash)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.endswith((".smk", "Snakefile")) or ("/pipeline/" in name and not name.endswith("dvctrace.py")):
            return True
        frame = frame.f_back
    return False


def _key(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


class TrackedDict(dict):
    """A config dict that records every key read (nested dicts are tracked too)."""

    def __init__(self, data: dict, path: str = "") -> None:
        super().__init__({k: TrackedDict(v, _key(path, k)) if isinstance(v, dict) else v for k, v in data.items()})
        self._path = path

    def _read(self, key, value):
        if not isinstance(value, dict):
            READS.record(_key(self._path, key))
        return value

    def _whole(self) -> None:
        READS.record(self._path)

    def __getitem__(self, key):
        return self._read(key, super().__getitem__(key))

    def __setitem__(self, key, value):
        # a block the workflow replaces (pipeline.config.normalised drops null entries of `apirec.domains`) stays
        # tracked: the reads of the new dict are reads of that key
        super().__setitem__(key, TrackedDict(plain(value), _key(self._path, key)) if isinstance(value, dict) else value)

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return self[key]
        READS.record_absent(_key(self._path, key))  # an absent key read: adding it changes the result
        return default

    def __contains__(self, key):
        if not super().__contains__(key):
            READS.record_absent(_key(self._path, key))
            return False
        return True

    def __iter__(self):
        self._whole()
        return super().__iter__()

    def items(self):
        self._whole()
        return super().items()

    def values(self):
        self._whole()
        return super().values()

    def keys(self):
        self._whole()
        return super().keys()

    def __len__(self):
        self._whole()
        return super().__len__()

    def __eq__(self, other):
        self._whole()
        return super().__eq__(other)

    __hash__ = None

    def __repr__(self):
        self._whole()
        return super().__repr__()

    def copy(self):
        self._whole()
        return plain(self)

    def __reduce__(self):
        self._whole()
        return (dict, (plain(self),))


def plain(value):
    """The value without tracking (nothing recorded)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _install(reads: Reads) -> dict:
    """Patch Snakemake's workflow and rules so that reads are attributed to rules and directives."""
    import snakemake.api  # noqa: F401  (imports workflow and rules in the order they need)
    from snakemake import rules as sm_rules
    from snakemake import workflow as sm_workflow

    Workflow = sm_workflow.Workflow
    state = {"rule": None, "jobs": {}}

    original_configfile = Workflow.configfile

    def configfile(self, fp):
        state["workflow"] = self
        original_configfile(self, fp)
        self.globals["config"] = TrackedDict(plain(self.globals["config"]))

    Workflow.configfile = configfile

    original_rule = Workflow.rule

    def rule(self, name=None, lineno=None, snakefile=None, checkpoint=False):
        reads.flush(None, "global")
        state["rule"] = reads.rule = name or f"<unnamed:{lineno}>"
        decorate = original_rule(self, name=name, lineno=lineno, snakefile=snakefile, checkpoint=checkpoint)

        def wrapped(ruleinfo):
            placeholder = state["rule"]
            reads.flush(placeholder, "definition")
            final = ruleinfo.name or name
            if final and final != placeholder:
                for (r, d, j) in [c for c in reads.by_context if c[0] == placeholder]:
                    reads.by_context.setdefault((final, d, j), set()).update(reads.by_context.pop((r, d, j)))
            state["rule"] = reads.rule = None
            return decorate(ruleinfo)

        return wrapped

    Workflow.rule = rule

    def directive(method_name):
        original = getattr(Workflow, method_name)

        def patched(self, *args, **kwargs):
            reads.flush(state["rule"], method_name)
            return original(self, *args, **kwargs)

        return patched

    for d in DIRECTIVES:
        if hasattr(Workflow, d):
            setattr(Workflow, d, directive(d))

    def job_hook(method_name, directive_name):
        original = getattr(sm_rules.Rule, method_name)

        def patched(self, *args, **kwargs):
            reads.flush(state["rule"], "global")
            outer = state["rule"]
            wildcards = args[0] if args else kwargs.get("wildcards")
            job = json.dumps(dict(wildcards.items()) if wildcards is not None else {}, sort_keys=True)
            state["rule"] = reads.rule = self.name
            try:
                result = original(self, *args, **kwargs)
            finally:
                reads.flush(self.name, directive_name, job)
                state["rule"] = reads.rule = outer
            with reads.pause():
                record = state["jobs"].setdefault((self.name, job), {"rule": self.name, "wildcards": json.loads(job)})
                if method_name == "expand_params":
                    values = result[0] if isinstance(result, tuple) else result
                    for value in values:  # a config dict passed whole as a param (e.g. the warehouse's run_params)
                        if isinstance(value, TrackedDict):
                            reads.by_context.setdefault((self.name, "params", job), set()).add(value._path or ALL)
                    record["params"] = [_param_text(p) for p in values]
                elif method_name == "expand_input":
                    # a path outside the working directory (a source file named relative to it) is named
                    # relative to the repository, so the trace names no checkout wherever it ran
                    record["input"] = sorted(_repo_relative(str(f)) for f in result[0])
                elif method_name == "expand_output":
                    record["output"] = sorted(str(f) for f in result[0])
            return result

        setattr(sm_rules.Rule, method_name, patched)

    job_hook("expand_input", "input")
    job_hook("expand_params", "params")
    job_hook("expand_resources", "resources")
    job_hook("expand_output", "output")

    from pipeline import config as pipeline_config

    # Validation reads every block (params are checked whether or not a rule reads them): no job depends on
    # that. normalised() only drops null entries of mappings an overlay may null; the keys it walks are the
    # family blocks' references, which the rules that use them read themselves.
    for name in ("validate", "normalised"):
        original = getattr(pipeline_config, name)

        def paused(config, *args, _original=original, **kwargs):
            with reads.pause():
                return _original(config, *args, **kwargs)

        setattr(pipeline_config, name, paused)
    # The inputs params.yaml names (local paths, datasets, their hashes) are checked where a real run plans, not
    # here: the trace plans in a temporary folder that holds none of them, and no job depends on the check.
    pipeline_config.check_inputs = lambda config, *args, **kwargs: None

    # A `path:` model's content digest (a param of external_model) is not computed while tracing: the trace
    # plans in a temporary folder, once per perturbation. The digest is a value, never a params key; the
    # folder itself is the job's input, which pipeline.dvcgen makes a dep of the stage.
    from pipeline.models import weights

    weights.planned = lambda name, value: "sha256:<traced>"
    return state


def _param_text(value) -> str:
    with READS.pause():
        return json.dumps(plain(value), sort_keys=True, default=str) if not callable(value) else "<callable>"


def trace(configfile: str, directory: str | None = None, snakefile: str | None = None,
          targets: list[str] | None = None) -> dict:
    """Run Snakemake's dry run of every job in this process and return what each rule read."""
    state = _install(READS)
    from snakemake.cli import main

    argv = ["all", *(targets or []), "-n", "--forceall", "--quiet", "all", "--cores", "1", "--configfile", configfile]
    if directory:
        argv += ["--directory", directory]
    if snakefile:
        argv += ["--snakefile", snakefile]
    with contextlib.redirect_stdout(sys.stderr):
        try:
            main(argv)
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise RuntimeError(f"snakemake {' '.join(argv)} failed (exit {exc.code})") from None
    READS.flush(None, "global")
    rules: dict[str, dict] = {}
    jobs = {key: {**job, "reads": {}} for key, job in state["jobs"].items()}
    global_reads: set[str] = set()
    for (rule, directive, job), paths in READS.by_context.items():
        if rule is None:
            global_reads |= paths
        elif job is None:
            rules.setdefault(rule, {}).setdefault(directive, set()).update(paths)
        elif (rule, job) in jobs:
            jobs[(rule, job)]["reads"].setdefault(directive, set()).update(paths)
    workflow = state["workflow"]
    info = {}
    for r in workflow.rules:
        info[r.name] = {"snakefile": os.path.relpath(str(r.snakefile), workflow.basedir),
                        "shell": r.shellcmd or "",
                        "definition": {d: sorted(p) for d, p in sorted(rules.get(r.name, {}).items())}}
    # the files holding each absent key's default, named relative to the workflow's folder (a file elsewhere, a
    # family package outside the repository, is not a dep DVC can name portably: left out)
    base = Path(workflow.basedir).resolve()
    absent = {}
    for key, files in sorted(READS.absent.items()):
        named = [(Path(f) if Path(f).is_absolute() else base / f).resolve() for f in files if not f.startswith("<")]
        absent[key] = sorted({str(f.relative_to(base)) for f in named if f.is_relative_to(base) and f.is_file()})
    return {"rules": info, "global": sorted(global_reads), "absent": absent,
            "jobs": [{**job, "reads": {d: sorted(p) for d, p in sorted(job["reads"].items())}}
                     for _, job in sorted(jobs.items())]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.dvctrace", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", default="params.yaml", help="the params file Snakemake reads")
    parser.add_argument("--directory", help="Snakemake's working directory (e.g. .test)")
    parser.add_argument("--snakefile", help="the Snakefile (default: the one in the working directory)")
    parser.add_argument("targets", nargs="*", help="target rules planned besides `all` (rules with no output)")
    args = parser.parse_args(argv)
    json.dump(trace(args.configfile, args.directory, args.snakefile, args.targets), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
