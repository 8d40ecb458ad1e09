// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {ISettlementEscrow} from "../src/interfaces/ISettlementEscrow.sol";
import {IMarginRouter} from "../src/interfaces/IMarginRouter.sol";
import {SettlementEscrow} from "../src/SettlementEscrow.sol";

/// @notice lock / pay / claim / claimPayment / refund / refundPayment / cancelLock: every path and every revert.
contract EscrowFillsTest is EscrowFixture {
    bytes32 internal constant FILL = keccak256("fill-1");
    ISettlementEscrow.QuoteSet internal qs;

    function setUp() public override {
        super.setUp();
        fundWithPermit(ORDER, 1_000e6);
        ISettlementEscrow.QuoteSet memory s = quoteSet(ORDER, block.chainid, 500e6);
        qs.orderId = s.orderId;
        qs.sequence = s.sequence;
        qs.generation = s.generation;
        qs.quoteSize = s.quoteSize;
        qs.validUntil = s.validUntil;
        qs.quotes.push(s.quotes[0]);
        qs.quotes.push(s.quotes[1]);
    }

    function _qs() internal view returns (ISettlementEscrow.QuoteSet memory) {
        return qs;
    }

    function _expectLockRevert(ISettlementEscrow.Fill memory f, ISettlementEscrow.QuoteSet memory s, bytes memory err)
        internal
    {
        bytes memory fs = sig(payerPk, fillDigest(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), s));
        vm.prank(operator);
        vm.expectRevert(err);
        escrow.lock(f, fs, s, 1, qsig);
    }

    // ------------------------------------------------------------ lock

    function test_lock_movesAvailableToLocked() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.Locked(FILL, ORDER, payer, f, 1, quoteSetDigest(address(escrow), _qs()), fillDigest(f));
        lockFill(f, _qs());
        ISettlementEscrow.Order memory o = escrow.getOrder(ORDER);
        assertEq(o.available, 900e6, "available");
        assertEq(o.locked, 100e6, "locked");
        assertEq(escrow.filledOut(ORDER, 7), 100e6, "filled");
        ISettlementEscrow.FillLock memory l = escrow.getLock(FILL);
        assertEq(uint256(l.state), uint256(ISettlementEscrow.LockState.Locked), "state");
        assertEq(l.recipient, recipient, "recipient");
        assertEq(l.hashlock, HASHLOCK, "hashlock");
        assertEq(uint256(l.expiry), uint256(f.makerExpiry), "expiry");
        assertEq(l.amountOut, 100e6, "amount");
        assertSolvent();
    }

    function test_lock_verifiesFillInTheTakerEscrowDomain() public {
        // The taker escrow lives on another chain: the maker escrow recomputes that domain from the struct.
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.takerChainId = 999;
        f.takerEscrow = address(0x7A4E);
        ISettlementEscrow.QuoteSet memory s = quoteSet(ORDER, 999, 500e6);
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), s));
        // The same struct signed in the maker escrow's own domain: wrong domain.
        bytes memory wrong = sig(payerPk, typed(escrow.domainSeparator(), fillStructHash(f)));
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
        escrow.lock(f, wrong, s, 1, qsig);
        vm.prank(operator);
        escrow.lock(f, sig(payerPk, fillDigest(f)), s, 1, qsig);
        assertEq(escrow.getOrder(ORDER).locked, 100e6, "locked");
    }

    function test_lock_revertsForNonOperator() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        bytes memory fs = sig(payerPk, fillDigest(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), _qs()));
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOperator.selector, ORDER, owner));
        escrow.lock(f, fs, _qs(), 1, qsig);
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOperator.selector, ORDER, relayer));
        escrow.lock(f, fs, _qs(), 1, qsig);
    }

    function test_lock_revertsOnZeroOrRepeatedFillId() public {
        _expectLockRevert(fillOf(bytes32(0), ORDER, 100e6), _qs(), abi.encodeWithSelector(ISettlementEscrow.ZeroFillId.selector));
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        lockFill(f, _qs());
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.FillExists.selector, FILL));
        // Even after it is gone, a fill id never comes back.
        vm.prank(operator);
        escrow.cancelLock(FILL);
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.FillExists.selector, FILL));
    }

    function test_lock_revertsOnWrongMakerChainOrEscrow() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.makerChainId = 1;
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.WrongChainOrEscrow.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.makerEscrow = address(0xE5C);
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.WrongChainOrEscrow.selector));
    }

    function test_lock_revertsOnQuoteSetMismatch() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.sequence = 8;
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.QuoteSetMismatch.selector));
        ISettlementEscrow.QuoteSet memory s = _qs();
        s.orderId = keccak256("other");
        _expectLockRevert(fillOf(FILL, ORDER, 100e6), s, abi.encodeWithSelector(ISettlementEscrow.QuoteSetMismatch.selector));
    }

    function test_lock_revertsOnExpiredQuoteSet() public {
        ISettlementEscrow.QuoteSet memory s = _qs();
        vm.warp(s.validUntil + 1);
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        _expectLockRevert(f, s, abi.encodeWithSelector(ISettlementEscrow.QuoteExpired.selector, s.validUntil));
    }

    function test_lock_acceptsValidUntilInclusive() public {
        vm.warp(_qs().validUntil);
        lockFill(fillOf(FILL, ORDER, 100e6), _qs());
    }

    function test_lock_revertsOnQuoteIndexOutOfRange() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        bytes memory fs = sig(payerPk, fillDigest(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), _qs()));
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.QuoteIndexOutOfRange.selector, 2, 2));
        escrow.lock(f, fs, _qs(), 2, qsig);
    }

    function test_lock_revertsWhenQuoteIsForAnotherTakerChain() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        bytes memory fs = sig(payerPk, fillDigest(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), _qs()));
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.QuoteChainMismatch.selector, 12345, block.chainid));
        escrow.lock(f, fs, _qs(), 0, qsig);
    }

    function test_lock_revertsWhenPayeeIsNotTheQuoteRecipient() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.payee = operator; // the operator cannot redirect the maker's proceeds
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.PayeeMismatch.selector, payee, operator));
    }

    function test_lock_revertsOnZeroRecipientOrAmounts() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.recipient = address(0);
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.ZeroAddress.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.amountOut = 0;
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.ZeroAmount.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.amountIn = 0;
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.ZeroAmount.selector));
    }

    function test_lock_revertsBelowMinFill() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 10e6 - 1);
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.BelowMinFill.selector, 10e6 - 1, 10e6));
    }

    function test_lock_revertsBelowTheSignedPrice() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.amountIn = 101e6 - 1; // 100 out needs 101 in
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.PriceBelowQuote.selector));
        f.amountIn = 101e6;
        lockFill(f, _qs());
    }

    function test_lock_revertsOnWalletPayoutWithDex() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.toMargin = false;
        f.dex = SPOT;
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.WalletPayoutRequiresDexZero.selector, SPOT));
    }

    function test_lock_revertsOnBadExpiries() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.makerExpiry = uint64(block.timestamp);
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.BadExpiry.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.makerExpiry = uint64(block.timestamp + MAX_LOCK + 1);
        f.takerExpiry = f.makerExpiry + REVEAL;
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.BadExpiry.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.takerExpiry = f.makerExpiry + REVEAL - 1;
        _expectLockRevert(f, _qs(), abi.encodeWithSelector(ISettlementEscrow.BadExpiry.selector));
    }

    function test_lock_revertsWhenCumulativeExceedsQuoteSize() public {
        lockFill(fillOf(FILL, ORDER, 400e6), _qs());
        ISettlementEscrow.Fill memory f = fillOf(keccak256("fill-2"), ORDER, 100e6 + 1);
        _expectLockRevert(
            f, _qs(), abi.encodeWithSelector(ISettlementEscrow.QuoteSizeExceeded.selector, 500e6 + 1, 500e6)
        );
        lockFill(fillOf(keccak256("fill-2"), ORDER, 100e6), _qs());
    }

    function test_lock_revertsWhenAvailableIsShort() public {
        ISettlementEscrow.QuoteSet memory s = _qs();
        s.quoteSize = 5_000e6;
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 1_000e6 + 1);
        _expectLockRevert(f, s, abi.encodeWithSelector(ISettlementEscrow.InsufficientAvailable.selector, 1_000e6, 1_000e6 + 1));
    }

    function test_lock_revertsOnWrongQuoteSigner() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        bytes memory fs = sig(payerPk, fillDigest(f));
        bytes memory qsig = sig(operatorPk, quoteSetDigest(address(escrow), _qs())); // the operator pricing on its own
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, quoteSigner));
        escrow.lock(f, fs, _qs(), 1, qsig);
    }

    function test_lock_revertsOnTamperedQuote() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        bytes memory fs = sig(payerPk, fillDigest(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), _qs()));
        ISettlementEscrow.QuoteSet memory s = _qs();
        s.quotes[1].receive_ = 1; // a better price than the maker signed
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, quoteSigner));
        escrow.lock(f, fs, s, 1, qsig);
        s = _qs();
        s.quoteSize = 1_000_000e6;
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, quoteSigner));
        escrow.lock(f, fs, s, 1, qsig);
    }

    function test_lock_revertsOnFillNotSignedByPayer() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), _qs()));
        bytes memory fs = sig(operatorPk, fillDigest(f));
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
        escrow.lock(f, fs, _qs(), 1, qsig);
        // A genuine payer signature does not carry over to another recipient.
        fs = sig(payerPk, fillDigest(f));
        f.recipient = operator;
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
        escrow.lock(f, fs, _qs(), 1, qsig);
    }

    // ------------------------------------------------------------ claim

    function test_claim_paysRecipientMarginAndRevealsSecret() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.dex = SPOT;
        lockFill(f, _qs());
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.Claimed(FILL, ORDER, recipient, 100e6, SPOT, true, false, SECRET);
        vm.prank(stranger);
        escrow.claim(FILL, SECRET);
        assertEq(cdw.deposits(recipient, SPOT), 100e6, "recipient's spot");
        assertEq(escrow.getOrder(ORDER).locked, 0, "unlocked");
        assertEq(escrow.filledOut(ORDER, 7), 100e6, "claimed stays counted");
        assertEq(uint256(escrow.getLock(FILL).state), uint256(ISettlementEscrow.LockState.Claimed), "state");
        assertSolvent();
    }

    function test_claim_refused_creditsRecipientZeroId() public {
        lockFill(fillOf(FILL, ORDER, 100e6), _qs());
        cdw.setRefusing(true);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.Claimed(FILL, ORDER, recipient, 100e6, 0, true, true, SECRET);
        escrow.claim(FILL, SECRET);
        assertEq(escrow.balanceOf(recipient), 100e6, "zero-id credit");
        assertSolvent();
    }

    function test_claim_toWallet() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.toMargin = false;
        lockFill(f, _qs());
        escrow.claim(FILL, SECRET);
        assertEq(usdc.balanceOf(recipient), 100e6, "wallet");
        assertSolvent();
    }

    function test_claim_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotLocked.selector, FILL));
        escrow.claim(FILL, SECRET);
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        lockFill(f, _qs());
        vm.expectRevert(ISettlementEscrow.WrongSecret.selector);
        escrow.claim(FILL, HASHLOCK);
        vm.warp(f.makerExpiry);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.Expired.selector, f.makerExpiry));
        escrow.claim(FILL, SECRET);
        vm.warp(f.makerExpiry - 1);
        escrow.claim(FILL, SECRET);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotLocked.selector, FILL));
        escrow.claim(FILL, SECRET);
    }

    // ------------------------------------------------------------ refund and cancelLock

    function test_refund_afterExpiry_byAnyone() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        lockFill(f, _qs());
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotExpired.selector, f.makerExpiry));
        escrow.refund(FILL);
        vm.warp(f.makerExpiry);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.Refunded(FILL, ORDER, 100e6);
        vm.prank(stranger);
        escrow.refund(FILL);
        ISettlementEscrow.Order memory o = escrow.getOrder(ORDER);
        assertEq(o.available, 1_000e6, "available restored");
        assertEq(o.locked, 0, "locked");
        assertEq(escrow.filledOut(ORDER, 7), 0, "capacity restored");
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotLocked.selector, FILL));
        escrow.refund(FILL);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotLocked.selector, FILL));
        escrow.claim(FILL, SECRET);
        assertSolvent();
    }

    function test_refund_revertsAfterClaim() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        lockFill(f, _qs());
        escrow.claim(FILL, SECRET);
        vm.warp(f.makerExpiry);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotLocked.selector, FILL));
        escrow.refund(FILL);
    }

    function test_cancelLock_byOperatorBeforeClaim() public {
        lockFill(fillOf(FILL, ORDER, 100e6), _qs());
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOperator.selector, ORDER, stranger));
        escrow.cancelLock(FILL);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOperator.selector, ORDER, owner));
        escrow.cancelLock(FILL);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.LockCancelled(FILL, ORDER, 100e6);
        vm.prank(operator);
        escrow.cancelLock(FILL);
        assertEq(escrow.getOrder(ORDER).available, 1_000e6, "available restored");
        assertEq(uint256(escrow.getLock(FILL).state), uint256(ISettlementEscrow.LockState.Cancelled), "state");
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotLocked.selector, FILL));
        escrow.cancelLock(FILL);
        assertSolvent();
    }

    function test_cancelLock_revertsAfterClaim() public {
        lockFill(fillOf(FILL, ORDER, 100e6), _qs());
        escrow.claim(FILL, SECRET);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotLocked.selector, FILL));
        escrow.cancelLock(FILL);
    }

    // ------------------------------------------------------------ pay

    function test_pay_holdsPayment() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        uint256 before = usdc.balanceOf(payer);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.Paid(FILL, payer, payee, f, fillDigest(f));
        payFill(f);
        ISettlementEscrow.Payment memory p = escrow.getPayment(FILL);
        assertEq(uint256(p.state), uint256(ISettlementEscrow.PaymentState.Held), "held");
        assertEq(p.payer, payer, "payer");
        assertEq(p.payee, payee, "payee");
        assertEq(p.amountIn, f.amountIn, "amount");
        assertEq(usdc.balanceOf(payer), before - f.amountIn, "pulled");
        assertSolvent();
    }

    function test_pay_withAllowanceAndFrontRunPermit() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        ISettlementEscrow.Permit memory p = permitFor(payerPk, address(escrow), f.amountIn, block.timestamp + 1 hours);
        usdc.permit(payer, address(escrow), p.value, p.deadline, p.v, p.r, p.s);
        escrow.pay(f, sig(payerPk, fillDigest(f)), p);
        ISettlementEscrow.Fill memory g = fillOf(keccak256("fill-2"), ORDER, 10e6);
        vm.prank(payer);
        usdc.approve(address(escrow), g.amountIn);
        escrow.pay(g, sig(payerPk, fillDigest(g)), noPermit());
        assertSolvent();
    }

    function _expectPayRevert(ISettlementEscrow.Fill memory f, bytes memory err) internal {
        bytes memory fs = sig(payerPk, fillDigest(f));
        vm.expectRevert(err);
        escrow.pay(f, fs, noPermit());
    }

    function test_pay_reverts() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.takerChainId = 999;
        _expectPayRevert(f, abi.encodeWithSelector(ISettlementEscrow.WrongChainOrEscrow.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.takerEscrow = address(0xE5C);
        _expectPayRevert(f, abi.encodeWithSelector(ISettlementEscrow.WrongChainOrEscrow.selector));
        _expectPayRevert(fillOf(bytes32(0), ORDER, 100e6), abi.encodeWithSelector(ISettlementEscrow.ZeroFillId.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.amountIn = 0;
        _expectPayRevert(f, abi.encodeWithSelector(ISettlementEscrow.ZeroAmount.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.payee = address(0);
        _expectPayRevert(f, abi.encodeWithSelector(ISettlementEscrow.ZeroAddress.selector));
        f = fillOf(FILL, ORDER, 100e6);
        f.takerExpiry = f.makerExpiry + REVEAL - 1;
        _expectPayRevert(f, abi.encodeWithSelector(ISettlementEscrow.BadExpiry.selector));
        f = fillOf(FILL, ORDER, 100e6);
        _expectPayRevert(f, abi.encodeWithSelector(ISettlementEscrow.InsufficientAllowance.selector, payer, 0, f.amountIn));
        bytes memory wrong = sig(strangerPk, fillDigest(f));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
        escrow.pay(f, wrong, noPermit());
    }

    function test_pay_revertsOnceTheMakerLockCannotBeClaimed() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        vm.warp(f.makerExpiry);
        _expectPayRevert(f, abi.encodeWithSelector(ISettlementEscrow.BadExpiry.selector));
    }

    function test_pay_revertsOnRepeat() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        payFill(f);
        ISettlementEscrow.Permit memory p = permitFor(payerPk, address(escrow), f.amountIn, block.timestamp + 1 hours);
        bytes memory fs = sig(payerPk, fillDigest(f));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.PaymentExists.selector, FILL));
        escrow.pay(f, fs, p);
    }

    function test_pay_revertsWhenSignedForTheMakerDomainOnly() public {
        // A Fill naming another taker escrow cannot be paid here, even with a signature in this domain.
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        SettlementEscrow other =
            new SettlementEscrow(IERC20(address(usdc)), IMarginRouter(address(router)), REVEAL, MAX_LOCK);
        f.takerEscrow = address(other);
        bytes memory fs = sig(payerPk, fillDigest(f)); // signed for `other`
        vm.prank(payer);
        usdc.approve(address(escrow), f.amountIn);
        vm.expectRevert(ISettlementEscrow.WrongChainOrEscrow.selector);
        escrow.pay(f, fs, noPermit());
        vm.prank(payer);
        usdc.approve(address(other), f.amountIn);
        other.pay(f, fs, noPermit());
    }

    // ------------------------------------------------------------ claimPayment and refundPayment

    function test_claimPayment_paysPayee() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        payFill(f);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.PaymentClaimed(FILL, payee, f.amountIn, SECRET);
        vm.prank(stranger);
        escrow.claimPayment(FILL, SECRET);
        assertEq(usdc.balanceOf(payee), f.amountIn, "payee paid");
        assertEq(uint256(escrow.getPayment(FILL).state), uint256(ISettlementEscrow.PaymentState.Claimed), "state");
        assertSolvent();
    }

    function test_claimPayment_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotHeld.selector, FILL));
        escrow.claimPayment(FILL, SECRET);
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        payFill(f);
        vm.expectRevert(ISettlementEscrow.WrongSecret.selector);
        escrow.claimPayment(FILL, bytes32(uint256(1)));
        vm.warp(f.takerExpiry);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.Expired.selector, f.takerExpiry));
        escrow.claimPayment(FILL, SECRET);
        vm.warp(f.takerExpiry - 1);
        escrow.claimPayment(FILL, SECRET);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotHeld.selector, FILL));
        escrow.claimPayment(FILL, SECRET);
    }

    function test_refundPayment_afterExpiry_byAnyone() public {
        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        uint256 before = usdc.balanceOf(payer);
        payFill(f);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotExpired.selector, f.takerExpiry));
        escrow.refundPayment(FILL);
        vm.warp(f.takerExpiry);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.PaymentRefunded(FILL, payer, f.amountIn);
        vm.prank(stranger);
        escrow.refundPayment(FILL);
        assertEq(usdc.balanceOf(payer), before, "payer whole");
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotHeld.selector, FILL));
        escrow.refundPayment(FILL);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotHeld.selector, FILL));
        escrow.claimPayment(FILL, SECRET);
        assertSolvent();
    }

    // ------------------------------------------------------------ end to end across two "chains"

    function test_crossChainFill_lockPayClaimClaimPayment() public {
        uint256 makerChain = block.chainid;
        uint256 takerChain = 999;
        vm.chainId(takerChain);
        SettlementEscrow taker =
            new SettlementEscrow(IERC20(address(usdc)), IMarginRouter(address(router)), REVEAL, MAX_LOCK);
        vm.chainId(makerChain);

        ISettlementEscrow.Fill memory f = fillOf(FILL, ORDER, 100e6);
        f.takerChainId = takerChain;
        f.takerEscrow = address(taker);
        ISettlementEscrow.QuoteSet memory s = quoteSet(ORDER, takerChain, 500e6);
        bytes memory fs = sig(payerPk, fillDigest(f));
        vm.prank(operator);
        escrow.lock(f, fs, s, 1, sig(quotePk, quoteSetDigest(address(escrow), s)));

        vm.chainId(takerChain);
        assertEq(taker.domainSeparator(), domainOf(takerChain, address(taker)), "taker domain");
        ISettlementEscrow.Permit memory p = permitFor(payerPk, address(taker), f.amountIn, block.timestamp + 1 hours);
        taker.pay(f, fs, p); // the very same signature

        vm.chainId(makerChain);
        escrow.claim(FILL, SECRET);
        vm.chainId(takerChain);
        taker.claimPayment(FILL, SECRET);

        assertEq(cdw.deposits(recipient, 0), 100e6, "taker's recipient got amountOut");
        assertEq(usdc.balanceOf(payee), f.amountIn, "maker's payee got amountIn");
        assertEq(usdc.balanceOf(address(taker)), taker.totalLiabilities(), "taker escrow solvent");
        assertSolvent();
    }
}
