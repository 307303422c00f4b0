#!/usr/bin/env bash
# Installs everything libsection needs on a fresh Debian 12 machine, for each stack named on the
# command line (py311, py312; default: both): the pinned apt packages (Boost, doctest, clang for
# fuzzing) once, then per stack a self-contained venv build/venv/<stack> with the pinned Python
# packages (requirements.txt + stack-<stack>.txt) and libsection built into it (C++ build tree
# build/wheel-<stack>). Safe to re-run: each step is skipped or incremental when already done.
# The stack name is the Python version: py311 runs on python3.11, py312 on python3.12.
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

mapfile -t pkgs < <(grep -v '^\s*#' "$here/apt-packages.txt" | grep -v '^\s*$')
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[deps] apt-get install ${missing[*]}"
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The interpreter for a version such as 3.12: on PATH, else installed by pyenv (whose shim for a
# version that is not selected says "command not found"), else Debian's.
find_python() {
  local version="$1" candidate
  local pyenv_root; pyenv_root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
  for candidate in "python$version" \
      $(ls -d "$pyenv_root/versions/$version".*/bin/"python$version" 2>/dev/null | sort -V -r) \
      "/usr/bin/python$version" "/usr/local/bin/python$version"; do
    if "$candidate" -c 'import sys, venv' >/dev/null 2>&1; then
      "$candidate" -c 'import sys; print(sys.executable)'
      return 0
    fi
  done
  return 1
}

# Prints a message every minute while a long step runs, so CI logs show it is alive.
with_progress() {
  local label="$1"; shift
  local start=$SECONDS rc=0
  ( while sleep 60; do echo "[deps] $label: still running ($((SECONDS - start)) s)"; done ) &
  local ticker=$!
  "$@" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$rc"
}

# pip, without the warnings a machine's pip configuration may print for every package (an
# extra index that is not there); pip's own exit status.
pip_install() {
  local python="$1"; shift
  "$python" -m pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }
  return "${PIPESTATUS[0]}"
}

install_stack() {
  local stack="$1"
  local version="${stack#py}"; version="${version:0:1}.${version:1}"
  local pins="$here/stack-$stack.txt"
  [ -f "$pins" ] || { echo "[deps] unknown stack '$stack' (no $pins)" >&2; return 2; }
  local venv="$root/build/venv/$stack"
  local python="$venv/bin/python"

  # A venv whose interpreter is gone or of another version is made anew.
  if ! "$python" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$version')" 2>/dev/null; then
    local base
    base="$(find_python "$version")" || {
      echo "[deps] $stack: python$version not found (on PATH, under \$(pyenv root)/versions, or /usr/bin)" >&2
      return 2
    }
    echo "[deps] $stack: python -m venv build/venv/$stack (from $base)"
    rm -rf "$venv"
    "$base" -m venv "$venv"
  fi

  echo "[deps] $stack: pip install -r deps/requirements.txt -r deps/stack-$stack.txt"
  with_progress "$stack pip install" \
    pip_install "$python" -r "$here/requirements.txt" -r "$pins"

  echo "[deps] $stack: pip install libsection (C++ core + Python package; minutes when built afresh)"
  # No build isolation: the pinned build requirements above are used, and the build directory is
  # kept so a re-run only recompiles what changed.
  # LIBSECTION_WITH_TESTS=1 (./dev test) also builds the doctest binary in the same build tree.
  # No unity build: clang-tidy (the guardrails) reads each library source's own compile command.
  with_progress "$stack build" \
    pip_install "$python" --no-build-isolation \
    -Cbuild-dir="$root/build/wheel-$stack" \
    -Ccmake.define.LIBSECTION_UNITY_BUILD=OFF \
    -Ccmake.define.LIBSECTION_BUILD_TESTS="$([ "${LIBSECTION_WITH_TESTS:-0}" = 1 ] && echo ON || echo OFF)" \
    "$root"
}

stacks=("$@")
[ ${#stacks[@]} -gt 0 ] || stacks=(py311 py312)
for stack in "${stacks[@]}"; do
  install_stack "$stack"
done
