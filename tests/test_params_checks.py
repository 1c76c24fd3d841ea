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
