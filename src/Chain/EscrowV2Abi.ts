import { settlementEscrowV2Abi } from "./artifacts/index.ts"

/**
 * SettlementEscrowV2's ABI as the service reads it, taken from the generated artifact (like v1's): its events (the
 * watcher's v2 index; OpenZeppelin's EIP712DomainChanged is never emitted and not indexed) and its time-bound
 * immutables (the start-up check).
 */
export const escrowV2EventsAbi = settlementEscrowV2Abi
export const escrowV2TimingAbi = settlementEscrowV2Abi

/** The v2 events the index folds (every event of the contract but OpenZeppelin's EIP712DomainChanged). */
export const escrowV2Events = settlementEscrowV2Abi.filter(
  (x) => x.type === "event" && x.name !== "EIP712DomainChanged",
)
