"""Per-item language codes (so PLBART scores text in the format it was trained on): PLBART reads `tokens </s>
<language code>`, the code of the text's own language (`__python__`, `__java__`; its `multi` checkpoints also
`__javascript__`, `__php__`, `__ruby__`, `__go__`), as its sentencepiece tokenizer writes it with `src_lang` set
(`PLBartTokenizer.set_src_lang_special_tokens`: no prefix, suffix `[eos, code]`), on the encoder's input and on
the target alike.

A tokenizer loaded once per model has one fixed suffix; the families score items of several languages in
one run (apirec's Python and Java points). `for_language(tokenizer, language)` is the model's tokenizer with
the suffix of that item's language: `</s> __java__` for Java, `</s>` alone for a language the checkpoint has no
code for (JavaScript under PLBART base: idbench's identifiers, all JavaScript; a `multi` checkpoint reads
`__javascript__`) or for no language, whatever `src_lang`
the folder was saved with. Tokenizers without language codes (every other model) are returned unchanged, so
every call site can use it. Variants are built once per (tokenizer, language) and kept on the tokenizer.
"""

from __future__ import annotations

import re

# what a manifest language is called in PLBART's codes (transformers' FAIRSEQ_LANGUAGE_CODES_MAP, lower case)
CODE_TOKEN = re.compile(r"^__([a-z]+(?:_[A-Z]{2})?)__$")
_ATTR = "_pipeline_language_variants"
_CODES = "_pipeline_language_codes"


def language_codes(tokenizer) -> dict[str, int]:
    """language name (`python`, `java`, `en_XX` ...) -> its code's token id, for a tokenizer whose special tokens
    hold PLBART's language codes (both `__java__` and `__python__`); {} for any other tokenizer."""
    cached = getattr(tokenizer, _CODES, None)
    if cached is not None:
        return cached
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
    try:
        setattr(tokenizer, _CODES, found)
    except AttributeError:  # a tokenizer that takes no attributes: recomputed each time
        pass
    return found


def language_of(tokenizer, ids) -> str | None:
    """The language whose code ends `ids` (a PLBART input), else None."""
    codes = language_codes(tokenizer)
    if not codes or not ids:
        return None
    last = ids[-1]
    return next((lang for lang, i in codes.items() if i == last), None)


def for_language(tokenizer, language: str | None):
    """`tokenizer` whose special-token suffix is `</s>` and the code of `language` (none when the checkpoint has
    no code for it, or `language` is None); `tokenizer` itself when it has no language codes."""
    codes = language_codes(tokenizer) if getattr(tokenizer, "is_fast", False) else {}
    if not codes:
        return tokenizer
    key = language if language in codes else None
    variants = getattr(tokenizer, _ATTR, None)
    if variants is None:
        variants = {}
        setattr(tokenizer, _ATTR, variants)
    if key not in variants:
        variants[key] = _with_suffix(tokenizer, key, codes)
    return variants[key]


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
    out = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=tokenizer.model_max_length,
                                               **specials)
    setattr(out, _CODES, codes)
    setattr(out, _ATTR, getattr(tokenizer, _ATTR))  # a variant's variants are its tokenizer's
    return out
