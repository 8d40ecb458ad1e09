// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ISettlementEscrow
/// @notice One escrow per venue chain. Makers fund orders; every movement of user funds is authorised by a
///         signature of the owner (FundOrder, CloseOffer), of the maker's quote signer (QuoteSet) and of the taker's
///         payer (Fill). The operator relays and sequences, but can only delay or abandon: every lock refunds
///         after its expiry without the operator.
/// @dev EIP-712 domain: name "SettlementEscrow", version "1", chainId, verifyingContract. A `Fill` is signed in the
///      TAKER chain escrow's domain; the maker chain's escrow recomputes that domain from (takerChainId, takerEscrow).
///      Signatures: 65 bytes r||s||v, v ∈ {0,1,27,28}, low-s (EIP-2); ERC-1271 for contract signers.
interface ISettlementEscrow {
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

    /// @notice EIP-712 `CloseOffer`: the owner releases an order's available funds (or its zero-id balance).
    struct CloseOffer {
        bytes32 orderId;
        address owner;
        uint32 dex;
        bool toMargin;
        uint256 nonce;
        uint256 deadline;
    }

    /// @notice EIP-712 `Quote`. `receive_` is the EIP-712 field `receive` (a reserved word in Solidity).
    /// @dev The maker supplies `supply` units here for `receive` units of `token` paid to `recipient` on `chainId`.
    struct Quote {
        uint256 chainId;
        address token;
        address recipient;
        uint256 supply;
        uint256 receive_;
        uint256 minFill;
    }

    /// @notice EIP-712 `QuoteSet`, signed by the order's quote signer in the maker chain escrow's domain.
    struct QuoteSet {
        bytes32 orderId;
        uint64 sequence;
        uint64 generation;
        uint256 quoteSize;
        uint64 validUntil;
        Quote[] quotes;
    }

    /// @notice EIP-712 `Fill`, the taker's agreement, signed by `payer` in the taker chain escrow's domain.
    struct Fill {
        bytes32 fillId;
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

    /// @notice A funded order. `operator` and `quoteSigner` are fixed by the first funding.
    struct Order {
        address owner;
        address operator;
        address quoteSigner;
        uint256 available;
        uint256 locked;
    }

    enum LockState {
        None,
        Locked,
        Claimed,
        Refunded,
        Cancelled
    }

    /// @notice Maker-chain side of a fill: `amountOut` of `orderId` locked under `hashlock` until `expiry`.
    struct FillLock {
        bytes32 orderId;
        uint64 sequence;
        uint64 expiry;
        LockState state;
        uint32 dex;
        bool toMargin;
        address recipient;
        bytes32 hashlock;
        uint256 amountOut;
    }

    enum PaymentState {
        None,
        Held,
        Claimed,
        Refunded
    }

    /// @notice Taker-chain side of a fill: `amountIn` pulled from `payer`, owed to `payee` against the secret.
    struct Payment {
        address payer;
        uint64 expiry;
        PaymentState state;
        address payee;
        bytes32 hashlock;
        uint256 amountIn;
    }

    // ---------------------------------------------------------------- errors

    error ZeroAddress();
    error ZeroAmount();
    error ZeroOrderId();
    error ZeroFillId();
    error InvalidConfig();
    /// @notice The signature does not recover to (or is not accepted by) the expected signer.
    error InvalidSignature(address expectedSigner);
    error SignatureExpired(uint256 deadline);
    /// @notice This exact FundOrder was already executed (its digest is single-use).
    error FundOrderAlreadyUsed(bytes32 digest);
    error NonceAlreadyUsed(address owner, uint256 nonce);
    /// @notice A top-up named another owner, operator or quote signer than the order's.
    error OrderTermsMismatch(bytes32 orderId);
    error UnknownOrder(bytes32 orderId);
    error NotOrderOwner(bytes32 orderId, address owner);
    error NotOperator(bytes32 orderId, address caller);
    error NothingToClose(bytes32 orderId);
    /// @notice `toMargin == false` pays the wallet and requires `dex == 0`.
    error WalletPayoutRequiresDexZero(uint32 dex);
    error InsufficientAllowance(address from, uint256 allowance, uint256 needed);
    /// @notice The token moved another amount than requested (fee-on-transfer tokens are unsupported).
    error UnexpectedTransferAmount(uint256 expected, uint256 actual);
    /// @notice The router pulled a part of the amount only.
    error RouterMisbehaved(uint256 expected, uint256 pulled);
    /// @notice The router call ran out of gas: the relayer must send more, we do not treat it as a refusal.
    error RouterOutOfGas();
    error WrongChainOrEscrow();
    error QuoteSetMismatch();
    error QuoteExpired(uint64 validUntil);
    error QuoteIndexOutOfRange(uint256 index, uint256 length);
    error QuoteChainMismatch(uint256 quoteChainId, uint256 takerChainId);
    error PayeeMismatch(address quoteRecipient, address payee);
    error BelowMinFill(uint256 amountOut, uint256 minFill);
    error PriceBelowQuote();
    error QuoteSizeExceeded(uint256 filled, uint256 quoteSize);
    error InsufficientAvailable(uint256 available, uint256 needed);
    error BadExpiry();
    error FillExists(bytes32 fillId);
    error PaymentExists(bytes32 fillId);
    error NotLocked(bytes32 fillId);
    error NotHeld(bytes32 fillId);
    error Expired(uint64 expiry);
    error NotExpired(uint64 expiry);
    error WrongSecret();

    // ---------------------------------------------------------------- events

    /// @notice `amount` was pulled from `owner` into order `orderId`; `available` is the order's new available.
    /// @param created True on the first funding (operator and quote signer fixed here).
    /// @param digest The FundOrder's EIP-712 digest (single-use).
    event OrderFunded(
        bytes32 indexed orderId,
        address indexed owner,
        address indexed operator,
        address quoteSigner,
        uint256 amount,
        uint256 available,
        bool created,
        bytes32 digest
    );

    /// @notice An order's available funds (or, for `orderId == 0`, the owner's zero-id balance) were released.
    /// @param refused True when the venue refused the margin deposit: `amount` is now in `owner`'s zero-id balance.
    /// @param byOperator True for `operatorClose`, false for `closeWithSig` (then `nonce` is the consumed nonce).
    event OrderClosed(
        bytes32 indexed orderId,
        address indexed owner,
        address indexed caller,
        uint256 amount,
        uint32 dex,
        bool toMargin,
        bool refused,
        bool byOperator,
        uint256 nonce
    );

    /// @notice `owner` burned a CloseOffer nonce without closing.
    event NonceInvalidated(address indexed owner, uint256 nonce);

    /// @notice Maker chain: `fill.amountOut` moved from the order's available to locked for `fillId`.
    event Locked(
        bytes32 indexed fillId,
        bytes32 indexed orderId,
        address indexed payer,
        Fill fill,
        uint256 quoteIndex,
        bytes32 quoteSetDigest,
        bytes32 fillDigest
    );

    /// @notice Taker chain: `fill.amountIn` pulled from the payer and held for `fillId`.
    event Paid(bytes32 indexed fillId, address indexed payer, address indexed payee, Fill fill, bytes32 fillDigest);

    /// @notice Maker chain: the lock paid `recipient`; `secret` is now public.
    /// @param refused True when the venue refused: `amountOut` is now in `recipient`'s zero-id balance.
    event Claimed(
        bytes32 indexed fillId,
        bytes32 indexed orderId,
        address indexed recipient,
        uint256 amountOut,
        uint32 dex,
        bool toMargin,
        bool refused,
        bytes32 secret
    );

    /// @notice Taker chain: the payment went to `payee`.
    event PaymentClaimed(bytes32 indexed fillId, address indexed payee, uint256 amountIn, bytes32 secret);

    /// @notice Maker chain: the lock expired and `amountOut` returned to the order's available.
    event Refunded(bytes32 indexed fillId, bytes32 indexed orderId, uint256 amountOut);

    /// @notice Maker chain: the operator cancelled the lock before any claim; `amountOut` returned to available.
    event LockCancelled(bytes32 indexed fillId, bytes32 indexed orderId, uint256 amountOut);

    /// @notice Taker chain: the payment expired and `amountIn` returned to `payer`.
    event PaymentRefunded(bytes32 indexed fillId, address indexed payer, uint256 amountIn);

    // ---------------------------------------------------------------- funding and closing

    /// @notice Funds (or tops up) an order. Anyone relays; the owner's signature fixes every term.
    /// @dev Pulls with `permit` when given, tolerating an already-used (front-run) permit when the allowance covers
    ///      `amount`. A FundOrder digest is single-use: a second identical top-up needs another deadline.
    function fund(FundOrder calldata order, bytes calldata ownerSig, Permit calldata permit) external;

    /// @notice Releases all of an order's available funds (or the owner's zero-id balance) to the owner.
    /// @dev Anyone relays. The nonce is random and single-use per owner; `deadline` inclusive.
    function closeWithSig(CloseOffer calldata offer, bytes calldata ownerSig) external;

    /// @notice The order's operator releases its available funds to the owner (managed orders).
    function operatorClose(bytes32 orderId, uint32 dex, bool toMargin) external;

    /// @notice Burns one of the caller's CloseOffer nonces (revokes a signed, unrelayed close).
    function invalidateNonce(uint256 nonce) external;

    // ---------------------------------------------------------------- hashlocked fills

    /// @notice Maker chain, the order's operator: locks `fill.amountOut` of the order under `fill.hashlock`.
    /// @param quoteIndex Index in `quoteSet.quotes` of the quote the fill executes.
    function lock(
        Fill calldata fill,
        bytes calldata fillSig,
        QuoteSet calldata quoteSet,
        uint256 quoteIndex,
        bytes calldata quoteSig
    ) external;

    /// @notice Taker chain, anyone relays: pulls `fill.amountIn` from the payer into a payment held for the fill.
    function pay(Fill calldata fill, bytes calldata fillSig, Permit calldata permit) external;

    /// @notice Maker chain, anyone with the secret, before the lock's expiry: pays the fill's recipient.
    function claim(bytes32 fillId, bytes32 secret) external;

    /// @notice Taker chain, anyone with the secret, before the payment's expiry: pays the payee.
    function claimPayment(bytes32 fillId, bytes32 secret) external;

    /// @notice Maker chain, anyone, from the lock's expiry on: returns `amountOut` to the order's available.
    function refund(bytes32 fillId) external;

    /// @notice Taker chain, anyone, from the payment's expiry on: returns `amountIn` to the payer.
    function refundPayment(bytes32 fillId) external;

    /// @notice Maker chain, the order's operator, before any claim: returns `amountOut` to the order's available.
    function cancelLock(bytes32 fillId) external;

    // ---------------------------------------------------------------- views

    /// @notice The escrowed ERC-20 (EIP-2612).
    function token() external view returns (address);

    /// @notice The margin router (zero: no margin path, every margin payout lands in the zero-id balance).
    function router() external view returns (address);

    /// @notice Minimum seconds between a fill's maker expiry and its taker expiry.
    function REVEAL_WINDOW() external view returns (uint64);

    /// @notice Maximum seconds a lock may hold maker funds (`makerExpiry - now`).
    function MAX_LOCK_DURATION() external view returns (uint64);

    /// @notice Sum of everything the escrow owes: Σ available + Σ locked + Σ zero-id balances + Σ held payments.
    /// @dev The integrity check: `token.balanceOf(escrow) >= totalLiabilities()` always, `==` unless someone sent
    ///      tokens to the escrow directly.
    function totalLiabilities() external view returns (uint256);

    /// @notice Reads an order (zero values for an unknown id).
    function getOrder(bytes32 orderId) external view returns (Order memory);

    /// @notice An owner's zero-id available balance.
    function balanceOf(address owner) external view returns (uint256);

    /// @notice Reads a maker-chain lock.
    function getLock(bytes32 fillId) external view returns (FillLock memory);

    /// @notice Reads a taker-chain payment.
    function getPayment(bytes32 fillId) external view returns (Payment memory);

    /// @notice Σ amountOut of live and claimed locks under (order, sequence); compared with `quoteSize`.
    function filledOut(bytes32 orderId, uint64 sequence) external view returns (uint256);

    /// @notice Whether `owner` has used (or burned) CloseOffer `nonce`.
    function nonceUsed(address owner, uint256 nonce) external view returns (bool);

    /// @notice Whether a FundOrder digest was executed.
    function fundDigestUsed(bytes32 digest) external view returns (bool);

    /// @notice This escrow's EIP-712 domain separator.
    function domainSeparator() external view returns (bytes32);

    /// @notice The domain separator of the escrow `escrow` on chain `chainId` (same name and version).
    function domainSeparatorFor(uint256 chainId, address escrow) external pure returns (bytes32);

    /// @notice EIP-712 digest of a FundOrder in this escrow's domain.
    function hashFundOrder(FundOrder calldata order) external view returns (bytes32);

    /// @notice EIP-712 digest of a CloseOffer in this escrow's domain.
    function hashCloseOffer(CloseOffer calldata offer) external view returns (bytes32);

    /// @notice EIP-712 digest of a QuoteSet in this escrow's domain.
    function hashQuoteSet(QuoteSet calldata quoteSet) external view returns (bytes32);

    /// @notice EIP-712 digest of a Fill in the domain of `fill.takerEscrow` on `fill.takerChainId`.
    function hashFill(Fill calldata fill) external pure returns (bytes32);
}
