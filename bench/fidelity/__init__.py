"""Agreement with a reference: the paper's release run on the same inputs, quizzes imported in a separate
environment, float64 against float32 (bench/README.md)."""
