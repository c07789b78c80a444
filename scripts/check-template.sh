#!/usr/bin/env bash
# Lint template.yaml (or the template given as $1) with `sam validate --lint`
# and `cfn-lint`; both must be clean (no errors, no warnings). Works offline.
#
# Uses the tools in .venv/ at the repository root; when they are missing it runs
# scripts/install-deps.sh (the one installer, pinned in scripts/requirements.txt),
# so CI on a fresh machine can just run this script. Set HONGBAO_VENV to use
# another venv directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${HONGBAO_VENV:-$root/.venv}"
template="$(realpath "${1:-$root/template.yaml}")"

if [[ ! -x "$venv/bin/sam" || ! -x "$venv/bin/cfn-lint" ]]; then
    echo "check-template: sam or cfn-lint missing in $venv; running scripts/install-deps.sh" >&2
    HONGBAO_VENV="$venv" "$root/scripts/install-deps.sh"
fi

# sam validate needs a region even offline; never send telemetry from CI.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export SAM_CLI_TELEMETRY=0

cd "$root"
status=0

echo "== sam validate --lint ($("$venv/bin/sam" --version))"
"$venv/bin/sam" validate --lint --region us-east-1 --template-file "$template" || status=1

echo "== cfn-lint ($("$venv/bin/cfn-lint" --version))"
# Exit code: 0 clean, 2 errors, 4 warnings (bit flags; informational = 8 is
# not enabled by default). Anything non-zero fails the check.
"$venv/bin/cfn-lint" --format parseable -- "$template" || status=1

if ((status == 0)); then
    echo "check-template: OK"
else
    echo "check-template: FAILED" >&2
fi
exit "$status"
