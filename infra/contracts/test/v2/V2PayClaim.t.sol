// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {V2Fixture} from "./utils/V2Fixture.sol";
import {ISettlementEscrowV2} from "../../src/interfaces/ISettlementEscrowV2.sol";
import {Wallet1271} from "../mocks/TestDoubles.sol";

/// @notice payTake / claimPayment / refundPayment (taker chain B) and claim / refund / cancelLock (maker chain A):
///         every path, every revert, each expiry at its edge (±1 s).
contract V2PayClaimTest is V2Fixture {
    bytes32 internal constant FILL = keccak256("fill-1");
    bytes32 internal constant FILL2 = keccak256("fill-2");
    ISettlementEscrowV2.Fill internal f1;
    bytes32 internal d1;
    bytes32 internal s0;

    function setUp() public override {
        super.setUp();
        fundA(ORDER, 1_000e6);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        f1 = f;
        d1 = fillDigest2(f);
        s0 = secretAt(ORDER, SEQ, 0);
    }

    function _f1() internal view returns (ISettlementEscrowV2.Fill memory) {
        return f1;
    }

    function _payExpectRevert(
        ISettlementEscrowV2.Fill[] memory fs,
        bytes[] memory sigs,
        bytes memory auth,
        bytes memory err
    ) internal {
        onB();
        vm.prank(payer);
        usdcB.approve(address(escrowB), type(uint256).max);
        vm.prank(relayer);
        vm.expectRevert(err);
        escrowB.payTake(fs, sigs, auth, noPermit2());
    }

    function _invalid(address who) internal pure returns (bytes memory) {
        return abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, who);
    }

    // ------------------------------------------------------------ payTake

    function test_payTake_holdsThePaymentUnderTheFillDigest() public {
        ISettlementEscrowV2.Fill memory f = _f1();
        uint256 before = usdcB.balanceOf(payer);
        vm.expectEmit(true, true, true, true, address(escrowB));
        emit ISettlementEscrowV2.Paid(d1, payer, payee, f, payTakeDigest(CHAIN_B, address(escrowB), one(d1)));
        payB(f);
        ISettlementEscrowV2.Payment memory p = escrowB.getPayment(d1);
        assertEq(uint256(p.state), uint256(ISettlementEscrowV2.PaymentState.Held), "held");
        assertEq(p.payer, payer, "payer");
        assertEq(p.payee, payee, "payee");
        assertEq(p.hashlock, f.hashlock, "hashlock");
        assertEq(p.amountIn, f.amountIn, "amount");
        assertEq(uint256(p.expiry), f.takerExpiry, "expiry");
        assertEq(before - usdcB.balanceOf(payer), f.amountIn, "pulled");
        assertEq(escrowB.totalLiabilities(), f.amountIn, "liabilities");
        assertFalse(escrowB.hashlockUsed(f.hashlock), "pay never marks hashlocks");
        assertSolvent2();
    }

    function test_payTake_paysEveryFillOfATakeWithOnePermit() public {
        ISettlementEscrowV2.Fill memory g = fillAB(FILL2, ORDER, 50e6, 1);
        lockA(g);
        ISettlementEscrowV2.Fill[] memory fs = new ISettlementEscrowV2.Fill[](2);
        fs[0] = _f1();
        fs[1] = g;
        payB(fs);
        assertEq(paymentStateB(d1), 1, "first held");
        assertEq(paymentStateB(fillDigest2(g)), 1, "second held");
        assertEq(escrowB.totalLiabilities(), fs[0].amountIn + g.amountIn, "sum pulled");
        assertSolvent2();
    }

    function test_payTake_allowanceFallbackAndFrontRunPermit() public {
        ISettlementEscrowV2.Fill[] memory fs = takeOf(_f1());
        onB();
        ISettlementEscrowV2.Permit memory p =
            permit2(usdcB, payerPk, address(escrowB), fs[0].amountIn, block.timestamp + 1);
        usdcB.permit(payer, address(escrowB), p.value, p.deadline, p.v, p.r, p.s); // front-run
        escrowB.payTake(fs, fillSigs(fs), payKeySigB(fs), p);
        assertEq(paymentStateB(d1), 1, "held");
    }

    function test_payTake_revertsWithoutAllowance() public {
        ISettlementEscrowV2.Fill[] memory fs = takeOf(_f1());
        onB();
        bytes[] memory sigs = fillSigs(fs);
        bytes memory auth = payKeySigB(fs);
        vm.expectRevert(
            abi.encodeWithSelector(ISettlementEscrowV2.InsufficientAllowance.selector, payer, 0, fs[0].amountIn)
        );
        escrowB.payTake(fs, sigs, auth, noPermit2());
    }

    function test_payTake_revertsOnAnEmptyTakeOrMissingSignatures() public {
        ISettlementEscrowV2.Fill[] memory none = new ISettlementEscrowV2.Fill[](0);
        _payExpectRevert(none, new bytes[](0), "", abi.encodeWithSelector(ISettlementEscrowV2.EmptyTake.selector));
        ISettlementEscrowV2.Fill[] memory fs = takeOf(_f1());
        _payExpectRevert(
            fs, new bytes[](2), payKeySigB(fs), abi.encodeWithSelector(ISettlementEscrowV2.LengthMismatch.selector)
        );
    }

    function test_payTake_revertsOnAnotherTakerChainOrEscrow() public {
        ISettlementEscrowV2.Fill[] memory fs = takeOf(_f1());
        bytes[] memory sigs = fillSigs(fs);
        bytes memory auth = payKeySigB(fs);
        // Chain A's escrow is not this Fill's taker escrow.
        onA();
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WrongChainOrEscrow.selector));
        escrowA.payTake(fs, sigs, auth, noPermit2());
        // escrowB, but the chain id says A.
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WrongChainOrEscrow.selector));
        escrowB.payTake(fs, sigs, auth, noPermit2());
    }

    function test_payTake_everyFillNamesTheSamePayerAndPayKey() public {
        ISettlementEscrowV2.Fill[] memory fs = new ISettlementEscrowV2.Fill[](2);
        fs[0] = _f1();
        fs[1] = fillAB(FILL2, ORDER, 50e6, 1);
        fs[1].payKey = stranger;
        _payExpectRevert(
            fs, fillSigs(fs), payKeySigB(fs), abi.encodeWithSelector(ISettlementEscrowV2.TakeMismatch.selector, 1)
        );
        fs[1] = fillAB(FILL2, ORDER, 50e6, 1);
        fs[1].payer = stranger;
        _payExpectRevert(
            fs, fillSigs(fs), payKeySigB(fs), abi.encodeWithSelector(ISettlementEscrowV2.TakeMismatch.selector, 1)
        );
    }

    function test_payTake_payByIsInclusive() public {
        ISettlementEscrowV2.Fill[] memory fs = takeOf(_f1());
        vm.warp(fs[0].payBy + 1);
        _payExpectRevert(
            fs,
            fillSigs(fs),
            payKeySigB(fs),
            abi.encodeWithSelector(ISettlementEscrowV2.PayByPassed.selector, fs[0].payBy)
        );
        vm.warp(fs[0].payBy);
        payB(fs);
        assertEq(paymentStateB(d1), 1, "held at payBy");
    }

    function test_payTake_checksTheTakerTimeoutAndAmounts() public {
        ISettlementEscrowV2.Fill memory f = _f1();
        f.takerExpiry = f.payBy + TAKER_TIMEOUT - 1;
        ISettlementEscrowV2.Fill[] memory fs = takeOf(f);
        _payExpectRevert(
            fs,
            fillSigs(fs),
            payKeySigB(fs),
            abi.encodeWithSelector(ISettlementEscrowV2.TakerTimeoutTooShort.selector, f.payBy, f.takerExpiry)
        );
        f = _f1();
        f.amountIn = 0;
        fs = takeOf(f);
        _payExpectRevert(
            fs, fillSigs(fs), payKeySigB(fs), abi.encodeWithSelector(ISettlementEscrowV2.ZeroAmount.selector)
        );
        f = _f1();
        f.payee = address(0);
        fs = takeOf(f);
        _payExpectRevert(
            fs, fillSigs(fs), payKeySigB(fs), abi.encodeWithSelector(ISettlementEscrowV2.ZeroAddress.selector)
        );
    }

    function test_payTake_needsThePayersFillSignature() public {
        ISettlementEscrowV2.Fill[] memory fs = takeOf(_f1());
        bytes[] memory sigs = new bytes[](1);
        sigs[0] = sig(operatorPk, d1);
        _payExpectRevert(fs, sigs, payKeySigB(fs), _invalid(payer));
        sigs[0] = highS(sig(payerPk, d1));
        _payExpectRevert(fs, sigs, payKeySigB(fs), _invalid(payer));
        sigs[0] = sig(payKeyPk, d1);
        _payExpectRevert(fs, sigs, payKeySigB(fs), _invalid(payer));
    }

    function test_payTake_refusesAContractPayer() public {
        Wallet1271 w = new Wallet1271(payer);
        ISettlementEscrowV2.Fill memory f = _f1();
        f.payer = address(w);
        ISettlementEscrowV2.Fill[] memory fs = takeOf(f);
        _payExpectRevert(fs, fillSigs(fs), payKeySigB(fs), _invalid(address(w)));
    }

    function test_payTake_neverPaysWithoutThePayKeysAuthorisation() public {
        // The Fill signature and an unlimited allowance are there; only the pay key's PayTake is missing or wrong.
        ISettlementEscrowV2.Fill[] memory fs = takeOf(_f1());
        bytes[] memory sigs = fillSigs(fs);
        _payExpectRevert(fs, sigs, "", _invalid(payKey));
        _payExpectRevert(fs, sigs, sig(payerPk, payTakeDigest(CHAIN_B, address(escrowB), one(d1))), _invalid(payKey));
        _payExpectRevert(fs, sigs, sig(operatorPk, payTakeDigest(CHAIN_B, address(escrowB), one(d1))), _invalid(payKey));
        // The pay key's signature in chain A's escrow domain, and its high-s twin.
        _payExpectRevert(fs, sigs, sig(payKeyPk, payTakeDigest(CHAIN_A, address(escrowA), one(d1))), _invalid(payKey));
        _payExpectRevert(
            fs, sigs, highS(sig(payKeyPk, payTakeDigest(CHAIN_B, address(escrowB), one(d1)))), _invalid(payKey)
        );
        assertEq(paymentStateB(d1), 0, "nothing paid");
    }

    function test_payTake_authorisationCoversExactlyTheseDigestsInOrder() public {
        ISettlementEscrowV2.Fill memory g = fillAB(FILL2, ORDER, 50e6, 1);
        lockA(g);
        bytes32 d2 = fillDigest2(g);
        ISettlementEscrowV2.Fill[] memory both = new ISettlementEscrowV2.Fill[](2);
        both[0] = _f1();
        both[1] = g;
        bytes32[] memory reversed = new bytes32[](2);
        reversed[0] = d2;
        reversed[1] = d1;
        // Authorised for f1 only: cannot pay f1+g, nor g alone.
        bytes memory onlyF1 = sig(payKeyPk, payTakeDigest(CHAIN_B, address(escrowB), one(d1)));
        _payExpectRevert(both, fillSigs(both), onlyF1, _invalid(payKey));
        _payExpectRevert(takeOf(g), fillSigs(takeOf(g)), onlyF1, _invalid(payKey));
        // Authorised for [g, f1]: not [f1, g], and not f1 alone.
        bytes memory rev = sig(payKeyPk, payTakeDigest(CHAIN_B, address(escrowB), reversed));
        _payExpectRevert(both, fillSigs(both), rev, _invalid(payKey));
        _payExpectRevert(takeOf(_f1()), fillSigs(takeOf(_f1())), rev, _invalid(payKey));
    }

    function test_payTake_refusesAContractPayKey() public {
        Wallet1271 w = new Wallet1271(payKey);
        bytes32 id = keccak256("order-w");
        fundA(id, 100e6);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, id, 100e6, 0);
        f.payKey = address(w);
        lockCall(f, quoteSetA(id, SEQ, 500e6), proofAt(id, SEQ, 0));
        ISettlementEscrowV2.Fill[] memory fs = takeOf(f);
        _payExpectRevert(fs, fillSigs(fs), payKeySigB(fs), _invalid(address(w)));
    }

    function test_payTake_aDigestPaysOnce() public {
        payB(_f1());
        ISettlementEscrowV2.Fill[] memory fs = takeOf(_f1());
        _payExpectRevert(
            fs, fillSigs(fs), payKeySigB(fs), abi.encodeWithSelector(ISettlementEscrowV2.PaymentExists.selector, d1)
        );
        // The same Fill twice in one take.
        ISettlementEscrowV2.Fill memory g = fillAB(FILL2, ORDER, 50e6, 1);
        lockA(g);
        ISettlementEscrowV2.Fill[] memory twice = new ISettlementEscrowV2.Fill[](2);
        twice[0] = g;
        twice[1] = g;
        _payExpectRevert(
            twice,
            fillSigs(twice),
            payKeySigB(twice),
            abi.encodeWithSelector(ISettlementEscrowV2.PaymentExists.selector, fillDigest2(g))
        );
    }

    // ------------------------------------------------------------ claimPayment / refundPayment

    function test_claimPayment_paysThePayeeBeforeTakerExpiry() public {
        payB(_f1());
        onB();
        vm.warp(f1.takerExpiry);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.Expired.selector, f1.takerExpiry));
        escrowB.claimPayment(d1, s0);
        vm.warp(f1.takerExpiry - 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WrongSecret.selector));
        escrowB.claimPayment(d1, keccak256("wrong"));
        vm.expectEmit(true, true, true, true, address(escrowB));
        emit ISettlementEscrowV2.PaymentClaimed(d1, payee, f1.amountIn, s0);
        vm.prank(stranger); // permissionless
        escrowB.claimPayment(d1, s0);
        assertEq(usdcB.balanceOf(payee), f1.amountIn, "payee paid");
        assertEq(paymentStateB(d1), 2, "claimed");
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotHeld.selector, d1));
        escrowB.claimPayment(d1, s0);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotHeld.selector, d1));
        escrowB.refundPayment(d1);
        assertSolvent2();
    }

    function test_refundPayment_fromTakerExpiryOn() public {
        payB(_f1());
        onB();
        uint256 before = usdcB.balanceOf(payer);
        vm.warp(f1.takerExpiry - 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotExpired.selector, f1.takerExpiry));
        escrowB.refundPayment(d1);
        vm.warp(f1.takerExpiry);
        vm.expectEmit(true, true, true, true, address(escrowB));
        emit ISettlementEscrowV2.PaymentRefunded(d1, payer, f1.amountIn);
        vm.prank(stranger);
        escrowB.refundPayment(d1);
        assertEq(usdcB.balanceOf(payer) - before, f1.amountIn, "payer refunded");
        assertEq(paymentStateB(d1), 3, "refunded");
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotHeld.selector, d1));
        escrowB.refundPayment(d1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotHeld.selector, keccak256("unknown")));
        escrowB.claimPayment(keccak256("unknown"), s0);
        assertSolvent2();
    }

    // ------------------------------------------------------------ claim / refund

    function test_claim_paysTheRecipientBeforeMakerExpiry() public {
        onA();
        vm.warp(f1.makerExpiry);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.Expired.selector, f1.makerExpiry));
        escrowA.claim(d1, s0);
        vm.warp(f1.makerExpiry - 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WrongSecret.selector));
        escrowA.claim(d1, secretAt(ORDER, SEQ, 1));
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.Claimed(d1, orderKeyOf(owner, ORDER), recipient, 100e6, 0, true, false, s0);
        vm.prank(stranger);
        escrowA.claim(d1, s0);
        assertEq(cdwA.deposits(recipient, 0), 100e6, "recipient's perps credit");
        assertEq(lockStateA(d1), 2, "claimed");
        ISettlementEscrowV2.Order memory o = escrowA.getOrder(owner, ORDER);
        assertEq(o.locked, 0, "unlocked");
        assertEq(o.available, 900e6, "available unchanged");
        assertEq(escrowA.filledOut(orderKeyOf(owner, ORDER), SEQ), 100e6, "delivered counts against quoteSize");
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotLocked.selector, d1));
        escrowA.claim(d1, s0);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotLocked.selector, d1));
        escrowA.refund(d1);
        assertSolvent2();
    }

    function test_claim_walletAndRefusedMarginPayouts() public {
        ISettlementEscrowV2.Fill memory g = fillAB(FILL2, ORDER, 50e6, 1);
        g.toMargin = false;
        lockA(g);
        escrowA.claim(fillDigest2(g), secretAt(ORDER, SEQ, 1));
        assertEq(usdcA.balanceOf(recipient), 50e6, "wallet payout");
        cdwA.setRefusing(true);
        escrowA.claim(d1, s0);
        assertEq(escrowA.balanceOf(recipient), 100e6, "refused: recipient's zero-id balance");
        assertSolvent2();
    }

    function test_refund_fromMakerExpiryOnBackToAvailable() public {
        onA();
        vm.warp(f1.makerExpiry - 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotExpired.selector, f1.makerExpiry));
        escrowA.refund(d1);
        vm.warp(f1.makerExpiry);
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.Refunded(d1, orderKeyOf(owner, ORDER), 100e6, false, false);
        vm.prank(stranger);
        escrowA.refund(d1);
        ISettlementEscrowV2.Order memory o = escrowA.getOrder(owner, ORDER);
        assertEq(o.available, 1_000e6, "back to available");
        assertEq(o.locked, 0, "unlocked");
        assertEq(escrowA.filledOut(orderKeyOf(owner, ORDER), SEQ), 0, "capacity freed");
        assertTrue(escrowA.hashlockUsed(f1.hashlock), "hashlock stays used");
        assertEq(lockStateA(d1), 3, "refunded");
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotLocked.selector, keccak256("unknown")));
        escrowA.refund(keccak256("unknown"));
        assertSolvent2();
    }

    function test_refund_ofAClosedOrderGoesToTheOwnerOrItsZeroIdBalance() public {
        closeA(ORDER, 0, true, 1); // 900 to the owner's perps, the lock stays
        assertEq(cdwA.deposits(owner, 0), 900e6, "available closed");
        cdwA.setRefusing(true);
        vm.warp(f1.makerExpiry);
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.Refunded(d1, orderKeyOf(owner, ORDER), 100e6, true, true);
        escrowA.refund(d1);
        assertEq(escrowA.balanceOf(owner), 100e6, "refused: owner's zero-id balance");
        assertEq(escrowA.getOrder(owner, ORDER).available, 0, "not parked in the order");
        assertSolvent2();
    }

    // ------------------------------------------------------------ cancelLock

    function test_cancelLock_byThePayKeysSignatureRelayedByAnyone() public {
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.LockCancelled(d1, orderKeyOf(owner, ORDER), 100e6, false, false);
        vm.prank(operator);
        escrowA.cancelLock(d1, cancelSig(payKeyPk, d1));
        assertEq(lockStateA(d1), 4, "cancelled");
        ISettlementEscrowV2.Order memory o = escrowA.getOrder(owner, ORDER);
        assertEq(o.available, 1_000e6, "back to available");
        assertEq(escrowA.filledOut(orderKeyOf(owner, ORDER), SEQ), 0, "capacity freed");
        assertTrue(escrowA.hashlockUsed(f1.hashlock), "hashlock stays used");
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotLocked.selector, d1));
        escrowA.cancelLock(d1, cancelSig(payKeyPk, d1));
        assertSolvent2();
    }

    function test_cancelLock_nobodyButThePayKey() public {
        onA();
        bytes memory err = _invalid(payKey);
        uint256[5] memory pks = [operatorPk, ownerPk, quotePk, payerPk, strangerPk];
        for (uint256 i; i < pks.length; ++i) {
            vm.expectRevert(err);
            escrowA.cancelLock(d1, cancelSig(pks[i], d1));
        }
        // The pay key's signature in the taker escrow's domain, over another digest, high-s, or empty.
        vm.expectRevert(err);
        escrowA.cancelLock(d1, sig(payKeyPk, cancelDigest(CHAIN_B, address(escrowB), d1)));
        vm.expectRevert(err);
        escrowA.cancelLock(d1, cancelSig(payKeyPk, keccak256("other")));
        vm.expectRevert(err);
        escrowA.cancelLock(d1, highS(cancelSig(payKeyPk, d1)));
        vm.prank(operator);
        vm.expectRevert(err);
        escrowA.cancelLock(d1, "");
        assertEq(lockStateA(d1), 1, "still locked");
    }

    function test_cancelLock_refusesAContractSignature() public {
        Wallet1271 w = new Wallet1271(payKey);
        bytes32 id = keccak256("order-w");
        fundA(id, 100e6);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, id, 100e6, 0);
        f.payKey = address(w);
        lockCall(f, quoteSetA(id, SEQ, 500e6), proofAt(id, SEQ, 0));
        bytes32 d = fillDigest2(f);
        vm.expectRevert(_invalid(address(w)));
        escrowA.cancelLock(d, cancelSig(payKeyPk, d)); // the wallet would accept it by ERC-1271
    }

    function test_cancelLock_ofAClosedOrderGoesToTheOwner() public {
        closeA(ORDER, 0, false, 1);
        uint256 before = usdcA.balanceOf(owner);
        escrowA.cancelLock(d1, cancelSig(payKeyPk, d1));
        assertEq(usdcA.balanceOf(owner) - before, 100e6, "to the owner's wallet");
        assertSolvent2();
    }

    // ------------------------------------------------------------ end to end

    function test_fullSettlement_lockPayRevealClaim() public {
        payB(_f1());
        onB();
        escrowB.claimPayment(d1, s0); // the maker's reveal
        onA();
        escrowA.claim(d1, s0); // anyone with the now public secret
        assertEq(usdcB.balanceOf(payee), f1.amountIn, "maker's payee paid");
        assertEq(cdwA.deposits(recipient, 0), 100e6, "taker's recipient credited");
        assertEq(escrowA.totalLiabilities(), 900e6, "A owes the rest of the order");
        assertEq(escrowB.totalLiabilities(), 0, "B owes nothing");
        assertSolvent2();
    }
}
