import { parseAbi } from "viem"

/**
 * The parts of SettlementEscrowV2's ABI the service reads: its events (the watcher's v2 index) and its time-bound
 * immutables (the start-up check). Written from ISettlementEscrowV2.sol so the service does not depend on the
 * generated artifact's presence; test/unit/escrow-index-v2.test.ts checks every item against the artifact's ABI.
 */
export const escrowV2EventsAbi = parseAbi([
  "struct Fill { bytes32 fillId; address owner; bytes32 orderId; uint64 sequence; uint256 makerChainId; address makerEscrow; uint256 takerChainId; address takerEscrow; address payer; address payee; uint256 amountIn; address recipient; uint256 amountOut; uint32 dex; bool toMargin; bytes32 hashlock; uint32 hashlockIndex; address payKey; uint64 payBy; uint64 makerExpiry; uint64 takerExpiry; }",
  "event OrderFunded(bytes32 indexed orderKey, address indexed owner, bytes32 indexed orderId, address operator, address quoteSigner, uint256 amount, uint256 available, bool created, bytes32 digest)",
  "event CloseRequested(bytes32 indexed orderKey, address indexed owner, bytes32 indexed orderId, uint32 dex, bool toMargin)",
  "event OrderClosed(bytes32 indexed orderKey, address indexed owner, bytes32 indexed orderId, address caller, uint256 amount, uint32 dex, bool toMargin, bool refused, uint8 kind, uint256 nonce)",
  "event NonceInvalidated(address indexed owner, uint256 nonce)",
  "event Locked(bytes32 indexed fillDigest, bytes32 indexed orderKey, address indexed payKey, Fill fill, uint256 quoteIndex, bytes32 quoteSetDigest)",
  "event Paid(bytes32 indexed fillDigest, address indexed payer, address indexed payee, Fill fill, bytes32 payTakeDigest)",
  "event Claimed(bytes32 indexed fillDigest, bytes32 indexed orderKey, address indexed recipient, uint256 amountOut, uint32 dex, bool toMargin, bool refused, bytes32 secret)",
  "event PaymentClaimed(bytes32 indexed fillDigest, address indexed payee, uint256 amountIn, bytes32 secret)",
  "event Refunded(bytes32 indexed fillDigest, bytes32 indexed orderKey, uint256 amountOut, bool toOwner, bool refused)",
  "event LockCancelled(bytes32 indexed fillDigest, bytes32 indexed orderKey, uint256 amountOut, bool toOwner, bool refused)",
  "event PaymentRefunded(bytes32 indexed fillDigest, address indexed payer, uint256 amountIn)",
])

/** The immutables a deployment's `settlement` values must equal. */
export const escrowV2TimingAbi = parseAbi([
  "function MAX_LOCK() view returns (uint64)",
  "function PAY_BY_MAX() view returns (uint64)",
  "function CLAIM_WINDOW() view returns (uint64)",
  "function MAX_QUOTE_LIFE() view returns (uint64)",
  "function TAKER_TIMEOUT_MIN() view returns (uint64)",
])
