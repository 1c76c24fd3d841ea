"""Table 1 of the paper: CodeT5-base encoder (the best encoder-side representation), test error
(MAE for AST depth). Our task names on the left."""

TABLE1_CODET5_BASE_ENCODER = {
    "path_type": 0.013,
    "depth": 0.867,
    "declared": 0.014,
    "dataflow": 0.161,
    "variable_name": 0.162,
    "misuse": 0.046,
    "algorithm": 0.228,
}

# the decoder side of the same model (Table 1, CodeT5-base decoder), beside an encoder-decoder's decoder layers
TABLE1_CODET5_BASE_DECODER = {
    "path_type": 0.036,
    "depth": 0.864,
    "declared": 0.061,
    "dataflow": 0.230,
    "variable_name": 0.211,
    "misuse": 0.176,
    "algorithm": 0.268,
}

# The probe the release (serjtroshin/probings4code, src/struct_probing/probings/) fits on each Table 1 task: its
# `train_linear_model`, on the raw per-layer features (pipeline.fit.probe.release_estimator):
# - token tasks (TokenClassificationLinearModel: "Token Path Type", "Variable Is Undeclared Hard Mean", "Variable
#   Name All Occ"): GridSearchCV(SGDClassifier(loss="log", tol=0.0001), {"alpha": [0.0001, 0.001, 0.01, 0.1]});
# - data-flow edges (EdgeClassificationLinearModel, the pair's two means concatenated): the same with alpha up to 1;
# - snippet tasks (SentenceClassificationLinearModel: "Is Variable Misused", "Algorithm", readability):
#   LogisticRegressionCV(Cs=(0.0001, ..., 100), random_state=777, max_iter=10000);
# - AST depth (RegressionProbingTask "get_depth"): RidgeCV(alphas=(0.0001, ..., 100)).
# The paper's text names SGD with the 7-value grid for every classification task; the code is what produced Table 1.
_TOKEN_SGD = {"estimator": "sgd", "alphas": [0.0001, 0.001, 0.01, 0.1]}
_SNIPPET_GRID = [0.0001, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
RELEASE_PROBES = {
    "path_type": _TOKEN_SGD,
    "declared": _TOKEN_SGD,
    "variable_name": _TOKEN_SGD,
    "dataflow": {"estimator": "sgd", "alphas": [0.0001, 0.001, 0.01, 0.1, 1.0]},
    "misuse": {"estimator": "logistic_cv", "alphas": _SNIPPET_GRID},
    "algorithm": {"estimator": "logistic_cv", "alphas": _SNIPPET_GRID},
    "depth": {"estimator": "ridge_cv", "alphas": _SNIPPET_GRID},
}

# the paper, as a dataset card cites it (pipeline.export)
CITATION = """\
@inproceedings{troshin2022probing,
  title     = {Probing Pretrained Models of Source Codes},
  author    = {Troshin, Sergey and Chirkova, Nadezhda},
  booktitle = {Proceedings of the Fifth BlackboxNLP Workshop on Analyzing and Interpreting Neural Networks for NLP},
  year      = {2022},
  note      = {arXiv:2202.08975}
}
"""
