"""The INK paper's reference numbers (Table III), written once: the report and the README read them.

Fractions in [0, 1], as every score of the warehouse (the paper prints percent: 23.90 is 0.2390)."""

# Table III, P@1 (fill-mask on the quizzes whose answer is one token of every model's vocabulary), per model:
# (API call, API import). The order and names are the paper's (PLBART-Large is "Large" under PLBART in the table).
P_AT_1_CALL_IMPORT = [
    ("CodeBERT-MLM", 0.2390, 0.2633),
    ("CodeBERT-MLM-Python", 0.2935, 0.2967),
    ("GraphCodeBERT-MLM", 0.2589, 0.3076),
    ("PLBART-base", 0.0165, 0.0264),
    ("PLBART-large", 0.0229, 0.0566),
    ("PLBART-CSNet", 0.0257, 0.0344),
    ("PLBART-Sum", 0.0211, 0.0288),
    ("PLBART-Gen", 0.0431, 0.0383),
    ("PLBART-MT", 0.0479, 0.0492),
    ("GPT-3.5-turbo", 0.1600, 0.2030),
]
# Quizzes each row is over (Table I, after unifying the vocabularies: 289,585 call and 289,585 import quizzes;
# GPT-3.5-turbo on 1,000 randomly drawn quizzes of each, Sec. IV-B).
QUIZZES_CALL_IMPORT = {"GPT-3.5-turbo": (1000, 1000)}
QUIZZES_DEFAULT = (289_585, 289_585)
# The population the numbers are over (the report's line on how ours differs).
POPULATION = ("the APIs of CodeSearchNet Python's repositories (79,754 APIs of 8,294 libraries, 13,519 repositories), "
              "quizzes kept where the answer is one token of all 10 models' vocabularies; fill-mask by 9 pre-trained "
              "CodeBERT/GraphCodeBERT/PLBART models of 125M-406M parameters, GPT-3.5-turbo prompted on 1,000 quizzes")
# P@1 of CodeBERT-MLM-Python on the alias settings (Table V)
P_AT_1_ALIAS = {"alias": 0.2417, "adversarial_alias": 0.2035}


def quizzes(model: str) -> tuple[int, int]:
    """The (call, import) quizzes the paper's P@1 of `model` is over."""
    return QUIZZES_CALL_IMPORT.get(model, QUIZZES_DEFAULT)

# the paper, as a dataset card cites it (pipeline.export)
CITATION = """\
@article{zhuo2023popquiz,
  title   = {Pop Quiz! Do Pre-trained Code Models Possess Knowledge of Correct API Names?},
  author  = {Zhuo, Terry Yue and Du, Xiaoning and Xing, Zhenchang and Sun, Jiamou and Quan, Haowei and Li, Li and Zhu, Liming},
  journal = {arXiv preprint arXiv:2309.07804},
  year    = {2023}
}
"""
