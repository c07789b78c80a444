#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh machine, and nothing that is
# already there: redis-server/redis-cli (Debian package), a Python venv in .venv with
# aws-sam-cli (it ships the Lambda Runtime Interface Emulator) and cfn-lint.
# Usage: scripts/install-deps.sh [--with-sam-build]   (adds cargo-lambda and ziglang)
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo -n"; fi

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "installing redis-server (apt)"
  $SUDO apt-get install -y redis-server >/dev/null 2>&1 || {
    $SUDO apt-get update >/dev/null && $SUDO apt-get install -y redis-server >/dev/null
  }
fi

if ! command -v cargo >/dev/null; then
  echo "cargo is required (https://rustup.rs)" >&2
  exit 1
fi

PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv"
  $PY -m venv .venv
fi
want="aws-sam-cli cfn-lint"
if [ "${1:-}" = "--with-sam-build" ]; then want="$want cargo-lambda ziglang"; fi
missing=""
for p in $want; do
  .venv/bin/python -m pip show -q "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ "${1:-}" = "--with-sam-build" ] && command -v rustup >/dev/null; then
  rustup target list --installed | grep -q aarch64-unknown-linux-gnu \
    || rustup target add aarch64-unknown-linux-gnu
fi
if [ -n "$missing" ]; then
  echo "installing into .venv:$missing"
  .venv/bin/python -m pip install -q --disable-pip-version-check $missing
fi
