"""The feature heads' model code, one module per kind (eagle.py: EAGLE-1, eagle3.py, medusa.py, mtp.py with its vLLM
re-export mimo.py), and their step on the lean forward (lean_heads.py)."""
