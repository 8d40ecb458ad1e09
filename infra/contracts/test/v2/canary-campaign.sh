#!/usr/bin/env bash
# Mutation campaign for settlement v2 (opt-in, ~1 min): the adversarial-operator invariant suite must FAIL against
# each canary, i.e. SettlementEscrowV2Canary with one v1 hole reopened. Run from anywhere:
#   infra/contracts/test/v2/canary-campaign.sh
# (The default suite always runs the same five holes as scripted sequences: test/v2/V2Canaries.t.sol.)
set -u
cd "$(dirname "$0")/../../../.." || exit 2
names=(None OperatorCancel KeyById NoTakerEscrowCheck HashlockFreed NoStickyClose)
status=0
for k in 1 2 3 4 5; do
  # A fresh search per hole: forge would first replay the failure it persisted for the previous hole.
  rm -rf infra/contracts/cache/invariant/failures/V2CanaryCampaignTest
  out=$(V2_CANARY=$k npx forge test --root infra/contracts --match-contract V2CanaryCampaignTest 2>&1)
  failure=$(printf '%s\n' "$out" | grep -m1 '^\[FAIL' || true)
  runs=$(printf '%s\n' "$out" | grep -m1 -o 'runs: [0-9]*' || true)
  if [ -n "$failure" ]; then
    echo "canary ${names[$k]}: caught ${failure} (${runs})"
  else
    echo "canary ${names[$k]}: NOT caught"
    status=1
  fi
done
exit $status
