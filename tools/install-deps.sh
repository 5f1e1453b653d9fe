#!/usr/bin/env bash
# Install t3sim's build and test dependencies from Debian 12's packages.
# Idempotent; run as root; quick when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git
  libyaml-cpp-dev libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-matplotlib
  # The fuzz preset (fuzz/README.md): clang, libFuzzer and the sanitizer runtimes
  # (libclang-rt-14-dev is only recommended by clang-14), llvm-symbolizer for stacks.
  clang-14 libclang-rt-14-dev llvm-14
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${missing[*]}; run as root (or with sudo) to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
