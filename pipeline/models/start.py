"""What scoring puts before a text, per model family and scoring convention: the start-token policy
(`start_policy`), which the runtime's scorer applies and each model's card records (pipeline.models.cards).
Torch-free: it reads the tokenizer only."""

from __future__ import annotations

import re
from dataclasses import dataclass


# Chat / instruction-format tokens: never put before code (SmolLM2-Instruct names `<|im_start|>` its BOS).
CHAT_TOKEN = re.compile(r"<\|(im_start|im_end|im_sep|user|assistant|system|start_header_id|end_header_id|eot_id)\|>"
                        r"|\[/?INST\]|<(start|end)_of_turn>|<\|(begin|end)_of_(turn|role)\|>")
DOCUMENT_SEPARATOR = "<|endoftext|>"  # GPT-2, CodeGen, StarCoder, SmolLM, Qwen2: what separates training documents


@dataclass(frozen=True)
class StartPolicy:
    """What scoring puts before a text, per model family and scoring convention, and why (the model card
    records it). `apply` drops chat tokens the tokenizer itself put first and prepends `token_ids`."""

    convention: str
    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    rule: str
    dropped: tuple[int, ...] = ()  # leading token ids removed from a tokenized text (chat tokens)

    def apply(self, ids: list[int]) -> list[int]:
        ids = list(ids)
        while ids[:1] and ids[0] in self.dropped:
            ids = ids[1:]
        start = list(self.token_ids)
        return start + ids if start and ids[: len(start)] != start else ids

    def describe(self) -> dict:
        return {"convention": self.convention, "start_tokens": list(self.tokens), "rule": self.rule}


def is_chat_token(token: str | None) -> bool:
    return bool(token) and CHAT_TOKEN.fullmatch(str(token)) is not None


def start_policy(tokenizer, model_family: str, convention: str = "pipeline") -> StartPolicy:
    """Which start token a model's scoring uses (a causal LM scores the text's first token only when something
    precedes it; the other families read the format they were trained on).

    - masked-lm, encoder-decoder, encoder-only: the tokenizer's own special tokens (`<s>` … `</s>`,
      `[CLS]` … `[SEP]`), the format the model was trained on; nothing else is added.
    - causal-lm, convention `pipeline` (the default): the tokenizer's BOS, so the text's first token is
      scored too; a BOS that is a chat/instruction token (`<|im_start|>`) is never used: the document
      separator `<|endoftext|>` takes its place when the vocabulary has it (what preceded every document in
      pretraining), else EOS when it is no chat token, else nothing (the first token goes unscored). A chat
      token the tokenizer itself puts first is dropped.
    - causal-lm, convention `lm-eval`: lm-evaluation-harness 0.4's HF loglikelihood: the tokenizer's
      defaults (`add_special_tokens=True`: no BOS for GPT-2-style tokenizers, which add none), nothing
      prepended; an empty context is its `prefix_token_id` (BOS, else EOS). See `lm_eval_job`."""
    lead = tuple(special_frame(tokenizer)[0])
    if model_family != "causal-lm":
        return StartPolicy(convention, lead, tuple(tokenizer.convert_ids_to_tokens(list(lead))),
                           "the tokenizer's own special tokens (the model's training format)")
    if convention == "lm-eval":
        return StartPolicy(convention, (), (), "lm-evaluation-harness 0.4: the tokenizer's defaults, nothing prepended "
                           "(no BOS for GPT-2-style tokenizers); empty context: BOS, else EOS")
    dropped = tuple(i for i in lead if is_chat_token(tokenizer.convert_ids_to_tokens(i)))
    bos = tokenizer.bos_token
    vocab = tokenizer.get_vocab()
    if bos is not None and not is_chat_token(bos):
        token, rule = bos, "the tokenizer's BOS"
    elif DOCUMENT_SEPARATOR in vocab:
        token = DOCUMENT_SEPARATOR
        rule = (f"the document separator {DOCUMENT_SEPARATOR}: the BOS {bos} is a chat token" if bos is not None
                else f"the document separator {DOCUMENT_SEPARATOR}: the tokenizer has no BOS")
    elif tokenizer.eos_token is not None and not is_chat_token(tokenizer.eos_token):
        token, rule = tokenizer.eos_token, "the tokenizer's EOS (no BOS that is not a chat token)"
    else:
        return StartPolicy(convention, (), (), "none: no BOS, document separator or EOS that is not a chat token "
                           "(the first token is not scored)", dropped)
    return StartPolicy(convention, (vocab[token],) if token in vocab else (tokenizer.convert_tokens_to_ids(token),),
                       (token,), rule, dropped)


def special_frame(tok) -> tuple[list[int], list[int]]:
    """The special tokens a masked LM's tokenizer puts before and after a text (`<s>`, `</s>`)."""
    ids = tok("x", add_special_tokens=True)["input_ids"]
    special = set(tok.all_special_ids)
    lead = 0
    while lead < len(ids) and ids[lead] in special:
        lead += 1
    trail = len(ids)
    while trail > lead and ids[trail - 1] in special:
        trail -= 1
    return ids[:lead], ids[trail:]
