#!/usr/bin/env bash
# Installs the Debian packages perfwatch needs to build and test, when any is missing.
# Sourced by scripts/demo and scripts/test; safe to run again (installs nothing when complete).
set -euo pipefail

PERFWATCH_PACKAGES=(
  g++ cmake ninja-build pkg-config
  libyaml-cpp-dev libsqlitecpp-dev libsqlite3-dev libfmt-dev libcli11-dev libssl-dev nlohmann-json3-dev libsimdjson-dev libutfcpp-dev
  libboost-dev libgtest-dev libgmock-dev libsystemd-dev prometheus-cpp-dev systemd libcurl4-openssl-dev
  libpq-dev libseccomp-dev python3-aiosmtpd openssl libxml2-utils chromium sqlite3 util-linux
  dpkg-dev file man-db adduser
)

# Extra packages a script needs besides these (fuzzing, benchmarks) are passed as arguments.
perfwatch_install_deps() {
  local missing=()
  for p in "${PERFWATCH_PACKAGES[@]}" "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "perfwatch: installing missing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
