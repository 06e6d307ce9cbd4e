#!/usr/bin/env bash
# The C++ client's own tests: CMake + GoogleTest, run by ctest, in a fresh build directory.
# About 40 s here (most of it compiling GoogleTest users).
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
need=()
command -v c++ >/dev/null || need+=(g++)
command -v cmake >/dev/null || need+=(cmake)
command -v make >/dev/null || need+=(make)
[ -e /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "41-clients-cpp: installing ${need[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
echo "41-clients-cpp: cmake, build and ctest in $build" >&2
timeout 120 cmake -S clients/cpp -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
timeout 600 cmake --build "$build" -j "$(nproc)" >/dev/null
timeout 120 ctest --test-dir "$build" --output-on-failure
