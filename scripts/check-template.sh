#!/usr/bin/env bash
# Lint template.yaml (or the template given as $1) with `sam validate --lint`,
# `cfn-lint` and checkov; all must be clean (no errors, no warnings; checkov: no
# failed check but those in scripts/checkov-skips.txt, each with its reason).
# Works offline. (`make lint` then runs tests/template_matrix.py, which also holds the
# hand-written template to functions.json and the docs: tests/template_checks/declared.py.)
#
# Uses the tools in .venv/ at the repository root; when they are missing it runs
# scripts/install-deps.sh (the one installer, pinned in scripts/requirements.txt),
# so CI on a fresh machine can just run this script. Set HONGBAO_VENV to use
# another venv directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${HONGBAO_VENV:-$root/.venv}"
template="$(realpath "${1:-$root/template.yaml}")"

if [[ ! -x "$venv/bin/sam" || ! -x "$venv/bin/cfn-lint" || ! -x "$venv/checkov/bin/checkov" ]]; then
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

echo "== checkov ($("$venv/checkov/bin/checkov" --version))"
# The skip list: `CKV_ID  reason` lines; an id without a reason is an error.
skips=()
while read -r id reason; do
    [[ -z "$id" || "$id" == \#* ]] && continue
    if [[ -z "$reason" ]]; then
        echo "scripts/checkov-skips.txt: $id has no reason" >&2
        status=1
    fi
    skips+=("$id")
done <"$root/scripts/checkov-skips.txt"
skip_arg="$(IFS=,; echo "${skips[*]}")"
# Offline: no download of external checks or of the guideline mapping.
BC_SKIP_MAPPING=TRUE "$venv/checkov/bin/checkov" --quiet --compact --skip-download \
    --framework cloudformation --skip-check "$skip_arg" -f "$template" || status=1

if ((status == 0)); then
    echo "check-template: OK"
else
    echo "check-template: FAILED" >&2
fi
exit "$status"
