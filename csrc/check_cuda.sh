#!/usr/bin/env bash
# Compile-checks the CUDA code under csrc/ on a machine without a GPU or a CUDA build of torch:
#  1. every *.cu file (torch-free kernel bodies) with `nvcc -c -std=c++20 -o /dev/null`, under the
#     half / bfloat16 defines torch's CUDA build uses;
#  2. every CUDA binding (*_cuda.cpp, which includes ATen/c10 CUDA headers) with
#     `c++ -fsyntax-only` against the installed torch's headers, where torch ships them; a CPU-only
#     torch lacks the one header a CUDA build generates (c10/cuda/impl/cuda_cmake_macros.h), so a
#     one-line stand-in is supplied in a temporary folder.
# Skips (exit 0, with a message) when nvcc is absent. Usage: csrc/check_cuda.sh [python]
#   NVCC_FLAGS (e.g. "-arch=sm_90") is passed to nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${1:-${PYTHON:-python}}"

NVCC="${NVCC:-$(command -v nvcc || true)}"
if [[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]]; then NVCC=/usr/local/cuda/bin/nvcc; fi
if [[ -z "$NVCC" ]]; then
  echo "check_cuda: SKIPPED (nvcc not found; set NVCC or put it on PATH)"
  exit 0
fi
CUDA_ROOT=""
for c in "${CUDA_HOME:-}" "${CUDA_PATH:-}" "$(dirname "$(readlink -f "$NVCC")")/.." /usr/local/cuda; do
  if [[ -n "$c" && -f "$c/include/cuda_runtime.h" ]]; then CUDA_ROOT="$c"; break; fi
done
echo "check_cuda: $("$NVCC" --version | tail -1)"

# The defines torch's CUDAExtension passes to nvcc (torch.utils.cpp_extension.COMMON_NVCC_FLAGS):
# they remove the implicit half / bfloat16 conversions and operators, so a kernel that relies on
# them fails here as it would in the real build.
TORCH_NVCC_DEFINES=(-D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__
  -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__)
# Files compile in parallel, one job per core (CHECK_CUDA_JOBS overrides): each compile is
# single-threaded and the whole check is on CI's critical path.
JOBS="${CHECK_CUDA_JOBS:-$(nproc 2>/dev/null || echo 2)}"
LOGS="$(mktemp -d)"
trap 'rm -rf "$LOGS"' EXIT
FAILED=0
# run_jobs LABEL CMD... -- FILES...: runs "CMD FILE" for every file, JOBS at a time, prints
# "check_cuda: LABEL  FILE" for each success and the compiler's output for each failure.
run_jobs() {
  local label="$1"; shift
  local cmd=()
  while [[ "$1" != "--" ]]; do cmd+=("$1"); shift; done
  shift
  local files=("$@") pids=() i=0 j
  for f in "${files[@]}"; do
    "${cmd[@]}" "$f" >"$LOGS/$i.log" 2>&1 &
    pids+=($!)
    i=$((i + 1))
    while [[ $(jobs -rp | wc -l) -ge $JOBS ]]; do wait -n || true; done
  done
  for j in "${!files[@]}"; do
    if wait "${pids[$j]}"; then
      echo "check_cuda: $label  ${files[$j]}"
    else
      cat "$LOGS/$j.log"
      echo "check_cuda: FAILED  ${files[$j]}"
      FAILED=1
    fi
  done
}
mapfile -t CU_FILES < <(find csrc -name '*.cu' | sort)
# shellcheck disable=SC2086
run_jobs "nvcc OK" "$NVCC" -c -std=c++20 -Icsrc "${TORCH_NVCC_DEFINES[@]}" ${NVCC_FLAGS:-} \
  -o /dev/null -- "${CU_FILES[@]}"

mapfile -t BINDINGS < <(find csrc -name '*_cuda.cpp' | sort)
CHECKED=0
TORCH_INCLUDE="$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))' 2>/dev/null || true)"
if [[ ${#BINDINGS[@]} -gt 0 && -z "$CUDA_ROOT" ]]; then
  echo "check_cuda: bindings not checked (cuda_runtime.h not found; set CUDA_HOME)"
elif [[ ${#BINDINGS[@]} -gt 0 && ! -f "$TORCH_INCLUDE/c10/cuda/CUDAGuard.h" ]]; then
  echo "check_cuda: bindings not checked (no torch with c10/cuda headers for '$PYTHON')"
elif [[ ${#BINDINGS[@]} -gt 0 ]]; then
  STUB="$LOGS/stub"
  mkdir -p "$STUB"
  if [[ ! -f "$TORCH_INCLUDE/c10/cuda/impl/cuda_cmake_macros.h" ]]; then
    mkdir -p "$STUB/c10/cuda/impl"
    echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$STUB/c10/cuda/impl/cuda_cmake_macros.h"
  fi
  run_jobs "syntax OK" "${CXX:-c++}" -std=c++20 -fsyntax-only -DWITH_CUDA -Icsrc \
    -I"$TORCH_INCLUDE" -I"$TORCH_INCLUDE/torch/csrc/api/include" -I"$CUDA_ROOT/include" \
    -I"$STUB" -- "${BINDINGS[@]}"
  CHECKED=${#BINDINGS[@]}
fi
if [[ $FAILED -ne 0 ]]; then
  echo "check_cuda: FAILED (see the compiler output above)"
  exit 1
fi
echo "check_cuda: ${#CU_FILES[@]} .cu file(s) compiled, $CHECKED of ${#BINDINGS[@]} binding(s) checked"
