"""The APIBench paper's reference numbers, written once: the report and the README read them."""

# Table 7: code-based, Python, "General" domain of APIBench-C: Success Rate@1, @3, @5, @10.
CODE_SR = [
    ("TravTrans", 0.45, 0.57, 0.59, 0.62),
    ("PyART", 0.29, 0.38, 0.46, 0.60),
    ("Deep3", 0.21, 0.34, 0.37, 0.43),
]
# Table 6: query-based, Java, method level: BIKER (the best), Success Rate@1, @3, @5, @10.
QUERY_SR_METHOD = [("BIKER", 0.12, 0.23, 0.29, 0.37)]

# NDCG@1 beside SR@1 (method level, class level; None where the table has no such row), the pattern the
# metric readings must reproduce: Table 7 (code, method-level grades) NDCG@1 = SR@1; Table 6 (queries,
# 2/1 grades, IDCG from the whole returned list) method SR@1 <= NDCG@1 <= class SR@1, strictly below the
# class SR@1 where an exact API comes after a class-only top-1. Table 8: the IDE rows (500 sampled points).
NDCG_AT_1 = [
    # (table, system, SR@1 method, SR@1 class, NDCG@1)
    ("Table 7 (code, Python)", "TravTrans", 0.45, None, 0.45),
    ("Table 7 (code, Python)", "Deep3", 0.21, None, 0.21),
    ("Table 7 (code, Python)", "PyART", 0.29, None, 0.29),
    ("Table 7 (code, Java)", "PAM-MAX", 0.22, None, 0.22),
    ("Table 8 (code, IDE)", "PyCharm", 0.31, None, 0.31),
    ("Table 8 (code, IDE)", "VSCode", 0.05, None, 0.05),
    ("Table 6 (query, Java)", "BIKER", 0.12, 0.33, 0.27),
    ("Table 6 (query, Java)", "DeepAPI", 0.05, 0.19, 0.17),
    ("Table 6 (query, Java)", "Lucene", 0.04, 0.15, 0.12),
    ("Table 6 (query, Java)", "Naive Baseline", 0.02, 0.07, 0.07),
]

# Table 8: the IDEs on 500 points sampled from every domain, Success Rate@1, @3, @5, @10 (Python).
IDE_SR = [("PyCharm", 0.31, 0.42, 0.47, 0.49), ("VSCode", 0.05, 0.15, 0.21, 0.35)]

# Table 9 (RQ6): cross-domain Success Rate@10, training domain -> {test domain: SR@10}, per system.
CROSS_DOMAIN_SR10 = {
    "TravTrans": {"ML": (0.64, 0.58, 0.53, 0.71), "Security": (0.40, 0.54, 0.54, 0.39),
                  "Web": (0.54, 0.63, 0.64, 0.51), "DL": (0.66, 0.58, 0.50, 0.68), "General": (0.72, 0.76, 0.78, 0.74)},
    "Deep3": {"ML": (0.42, 0.41, 0.36, 0.48), "Security": (0.31, 0.51, 0.42, 0.29),
              "Web": (0.33, 0.42, 0.46, 0.31), "DL": (0.44, 0.39, 0.33, 0.44), "General": (0.55, 0.65, 0.62, 0.57)},
}
CROSS_DOMAIN_TEST = ("ML", "Security", "Web", "DL")

# the paper, as a dataset card cites it (pipeline.export)
CITATION = """\
@article{peng2022apibench,
  title   = {Revisiting, Benchmarking and Exploring API Recommendation: How Far Are We?},
  author  = {Peng, Yun and Li, Shuqing and Gu, Wenwei and Li, Yichen and Wang, Wenxuan and Gao, Cuiyun and Lyu, Michael R.},
  journal = {IEEE Transactions on Software Engineering},
  year    = {2022},
  note    = {arXiv:2112.12653}
}
"""
