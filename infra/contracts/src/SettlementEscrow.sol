// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

import {ISettlementEscrow} from "./interfaces/ISettlementEscrow.sol";
import {IMarginRouter} from "./interfaces/IMarginRouter.sol";
import {EscrowHashing} from "./lib/EscrowHashing.sol";
import {SignatureVerifier} from "./lib/SignatureVerifier.sol";

/// @title SettlementEscrow
/// @notice See ISettlementEscrow. One per venue chain, no admin, no upgrade path, no sweep.
/// @dev Accounting invariant (tested): token.balanceOf(this) == totalLiabilities ==
///      Σ order.available + Σ order.locked + Σ zero-id balances + Σ held payments (plus any tokens donated directly).
///      Authority invariant (tested): tokens leave only to an order's owner (close, refund stays inside), to a
///      Fill's recipient (signed by the payer) after a lock the maker's quote signer priced, to a payment's payee
///      (signed by the payer, and equal to the maker's quote recipient at lock) or back to the payer.
///      All state-changing entry points are nonReentrant; external calls come last except the router fallback.
contract SettlementEscrow is ISettlementEscrow, EIP712, ReentrancyGuard {
    using SafeERC20 for IERC20;

    IERC20 private immutable _token;
    IMarginRouter private immutable _router;
    /// @inheritdoc ISettlementEscrow
    uint64 public immutable REVEAL_WINDOW;
    /// @inheritdoc ISettlementEscrow
    uint64 public immutable MAX_LOCK_DURATION;

    mapping(bytes32 orderId => Order) private _orders;
    mapping(address owner => uint256) private _balances;
    mapping(bytes32 fillId => FillLock) private _locks;
    mapping(bytes32 fillId => Payment) private _payments;
    /// @inheritdoc ISettlementEscrow
    mapping(bytes32 orderId => mapping(uint64 sequence => uint256)) public filledOut;
    /// @inheritdoc ISettlementEscrow
    mapping(address owner => mapping(uint256 nonce => bool)) public nonceUsed;
    /// @inheritdoc ISettlementEscrow
    mapping(bytes32 digest => bool) public fundDigestUsed;
    /// @inheritdoc ISettlementEscrow
    uint256 public totalLiabilities;

    /// @param token_ The escrowed ERC-20; must implement EIP-2612 for permit-based funding and payments.
    /// @param router_ The margin router for this chain (its `token()` must be `token_`), or zero for no margin path.
    /// @param revealWindow Seconds the payee keeps after the maker expiry to use a secret revealed by `claim`.
    /// @param maxLockDuration Upper bound on `makerExpiry - block.timestamp` at lock (caps how long an operator can
    ///        park maker funds).
    constructor(IERC20 token_, IMarginRouter router_, uint64 revealWindow, uint64 maxLockDuration)
        EIP712("SettlementEscrow", "1")
    {
        if (address(token_) == address(0)) revert ZeroAddress();
        if (revealWindow == 0 || maxLockDuration == 0) revert InvalidConfig();
        if (address(router_) != address(0) && router_.token() != address(token_)) revert InvalidConfig();
        _token = token_;
        _router = router_;
        REVEAL_WINDOW = revealWindow;
        MAX_LOCK_DURATION = maxLockDuration;
    }

    // ================================================================ funding and closing

    /// @inheritdoc ISettlementEscrow
    function fund(FundOrder calldata o, bytes calldata ownerSig, Permit calldata permit) external nonReentrant {
        if (o.orderId == bytes32(0)) revert ZeroOrderId();
        if (o.amount == 0) revert ZeroAmount();
        if (o.operator == address(0) || o.quoteSigner == address(0)) revert ZeroAddress();
        if (block.timestamp > o.deadline) revert SignatureExpired(o.deadline);
        bytes32 digest = _hashTypedDataV4(EscrowHashing.hashFundOrder(o));
        // Signature-only terms (no nonce): the digest itself is the single-use key.
        if (fundDigestUsed[digest]) revert FundOrderAlreadyUsed(digest);
        if (!SignatureVerifier.isValidNow(o.owner, digest, ownerSig)) revert InvalidSignature(o.owner);

        Order storage order = _orders[o.orderId];
        bool created = order.owner == address(0);
        if (created) {
            order.owner = o.owner;
            order.operator = o.operator;
            order.quoteSigner = o.quoteSigner;
        } else if (order.owner != o.owner || order.operator != o.operator || order.quoteSigner != o.quoteSigner) {
            // Operator and quote signer are immutable: a top-up must restate them, never change them.
            revert OrderTermsMismatch(o.orderId);
        }
        fundDigestUsed[digest] = true;
        order.available += o.amount;
        totalLiabilities += o.amount;
        emit OrderFunded(o.orderId, o.owner, o.operator, o.quoteSigner, o.amount, order.available, created, digest);

        _pull(o.owner, o.amount, permit);
    }

    /// @inheritdoc ISettlementEscrow
    function closeWithSig(CloseOffer calldata c, bytes calldata ownerSig) external nonReentrant {
        if (block.timestamp > c.deadline) revert SignatureExpired(c.deadline);
        if (nonceUsed[c.owner][c.nonce]) revert NonceAlreadyUsed(c.owner, c.nonce);
        _checkPayoutMode(c.dex, c.toMargin);
        bytes32 digest = _hashTypedDataV4(EscrowHashing.hashCloseOffer(c));
        if (!SignatureVerifier.isValidNow(c.owner, digest, ownerSig)) revert InvalidSignature(c.owner);
        nonceUsed[c.owner][c.nonce] = true;

        uint256 amount;
        if (c.orderId == bytes32(0)) {
            amount = _balances[c.owner];
            _balances[c.owner] = 0;
        } else {
            Order storage order = _orders[c.orderId];
            if (order.owner != c.owner) revert NotOrderOwner(c.orderId, c.owner);
            amount = order.available;
            order.available = 0;
        }
        if (amount == 0) revert NothingToClose(c.orderId);
        bool refused = _payout(c.owner, amount, c.dex, c.toMargin);
        emit OrderClosed(c.orderId, c.owner, msg.sender, amount, c.dex, c.toMargin, refused, false, c.nonce);
    }

    /// @inheritdoc ISettlementEscrow
    function operatorClose(bytes32 orderId, uint32 dex, bool toMargin) external nonReentrant {
        Order storage order = _orders[orderId];
        // The zero id has no operator, so this also refuses it.
        if (order.operator == address(0) || order.operator != msg.sender) revert NotOperator(orderId, msg.sender);
        _checkPayoutMode(dex, toMargin);
        uint256 amount = order.available;
        if (amount == 0) revert NothingToClose(orderId);
        order.available = 0;
        address owner = order.owner;
        bool refused = _payout(owner, amount, dex, toMargin);
        emit OrderClosed(orderId, owner, msg.sender, amount, dex, toMargin, refused, true, 0);
    }

    /// @inheritdoc ISettlementEscrow
    function invalidateNonce(uint256 nonce) external {
        if (nonceUsed[msg.sender][nonce]) revert NonceAlreadyUsed(msg.sender, nonce);
        nonceUsed[msg.sender][nonce] = true;
        emit NonceInvalidated(msg.sender, nonce);
    }

    // ================================================================ fills: maker chain

    /// @inheritdoc ISettlementEscrow
    function lock(
        Fill calldata f,
        bytes calldata fillSig,
        QuoteSet calldata qs,
        uint256 quoteIndex,
        bytes calldata quoteSig
    ) external nonReentrant {
        Order storage order = _orders[f.orderId];
        if (order.operator == address(0) || order.operator != msg.sender) revert NotOperator(f.orderId, msg.sender);
        if (f.fillId == bytes32(0)) revert ZeroFillId();
        if (_locks[f.fillId].state != LockState.None) revert FillExists(f.fillId);
        if (f.makerChainId != block.chainid || f.makerEscrow != address(this)) revert WrongChainOrEscrow();
        _checkFillAgainstQuote(f, qs, quoteIndex);
        _checkPayoutMode(f.dex, f.toMargin);
        // Claims happen strictly before makerExpiry; the payee then keeps ≥ REVEAL_WINDOW to use the secret.
        if (f.makerExpiry <= block.timestamp || f.makerExpiry > block.timestamp + MAX_LOCK_DURATION) revert BadExpiry();
        if (uint256(f.takerExpiry) < uint256(f.makerExpiry) + REVEAL_WINDOW) revert BadExpiry();

        uint256 filled = filledOut[f.orderId][f.sequence] + f.amountOut;
        if (filled > qs.quoteSize) revert QuoteSizeExceeded(filled, qs.quoteSize);
        if (order.available < f.amountOut) revert InsufficientAvailable(order.available, f.amountOut);

        // The maker priced it (quote signer, this domain) and the taker agreed to it (payer, taker domain).
        bytes32 quoteSetDigest = _hashTypedDataV4(EscrowHashing.hashQuoteSet(qs));
        if (!SignatureVerifier.isValidNow(order.quoteSigner, quoteSetDigest, quoteSig)) {
            revert InvalidSignature(order.quoteSigner);
        }
        bytes32 fillDigest = EscrowHashing.fillDigest(f);
        if (!SignatureVerifier.isValidNow(f.payer, fillDigest, fillSig)) revert InvalidSignature(f.payer);

        filledOut[f.orderId][f.sequence] = filled;
        order.available -= f.amountOut;
        order.locked += f.amountOut;
        _locks[f.fillId] = FillLock({
            orderId: f.orderId,
            sequence: f.sequence,
            expiry: f.makerExpiry,
            state: LockState.Locked,
            dex: f.dex,
            toMargin: f.toMargin,
            recipient: f.recipient,
            hashlock: f.hashlock,
            amountOut: f.amountOut
        });
        emit Locked(f.fillId, f.orderId, f.payer, f, quoteIndex, quoteSetDigest, fillDigest);
    }

    /// @inheritdoc ISettlementEscrow
    function claim(bytes32 fillId, bytes32 secret) external nonReentrant {
        FillLock storage l = _locks[fillId];
        if (l.state != LockState.Locked) revert NotLocked(fillId);
        if (block.timestamp >= l.expiry) revert Expired(l.expiry);
        if (keccak256(abi.encodePacked(secret)) != l.hashlock) revert WrongSecret();
        l.state = LockState.Claimed;
        _orders[l.orderId].locked -= l.amountOut;
        // filledOut keeps counting claimed amounts: they were delivered under this quote set.
        bool refused = _payout(l.recipient, l.amountOut, l.dex, l.toMargin);
        emit Claimed(fillId, l.orderId, l.recipient, l.amountOut, l.dex, l.toMargin, refused, secret);
    }

    /// @inheritdoc ISettlementEscrow
    function refund(bytes32 fillId) external nonReentrant {
        FillLock storage l = _locks[fillId];
        if (l.state != LockState.Locked) revert NotLocked(fillId);
        if (block.timestamp < l.expiry) revert NotExpired(l.expiry);
        l.state = LockState.Refunded;
        _unlock(l);
        emit Refunded(fillId, l.orderId, l.amountOut);
    }

    /// @inheritdoc ISettlementEscrow
    function cancelLock(bytes32 fillId) external nonReentrant {
        FillLock storage l = _locks[fillId];
        if (l.state != LockState.Locked) revert NotLocked(fillId);
        if (_orders[l.orderId].operator != msg.sender) revert NotOperator(l.orderId, msg.sender);
        l.state = LockState.Cancelled;
        _unlock(l);
        emit LockCancelled(fillId, l.orderId, l.amountOut);
    }

    // ================================================================ fills: taker chain

    /// @inheritdoc ISettlementEscrow
    function pay(Fill calldata f, bytes calldata fillSig, Permit calldata permit) external nonReentrant {
        if (f.takerChainId != block.chainid || f.takerEscrow != address(this)) revert WrongChainOrEscrow();
        if (f.fillId == bytes32(0)) revert ZeroFillId();
        if (f.amountIn == 0) revert ZeroAmount();
        if (f.payee == address(0)) revert ZeroAddress();
        // Paying after the maker lock can no longer be claimed would only park the payer's funds (or hand them to
        // the payee without delivery if the secret leaked), so the taker side refuses it.
        if (f.makerExpiry <= block.timestamp) revert BadExpiry();
        if (uint256(f.takerExpiry) < uint256(f.makerExpiry) + REVEAL_WINDOW) revert BadExpiry();
        Payment storage p = _payments[f.fillId];
        if (p.state != PaymentState.None) revert PaymentExists(f.fillId);
        bytes32 digest = _hashTypedDataV4(EscrowHashing.hashFill(f));
        if (!SignatureVerifier.isValidNow(f.payer, digest, fillSig)) revert InvalidSignature(f.payer);

        p.payer = f.payer;
        p.expiry = f.takerExpiry;
        p.state = PaymentState.Held;
        p.payee = f.payee;
        p.hashlock = f.hashlock;
        p.amountIn = f.amountIn;
        totalLiabilities += f.amountIn;
        emit Paid(f.fillId, f.payer, f.payee, f, digest);

        _pull(f.payer, f.amountIn, permit);
    }

    /// @inheritdoc ISettlementEscrow
    function claimPayment(bytes32 fillId, bytes32 secret) external nonReentrant {
        Payment storage p = _payments[fillId];
        if (p.state != PaymentState.Held) revert NotHeld(fillId);
        if (block.timestamp >= p.expiry) revert Expired(p.expiry);
        if (keccak256(abi.encodePacked(secret)) != p.hashlock) revert WrongSecret();
        p.state = PaymentState.Claimed;
        uint256 amount = p.amountIn;
        totalLiabilities -= amount;
        emit PaymentClaimed(fillId, p.payee, amount, secret);
        _token.safeTransfer(p.payee, amount);
    }

    /// @inheritdoc ISettlementEscrow
    function refundPayment(bytes32 fillId) external nonReentrant {
        Payment storage p = _payments[fillId];
        if (p.state != PaymentState.Held) revert NotHeld(fillId);
        if (block.timestamp < p.expiry) revert NotExpired(p.expiry);
        p.state = PaymentState.Refunded;
        uint256 amount = p.amountIn;
        totalLiabilities -= amount;
        emit PaymentRefunded(fillId, p.payer, amount);
        _token.safeTransfer(p.payer, amount);
    }

    // ================================================================ views

    /// @inheritdoc ISettlementEscrow
    function token() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc ISettlementEscrow
    function router() external view returns (address) {
        return address(_router);
    }

    /// @inheritdoc ISettlementEscrow
    function getOrder(bytes32 orderId) external view returns (Order memory) {
        return _orders[orderId];
    }

    /// @inheritdoc ISettlementEscrow
    function balanceOf(address owner) external view returns (uint256) {
        return _balances[owner];
    }

    /// @inheritdoc ISettlementEscrow
    function getLock(bytes32 fillId) external view returns (FillLock memory) {
        return _locks[fillId];
    }

    /// @inheritdoc ISettlementEscrow
    function getPayment(bytes32 fillId) external view returns (Payment memory) {
        return _payments[fillId];
    }

    /// @inheritdoc ISettlementEscrow
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    /// @inheritdoc ISettlementEscrow
    function domainSeparatorFor(uint256 chainId, address escrow) external pure returns (bytes32) {
        return EscrowHashing.domainSeparator(chainId, escrow);
    }

    /// @inheritdoc ISettlementEscrow
    function hashFundOrder(FundOrder calldata o) external view returns (bytes32) {
        return _hashTypedDataV4(EscrowHashing.hashFundOrder(o));
    }

    /// @inheritdoc ISettlementEscrow
    function hashCloseOffer(CloseOffer calldata c) external view returns (bytes32) {
        return _hashTypedDataV4(EscrowHashing.hashCloseOffer(c));
    }

    /// @inheritdoc ISettlementEscrow
    function hashQuoteSet(QuoteSet calldata qs) external view returns (bytes32) {
        return _hashTypedDataV4(EscrowHashing.hashQuoteSet(qs));
    }

    /// @inheritdoc ISettlementEscrow
    function hashFill(Fill calldata f) external pure returns (bytes32) {
        return EscrowHashing.fillDigest(f);
    }

    // ================================================================ internals

    /// @dev The quote-side checks of `lock`: what the maker signed bounds what the operator can lock.
    function _checkFillAgainstQuote(Fill calldata f, QuoteSet calldata qs, uint256 quoteIndex) private view {
        if (f.orderId != qs.orderId || f.sequence != qs.sequence) revert QuoteSetMismatch();
        if (qs.validUntil < block.timestamp) revert QuoteExpired(qs.validUntil);
        if (quoteIndex >= qs.quotes.length) revert QuoteIndexOutOfRange(quoteIndex, qs.quotes.length);
        Quote calldata q = qs.quotes[quoteIndex];
        if (q.chainId != f.takerChainId) revert QuoteChainMismatch(q.chainId, f.takerChainId);
        if (q.recipient != f.payee) revert PayeeMismatch(q.recipient, f.payee);
        if (f.payee == address(0) || f.recipient == address(0)) revert ZeroAddress();
        if (f.amountOut == 0 || f.amountIn == 0) revert ZeroAmount();
        if (f.amountOut < q.minFill) revert BelowMinFill(f.amountOut, q.minFill);
        // amountOut / amountIn ≤ supply / receive, cross-multiplied so rounding can only favour the maker.
        // Products beyond 2^256 revert (checked arithmetic): fail closed.
        if (f.amountIn * q.supply < f.amountOut * q.receive_) revert PriceBelowQuote();
    }

    /// @dev Returns a live lock's amount to its order and frees the quote capacity it used (nothing was delivered).
    function _unlock(FillLock storage l) private {
        Order storage order = _orders[l.orderId];
        order.locked -= l.amountOut;
        order.available += l.amountOut;
        filledOut[l.orderId][l.sequence] -= l.amountOut;
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
            try IERC20Permit(address(_token)).permit(
                from, address(this), permit.value, permit.deadline, permit.v, permit.r, permit.s
            ) {} catch {}
        }
        uint256 allowance = _token.allowance(from, address(this));
        if (allowance < amount) revert InsufficientAllowance(from, allowance, amount);
        uint256 before = _token.balanceOf(address(this));
        _token.safeTransferFrom(from, address(this), amount);
        uint256 received = _token.balanceOf(address(this)) - before;
        if (received != amount) revert UnexpectedTransferAmount(amount, received);
    }
}
