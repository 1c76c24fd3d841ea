"""A shared analysis: Python (`ast`, `tokenize`) and Java (tree-sitter) functions cut from the
manifest's files, their token streams, trees and AST relation edges (relation, head, dependent
start, dependent end). The codesyntax family labels its benchmark with them; the probing tasks
read the same trees."""
