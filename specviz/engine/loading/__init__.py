"""Loading: model pairs by hub id, path or name (models.py, catalogue.py), the real target's install and conversion
(install.py), drafters shipped for it (shipped.py), the draft's trimmed vocabulary (vocab.py) and the map between two
tokenizers (vocab_map.py)."""
