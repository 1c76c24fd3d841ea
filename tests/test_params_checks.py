"""Issue 24 item 10: duplicates refused, cross-references checked, every family block validated
whether or not the family is enabled (pipeline.config.validate, as the Snakefile runs it)."""

from __future__ import annotations

import pytest

from pipeline.config import ParamsError, normalised, validate
from tests.conftest import default_params


@pytest.mark.parametrize("edit, needle", [
    (lambda p: p["codesyntax"].update(variants=["plain", "plain"]), "codesyntax.variants: the value 'plain' is listed twice"),
    (lambda p: p["codesyntax"].update(ks=[1, 3, 3]), "codesyntax.ks: the value 3 is listed twice"),
    (lambda p: p["manifest"].update(exclude=["vendor/*", "vendor/*"]), "manifest.exclude: the value 'vendor/*'"),
    (lambda p: p["models"]["zoo"].append(dict(p["models"]["zoo"][0])), "models.zoo: two entries have the same name"),
    (lambda p: p["apirec"]["domains"].update(sklearn="ml"),
     "apirec.domains: 'sklearn' not among the corpus.sources names"),
    (lambda p: p["idbench"].update(dataset="idbnch"), "idbench.dataset: 'idbnch' not among the datasets names"),
    (lambda p: (p["codesyntax"].update(variants=["plain"]), p["codesyntax"]["inference"].update(variant="with_newlines")),
     "codesyntax.inference.variant: 'with_newlines' not among the codesyntax.variants"),
    # a family that is not enabled: its block is still checked (schema and references)
    (lambda p: (p.update(families=["apiquiz"]), p["probing"].update(classes="many")), "probing.classes"),
    (lambda p: (p.update(families=["apiquiz"]), p["apirec"]["domains"].update(nope="x")), "apirec.domains: 'nope'"),
])
def test_bad_params_are_refused_naming_the_key(edit, needle):
    params = default_params()
    edit(params)
    with pytest.raises(ParamsError, match=needle.replace("(", r"\(").replace("*", r"\*")):
        validate(params)


def test_an_overlay_drops_a_default_domain_with_null():
    params = default_params()
    params["corpus"]["sources"] = [s for s in params["corpus"]["sources"] if s["name"] != "requests"]
    with pytest.raises(ParamsError, match="sets each of these to null"):
        validate(params)
    params["apirec"]["domains"]["requests"] = None
    validate(params)
    assert "requests" not in normalised(params)["apirec"]["domains"]


def test_the_shipped_params_pass():
    validate(default_params())


# issue 37 item E: every input params.yaml names is checked at planning, one line naming the key


def test_wrong_types_of_top_level_keys_are_refused_before_anything_reads_them():
    params = default_params()
    params["families"] = "apiquiz"  # was read letter by letter
    with pytest.raises(ParamsError, match=r"^params\.yaml families: .apiquiz. is not of type .array.; list them"):
        validate(params)
    params = default_params()
    params["manifest"] = "all"
    with pytest.raises(ParamsError, match=r"^params\.yaml manifest: 'all' is not of type 'object'"):
        validate(params)


def _inputs_case(tmp_path, edit):
    from pipeline.config import check_inputs

    params = default_params()
    params["corpus"]["sources"] = [s for s in params["corpus"]["sources"] if s["kind"] != "local"]
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "a.csv").write_text("x\n")
    import hashlib

    params["datasets"] = [{"name": "d", "kind": "local", "path": "ds",
                           "files": {"a.csv": hashlib.sha256(b"x\n").hexdigest()}}]
    edit(params)
    check_inputs(params, dataset_bases=[tmp_path], workdir=tmp_path)


@pytest.mark.parametrize("edit, needle", [
    (lambda p: p["corpus"]["sources"].append({"name": "mine", "kind": "local", "path": "nope"}),
     r"corpus\.sources\[mine\]\.path: 'nope' does not exist"),
    (lambda p: p["corpus"]["sources"].append({"name": "j", "kind": "jsonl", "path": "nope.jsonl"}),
     r"corpus\.sources\[j\]\.path: 'nope.jsonl' does not exist"),
    (lambda p: p["corpus"]["sources"].append({"name": "j", "kind": "jsonl", "path": "ds/a.csv", "sha256": "1" * 64}),
     r"corpus\.sources\[j\]\.sha256: .*a\.csv has sha256 [0-9a-f]{64}, not the pinned 1{64}"),
    (lambda p: p["datasets"][0].update(path="elsewhere"), r"datasets\[d\]\.path: 'elsewhere' not found"),
    (lambda p: p["datasets"][0]["files"].update({"a.csv": "0" * 64}),
     r"datasets\[d\]\.files\['a\.csv'\]: .*a\.csv has sha256 [0-9a-f]{64}, not the pinned 0{64}"),
    (lambda p: p["datasets"][0]["files"].update({"b.csv": "0" * 64}), r"datasets\[d\]\.files\['b\.csv'\]: .* is missing"),
    (lambda p: p["corpus"]["sources"].append({"name": "g", "kind": "git", "url": "ext::sh -c id", "commit": "0" * 40}),
     r"corpus\.sources\[g\]\.url: .*transport::address"),
    (lambda p: p["corpus"]["sources"].append({"name": "g", "kind": "git", "url": "no/repo", "commit": "0" * 40}),
     r"corpus\.sources\[g\]\.url: the repository 'no/repo' does not exist here"),
])
def test_inputs_named_in_params_are_checked_at_planning(tmp_path, edit, needle):
    with pytest.raises(ParamsError, match=r"^params\.yaml " + needle):
        _inputs_case(tmp_path, edit)


def test_good_inputs_and_remote_urls_pass(tmp_path):
    _inputs_case(tmp_path, lambda p: p["corpus"]["sources"].extend([
        {"name": "g1", "kind": "git", "url": "https://example.org/r.git", "commit": "0" * 40},
        {"name": "g2", "kind": "git", "url": "git@example.org:o/r.git", "commit": "0" * 40},
        {"name": "g3", "kind": "git", "url": "ds", "commit": "0" * 40}]))


def test_a_yaml_error_in_a_configfile_names_file_line_and_column(tmp_path):
    """Snakemake reads --configfile before the Snakefile: snakemake_startup.py (the venv's .pth) wraps its loader."""
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import REPO

    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 1\nfamilies: [apiquiz\ncorpus: {}\n")
    res = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "--directory", str(REPO / ".test"),
                          "--configfile", str(bad), "--cores", "1"], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    out = res.stdout + res.stderr  # Snakemake prints this error on stdout
    assert res.returncode != 0
    assert f"{bad}:3:7: YAML syntax error: expected ',' or ']'" in out, out[-2000:]
    assert "snakemake_startup.py" not in out and "Traceback" not in out
