"""A shared analysis: Python (`ast`, `tokenize`) and Java (tree-sitter) functions cut from the
manifest's files, their token streams, trees and AST relation edges (relation, head, dependent
start, dependent end). Families label their benchmarks with them (attention relations) and cut their
probe tasks from the same trees."""
