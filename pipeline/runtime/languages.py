"""Per-item language codes (so PLBART scores text in the format it was trained on): PLBART reads `tokens </s>
<language code>`, the code of the text's own language (`__python__`, `__java__`; its `multi` checkpoints also
`__javascript__`, `__php__`, `__ruby__`, `__go__`), as its sentencepiece tokenizer writes it with `src_lang` set
(`PLBartTokenizer.set_src_lang_special_tokens`: no prefix, suffix `[eos, code]`), on the encoder's input and on
the target alike.

A tokenizer loaded once per model has one fixed suffix; the families score items of several languages in
one run (apirec's Python and Java points). `Languages(tokenizer)` holds the model's language codes and, built
once per language and kept in the object, the tokenizer with the suffix of that language: `</s> __java__` for
Java, `</s>` alone for a language the checkpoint has no code for (JavaScript under PLBART base: idbench's
identifiers, all JavaScript; a `multi` checkpoint reads `__javascript__`) or for no language, whatever `src_lang`
the folder was saved with. The tokenizer itself is never changed (a variant is a new tokenizer object), so one
tokenizer can be shared by several readers. Tokenizers without language codes (every other model) are handed
back unchanged, so every call site can go through it. One `Languages` per model and run: the scorer's encoder
(`pipeline.runtime.encode.Encoder`), the pooled features, codesyntax's probe each make theirs.
"""

from __future__ import annotations

import re

# what a manifest language is called in PLBART's codes (transformers' FAIRSEQ_LANGUAGE_CODES_MAP, lower case)
CODE_TOKEN = re.compile(r"^__([a-z]+(?:_[A-Z]{2})?)__$")


def language_codes(tokenizer) -> dict[str, int]:
    """language name (`python`, `java`, `en_XX` ...) -> its code's token id, for a tokenizer whose special tokens
    hold PLBART's language codes (both `__java__` and `__python__`); {} for any other tokenizer."""
    specials = set(getattr(tokenizer, "all_special_tokens", ()) or ())
    added = getattr(tokenizer, "added_tokens_encoder", None) or {}
    candidates = specials | set(added)
    found = {}
    if {"__java__", "__python__"} <= candidates:
        vocab = tokenizer.get_vocab()
        for token in sorted(candidates):
            m = CODE_TOKEN.match(token)
            if m and token in vocab:
                found[m.group(1)] = vocab[token]
    return found


class Languages:
    """One tokenizer's language codes and its per-language variants (built on first use, kept here)."""

    def __init__(self, tokenizer):
        self.base = tokenizer
        # the variants are built from the fast tokenizer's backend; a slow tokenizer keeps its one format
        self.codes = language_codes(tokenizer) if getattr(tokenizer, "is_fast", False) else {}
        self._variants: dict[str | None, object] = {}

    def of(self, ids) -> str | None:
        """The language whose code ends `ids` (a PLBART input), else None."""
        if not self.codes or not ids:
            return None
        return next((lang for lang, i in self.codes.items() if i == ids[-1]), None)

    def tokenizer(self, language: str | None):
        """The tokenizer whose special-token suffix is `</s>` and the code of `language` (none when the
        checkpoint has no code for it, or `language` is None); the tokenizer itself when it has no codes."""
        if not self.codes:
            return self.base
        key = language if language in self.codes else None
        if key not in self._variants:
            self._variants[key] = _with_suffix(self.base, key, self.codes)
        return self._variants[key]


def _with_suffix(tokenizer, language: str | None, codes: dict[str, int]):
    import transformers
    from tokenizers import Tokenizer, processors

    eos = tokenizer.eos_token
    suffix = [(eos, tokenizer.convert_tokens_to_ids(eos))]
    if language is not None:
        suffix.append((tokenizer.convert_ids_to_tokens(codes[language]), codes[language]))
    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    words = " ".join(w for w, _ in suffix)
    backend.post_processor = processors.TemplateProcessing(single=f"$A {words}", pair=f"$A $B {words}",
                                                           special_tokens=suffix)
    specials = {k: getattr(tokenizer, k) for k in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                                                   "cls_token", "mask_token") if getattr(tokenizer, k, None) is not None}
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=tokenizer.model_max_length,
                                                **specials)
