"""The feature heads' model code, one module per kind (eagle.py is EAGLE-1's; each kind's is named by its HeadSpec in
specviz/methods.py), and their step on the lean forward (lean_heads.py)."""
