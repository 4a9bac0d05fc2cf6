"""Graded answers: an example of a judged benchmark kind kept in a package of its own (docs/adding-a-kind.md)."""
