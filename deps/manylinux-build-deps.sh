#!/usr/bin/env bash
# cibuildwheel's `before-all` (pyproject.toml): installs the build-only dependencies into a
# manylinux_2_28 container under /usr/local, at the versions Debian 12 gives the developers
# (deps/apt-packages.txt): Boost 1.81 headers, nlohmann-json 3.11.2, CLI11 2.1.2 and toml++ 3.3.0.
# All four are used as headers only, so the wheels need none of them at run time. Archives are checked
# against their SHA-256 before use. libcrypto (SHA-256) comes from the container's own
# openssl-devel (OpenSSL 1.1.1); it is outside the manylinux policy, so auditwheel copies it
# into the wheel.
set -euo pipefail
dnf install -y -q openssl-devel
work="$(mktemp -d)"
cd "$work"

fetch() {  # URL SHA256 FILE
  curl --fail --location --silent --show-error --retry 3 -o "$3" "$1"
  echo "$2  $3" | sha256sum -c -
}

fetch https://archives.boost.io/release/1.81.0/source/boost_1_81_0.tar.bz2 \
  71feeed900fbccca04a3b4f2f84a7c217186f28a940ed8b7ed4725986baf99fa boost.tar.bz2
tar xjf boost.tar.bz2
# Boost.System is a header-only stub: building it installs the headers and BoostConfig.cmake.
(cd boost_1_81_0 && ./bootstrap.sh --prefix=/usr/local --with-libraries=system >/dev/null &&
  ./b2 -d0 -j"$(nproc)" install --prefix=/usr/local --with-system link=static)

fetch https://github.com/nlohmann/json/releases/download/v3.11.2/json.tar.xz \
  8c4b26bf4b422252e13f332bc5e388ec0ab5c3443d24399acb675e68278d341f json.tar.xz
tar xJf json.tar.xz
cmake -S json -B json-build -DJSON_BuildTests=OFF -DCMAKE_INSTALL_PREFIX=/usr/local >/dev/null
cmake --install json-build >/dev/null

fetch https://github.com/CLIUtils/CLI11/archive/v2.1.2.tar.gz \
  26291377e892ba0e5b4972cdfd4a2ab3bf53af8dac1f4ea8fe0d1376b625c8cb cli11.tar.gz
tar xzf cli11.tar.gz
cmake -S CLI11-2.1.2 -B cli11-build -DCLI11_BUILD_TESTS=OFF -DCLI11_BUILD_EXAMPLES=OFF \
  -DCLI11_BUILD_DOCS=OFF -DCMAKE_INSTALL_PREFIX=/usr/local >/dev/null
cmake --install cli11-build >/dev/null

# toml++ (section-lint's settings): its single-header edition at the v3.3.0 tag's commit, installed
# where Debian's libtomlplusplus-dev puts its header (toml++/toml.h); the build uses it as headers
# only (TOML_HEADER_ONLY=1). The checksum is that of the file in the git tree at that commit.
fetch https://github.com/marzer/tomlplusplus/raw/c635f218c0aefc801d9748841930365e54fe3089/toml.hpp \
  e1cdd834b734baa6821701efa427c16f7116be44f1286350cde8683cd2c84565 toml.hpp
install -D -m 644 toml.hpp /usr/local/include/toml++/toml.h

rm -rf "$work"
