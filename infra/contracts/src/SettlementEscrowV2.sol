// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

import {ISettlementEscrowV2} from "./interfaces/ISettlementEscrowV2.sol";
import {IMarginRouter} from "./interfaces/IMarginRouter.sol";
import {EscrowHashingV2} from "./lib/EscrowHashingV2.sol";
import {SignatureVerifier} from "./lib/SignatureVerifier.sol";

/// @title SettlementEscrowV2
/// @notice See ISettlementEscrowV2 (rules, trust statement, time conventions). One per venue chain, no admin, no
///         upgrade path, no sweep. Deployed beside v1 (`SettlementEscrow`), which keeps its own rules and only drains.
/// @dev Accounting invariant (tested): token.balanceOf(this) == totalLiabilities ==
///      Σ order.available + Σ order.locked + Σ zero-id balances + Σ held payments (plus any tokens donated directly).
///      Authority (tested against an adversarial operator that also acts as maker and taker): maker funds leave only
///      to the owner or to the recipient of a Fill whose payment (same digest, at the quoted escrow, to the quoted
///      payee, at the quoted price) the maker's reveal claimed; a payment leaves only to its payee against the
///      secret of the live lock with the same digest, or back to the payer.
///      All state-changing entry points are nonReentrant; external calls come last except the router fallback.
///      The `internal virtual` hooks below exist only so the test suite can reopen one v1 hole at a time in a
///      test-only subclass (mutation canaries, test/v2/SettlementEscrowV2Canary.sol); a deployment cannot change them.
contract SettlementEscrowV2 is ISettlementEscrowV2, EIP712, ReentrancyGuard {
    using SafeERC20 for IERC20;

    /// @notice Upper bound on MAX_LOCK accepted by the constructor (a sanity bound, not a protocol value).
    uint64 public constant MAX_LOCK_LIMIT = 30 days;

    IERC20 private immutable _token;
    IMarginRouter private immutable _router;
    /// @inheritdoc ISettlementEscrowV2
    uint64 public immutable MAX_LOCK;
    /// @inheritdoc ISettlementEscrowV2
    uint64 public immutable PAY_BY_MAX;
    /// @inheritdoc ISettlementEscrowV2
    uint64 public immutable CLAIM_WINDOW;
    /// @inheritdoc ISettlementEscrowV2
    uint64 public immutable MAX_QUOTE_LIFE;
    /// @inheritdoc ISettlementEscrowV2
    uint64 public immutable TAKER_TIMEOUT_MIN;

    mapping(bytes32 orderKey => Order) internal _orders;
    mapping(address owner => uint256) private _balances;
    mapping(bytes32 fillDigest => FillLock) internal _locks;
    mapping(bytes32 fillDigest => Payment) private _payments;
    /// @inheritdoc ISettlementEscrowV2
    mapping(bytes32 hashlock => bool) public hashlockUsed;
    /// @inheritdoc ISettlementEscrowV2
    mapping(bytes32 orderKey => mapping(uint64 sequence => uint256)) public filledOut;
    /// @inheritdoc ISettlementEscrowV2
    mapping(address owner => mapping(uint256 nonce => bool)) public nonceUsed;
    /// @inheritdoc ISettlementEscrowV2
    mapping(bytes32 digest => bool) public fundDigestUsed;
    /// @inheritdoc ISettlementEscrowV2
    uint256 public totalLiabilities;

    /// @param token_ The escrowed ERC-20; must implement EIP-2612 for permit-based funding and payments.
    /// @param router_ The margin router for this chain (its `token()` must be `token_`), or zero for no margin path.
    /// @param maxLock MAX_LOCK: the longest a lock holds maker funds (and a requested close waits), seconds.
    /// @param payByMax PAY_BY_MAX: the latest `payBy` after the lock, seconds.
    /// @param claimWindow CLAIM_WINDOW: the least `makerExpiry - takerExpiry`, seconds.
    /// @param maxQuoteLife MAX_QUOTE_LIFE: the longest `validUntil - issuedAt` of a quote set, seconds.
    /// @param takerTimeoutMin TAKER_TIMEOUT_MIN: the least `takerExpiry - payBy`, seconds.
    /// @dev Requires every value > 0, `payByMax + takerTimeoutMin + claimWindow <= maxLock` (else no Fill with the
    ///      longest `payBy` could be locked), `maxQuoteLife <= maxLock` and `maxLock <= MAX_LOCK_LIMIT`.
    constructor(
        IERC20 token_,
        IMarginRouter router_,
        uint64 maxLock,
        uint64 payByMax,
        uint64 claimWindow,
        uint64 maxQuoteLife,
        uint64 takerTimeoutMin
    ) EIP712("SettlementEscrow", "2") {
        if (address(token_) == address(0)) revert ZeroAddress();
        if (maxLock == 0 || payByMax == 0 || claimWindow == 0 || maxQuoteLife == 0 || takerTimeoutMin == 0) {
            revert InvalidConfig();
        }
        if (maxLock > MAX_LOCK_LIMIT || maxQuoteLife > maxLock) revert InvalidConfig();
        if (uint256(payByMax) + takerTimeoutMin + claimWindow > maxLock) revert InvalidConfig();
        if (address(router_) != address(0) && router_.token() != address(token_)) revert InvalidConfig();
        _token = token_;
        _router = router_;
        MAX_LOCK = maxLock;
        PAY_BY_MAX = payByMax;
        CLAIM_WINDOW = claimWindow;
        MAX_QUOTE_LIFE = maxQuoteLife;
        TAKER_TIMEOUT_MIN = takerTimeoutMin;
    }

    // ================================================================ funding and closing

    /// @inheritdoc ISettlementEscrowV2
    function fund(FundOrder calldata o, bytes calldata ownerSig, Permit calldata permit) external nonReentrant {
        if (o.orderId == bytes32(0)) revert ZeroOrderId();
        if (o.amount == 0) revert ZeroAmount();
        if (o.operator == address(0) || o.quoteSigner == address(0)) revert ZeroAddress();
        if (block.timestamp > o.deadline) revert SignatureExpired(o.deadline);
        bytes32 digest = _hashTypedDataV4(EscrowHashingV2.hashFundOrder(o));
        // Signature-only terms (no nonce): the digest itself is the single-use key.
        if (fundDigestUsed[digest]) revert FundOrderAlreadyUsed(digest);
        if (!SignatureVerifier.isValidNow(o.owner, digest, ownerSig)) revert InvalidSignature(o.owner);

        // Keyed by (owner, id): another owner's funding under the same id is another order (no squatting).
        bytes32 key = EscrowHashingV2.orderKey(o.owner, o.orderId);
        Order storage order = _orders[key];
        bool created = order.owner == address(0);
        if (created) {
            order.owner = o.owner;
            order.operator = o.operator;
            order.quoteSigner = o.quoteSigner;
        } else if (order.operator != o.operator || order.quoteSigner != o.quoteSigner) {
            // Operator and quote signer are immutable: a top-up must restate them, never change them.
            revert OrderTermsMismatch(o.owner, o.orderId);
        }
        if (order.closeRequested) revert OrderClosing(o.owner, o.orderId);
        fundDigestUsed[digest] = true;
        order.available += o.amount;
        totalLiabilities += o.amount;
        emit OrderFunded(key, o.owner, o.orderId, o.operator, o.quoteSigner, o.amount, order.available, created, digest);

        _pull(o.owner, o.amount, permit);
    }

    /// @inheritdoc ISettlementEscrowV2
    function closeWithSig(CloseOffer calldata c, bytes calldata ownerSig) external nonReentrant {
        if (block.timestamp > c.deadline) revert SignatureExpired(c.deadline);
        if (nonceUsed[c.owner][c.nonce]) revert NonceAlreadyUsed(c.owner, c.nonce);
        _checkPayoutMode(c.dex, c.toMargin);
        bytes32 digest = _hashTypedDataV4(EscrowHashingV2.hashCloseOffer(c));
        if (!SignatureVerifier.isValidNow(c.owner, digest, ownerSig)) revert InvalidSignature(c.owner);
        nonceUsed[c.owner][c.nonce] = true;
        _close(c.owner, c.orderId, c.dex, c.toMargin, CloseKind.Signature, c.nonce);
    }

    /// @inheritdoc ISettlementEscrowV2
    function close(bytes32 orderId, uint32 dex, bool toMargin) external nonReentrant {
        _checkPayoutMode(dex, toMargin);
        _close(msg.sender, orderId, dex, toMargin, CloseKind.Owner, 0);
    }

    /// @inheritdoc ISettlementEscrowV2
    function operatorClose(address owner, bytes32 orderId, uint32 dex, bool toMargin) external nonReentrant {
        bytes32 key = EscrowHashingV2.orderKey(owner, orderId);
        Order storage order = _orders[key];
        // An unknown order (and the zero id) has no operator, so this also refuses them.
        if (order.operator == address(0) || order.operator != msg.sender) {
            revert NotOperator(owner, orderId, msg.sender);
        }
        _checkPayoutMode(dex, toMargin);
        uint256 amount = order.available;
        if (amount == 0) revert NothingToClose(owner, orderId);
        order.available = 0;
        bool refused = _payout(owner, amount, dex, toMargin);
        emit OrderClosed(key, owner, orderId, msg.sender, amount, dex, toMargin, refused, CloseKind.Operator, 0);
    }

    /// @inheritdoc ISettlementEscrowV2
    function invalidateNonce(uint256 nonce) external {
        if (nonceUsed[msg.sender][nonce]) revert NonceAlreadyUsed(msg.sender, nonce);
        nonceUsed[msg.sender][nonce] = true;
        emit NonceInvalidated(msg.sender, nonce);
    }

    // ================================================================ fills: maker chain

    /// @inheritdoc ISettlementEscrowV2
    function lock(
        Fill calldata f,
        bytes calldata fillSig,
        QuoteSet calldata qs,
        uint256 quoteIndex,
        bytes calldata quoteSig,
        bytes32[] calldata proof
    ) external nonReentrant {
        bytes32 key = EscrowHashingV2.orderKey(f.owner, f.orderId);
        Order storage order = _orders[key];
        if (order.operator == address(0) || order.operator != msg.sender) {
            revert NotOperator(f.owner, f.orderId, msg.sender);
        }
        if (order.closeRequested) revert OrderClosing(f.owner, f.orderId);
        if (f.makerChainId != block.chainid || f.makerEscrow != address(this)) revert WrongChainOrEscrow();
        _checkFillAgainstQuote(f, qs, quoteIndex);
        _checkTimes(f);
        _checkHashlock(f, qs, proof);
        // The maker priced it (quote signer, this domain) and the taker agreed to it (payer, taker domain, ECDSA).
        bytes32 quoteSetDigest = _hashTypedDataV4(EscrowHashingV2.hashQuoteSet(qs));
        if (!SignatureVerifier.isValidNow(order.quoteSigner, quoteSetDigest, quoteSig)) {
            revert InvalidSignature(order.quoteSigner);
        }
        bytes32 lockKey = _verifyFill(f, fillSig);
        _commitLock(key, order, f, qs.quoteSize, lockKey);
        _emitLocked(lockKey, key, f, quoteIndex, quoteSetDigest);
    }

    /// @inheritdoc ISettlementEscrowV2
    function claim(bytes32 fillDigest, bytes32 secret) external nonReentrant {
        FillLock storage l = _locks[fillDigest];
        if (l.state != LockState.Locked) revert NotLocked(fillDigest);
        if (block.timestamp >= l.expiry) revert Expired(l.expiry);
        if (keccak256(abi.encodePacked(secret)) != l.hashlock) revert WrongSecret();
        l.state = LockState.Claimed;
        bytes32 key = EscrowHashingV2.orderKey(l.owner, l.orderId);
        _orders[key].locked -= l.amountOut;
        // filledOut keeps counting claimed amounts: they were delivered under this quote set.
        bool refused = _payout(l.recipient, l.amountOut, l.dex, l.toMargin);
        emit Claimed(fillDigest, key, l.recipient, l.amountOut, l.dex, l.toMargin, refused, secret);
    }

    /// @inheritdoc ISettlementEscrowV2
    function refund(bytes32 fillDigest) external nonReentrant {
        FillLock storage l = _locks[fillDigest];
        if (l.state != LockState.Locked) revert NotLocked(fillDigest);
        if (block.timestamp < l.expiry) revert NotExpired(l.expiry);
        l.state = LockState.Refunded;
        (bytes32 key, bool toOwner, bool refused) = _release(l);
        emit Refunded(fillDigest, key, l.amountOut, toOwner, refused);
    }

    /// @inheritdoc ISettlementEscrowV2
    function cancelLock(bytes32 fillDigest, bytes calldata payKeySig) external nonReentrant {
        FillLock storage l = _locks[fillDigest];
        if (l.state != LockState.Locked) revert NotLocked(fillDigest);
        _checkCancelAuthorised(l, fillDigest, payKeySig);
        l.state = LockState.Cancelled;
        (bytes32 key, bool toOwner, bool refused) = _release(l);
        emit LockCancelled(fillDigest, key, l.amountOut, toOwner, refused);
    }

    // ================================================================ fills: taker chain

    /// @inheritdoc ISettlementEscrowV2
    function payTake(Fill[] calldata fills, bytes[] calldata fillSigs, bytes calldata payKeySig, Permit calldata permit)
        external
        nonReentrant
    {
        uint256 n = fills.length;
        if (n == 0) revert EmptyTake();
        if (fillSigs.length != n) revert LengthMismatch();
        address payer = fills[0].payer;
        address payKey = fills[0].payKey;
        bytes32[] memory keys = new bytes32[](n);
        uint256 total;
        for (uint256 i; i < n; ++i) {
            Fill calldata f = fills[i];
            if (f.payer != payer || f.payKey != payKey) revert TakeMismatch(i);
            keys[i] = _checkPayable(f, fillSigs[i]);
            total += f.amountIn;
        }
        // The pay key authorises exactly these digests, in this order, in this escrow's domain.
        bytes32 payTakeDigest = _hashTypedDataV4(EscrowHashingV2.hashPayTake(keys));
        if (!SignatureVerifier.isValidECDSA(payKey, payTakeDigest, payKeySig)) revert InvalidSignature(payKey);

        for (uint256 i; i < n; ++i) {
            Fill calldata f = fills[i];
            Payment storage p = _payments[keys[i]];
            // Also refuses the same Fill twice in one take.
            if (p.state != PaymentState.None) revert PaymentExists(keys[i]);
            p.payer = payer;
            p.expiry = f.takerExpiry;
            p.state = PaymentState.Held;
            p.payee = f.payee;
            p.hashlock = f.hashlock;
            p.amountIn = f.amountIn;
            emit Paid(keys[i], payer, f.payee, f, payTakeDigest);
        }
        totalLiabilities += total;
        _pull(payer, total, permit);
    }

    /// @inheritdoc ISettlementEscrowV2
    function claimPayment(bytes32 fillDigest, bytes32 secret) external nonReentrant {
        Payment storage p = _payments[fillDigest];
        if (p.state != PaymentState.Held) revert NotHeld(fillDigest);
        if (block.timestamp >= p.expiry) revert Expired(p.expiry);
        if (keccak256(abi.encodePacked(secret)) != p.hashlock) revert WrongSecret();
        p.state = PaymentState.Claimed;
        uint256 amount = p.amountIn;
        totalLiabilities -= amount;
        emit PaymentClaimed(fillDigest, p.payee, amount, secret);
        _token.safeTransfer(p.payee, amount);
    }

    /// @inheritdoc ISettlementEscrowV2
    function refundPayment(bytes32 fillDigest) external nonReentrant {
        Payment storage p = _payments[fillDigest];
        if (p.state != PaymentState.Held) revert NotHeld(fillDigest);
        if (block.timestamp < p.expiry) revert NotExpired(p.expiry);
        p.state = PaymentState.Refunded;
        uint256 amount = p.amountIn;
        totalLiabilities -= amount;
        emit PaymentRefunded(fillDigest, p.payer, amount);
        _token.safeTransfer(p.payer, amount);
    }

    // ================================================================ views

    /// @inheritdoc ISettlementEscrowV2
    function token() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc ISettlementEscrowV2
    function router() external view returns (address) {
        return address(_router);
    }

    /// @inheritdoc ISettlementEscrowV2
    function getOrder(address owner, bytes32 orderId) external view returns (Order memory) {
        return _orders[EscrowHashingV2.orderKey(owner, orderId)];
    }

    /// @inheritdoc ISettlementEscrowV2
    function closeRequested(address owner, bytes32 orderId) external view returns (bool) {
        return _orders[EscrowHashingV2.orderKey(owner, orderId)].closeRequested;
    }

    /// @inheritdoc ISettlementEscrowV2
    function balanceOf(address owner) external view returns (uint256) {
        return _balances[owner];
    }

    /// @inheritdoc ISettlementEscrowV2
    function getLock(bytes32 fillDigest) external view returns (FillLock memory) {
        return _locks[fillDigest];
    }

    /// @inheritdoc ISettlementEscrowV2
    function getPayment(bytes32 fillDigest) external view returns (Payment memory) {
        return _payments[fillDigest];
    }

    /// @inheritdoc ISettlementEscrowV2
    function orderKey(address owner, bytes32 orderId) external pure returns (bytes32) {
        return EscrowHashingV2.orderKey(owner, orderId);
    }

    /// @inheritdoc ISettlementEscrowV2
    function hashlockLeaf(uint32 index, bytes32 hashlock) external pure returns (bytes32) {
        return EscrowHashingV2.hashlockLeaf(index, hashlock);
    }

    /// @inheritdoc ISettlementEscrowV2
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    /// @inheritdoc ISettlementEscrowV2
    function domainSeparatorFor(uint256 chainId, address escrow) external pure returns (bytes32) {
        return EscrowHashingV2.domainSeparator(chainId, escrow);
    }

    /// @inheritdoc ISettlementEscrowV2
    function hashFundOrder(FundOrder calldata o) external view returns (bytes32) {
        return _hashTypedDataV4(EscrowHashingV2.hashFundOrder(o));
    }

    /// @inheritdoc ISettlementEscrowV2
    function hashCloseOffer(CloseOffer calldata c) external view returns (bytes32) {
        return _hashTypedDataV4(EscrowHashingV2.hashCloseOffer(c));
    }

    /// @inheritdoc ISettlementEscrowV2
    function hashQuoteSet(QuoteSet calldata qs) external view returns (bytes32) {
        return _hashTypedDataV4(EscrowHashingV2.hashQuoteSet(qs));
    }

    /// @inheritdoc ISettlementEscrowV2
    function hashFill(Fill calldata f) external pure returns (bytes32) {
        return EscrowHashingV2.fillDigest(f);
    }

    /// @inheritdoc ISettlementEscrowV2
    function hashPayTake(bytes32[] calldata fillDigests) external view returns (bytes32) {
        return _hashTypedDataV4(EscrowHashingV2.hashPayTake(fillDigests));
    }

    /// @inheritdoc ISettlementEscrowV2
    function hashCancelFill(bytes32 fillDigest) external view returns (bytes32) {
        return _hashTypedDataV4(EscrowHashingV2.hashCancelFill(fillDigest));
    }

    // ================================================================ hooks (see the contract notes)

    /// @dev The key of a Fill's lock and payment: its digest, never a caller-chosen id.
    function _fillKey(Fill calldata, bytes32 digest) internal view virtual returns (bytes32) {
        return digest;
    }

    /// @dev The Fill's taker escrow must be the escrow the maker quoted (not one that reports a fake payment).
    function _checkTakerEscrow(Quote calldata q, Fill calldata f) internal view virtual {
        if (q.escrow != f.takerEscrow) revert TakerEscrowMismatch(q.escrow, f.takerEscrow);
    }

    /// @dev Only the Fill's pay key, by plain ECDSA over CancelFill(key) in this escrow's domain.
    function _checkCancelAuthorised(FillLock storage l, bytes32 key, bytes calldata sig) internal view virtual {
        bytes32 digest = _hashTypedDataV4(EscrowHashingV2.hashCancelFill(key));
        if (!SignatureVerifier.isValidECDSA(l.payKey, digest, sig)) revert InvalidSignature(l.payKey);
    }

    /// @dev Records the owner's close on the order: sticky, with the payout mode for later refunds.
    function _requestClose(Order storage order, bytes32 key, address owner, bytes32 orderId, uint32 dex, bool toMargin)
        internal
        virtual
    {
        order.closeRequested = true;
        order.closeDex = dex;
        order.closeToMargin = toMargin;
        emit CloseRequested(key, owner, orderId, dex, toMargin);
    }

    /// @dev Runs after a lock was refunded or cancelled. Nothing to do: hashlocks stay used forever.
    function _afterRelease(FillLock storage l) internal virtual {}

    // ================================================================ internals

    /// @dev The quote-side checks of `lock`: what the maker signed bounds what the operator can lock.
    function _checkFillAgainstQuote(Fill calldata f, QuoteSet calldata qs, uint256 quoteIndex) private view {
        if (qs.owner != f.owner || qs.orderId != f.orderId || qs.sequence != f.sequence) revert QuoteSetMismatch();
        if (qs.validUntil < qs.issuedAt || qs.validUntil - qs.issuedAt > MAX_QUOTE_LIFE) {
            revert QuoteLifeTooLong(qs.issuedAt, qs.validUntil);
        }
        if (block.timestamp > qs.validUntil) revert QuoteExpired(qs.validUntil);
        if (quoteIndex >= qs.quotes.length) revert QuoteIndexOutOfRange(quoteIndex, qs.quotes.length);
        Quote calldata q = qs.quotes[quoteIndex];
        if (q.chainId != f.takerChainId) revert QuoteChainMismatch(q.chainId, f.takerChainId);
        _checkTakerEscrow(q, f);
        if (q.recipient != f.payee) revert PayeeMismatch(q.recipient, f.payee);
        if (f.payee == address(0) || f.recipient == address(0) || f.payKey == address(0)) revert ZeroAddress();
        if (f.amountOut == 0 || f.amountIn == 0) revert ZeroAmount();
        if (f.amountOut < q.minFill) revert BelowMinFill(f.amountOut, q.minFill);
        // amountOut / amountIn ≤ supply / receive, cross-multiplied so rounding can only favour the maker.
        // Products beyond 2^256 revert (checked arithmetic): fail closed.
        if (f.amountIn * q.supply < f.amountOut * q.receive_) revert PriceBelowQuote();
        _checkPayoutMode(f.dex, f.toMargin);
    }

    /// @dev The time bounds of `lock` (see the interface's time conventions).
    function _checkTimes(Fill calldata f) private view {
        uint256 t = block.timestamp;
        if (f.payBy <= t || f.payBy > t + PAY_BY_MAX) revert BadPayBy(f.payBy);
        if (uint256(f.takerExpiry) < uint256(f.payBy) + TAKER_TIMEOUT_MIN) {
            revert TakerTimeoutTooShort(f.payBy, f.takerExpiry);
        }
        if (uint256(f.makerExpiry) < uint256(f.takerExpiry) + CLAIM_WINDOW) {
            revert ClaimWindowTooShort(f.takerExpiry, f.makerExpiry);
        }
        if (f.makerExpiry > t + MAX_LOCK) revert LockTooLong(f.makerExpiry);
    }

    /// @dev The Fill's hashlock is leaf `hashlockIndex` (< count) of the maker's signed root and was never locked.
    function _checkHashlock(Fill calldata f, QuoteSet calldata qs, bytes32[] calldata proof) private view {
        if (f.hashlockIndex >= qs.hashlockCount) revert HashlockIndexOutOfRange(f.hashlockIndex, qs.hashlockCount);
        bytes32 leaf = EscrowHashingV2.hashlockLeaf(f.hashlockIndex, f.hashlock);
        if (!MerkleProof.verifyCalldata(proof, qs.hashlockRoot, leaf)) revert InvalidHashlockProof();
        if (hashlockUsed[f.hashlock]) revert HashlockUsed(f.hashlock);
    }

    /// @dev The payer's plain ECDSA signature over the Fill in its taker escrow's domain; returns the lock key.
    function _verifyFill(Fill calldata f, bytes calldata fillSig) private view returns (bytes32) {
        bytes32 digest = EscrowHashingV2.fillDigest(f);
        if (!SignatureVerifier.isValidECDSA(f.payer, digest, fillSig)) revert InvalidSignature(f.payer);
        return _fillKey(f, digest);
    }

    /// @dev The effects of `lock`: quote capacity, order balances, the never-cleared hashlock mark, the lock.
    function _commitLock(bytes32 key, Order storage order, Fill calldata f, uint256 quoteSize, bytes32 lockKey)
        private
    {
        uint256 filled = filledOut[key][f.sequence] + f.amountOut;
        if (filled > quoteSize) revert QuoteSizeExceeded(filled, quoteSize);
        if (order.available < f.amountOut) revert InsufficientAvailable(order.available, f.amountOut);
        FillLock storage l = _locks[lockKey];
        if (l.state != LockState.None) revert LockExists(lockKey);
        filledOut[key][f.sequence] = filled;
        // Set here only (never in pay, where anyone could burn a public hashlock) and never cleared: a refunded
        // hashlock's secret may be public, so locking it again would hand the funds to whoever knows it.
        hashlockUsed[f.hashlock] = true;
        order.available -= f.amountOut;
        order.locked += f.amountOut;
        l.owner = f.owner;
        l.orderId = f.orderId;
        l.sequence = f.sequence;
        l.expiry = f.makerExpiry;
        l.state = LockState.Locked;
        l.dex = f.dex;
        l.toMargin = f.toMargin;
        l.recipient = f.recipient;
        l.payKey = f.payKey;
        l.hashlock = f.hashlock;
        l.amountOut = f.amountOut;
    }

    /// @dev Apart from `lock` only to keep its stack shallow.
    function _emitLocked(bytes32 lockKey, bytes32 key, Fill calldata f, uint256 quoteIndex, bytes32 quoteSetDigest)
        private
    {
        emit Locked(lockKey, key, f.payKey, f, quoteIndex, quoteSetDigest);
    }

    /// @dev One Fill of a take: this escrow is its taker side, in time, signed by its payer; returns its key.
    function _checkPayable(Fill calldata f, bytes calldata fillSig) private view returns (bytes32) {
        if (f.takerChainId != block.chainid || f.takerEscrow != address(this)) revert WrongChainOrEscrow();
        if (block.timestamp > f.payBy) revert PayByPassed(f.payBy);
        if (uint256(f.takerExpiry) < uint256(f.payBy) + TAKER_TIMEOUT_MIN) {
            revert TakerTimeoutTooShort(f.payBy, f.takerExpiry);
        }
        if (f.amountIn == 0) revert ZeroAmount();
        if (f.payee == address(0)) revert ZeroAddress();
        // Equal to the maker escrow's `fillDigest(f)`: the taker domain is this escrow's domain.
        bytes32 digest = _hashTypedDataV4(EscrowHashingV2.hashFill(f));
        if (!SignatureVerifier.isValidECDSA(f.payer, digest, fillSig)) revert InvalidSignature(f.payer);
        return _fillKey(f, digest);
    }

    /// @dev A live lock ends without delivery: the amount returns to the order's available and frees the quote
    ///      capacity it used; on an order with a close request it goes to the owner as the close said.
    function _release(FillLock storage l) private returns (bytes32 key, bool toOwner, bool refused) {
        key = EscrowHashingV2.orderKey(l.owner, l.orderId);
        Order storage order = _orders[key];
        uint256 amount = l.amountOut;
        order.locked -= amount;
        filledOut[key][l.sequence] -= amount;
        _afterRelease(l);
        if (order.closeRequested) {
            toOwner = true;
            refused = _payout(l.owner, amount, order.closeDex, order.closeToMargin);
        } else {
            order.available += amount;
        }
    }

    /// @dev The close of an order (sticky request, pays out available) or of the zero-id balance.
    function _close(address owner, bytes32 orderId, uint32 dex, bool toMargin, CloseKind kind, uint256 nonce) private {
        bytes32 key;
        uint256 amount;
        if (orderId == bytes32(0)) {
            amount = _balances[owner];
            if (amount == 0) revert NothingToClose(owner, orderId);
            _balances[owner] = 0;
        } else {
            key = EscrowHashingV2.orderKey(owner, orderId);
            Order storage order = _orders[key];
            if (order.owner == address(0)) revert UnknownOrder(owner, orderId);
            _requestClose(order, key, owner, orderId, dex, toMargin);
            amount = order.available;
            order.available = 0;
        }
        bool refused = amount != 0 && _payout(owner, amount, dex, toMargin);
        emit OrderClosed(key, owner, orderId, msg.sender, amount, dex, toMargin, refused, kind, nonce);
    }

    function _checkPayoutMode(uint32 dex, bool toMargin) private pure {
        if (!toMargin && dex != 0) revert WalletPayoutRequiresDexZero(dex);
    }

    /// @dev Pays `amount` (already removed from available/locked/balance by the caller) to `to`: to the wallet, or
    ///      through the router to margin; a refusing router leaves the amount in `to`'s zero-id balance.
    ///      Router protocol: approve, `try deposit`, reset approval, then measure what actually left. The try-call
    ///      is atomic, so a refusal leaves the tokens here; a partial pull is a broken router and reverts all.
    /// @return refused True when the amount was credited to the zero-id balance instead.
    function _payout(address to, uint256 amount, uint32 dex, bool toMargin) private returns (bool refused) {
        totalLiabilities -= amount;
        if (!toMargin) {
            _token.safeTransfer(to, amount);
            return false;
        }
        if (address(_router) != address(0)) {
            uint256 before = _token.balanceOf(address(this));
            _token.forceApprove(address(_router), amount);
            uint256 gasBefore = gasleft();
            try _router.deposit(to, amount, dex) {}
            catch {
                // A relayer must not be able to force the fallback by starving the call (EIP-150 leaves 1/64).
                if (gasleft() <= gasBefore / 63) revert RouterOutOfGas();
            }
            _token.forceApprove(address(_router), 0);
            uint256 pulled = before - _token.balanceOf(address(this));
            if (pulled == amount) return false;
            if (pulled != 0) revert RouterMisbehaved(amount, pulled);
        }
        _balances[to] += amount;
        totalLiabilities += amount;
        return true;
    }

    /// @dev Pulls exactly `amount` from `from`. A permit that reverts (typically already submitted by someone else:
    ///      EIP-2612 front-running) is ignored; the allowance decides.
    function _pull(address from, uint256 amount, Permit calldata permit) private {
        if (permit.deadline != 0) {
            try IERC20Permit(address(_token))
                .permit(from, address(this), permit.value, permit.deadline, permit.v, permit.r, permit.s) {}
                catch {}
        }
        uint256 allowance = _token.allowance(from, address(this));
        if (allowance < amount) revert InsufficientAllowance(from, allowance, amount);
        uint256 before = _token.balanceOf(address(this));
        _token.safeTransferFrom(from, address(this), amount);
        uint256 received = _token.balanceOf(address(this)) - before;
        if (received != amount) revert UnexpectedTransferAmount(amount, received);
    }
}
