"""Zoo entries and the one loader: package, trained, random, hub and path models all
come back as a `LoadedModel` through the same `Auto*.from_pretrained` call."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import torch

from pipeline.models.entries import ModelEntry, parse_zoo  # noqa: F401  (parse_zoo re-exported: the zoo API)
# where an installed package's model lies (re-exported: the zoo API); pipeline.models.locate imports no model code
from pipeline.models.locate import WEIGHT_FILES, ModelUnavailable, package_model_dir  # noqa: F401

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEFAULT_MODELS_DIR = Path("data/models")


def hub_offline() -> bool:
    """True when the hub must not be contacted: HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE set,
    or its host does not accept a TCP connection within a second (no retry loops when there is no network)."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return True
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        with socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout=1.0):
            return False
    except OSError:
        return True


def go_offline() -> None:
    """This process contacts the hub no more: HF_HUB_OFFLINE set, also in huggingface_hub's constants (read once at
    its import). `local_files_only` alone is not enough: huggingface_hub still fetches its agent registry from the
    endpoint while building request headers, a connection (and a wait) to a hub known to be unreachable."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import huggingface_hub.constants

    huggingface_hub.constants.HF_HUB_OFFLINE = True


def fetch_hint(hub_id: str, revision: str | None) -> str:
    rev = f" --revision {revision}" if revision else ""
    return (f"hub model {hub_id!r} is not in the local Hugging Face cache and the hub cannot be reached "
            f"(HF_HUB_OFFLINE set or no network). On a machine with network run `hf download {hub_id}{rev}` "
            f"(older huggingface_hub: `huggingface-cli download {hub_id}{rev}`), copy the cache folder "
            f"(~/.cache/huggingface/hub by default) here and point HF_HUB_CACHE (or HF_HOME) at it; "
            f"or download to a folder and use `path:<folder>` as the source.")


@dataclass(frozen=True)
class Location:
    """Where `from_pretrained` finds a model: a local folder, or a hub id with its download options."""

    target: str
    local_files_only: bool = True
    revision: str | None = None


def locate(entry: ModelEntry, models_dir: Path = DEFAULT_MODELS_DIR) -> Location:
    if entry.kind == "package":
        return Location(str(package_model_dir(entry.value)))
    if entry.pipeline_made:  # trained, random twins, converted GGUF files
        folder = Path(models_dir) / entry.name
        if not (folder / "config.json").is_file():
            raise ModelUnavailable(f"{entry.name}: {folder} holds no model yet; build it with `snakemake {folder}`")
        return Location(str(folder))
    if entry.kind == "path":
        folder = Path(entry.value).expanduser()
        if not (folder / "config.json").is_file():
            raise ModelUnavailable(f"{entry.name}: {folder} is not a Hugging Face model folder (no config.json)")
        return Location(str(folder))
    offline = hub_offline()
    if offline:
        go_offline()
    return Location(entry.hub_id, local_files_only=offline, revision=entry.revision)


def sentinels(tokenizer) -> list[str]:
    """A T5-style tokenizer's sentinels <extra_id_0>, <extra_id_1>, … in number order (transformers 5
    lists them as `extra_special_tokens`, older versions as `additional_special_tokens`); [] if none."""
    names = []
    for attr in ("extra_special_tokens", "additional_special_tokens"):
        try:
            value = getattr(tokenizer, attr, None)
        except AttributeError:  # transformers 5 raises for the old name instead of returning the default
            value = None
        names += list(value.values() if isinstance(value, dict) else value or [])
    found = {int(m.group(1)): n for n in names if (m := re.fullmatch(r"<extra_id_(\d+)>", str(n)))}
    return [found[i] for i in sorted(found)]


def auto_class(family: str):
    import transformers

    return {
        "masked-lm": transformers.AutoModelForMaskedLM,
        "causal-lm": transformers.AutoModelForCausalLM,
        "encoder-decoder": transformers.AutoModelForSeq2SeqLM,
        "encoder-only": transformers.AutoModel,
    }[family]


def pick_device(device: str | None) -> torch.device:
    """auto: cuda when present, else cpu. A named GPU that is not there is refused here, when a job
    loads its model (planning, `snakemake -n`, never needs CUDA)."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (dev.index or 0) >= count:
            raise ModelUnavailable(f"device {device!r} asked for (params.yaml models.device) but this machine has "
                                   f"{count} CUDA device(s); use `auto` (a GPU when present, else the CPU) or `cpu`")
    return dev


def pick_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    """The weights' precision: float32 by default (None); `auto` is bf16 on GPUs that support it, fp16 on
    older ones, fp32 elsewhere; or what the param says. float16 on a CPU is refused (half-precision CPU
    kernels are missing or slow and overflow in LayerNorm goes unnoticed); bfloat16 runs on any device."""
    if dtype is None:
        return torch.float32
    if dtype == "auto":
        if device.type != "cuda":
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of auto, {', '.join(DTYPES)}")
    if dtype == "float16" and device.type == "cpu":
        raise ValueError("dtype float16 on the CPU is refused: use float32 (or bfloat16) there, or run on a GPU "
                         "(params.yaml inference.dtype / models.zoo[].dtype, models.device)")
    return DTYPES[dtype]


@dataclass
class LoadedModel:
    """A model ready for inference, with what later stages need to know about it."""

    entry: ModelEntry
    model: torch.nn.Module
    tokenizer: object
    location: str
    device: torch.device
    dtype: torch.dtype
    card: dict = field(default_factory=dict)
    loading: dict = field(default_factory=dict)  # missing / unexpected checkpoint keys (check_loading)

    @property
    def model_family(self) -> str:
        return self.entry.model_family

    @property
    def name(self) -> str:
        return self.entry.name

    def __call__(self, **inputs):
        """Forward pass under torch.inference_mode, inputs moved to the model's device."""
        with torch.inference_mode():
            return self.model(**{k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()})


def load_model(
    entry: ModelEntry,
    *,
    attentions: bool = False,
    hidden_states: bool = False,
    device: str | None = None,
    dtype: str | None = None,
    models_dir: str | Path = DEFAULT_MODELS_DIR,
) -> LoadedModel:
    """Load any zoo entry with its tokenizer. `attentions` switches to eager attention (the fused
    kernels return no weights); `device` defaults to what is present, `dtype` (an explicit choice:
    float32, bfloat16, float16 or auto) to the entry's own, else float32. Logits and hidden states
    are cast to float32 by their readers (pipeline.runtime.score_*, .features), so only the forward
    pass runs in the lower precision."""
    import transformers

    loc = locate(entry, Path(models_dir))
    dev = pick_device(device)
    dt = pick_dtype(dtype if dtype is not None else entry.dtype, dev)
    options = {"local_files_only": loc.local_files_only, "revision": loc.revision}
    try:
        tokenizer = fast_tokenizer(entry, transformers.AutoTokenizer.from_pretrained(loc.target, **options))
        model, info = auto_class(entry.model_family).from_pretrained(
            loc.target,
            dtype=dt,
            attn_implementation="eager" if attentions else None,
            output_attentions=attentions,
            output_hidden_states=hidden_states,
            output_loading_info=True,
            **options,
        )
    except OSError as exc:
        if entry.kind == "hub" and loc.local_files_only:
            raise ModelUnavailable(fetch_hint(entry.hub_id, entry.revision)) from exc
        raise ModelUnavailable(f"{entry.name}: cannot load {loc.target}: {exc}") from exc
    loading = check_loading(entry, model, info)
    model.to(dev).eval().requires_grad_(False)
    card_path = Path(models_dir) / entry.name / "card.json"
    card = json.loads(card_path.read_text()) if card_path.is_file() else {}
    return LoadedModel(entry, model, tokenizer, loc.target, dev, dt, card, loading)


class MissingWeights(ModelUnavailable):
    """A checkpoint lacks tensors its declared model family needs (they would be random)."""


HEAD_PREFIXES = ("lm_head", "cls.", "qa_outputs", "classifier", "score", "pooler")
# Tensors no family reads: an encoder-only model's pooler (features are hidden states), absent from masked-LM
# checkpoints read as encoders. Missing ones are recorded on the card, never refused.
UNUSED = {"encoder-only": ("pooler.",)}


def check_loading(entry: ModelEntry, model, info: dict) -> dict:
    """Refuse silent random weights: every tensor the model family needs must come from the checkpoint,
    unless the zoo entry lists it (or a prefix of its name) in `allow_missing`. Returns the missing and
    unexpected keys (the card records them)."""
    tied = _tied_names(model)
    missing = sorted(k for k in info.get("missing_keys", ()) if k not in tied)
    unexpected = sorted(info.get("unexpected_keys", ()))
    allowed = tuple(a.rstrip(".") + "." for a in entry.allow_missing) + UNUSED.get(entry.model_family, ())
    refused = [k for k in missing if k not in entry.allow_missing and not k.startswith(allowed)]
    if refused:
        heads = all(k.startswith(HEAD_PREFIXES) for k in refused)
        hint = ("the checkpoint has no head for it: declare it `family: encoder-only` (features only)" if heads and
                entry.model_family != "encoder-only" else "check the checkpoint matches the declared family")
        raise MissingWeights(f"{entry.name}: loading {entry.source} as a {entry.model_family} leaves {len(refused)} "
                             f"tensor(s) randomly initialised ({', '.join(refused[:8])}{', ...' if len(refused) > 8 else ''}); "
                             f"{hint}, or list them in models.zoo[{entry.name}].allow_missing")
    return {"missing_keys": missing, "unexpected_keys": unexpected, "allowed_missing": [k for k in missing if k not in refused]}


def _tied_names(model) -> set[str]:
    """Parameter names tied to another tensor (an LM head sharing the input embeddings): never missing."""
    keys = getattr(model, "_tied_weights_keys", None) or {}
    names = set(keys if isinstance(keys, (list, tuple, set)) else keys.keys())
    if getattr(model.config, "tie_word_embeddings", False):
        out = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        if out is not None:
            names |= {n for n, p in model.named_parameters(remove_duplicate=False) if p is out.weight}
    return names


def fast_tokenizer(entry: ModelEntry, tokenizer):
    """A fast tokenizer (character offsets, which every family reads). A slow-only one is converted:
    PLBART's sentencepiece tokenizer by `PLBartConverter`, others by transformers' converters; one that
    cannot be converted is refused with a message naming the model."""
    if getattr(tokenizer, "is_fast", False):
        return tokenizer
    name = type(tokenizer).__name__
    try:
        import transformers
        from transformers.convert_slow_tokenizer import convert_slow_tokenizer

        backend = plbart_fast(tokenizer) if name == "PLBartTokenizer" else convert_slow_tokenizer(tokenizer)
        specials = {k: getattr(tokenizer, k) for k in ("bos_token", "eos_token", "unk_token", "sep_token",
                                                        "pad_token", "cls_token", "mask_token")
                    if getattr(tokenizer, k, None) is not None}
        fast = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=tokenizer.model_max_length,
                                                    **specials)
    except Exception as exc:  # noqa: BLE001  (any converter failure becomes one clear message)
        raise ModelUnavailable(f"{entry.name}: its tokenizer ({name}) is slow-only and could not be converted to a fast "
                               f"one ({type(exc).__name__}: {exc}); the runtime needs character offsets: give the model "
                               f"a tokenizer.json (a fast tokenizer) or use another checkpoint") from exc
    return fast


def plbart_fast(tokenizer):
    """PLBART's sentencepiece BPE as a `tokenizers` BPE with PLBART's own ids (fairseq's order: <s> <pad>
    </s> <unk>, the pieces, the language codes, <mask>) and its suffix (</s>, then the source language's
    code when `src_lang` is set): the same ids as the slow tokenizer, with offsets."""
    from tokenizers import AddedToken, Tokenizer, processors
    from tokenizers.models import BPE
    from transformers.convert_slow_tokenizer import SpmConverter
    from transformers.tokenization_utils_base import generate_merges

    class PLBartConverter(SpmConverter):
        def tokenizer(self, proto):
            ids = self.original_tokenizer.get_vocab()
            pieces = [(p.piece, p.score) for p in proto.pieces if p.type == 1]  # normal pieces
            order = {p.piece: i for i, p in enumerate(proto.pieces)}
            unk = self.original_tokenizer.unk_token
            # every token in the model's vocabulary under the slow tokenizer's id: special tokens added only
            # afterwards would get the next free ids (the count of pieces), colliding with the last pieces
            # (`</s>` and `z` were both 200 in a 200-piece vocabulary, and pad/eos ids were pieces)
            tk = Tokenizer(BPE(dict(ids), generate_merges(order, pieces), unk_token=unk, fuse_unk=True, dropout=None))
            plain = {p for p, _ in pieces}
            tk.add_special_tokens([AddedToken(w, normalized=False, special=True)
                                   for _, w in sorted((i, w) for w, i in ids.items() if w not in plain)])
            return tk

        def post_processor(self):
            t = self.original_tokenizer
            suffix = t.convert_ids_to_tokens(list(t.suffix_tokens))
            return processors.TemplateProcessing(single=" ".join(["$A", *suffix]), pair=" ".join(["$A", "$B", *suffix]),
                                                 special_tokens=[(w, t.convert_tokens_to_ids(w)) for w in suffix])

    return PLBartConverter(tokenizer).converted()
