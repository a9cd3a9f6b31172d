"""The forward passes: the lean forward (lean.py), the KV-cached model a run steps (kv.py), attention masks
(masks.py) and torch's threads (threads.py)."""
