// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ISettlementEscrowV2
/// @notice Settlement v2: one escrow per venue chain, a new deployment beside v1 (which only drains). Makers fund
///         orders; a fill locks maker funds on the maker chain and holds the taker's payment on the taker chain, both
///         under the maker's hashlock and both keyed by the digest of the same `Fill`. The maker holds the secrets
///         and reveals one only after seeing the payment that matches its own lock.
///
///         Trust statement (kept true by these rules and tested by the adversarial-operator invariant suite): the
///         operator can delay, and can fail to complete a fill it started, but it can never move funds to an address
///         that no owner signed for, nor at a price the maker did not sign, alone or with a maker or taker it
///         controls; every lock and payment refunds after its timeout without it. What remains: the taker relies on
///         its client checking the lock (same Fill digest, live) before its pay key authorises payment; a fake taker
///         can hold a maker's liquidity until `makerExpiry` at no cost (bounded off chain by per-taker limits on
///         unpaid locks and by small quote sets).
///
///         Who authorises what: `FundOrder` and `CloseOffer` by the order's owner (ECDSA or ERC-1271); `QuoteSet`
///         (price, payee, taker escrow, hashlock root) by the order's quote signer (ECDSA or ERC-1271); `Fill` by the
///         taker's payer (plain ECDSA only); `PayTake` and `CancelFill` by the Fill's pay key (plain ECDSA only). The
///         operator (fixed per order by the owner) only calls `lock` and `operatorClose`.
///
/// @dev EIP-712 domain: name "SettlementEscrow", version "2", chainId, verifyingContract. Type strings: see
///      EscrowHashingV2 (pinned in notes/v2-types.md). Domains: FundOrder, CloseOffer, QuoteSet and CancelFill in
///      the escrow where they are used (the maker chain's for QuoteSet and CancelFill); Fill and PayTake in the TAKER
///      chain escrow's domain (the maker chain's escrow recomputes it from `fill.takerChainId`/`fill.takerEscrow`).
///      Signatures: 65 bytes r‖s‖v, v ∈ {0,1,27,28}, low-s (EIP-2).
///
///      Time conventions (`now` = block.timestamp, all in seconds, one rule per boundary, same on every chain):
///      - signature deadlines (`FundOrder.deadline`, `CloseOffer.deadline`): valid while `now <= deadline`;
///      - `QuoteSet.validUntil`: lock accepted while `now <= validUntil`; and `issuedAt <= validUntil <= issuedAt +
///        MAX_QUOTE_LIFE`;
///      - `Fill.payBy`: lock needs `now < payBy <= now + PAY_BY_MAX`; `payTake` accepted while `now <= payBy`;
///      - `Fill.takerExpiry`: `claimPayment` while `now < takerExpiry`; `refundPayment` once `now >= takerExpiry`;
///        lock and payTake need `takerExpiry >= payBy + TAKER_TIMEOUT_MIN`;
///      - `Fill.makerExpiry`: `claim` while `now < makerExpiry`; `refund` once `now >= makerExpiry`; lock needs
///        `takerExpiry + CLAIM_WINDOW <= makerExpiry <= now + MAX_LOCK`.
///      So at the second an expiry is reached the claim side is closed and the refund side open; the last reveal
///      (`claimPayment` at `takerExpiry - 1`) leaves the recipient `>= CLAIM_WINDOW + 1` seconds to `claim`; and a
///      close requested at `t` completes (every lock of the order refundable to the owner) by `t + MAX_LOCK`.
///      `issuedAt` is not compared with `now` (a maker's clock may run ahead of the chain; a later `issuedAt` only
///      lengthens the exposure of the maker that signed it). The lock's time checks use this (maker) escrow's
///      immutables, payTake's use the taker escrow's: a deployment gives both chains' escrows values that satisfy
///      DESIGN §6's inequalities (F finality, D inclusion delay, δ timestamp drift, R reaction, C reveal cutoff):
///      PAY_BY_MAX ≥ F_m + client check + D_t; TAKER_TIMEOUT_MIN ≥ F_t + R_maker + C; CLAIM_WINDOW ≥ δ_t + δ_m +
///      R_claimer + D_m + F_m (minutes); PAY_BY_MAX + TAKER_TIMEOUT_MIN + CLAIM_WINDOW ≤ MAX_LOCK (enforced).
interface ISettlementEscrowV2 {
    // ---------------------------------------------------------------- typed data (field order = EIP-712 order)

    /// @notice EIP-712 `FundOrder`: the owner fixes operator, quote signer and amount of a funding.
    struct FundOrder {
        bytes32 orderId;
        address owner;
        address operator;
        address quoteSigner;
        uint256 amount;
        uint256 deadline;
    }

    /// @notice EIP-712 `CloseOffer`: the owner closes an order (sticky) or releases its zero-id balance.
    struct CloseOffer {
        bytes32 orderId;
        address owner;
        uint32 dex;
        bool toMargin;
        uint256 nonce;
        uint256 deadline;
    }

    /// @notice EIP-712 `Quote`. `receive_` is the EIP-712 field `receive` (a reserved word in Solidity).
    /// @dev The maker supplies `supply` units here for `receive` units of `token` paid to `recipient` by the escrow
    ///      `escrow` on chain `chainId` (the taker chain). `lock` requires the Fill's taker chain and escrow to be
    ///      these, so a maker's funds move only against a payment held by an escrow it chose. `token` is not checked
    ///      on chain: an escrow holds one token, so `escrow` fixes it; clients check it against `escrow.token()`.
    struct Quote {
        uint256 chainId;
        address token;
        address escrow;
        address recipient;
        uint256 supply;
        uint256 receive_;
        uint256 minFill;
    }

    /// @notice EIP-712 `QuoteSet`, signed by the order's quote signer in the maker chain escrow's domain.
    /// @dev `hashlockRoot`: OpenZeppelin (StandardMerkleTree-compatible) Merkle root over `hashlockCount` leaves
    ///      `hashlockLeaf(i, hashlock_i)`; the maker derives secret i itself and keeps it until it reveals.
    struct QuoteSet {
        address owner;
        bytes32 orderId;
        uint64 sequence;
        uint64 generation;
        uint256 quoteSize;
        uint64 issuedAt;
        uint64 validUntil;
        bytes32 hashlockRoot;
        uint32 hashlockCount;
        Quote[] quotes;
    }

    /// @notice EIP-712 `Fill`, the taker's agreement, signed by `payer` (plain ECDSA) in the taker chain escrow's
    ///         domain. Its digest there is the key of its lock (maker chain) and of its payment (taker chain).
    /// @dev `fillId` is a uniqueness salt, not a key. `payKey` is an ephemeral key of the taker's client: only it can
    ///      authorise the payment (`PayTake`) or cancel the lock early (`CancelFill`).
    struct Fill {
        bytes32 fillId;
        address owner;
        bytes32 orderId;
        uint64 sequence;
        uint256 makerChainId;
        address makerEscrow;
        uint256 takerChainId;
        address takerEscrow;
        address payer;
        address payee;
        uint256 amountIn;
        address recipient;
        uint256 amountOut;
        uint32 dex;
        bool toMargin;
        bytes32 hashlock;
        uint32 hashlockIndex;
        address payKey;
        uint64 payBy;
        uint64 makerExpiry;
        uint64 takerExpiry;
    }

    /// @notice An EIP-2612 permit for this escrow as spender. `deadline == 0` means "no permit, use the allowance".
    struct Permit {
        uint256 value;
        uint256 deadline;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    // ---------------------------------------------------------------- state

    /// @notice A funded order, stored under `orderKey(owner, orderId)`. Operator and quote signer are fixed by the
    ///         first funding. `closeRequested` is sticky: once the owner closed, the order takes no lock and no
    ///         top-up, and refunds of its locks go to the owner paid out as `closeDex`/`closeToMargin` say.
    struct Order {
        address owner;
        address operator;
        address quoteSigner;
        uint256 available;
        uint256 locked;
        bool closeRequested;
        uint32 closeDex;
        bool closeToMargin;
    }

    enum LockState {
        None,
        Locked,
        Claimed,
        Refunded,
        Cancelled
    }

    /// @notice Maker-chain side of a fill, stored under the Fill digest.
    struct FillLock {
        address owner;
        bytes32 orderId;
        uint64 sequence;
        uint64 expiry;
        LockState state;
        uint32 dex;
        bool toMargin;
        address recipient;
        address payKey;
        bytes32 hashlock;
        uint256 amountOut;
    }

    enum PaymentState {
        None,
        Held,
        Claimed,
        Refunded
    }

    /// @notice Taker-chain side of a fill, stored under the Fill digest: `amountIn` pulled from `payer`, owed to
    ///         `payee` against the secret until `expiry` (the Fill's `takerExpiry`).
    struct Payment {
        address payer;
        uint64 expiry;
        PaymentState state;
        address payee;
        bytes32 hashlock;
        uint256 amountIn;
    }

    /// @notice How an order was closed (`OrderClosed.kind`).
    enum CloseKind {
        Signature,
        Owner,
        Operator
    }

    // ---------------------------------------------------------------- errors

    error ZeroAddress();
    error ZeroAmount();
    error ZeroOrderId();
    error InvalidConfig();
    /// @notice The signature does not recover to (or is not accepted by) the expected signer.
    error InvalidSignature(address expectedSigner);
    error SignatureExpired(uint256 deadline);
    /// @notice This exact FundOrder was already executed (its digest is single-use).
    error FundOrderAlreadyUsed(bytes32 digest);
    error NonceAlreadyUsed(address owner, uint256 nonce);
    /// @notice A top-up named another operator or quote signer than the order's.
    error OrderTermsMismatch(address owner, bytes32 orderId);
    error UnknownOrder(address owner, bytes32 orderId);
    error NotOperator(address owner, bytes32 orderId, address caller);
    /// @notice Only a zero-id close with a zero balance: an order's close never reverts for lack of funds.
    error NothingToClose(address owner, bytes32 orderId);
    /// @notice The owner asked to close this order (sticky): no lock, no top-up.
    error OrderClosing(address owner, bytes32 orderId);
    /// @notice `toMargin == false` pays the wallet and requires `dex == 0`.
    error WalletPayoutRequiresDexZero(uint32 dex);
    error InsufficientAllowance(address from, uint256 allowance, uint256 needed);
    /// @notice The token moved another amount than requested (fee-on-transfer tokens are unsupported).
    error UnexpectedTransferAmount(uint256 expected, uint256 actual);
    /// @notice The router pulled a part of the amount only.
    error RouterMisbehaved(uint256 expected, uint256 pulled);
    /// @notice The router call ran out of gas: the relayer must send more, we do not treat it as a refusal.
    error RouterOutOfGas();
    /// @notice The Fill names another maker chain/escrow (lock) or taker chain/escrow (payTake) than this one.
    error WrongChainOrEscrow();
    /// @notice The quote set's owner, order id or sequence differs from the Fill's.
    error QuoteSetMismatch();
    error QuoteExpired(uint64 validUntil);
    /// @notice `validUntil < issuedAt` or `validUntil - issuedAt > MAX_QUOTE_LIFE`.
    error QuoteLifeTooLong(uint64 issuedAt, uint64 validUntil);
    error QuoteIndexOutOfRange(uint256 index, uint256 length);
    error QuoteChainMismatch(uint256 quoteChainId, uint256 takerChainId);
    /// @notice The Fill's taker escrow is not the escrow the maker quoted.
    error TakerEscrowMismatch(address quoteEscrow, address takerEscrow);
    error PayeeMismatch(address quoteRecipient, address payee);
    error BelowMinFill(uint256 amountOut, uint256 minFill);
    error PriceBelowQuote();
    error QuoteSizeExceeded(uint256 filled, uint256 quoteSize);
    error InsufficientAvailable(uint256 available, uint256 needed);
    /// @notice `hashlockIndex >= hashlockCount`.
    error HashlockIndexOutOfRange(uint32 index, uint32 count);
    /// @notice The proof does not lead from `hashlockLeaf(hashlockIndex, hashlock)` to the signed root.
    error InvalidHashlockProof();
    /// @notice This escrow already locked this hashlock once (it never frees it).
    error HashlockUsed(bytes32 hashlock);
    /// @notice Lock: not `now < payBy <= now + PAY_BY_MAX`.
    error BadPayBy(uint64 payBy);
    /// @notice `takerExpiry < payBy + TAKER_TIMEOUT_MIN`.
    error TakerTimeoutTooShort(uint64 payBy, uint64 takerExpiry);
    /// @notice `makerExpiry < takerExpiry + CLAIM_WINDOW`.
    error ClaimWindowTooShort(uint64 takerExpiry, uint64 makerExpiry);
    /// @notice `makerExpiry > now + MAX_LOCK`.
    error LockTooLong(uint64 makerExpiry);
    /// @notice payTake after the Fill's `payBy`.
    error PayByPassed(uint64 payBy);
    error LockExists(bytes32 fillDigest);
    error PaymentExists(bytes32 fillDigest);
    error EmptyTake();
    error LengthMismatch();
    /// @notice Fill `index` of a take names another payer or pay key than the take's first Fill.
    error TakeMismatch(uint256 index);
    error NotLocked(bytes32 fillDigest);
    error NotHeld(bytes32 fillDigest);
    error Expired(uint64 expiry);
    error NotExpired(uint64 expiry);
    error WrongSecret();

    // ---------------------------------------------------------------- events

    /// @notice `amount` was pulled from `owner` into its order `orderId`; `available` is the order's new available.
    /// @param created True on the first funding (operator and quote signer fixed here).
    /// @param digest The FundOrder's EIP-712 digest (single-use).
    event OrderFunded(
        bytes32 indexed orderKey,
        address indexed owner,
        bytes32 indexed orderId,
        address operator,
        address quoteSigner,
        uint256 amount,
        uint256 available,
        bool created,
        bytes32 digest
    );

    /// @notice The owner closed its order (sticky): no more locks or top-ups; refunds go to the owner this way.
    event CloseRequested(
        bytes32 indexed orderKey, address indexed owner, bytes32 indexed orderId, uint32 dex, bool toMargin
    );

    /// @notice An order's available funds (or, for `orderId == 0` and `orderKey == 0`, the owner's zero-id balance)
    ///         were paid to the owner. `amount` may be 0 (a close of an order with everything locked).
    /// @param refused True when the venue refused the margin deposit: `amount` is now in `owner`'s zero-id balance.
    /// @param nonce The consumed CloseOffer nonce for `CloseKind.Signature`, else 0.
    event OrderClosed(
        bytes32 indexed orderKey,
        address indexed owner,
        bytes32 indexed orderId,
        address caller,
        uint256 amount,
        uint32 dex,
        bool toMargin,
        bool refused,
        CloseKind kind,
        uint256 nonce
    );

    /// @notice `owner` burned a CloseOffer nonce without closing.
    event NonceInvalidated(address indexed owner, uint256 nonce);

    /// @notice Maker chain: `fill.amountOut` moved from the order's available to a lock under `fillDigest`.
    /// @param quoteSetDigest The quote set's EIP-712 digest in this escrow's domain.
    event Locked(
        bytes32 indexed fillDigest,
        bytes32 indexed orderKey,
        address indexed payKey,
        Fill fill,
        uint256 quoteIndex,
        bytes32 quoteSetDigest
    );

    /// @notice Taker chain: `fill.amountIn` pulled from the payer and held under `fillDigest`.
    /// @param payTakeDigest The pay key's PayTake digest: every Fill of one take carries the same value.
    event Paid(
        bytes32 indexed fillDigest, address indexed payer, address indexed payee, Fill fill, bytes32 payTakeDigest
    );

    /// @notice Maker chain: the lock paid `recipient`; `secret` is public.
    /// @param refused True when the venue refused: `amountOut` is now in `recipient`'s zero-id balance.
    event Claimed(
        bytes32 indexed fillDigest,
        bytes32 indexed orderKey,
        address indexed recipient,
        uint256 amountOut,
        uint32 dex,
        bool toMargin,
        bool refused,
        bytes32 secret
    );

    /// @notice Taker chain: the payment went to `payee`; `secret` is public.
    event PaymentClaimed(bytes32 indexed fillDigest, address indexed payee, uint256 amountIn, bytes32 secret);

    /// @notice Maker chain: the lock expired. `amountOut` went back to the order's available, or, when the order has
    ///         a close request (`toOwner`), to the owner as the close said (`refused`: into its zero-id balance).
    event Refunded(bytes32 indexed fillDigest, bytes32 indexed orderKey, uint256 amountOut, bool toOwner, bool refused);

    /// @notice Maker chain: the Fill's pay key cancelled the lock; the amount went where a refund would send it.
    event LockCancelled(
        bytes32 indexed fillDigest, bytes32 indexed orderKey, uint256 amountOut, bool toOwner, bool refused
    );

    /// @notice Taker chain: the payment expired and `amountIn` returned to `payer`.
    event PaymentRefunded(bytes32 indexed fillDigest, address indexed payer, uint256 amountIn);

    // ---------------------------------------------------------------- funding and closing

    /// @notice Funds (or tops up) the order `orderKey(order.owner, order.orderId)`. Anyone relays; the owner's
    ///         signature fixes every term. Nobody can block another owner's fund: ids are per owner.
    /// @dev Pulls with `permit` when given, tolerating an already-used (front-run) permit when the allowance covers
    ///      `amount`. A FundOrder digest is single-use. Reverts `OrderClosing` on a closed order.
    function fund(FundOrder calldata order, bytes calldata ownerSig, Permit calldata permit) external;

    /// @notice Anyone relays the owner's close. `orderId != 0`: sets the sticky close request (with `dex`/`toMargin`
    ///         for later refunds) and pays out the order's available, even when that is zero. `orderId == 0`: pays
    ///         out the owner's zero-id balance (reverts `NothingToClose` when it is zero). Nonce single-use.
    function closeWithSig(CloseOffer calldata offer, bytes calldata ownerSig) external;

    /// @notice The same as `closeWithSig` for the caller's own order (or its zero-id balance), without a signature.
    function close(bytes32 orderId, uint32 dex, bool toMargin) external;

    /// @notice The order's operator pays its available funds to the owner (managed orders). Sets no close request;
    ///         reverts `NothingToClose` when nothing is available.
    function operatorClose(address owner, bytes32 orderId, uint32 dex, bool toMargin) external;

    /// @notice Burns one of the caller's CloseOffer nonces (revokes a signed, unrelayed close).
    function invalidateNonce(uint256 nonce) external;

    // ---------------------------------------------------------------- hashlocked fills

    /// @notice Maker chain, the order's operator only: locks `fill.amountOut` of the order under the Fill digest.
    /// @dev Checks: operator; no close request; this chain and escrow are the Fill's maker side; the quote set
    ///      (signed by the order's quote signer here) names the Fill's owner, order id and sequence, lives
    ///      (`now <= validUntil`, `validUntil - issuedAt <= MAX_QUOTE_LIFE`); its quote `quoteIndex` names the Fill's
    ///      taker chain, taker escrow and payee, and bounds price and `minFill`; Σ locked+claimed per (order,
    ///      sequence) ≤ `quoteSize`; the time bounds (see the interface notes); `hashlockIndex < hashlockCount`,
    ///      `proof` leads from `hashlockLeaf(hashlockIndex, hashlock)` to the root, the hashlock was never locked
    ///      here; the payer's plain ECDSA signature over the Fill (taker domain); no lock under the digest yet.
    function lock(
        Fill calldata fill,
        bytes calldata fillSig,
        QuoteSet calldata quoteSet,
        uint256 quoteIndex,
        bytes calldata quoteSig,
        bytes32[] calldata proof
    ) external;

    /// @notice Taker chain, anyone relays: pays every Fill of one take, all or nothing. Every Fill names this chain
    ///         and escrow as its taker side, the same payer and pay key, and `now <= payBy`; each carries the payer's
    ///         ECDSA signature; `payKeySig` is the pay key's ECDSA signature over `PayTake(fills = their digests, in
    ///         order)` in this domain. Pulls Σ amountIn from the payer (permit for the sum, allowance fallback).
    /// @dev An allowance, a permit or the Fill signatures alone never pay: the pay key signs only after its client
    ///      saw each lock (same digest) live on the maker chain.
    function payTake(Fill[] calldata fills, bytes[] calldata fillSigs, bytes calldata payKeySig, Permit calldata permit)
        external;

    /// @notice Maker chain, anyone with the secret, while `now < makerExpiry`: pays the Fill's recipient (margin
    ///         through the router; a refused deposit credits the recipient's zero-id balance).
    function claim(bytes32 fillDigest, bytes32 secret) external;

    /// @notice Taker chain, anyone with the secret, while `now < takerExpiry`: pays the payee (the maker's reveal).
    function claimPayment(bytes32 fillDigest, bytes32 secret) external;

    /// @notice Maker chain, anyone, once `now >= makerExpiry`: back to the order's available, or to the owner as its
    ///         close said.
    function refund(bytes32 fillDigest) external;

    /// @notice Taker chain, anyone, once `now >= takerExpiry`: returns `amountIn` to the payer.
    function refundPayment(bytes32 fillDigest) external;

    /// @notice Maker chain, anyone relays: releases a live lock (as `refund` would) with the Fill's pay key's plain
    ///         ECDSA signature over `CancelFill(fill = fillDigest)` in this (maker) escrow's domain. Nobody else can:
    ///         not the operator, not the maker, not a contract signature.
    function cancelLock(bytes32 fillDigest, bytes calldata payKeySig) external;

    // ---------------------------------------------------------------- views

    /// @notice The escrowed ERC-20 (EIP-2612).
    function token() external view returns (address);

    /// @notice The margin router (zero: no margin path, every margin payout lands in the zero-id balance).
    function router() external view returns (address);

    /// @notice Upper bound on `makerExpiry - now` at lock: the longest a lock can hold maker funds, hence the
    ///         longest a requested close waits.
    function MAX_LOCK() external view returns (uint64);

    /// @notice Upper bound on `payBy - now` at lock: how long after the lock the taker may still pay (chosen
    ///         `>= F_m + client check + D_t`, maker-chain finality plus taker-chain inclusion).
    function PAY_BY_MAX() external view returns (uint64);

    /// @notice Lower bound on `makerExpiry - takerExpiry`: after the last possible reveal on the taker chain the
    ///         recipient (or anyone) still has this long to claim on the maker chain.
    function CLAIM_WINDOW() external view returns (uint64);

    /// @notice Upper bound on a quote set's `validUntil - issuedAt`.
    function MAX_QUOTE_LIFE() external view returns (uint64);

    /// @notice Lower bound on `takerExpiry - payBy`: the maker's time to see the payment final and reveal
    ///         (`>= F_t + R_maker + reveal cutoff`).
    function TAKER_TIMEOUT_MIN() external view returns (uint64);

    /// @notice Sum of everything the escrow owes: Σ available + Σ locked + Σ zero-id balances + Σ held payments.
    /// @dev The integrity check: `token.balanceOf(escrow) >= totalLiabilities()` always, `==` unless someone sent
    ///      tokens to the escrow directly.
    function totalLiabilities() external view returns (uint256);

    /// @notice Reads an order (zero values for an unknown one).
    function getOrder(address owner, bytes32 orderId) external view returns (Order memory);

    /// @notice Whether the owner closed this order (sticky).
    function closeRequested(address owner, bytes32 orderId) external view returns (bool);

    /// @notice An owner's zero-id available balance.
    function balanceOf(address owner) external view returns (uint256);

    /// @notice Reads a maker-chain lock by Fill digest.
    function getLock(bytes32 fillDigest) external view returns (FillLock memory);

    /// @notice Reads a taker-chain payment by Fill digest.
    function getPayment(bytes32 fillDigest) external view returns (Payment memory);

    /// @notice Whether this escrow ever locked `hashlock` (never cleared).
    function hashlockUsed(bytes32 hashlock) external view returns (bool);

    /// @notice Σ amountOut of live and claimed locks under (orderKey, sequence); compared with `quoteSize`.
    function filledOut(bytes32 orderKey, uint64 sequence) external view returns (uint256);

    /// @notice Whether `owner` has used (or burned) CloseOffer `nonce`.
    function nonceUsed(address owner, uint256 nonce) external view returns (bool);

    /// @notice Whether a FundOrder digest was executed.
    function fundDigestUsed(bytes32 digest) external view returns (bool);

    /// @notice `keccak256(abi.encode(owner, orderId))`.
    function orderKey(address owner, bytes32 orderId) external pure returns (bytes32);

    /// @notice The Merkle leaf of hashlock `index`: `keccak256(bytes.concat(keccak256(abi.encode(index, hashlock))))`.
    function hashlockLeaf(uint32 index, bytes32 hashlock) external pure returns (bytes32);

    /// @notice This escrow's EIP-712 domain separator.
    function domainSeparator() external view returns (bytes32);

    /// @notice The domain separator of the v2 escrow `escrow` on chain `chainId` (same name and version).
    function domainSeparatorFor(uint256 chainId, address escrow) external pure returns (bytes32);

    /// @notice EIP-712 digest of a FundOrder in this escrow's domain.
    function hashFundOrder(FundOrder calldata order) external view returns (bytes32);

    /// @notice EIP-712 digest of a CloseOffer in this escrow's domain.
    function hashCloseOffer(CloseOffer calldata offer) external view returns (bytes32);

    /// @notice EIP-712 digest of a QuoteSet in this escrow's domain.
    function hashQuoteSet(QuoteSet calldata quoteSet) external view returns (bytes32);

    /// @notice The Fill digest: EIP-712 digest in the domain of `fill.takerEscrow` on `fill.takerChainId`.
    function hashFill(Fill calldata fill) external pure returns (bytes32);

    /// @notice EIP-712 digest of `PayTake(fills)` in this escrow's domain (as the taker chain's escrow).
    function hashPayTake(bytes32[] calldata fillDigests) external view returns (bytes32);

    /// @notice EIP-712 digest of `CancelFill(fill)` in this escrow's domain (as the maker chain's escrow).
    function hashCancelFill(bytes32 fillDigest) external view returns (bytes32);
}
