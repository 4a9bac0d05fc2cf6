"""Readers every kind may use, knowing no kind: JSON Lines (jsonl.py), hard limits and bounded JSON/ZIP reading
(limits.py), ZIP member names (zip.py)."""
