"""The CodeSyntax paper's reference numbers (Table 3, top-k, first token of the dependent), written once: the
report, stats.py and the README read them.

Fractions in [0, 1], as every score of the warehouse (the paper prints percent: 43.6 is 0.436)."""

KS = (1, 3, 10, 20)  # the paper's top-k columns
# Table 3, per language: system -> top-k score for k in KS (baselines and models chose the offset/keyword or
# the head per relation on the same test set they are scored on)
TABLE3 = {
    "python": {
        "offset": (0.436, 0.637, 0.873, 0.949), "keyword": (0.157, 0.219, 0.236, 0.238),
        "combined": (0.494, 0.697, 0.901, 0.963),
        "CuBERT": (0.392, 0.584, 0.813, 0.914), "CodeBERT": (0.331, 0.518, 0.786, 0.892),
        "RoBERTa": (0.345, 0.569, 0.825, 0.913),
    },
    "java": {
        "offset": (0.527, 0.715, 0.871, 0.943), "keyword": (0.224, 0.273, 0.302, 0.306),
        "combined": (0.604, 0.772, 0.900, 0.961),
        "CuBERT": (0.397, 0.598, 0.800, 0.902), "CodeBERT": (0.363, 0.571, 0.783, 0.888),
        "RoBERTa": (0.347, 0.578, 0.803, 0.905),
    },
}
BASELINES = ("offset", "keyword", "combined")
# the row "Diff (Model - Baseline)": best model minus best baseline per k
DIFF = {"python": (-0.102, -0.113, -0.088, -0.049), "java": (-0.207, -0.174, -0.100, -0.059)}
# what each language's scores are over (Sec. 3: the whole dataset; heads and baselines picked on it)
SAMPLES = {"python": 18_701, "java": 13_711}
EDGES = {"python": 1_342_050, "java": 864_411}
RELATIONS = {"python": 43, "java": 39}
POPULATION = ("CodeSearchNet functions not in CuBERT's or CodeBERT's pre-training data (18,701 Python / 13,711 Java "
              "samples, 1,342,050 / 864,411 edges, 43 / 39 relation types), pre-trained CuBERT, CodeBERT and RoBERTa, "
              "each head and baseline picked on the set it is scored on")

# top-1 alone, (python, java) per system: the SPEC's reference line
TOP1_FIRST_TOKEN = {system: (TABLE3["python"][system][0], TABLE3["java"][system][0]) for system in TABLE3["python"]}
# the relations the report draws per-head heatmaps for
HEATMAP_RELATIONS = ("If:if->else", "Call:func->args", "Assign:target->value", "For:for->body")

# the paper, as a dataset card cites it (pipeline.export)
CITATION = """\
@inproceedings{shen2022codesyntax,
  title     = {Benchmarking Language Models for Code Syntax Understanding},
  author    = {Shen, Da and Chen, Xinyun and Wang, Chenguang and Sen, Koushik and Song, Dawn},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2022},
  year      = {2022},
  note      = {arXiv:2210.14473}
}
"""
