"""apiquiz (INK, "Pop Quiz!"): cloze quizzes on the fully qualified names of the APIs the
corpus calls.

Every unique resolved call FQN (builtins left out: nobody writes `builtins.len(`) gives
quizzes in five settings: call `a.b.c(`, import `from a.b import c`, alias (the aliasing
import the corpus uses for it, then the call through the alias), adversarial alias (the same
with aliases the corpus uses for other modules) and nl (the first docstring sentence of the
API's definition as a comment, then the call). Each dot-separated level is masked whole, and,
when the first tokenizer splits it, also at its first and at its last token. Quizzes carry a
candidate list for ranking and, per tokenizer, whether the answer is a single token.
"""

from __future__ import annotations

import argparse
import importlib.resources
import logging
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from pipeline import schemas as core_schemas
from pipeline.core import ids, logs
from pipeline.families.apiquiz import schemas
from pipeline.io import read_parquet, write_json, write_parquet

log = logging.getLogger("pipeline.families.apiquiz.generate")

SETTINGS = ("call", "import", "alias", "adversarial_alias", "nl")
PACKAGE_PREFIX = "package:"


def load_tokenizer(spec: str):
    """`package:<module>/<folder>` (a model folder shipped inside an installed package), a local
    folder, or a hub id already in the local cache. Never downloads."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    if spec.startswith(PACKAGE_PREFIX):
        package, _, folder = spec[len(PACKAGE_PREFIX) :].partition("/")
        spec = str(importlib.resources.files(package).joinpath(folder))
    return AutoTokenizer.from_pretrained(spec)


@dataclass(frozen=True)
class Api:
    fqn: str
    category: str
    uses: int
    seen: bool
    alias: tuple[str, str, str] | None  # (alias, what it denotes, "import" or "from")


@dataclass(frozen=True)
class Template:
    """One code text and the spans of its maskable levels."""

    setting: str
    api: Api
    text: str
    spans: tuple[tuple[int, int, int], ...]  # (level index, start, end)
    alias: str | None = None
    context: str | None = None


def collect_apis(usages: pa.Table) -> list[Api]:
    calls = usages.filter(pc.and_(pc.is_in(usages.column("kind"), pa.array(["call", "method"])),
                                  pc.is_valid(usages.column("fqn"))))
    cols = {c: calls.column(c).to_pylist() for c in ("fqn", "category", "split", "alias", "import_target", "import_statement")}
    category: dict[str, Counter] = defaultdict(Counter)
    aliases: dict[str, Counter] = defaultdict(Counter)
    uses: Counter = Counter()
    seen = set()
    for fqn, cat, split, alias, target, statement in zip(*cols.values()):
        if fqn.startswith("builtins.") or "." not in fqn:
            continue
        uses[fqn] += 1
        category[fqn][cat] += 1
        if split == "train":
            seen.add(fqn)
        if alias and target and fqn.startswith(target + "."):
            aliases[fqn][(alias, target, "import" if statement.startswith("import ") else "from")] += 1
    out = []
    for fqn in sorted(uses):
        cat = min(category[fqn].items(), key=lambda kv: (-kv[1], kv[0]))[0]
        alias = min(aliases[fqn].items(), key=lambda kv: (-kv[1], kv[0]))[0] if aliases[fqn] else None
        out.append(Api(fqn, cat, uses[fqn], fqn in seen, alias))
    return out


def _level_spans(fqn: str, offset: int, first_level: int = 0) -> list[tuple[int, int, int]]:
    spans, pos = [], offset
    for i, part in enumerate(fqn.split(".")):
        spans.append((first_level + i, pos, pos + len(part)))
        pos += len(part) + 1
    return spans


def call_template(api: Api, context: str | None = None) -> Template:
    head = f"# {context}\n" if context else ""
    return Template("nl" if context else "call", api, f"{head}{api.fqn}(", tuple(_level_spans(api.fqn, len(head))),
                    context=context)


def import_template(api: Api) -> Template:
    module, name = api.fqn.rsplit(".", 1)
    text = f"from {module} import {name}"
    spans = _level_spans(module, 5) + [(module.count(".") + 1, len(text) - len(name), len(text))]
    return Template("import", api, text, tuple(spans))


def alias_template(api: Api, alias: str, setting: str) -> Template:
    """`import a.b as K` / `from a import b as K`, then `K.rest(`; only levels after the alias are masked."""
    _, target, kind = api.alias
    if kind == "import":
        statement = f"import {target} as {alias}"
    else:
        parent, name = target.rsplit(".", 1)
        statement = f"from {parent} import {name} as {alias}"
    rest = api.fqn[len(target) + 1 :]
    call = f"{statement}\n{alias}."
    spans = _level_spans(rest, len(call), target.count(".") + 1)
    return Template(setting, api, f"{call}{rest}(", tuple(spans), alias=alias)


def adversarial_aliases(api: Api, pool: list[tuple[str, str]], k: int, seed: int) -> list[str]:
    """k aliases the corpus uses for other modules, drawn with a seed per API (stable when other APIs change)."""
    own_alias, target, _ = api.alias
    names = set(api.fqn.split("."))
    choices = sorted({a for a, t in pool if t != target and a != own_alias and a not in names})
    rng = ids.seeded_rng(seed, api.fqn)
    return sorted(rng.sample(choices, min(k, len(choices))))


def docstring_index(inventory: pa.Table) -> tuple[dict[str, str], dict[tuple[str, str], str | None]]:
    """Docstring sentence by fqn, and by (library, name) where that is unambiguous (re-exports:
    `requests.get` is defined as `requests.api.get`)."""
    by_fqn, by_name = {}, {}
    for fqn, lib, qual, doc in zip(*(inventory.column(c).to_pylist() for c in ("fqn", "library", "qualname", "doc"))):
        if not doc or not qual:
            continue
        by_fqn[fqn] = doc
        key = (lib, qual)
        by_name[key] = None if key in by_name and by_name[key] != doc else doc
    return by_fqn, by_name


def nl_context(api: Api, by_fqn, by_name) -> str | None:
    if api.fqn in by_fqn:
        return by_fqn[api.fqn]
    return by_name.get((api.fqn.split(".", 1)[0], api.fqn.rsplit(".", 1)[1]))


def token_spans(tokenizer, texts: list[str]) -> list[list[tuple[int, int]]]:
    """Character offsets of each token (special tokens left out), whitespace trimmed."""
    out = []
    batch = 2048
    for i in range(0, len(texts), batch):
        chunk = texts[i : i + batch]
        enc = tokenizer(chunk, add_special_tokens=False, return_offsets_mapping=True)
        for text, offsets in zip(chunk, enc["offset_mapping"]):
            spans = []
            for s, e in offsets:
                while s < e and text[s].isspace():
                    s += 1
                if s < e:
                    spans.append((s, e))
            out.append(spans)
    return out


def overlapping(spans: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    return [(max(s, start), min(e, end)) for s, e in spans if s < end and e > start]


def quiz_id(setting: str, api: str, level: int, position: str, alias: str | None) -> str:
    return ids.stable_id("apiquiz", setting, api, level, position, alias or "")


def candidate_pools(apis: list[Api], split_token) -> dict[tuple[int, str], list[str]]:
    """Per (level index, mask position): the names seen there, most frequent first (by APIs)."""
    counts: dict[tuple[int, str], Counter] = defaultdict(Counter)
    for api in apis:
        for i, part in enumerate(api.fqn.split(".")):
            counts[(i, "whole")][part] += 1
            first, last = split_token(part)
            counts[(i, "first")][first] += 1
            counts[(i, "last")][last] += 1
    return {k: [n for n, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))] for k, c in counts.items()}


def candidates(pool: list[str], gold: str, cap: int) -> list[str]:
    top = pool[:cap]
    if gold in top:
        return top
    return pool[: cap - 1] + [gold]


def generate(usages: pa.Table, inventory: pa.Table, tokenizers: list[str], settings: list[str], max_candidates: int,
             n_adversarial: int, seed: int) -> tuple[pa.Table, pa.Table, dict]:
    apis = collect_apis(usages)
    toks = [load_tokenizer(spec) for spec in tokenizers]
    primary = toks[0]

    def split_token(name: str) -> tuple[str, str]:
        spans = token_spans(primary, [name])[0] or [(0, len(name))]
        return name[spans[0][0] : spans[0][1]], name[spans[-1][0] : spans[-1][1]]

    by_fqn, by_name = docstring_index(inventory)
    # module aliases (`import x.y as k`): the paper's adversarial aliases "used in other modules"
    alias_pool = sorted({a.alias[:2] for a in apis if a.alias and a.alias[2] == "import"})
    templates: list[Template] = []
    for api in apis:
        if "call" in settings:
            templates.append(call_template(api))
        if "import" in settings:
            templates.append(import_template(api))
        if api.alias:
            if "alias" in settings:
                templates.append(alias_template(api, api.alias[0], "alias"))
            if "adversarial_alias" in settings:
                templates += [alias_template(api, a, "adversarial_alias")
                              for a in adversarial_aliases(api, alias_pool, n_adversarial, seed)]
        if "nl" in settings:
            context = nl_context(api, by_fqn, by_name)
            if context:
                templates.append(call_template(api, context))
    texts = [t.text for t in templates]
    spans_by_tok = [token_spans(tok, texts) for tok in tqdm(toks, desc="tokenize", disable=None, file=sys.stderr)]
    pools = candidate_pools(apis, split_token)

    quizzes, flags = [], []
    for ti, t in enumerate(tqdm(templates, desc="quizzes", unit="text", disable=None, file=sys.stderr)):
        n_levels = t.api.fqn.count(".") + 1
        primary_spans = spans_by_tok[0][ti]
        for level, start, end in t.spans:
            pieces = overlapping(primary_spans, start, end) or [(start, end)]
            masks = [("whole", start, end)]
            if len(pieces) > 1:
                masks = [("first", start, pieces[0][1]), ("last", pieces[-1][0], end), ("whole", start, end)]
            for position, a, b in masks:
                answer = t.text[a:b]
                qid = quiz_id(t.setting, t.api.fqn, level, position, t.alias)
                quizzes.append({
                    "quiz_id": qid, "api": t.api.fqn, "library": t.api.fqn.split(".", 1)[0],
                    "category": t.api.category, "setting": t.setting, "level": level, "n_levels": n_levels,
                    "level_name": t.text[start:end], "mask_position": position, "alias": t.alias,
                    "context": t.context, "text": t.text[:a] + schemas.MASK + t.text[b:], "prefix": t.text[:a],
                    "suffix": t.text[b:], "answer": answer,
                    "candidates": candidates(pools[(level, position)], answer, max_candidates),
                    "seen": t.api.seen, "uses": t.api.uses,
                })
                for spec, spans in zip(tokenizers, spans_by_tok):
                    inside = overlapping(spans[ti], a, b)
                    flags.append({"quiz_id": qid, "tokenizer": spec, "answer_tokens": len(inside),
                                  "single_token": len(inside) == 1 and (a, b) in spans[ti]})
    quizzes.sort(key=lambda q: q["quiz_id"])
    flags.sort(key=lambda f: (f["quiz_id"], f["tokenizer"]))
    qt = pa.Table.from_pylist(quizzes, schemas.QUIZZES)
    ft = pa.Table.from_pylist(flags, schemas.QUIZ_TOKENS)
    return qt, ft, summary(apis, qt, ft, tokenizers)


def summary(apis: list[Api], quizzes: pa.Table, flags: pa.Table, tokenizers: list[str]) -> dict:
    def counts(col):
        return dict(sorted(Counter(col.to_pylist()).items()))

    single = flags.filter(flags.column("single_token"))
    all_single = Counter(single.column("quiz_id").to_pylist())
    every = {q for q, n in all_single.items() if n == len(tokenizers)}
    setting_of = dict(zip(quizzes.column("quiz_id").to_pylist(), quizzes.column("setting").to_pylist()))
    return {
        "apis": len(apis),
        "apis_seen": sum(a.seen for a in apis),
        "apis_with_alias": sum(a.alias is not None for a in apis),
        "apis_by_category": dict(sorted(Counter(a.category for a in apis).items())),
        "quizzes": quizzes.num_rows,
        "quizzes_by_setting": counts(quizzes.column("setting")),
        "quizzes_by_mask_position": counts(quizzes.column("mask_position")),
        "quizzes_seen": int(pc.sum(quizzes.column("seen")).as_py() or 0),
        "single_token_quizzes_by_tokenizer": counts(single.column("tokenizer")),
        "single_token_in_every_tokenizer_by_setting": dict(sorted(Counter(setting_of[q] for q in every).items())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.families.apiquiz.generate",
        description="Generate the apiquiz (INK) cloze quizzes from the extracted call FQNs: call, import, alias, "
        "adversarial alias and NL-context settings, each level masked whole and at its first/last token, with "
        "candidate lists and per-tokenizer single-token flags.",
    )
    ap.add_argument("--usages", required=True, type=Path, help="data/extract/usages.parquet")
    ap.add_argument("--inventory", required=True, type=Path, help="data/extract/inventory.parquet")
    ap.add_argument("--tokenizers", nargs="+", required=True,
                    help="model folders, hub ids in the local cache, or package:<module>/<folder>; the first "
                    "decides the first/last-token masks")
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    ap.add_argument("--max-candidates", type=int, required=True)
    ap.add_argument("--adversarial-aliases", type=int, required=True, help="aliases per adversarial quiz group")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--quizzes", required=True, type=Path)
    ap.add_argument("--tokens", required=True, type=Path, help="per-tokenizer answer token counts")
    ap.add_argument("--metrics", required=True, type=Path)
    args = ap.parse_args(argv)
    logs.setup()
    quizzes, flags, stats = generate(read_parquet(args.usages, core_schemas.USAGES),
                                     read_parquet(args.inventory, core_schemas.INVENTORY), args.tokenizers,
                                     args.settings, args.max_candidates, args.adversarial_aliases, args.seed)
    write_parquet(quizzes, args.quizzes, schemas.QUIZZES)
    write_parquet(flags, args.tokens, schemas.QUIZ_TOKENS)
    write_json(stats, args.metrics)
    log.info("apiquiz: %d APIs, %d quizzes %s", stats["apis"], stats["quizzes"], stats["quizzes_by_setting"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
