#!/usr/bin/env bash
# Installs everything libsection needs on a fresh Debian 12 machine: the pinned apt packages
# (Boost, doctest, clang for fuzzing) and the pinned Python packages, then builds and installs
# the libsection package itself. Safe to re-run: each step is skipped when already satisfied.
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore
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

echo "[deps] pip install -r deps/requirements.txt"
python3 -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"

echo "[deps] pip install libsection (C++ core + Python package)"
# No build isolation: the pinned build requirements above are used, and the build directory is
# kept so a re-run only recompiles what changed.
# LIBSECTION_WITH_TESTS=1 (./dev test) also builds the doctest binary in the same build tree.
python3 -m pip install -q --disable-pip-version-check --no-build-isolation \
  -Cbuild-dir="$root/build/wheel" \
  -Ccmake.define.LIBSECTION_BUILD_TESTS="$([ "${LIBSECTION_WITH_TESTS:-0}" = 1 ] && echo ON || echo OFF)" \
  "$root"
