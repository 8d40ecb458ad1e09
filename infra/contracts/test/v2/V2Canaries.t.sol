// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {TestBase} from "../utils/TestBase.sol";
import {V2Handler} from "./invariant/V2Handler.sol";
import {SettlementEscrowV2Canary} from "./SettlementEscrowV2Canary.sol";
import {ISettlementEscrowV2} from "../../src/interfaces/ISettlementEscrowV2.sol";

/// @notice Mutation canaries: each reopens one v1 hole (SettlementEscrowV2Canary) and drives the adversarial handler
///         of the invariant suite through one concrete attack; the suite's own checks (`checkAll`, the same function
///         the invariant asserts) must then report the invariant broken. The same sequence against the real
///         SettlementEscrowV2 must leave every invariant holding, with the attack's key step refused.
///         Clients are offline (every step is explicit) so that the attack's order of events is exactly the one shown.
contract V2CanariesTest is TestBase {
    uint256 internal constant T0 = 1_700_000_000;
    V2Handler internal h;

    function _world(SettlementEscrowV2Canary.Hole hole) internal {
        vm.warp(T0);
        h = new V2Handler(hole);
        for (uint256 i; i < 5; ++i) {
            h.setOnline(i, false);
        }
    }

    function _expectBroken(string memory expected) internal view {
        (bool ok, string memory why) = h.checkAll();
        assertFalse(ok, "the canary must break an invariant of the suite");
        assertEq(keccak256(bytes(why)), keccak256(bytes(expected)), why);
    }

    function _expectHolds() internal view {
        (bool ok, string memory why) = h.checkAll();
        assertTrue(ok, why);
    }

    /// @dev The adversary's maker identity: an order on chain A and a 1:1 quote set paying its payee on chain B.
    function _advMaker() internal returns (uint256 si) {
        (bool ok, uint256 oi) = h.advFundExact(0, keccak256("adv-order-x"), 1e9);
        assertTrue(ok, "adv fund");
        si = h.advQuoteExact(
            V2Handler.AdvQuoteArgs({
                orderIdx: oi,
                quoteChain: 1,
                escrowChoice: 0,
                recipient: h.advPayee(),
                supply: 1,
                receive_: 1,
                quoteSize: 1e9,
                life: h.QUOTE_LIFE(),
                count: 2
            })
        );
    }

    /// @dev Honest maker 0: an order on chain A with 1e9 and its 1:1 quote set (two hashlocks) paying on chain B.
    function _honestMaker() internal returns (uint256 oi, uint256 si) {
        bool ok;
        (ok, oi) = h.ownerFundExact(0, 0, 0, 1e9, true);
        assertTrue(ok, "honest fund");
        (ok, si) = h.makerQuoteExact(oi, 1e9, h.QUOTE_LIFE(), 2);
        assertTrue(ok, "honest quote");
    }

    function _honestTake(uint256 si) internal returns (uint256 ti) {
        bool ok;
        (ok, ti) = h.takerTakeExact(
            V2Handler.TakeArgs({
                taker: 0, setIdx: si, amountOut: 100e6, index: 0, index2: 1, two: false, payDelay: 200, dexChoice: 0
            })
        );
        assertTrue(ok, "honest take");
    }

    function _ownLock(uint256 si, uint32 index, uint256 amountOut, string memory id)
        internal
        pure
        returns (V2Handler.AdvLockArgs memory a)
    {
        a.setIdx = si;
        a.hlIndex = index;
        a.amountOut = amountOut;
        a.fillId = keccak256(bytes(id));
    }

    // ------------------------------------------------------------ operator cancel

    /// @dev The operator, as maker, lets an honest taker pay, cancels the lock, then reveals its own secret.
    function _operatorCancel() internal returns (bool cancelled) {
        uint256 si = _advMaker();
        uint256 ti = _honestTake(si);
        assertTrue(h.advLockHonestExact(ti, 0), "lock");
        assertTrue(h.takerAuthorizeExact(ti, true), "the taker's client saw the lock and paid");
        cancelled = h.advCancelExact(0, 1); // the operator's own call
        assertTrue(h.advClaimPaymentWith(0, h.advSecretOf(h.takeFillAt(ti, 0).hashlock)), "the maker reveals");
        h.react(); // the taker's client claims if it still can
    }

    function test_canary_operatorCancel_breaksTheTakerInvariant() public {
        _world(SettlementEscrowV2Canary.Hole.OperatorCancel);
        assertTrue(_operatorCancel(), "the canary lets the operator cancel");
        _expectBroken("an honest payment went to the payee while its lock could not be claimed");
    }

    function test_real_operatorCancel_isRefused() public {
        _world(SettlementEscrowV2Canary.Hole.None);
        assertFalse(_operatorCancel(), "the operator cannot cancel");
        _expectHolds();
        assertEq(h.tokens(0).balanceOf(h.recipients(0)), 100e6, "the taker's recipient was paid");
    }

    // ------------------------------------------------------------ locks keyed by a chosen id

    /// @dev The operator locks its own Fill (the set's other hashlock, its own payer and recipient) under the honest
    ///      Fill's id first; the taker's client looks its lock up by key.
    function _keyById() internal returns (bool authorised) {
        uint256 si = _advMaker();
        uint256 ti = _honestTake(si); // hashlock index 0
        ISettlementEscrowV2.Fill memory honest = h.takeFillAt(ti, 0);
        V2Handler.AdvLockArgs memory a = _ownLock(si, 1, 2e6, "");
        a.fillId = honest.fillId;
        (bool own,) = h.advLockOwnExact(a);
        assertTrue(own, "the operator's own lock (under the honest id in the canary, its own digest otherwise)");
        authorised = h.takerAuthorizeExact(ti, true);
        if (authorised) h.advClaimPaymentWith(0, h.advSecretOf(honest.hashlock));
        h.react();
    }

    function test_canary_keyById_breaksTheTakerInvariant() public {
        _world(SettlementEscrowV2Canary.Hole.KeyById);
        assertTrue(_keyById(), "the taker's client found a lock under its key");
        _expectBroken("an honest payment went to the payee without a lock of the same Fill");
    }

    function test_real_keyById_isHarmless() public {
        _world(SettlementEscrowV2Canary.Hole.None);
        assertFalse(_keyById(), "no lock under the honest Fill's digest: its pay key does not authorise");
        _expectHolds();
    }

    // ------------------------------------------------------------ no taker-escrow check

    /// @dev The operator locks an honest maker's funds against a fake escrow that reports a held payment.
    function _noTakerEscrowCheck() internal returns (bool locked) {
        (, uint256 si) = _honestMaker();
        V2Handler.AdvLockArgs memory a = _ownLock(si, 0, 5e8, "fake-escrow");
        a.escrowChoice = 1;
        (locked,) = h.advLockOwnExact(a);
        if (!locked) return false;
        h.advFakePaymentExact(0);
        assertTrue(h.makerRevealExact(0), "the maker client saw a held payment on the lock's taker escrow");
        assertTrue(h.advClaimWith(0, h.publicSecret(h.lockFill(0).hashlock)), "claimed with the revealed secret");
    }

    function test_canary_noTakerEscrowCheck_breaksTheMakerInvariant() public {
        _world(SettlementEscrowV2Canary.Hole.NoTakerEscrowCheck);
        assertTrue(_noTakerEscrowCheck(), "the canary locks against the fake escrow");
        _expectBroken("maker funds paid against a payment on an escrow the maker did not quote");
    }

    function test_real_noTakerEscrowCheck_isRefused() public {
        _world(SettlementEscrowV2Canary.Hole.None);
        assertFalse(_noTakerEscrowCheck(), "lock against an unquoted escrow refused");
        _expectHolds();
    }

    // ------------------------------------------------------------ hashlock freed on refund

    /// @dev The operator, as taker, pays one fill so the maker reveals, lets the lock expire, refunds it and locks
    ///      the same hashlock again under a Fill it never pays, claiming it with the public secret.
    function _hashlockFreed() internal returns (bool relocked) {
        (, uint256 si) = _honestMaker();
        (bool ok,) = h.advLockOwnExact(_ownLock(si, 0, 1e8, "f1"));
        assertTrue(ok, "first lock");
        assertTrue(h.advPayOwnExact(h.lockFill(0)), "the operator pays it");
        assertTrue(h.makerRevealExact(0), "the maker reveals");
        bytes32 hl = h.lockFill(0).hashlock;
        vm.warp(h.lockFill(0).makerExpiry);
        assertTrue(h.refundExact(0), "refunded after makerExpiry");
        (relocked,) = h.advLockOwnExact(_ownLock(si, 0, 5e8, "f2"));
        if (relocked) assertTrue(h.advClaimWith(1, h.publicSecret(hl)), "claimed with the public secret");
    }

    function test_canary_hashlockFreed_breaksTheMakerInvariant() public {
        _world(SettlementEscrowV2Canary.Hole.HashlockFreed);
        assertTrue(_hashlockFreed(), "the canary relocks the hashlock");
        _expectBroken("maker funds paid without a claimed payment with the same Fill digest");
    }

    function test_real_hashlockFreed_isRefused() public {
        _world(SettlementEscrowV2Canary.Hole.None);
        assertFalse(_hashlockFreed(), "a hashlock locks once, ever");
        _expectHolds();
    }

    // ------------------------------------------------------------ no sticky close

    /// @dev Everything is locked when the owner closes; at the refund the operator relocks for MAX_LOCK.
    function _noStickyClose() internal returns (bool closed, bool relocked) {
        (uint256 oi, uint256 si) = _honestMaker();
        (bool ok,) = h.advLockOwnExact(_ownLock(si, 0, 1e9, "f1"));
        assertTrue(ok, "everything locked");
        uint256 askedAt = block.timestamp;
        closed = h.ownerCloseExact(oi, 0, 0, false);
        vm.warp(h.lockFill(0).makerExpiry);
        assertTrue(h.refundExact(0), "refund");
        V2Handler.AdvLockArgs memory a = _ownLock(si, 1, 1e9, "f2");
        a.timeMode = 1;
        a.timeSeed = (uint256(4) << 32) | (uint256(10) << 40); // makerExpiry exactly now + MAX_LOCK
        (relocked,) = h.advLockOwnExact(a);
        if (relocked) assertEq(h.lockFill(1).makerExpiry, block.timestamp + h.LOCK_MAX(), "relocked for MAX_LOCK");
        h.ownerCloseExact(oi, 0, 0, false); // the owner tries again
        vm.warp(askedAt + h.LOCK_MAX());
    }

    function test_canary_noStickyClose_breaksTheCloseInvariant() public {
        _world(SettlementEscrowV2Canary.Hole.NoStickyClose);
        (bool closed, bool relocked) = _noStickyClose();
        assertFalse(closed, "v1: NothingToClose while everything is locked");
        assertTrue(relocked, "the refunded funds were locked again");
        _expectBroken("a requested close did not complete within MAX_LOCK");
    }

    function test_real_noStickyClose_closeCompletes() public {
        _world(SettlementEscrowV2Canary.Hole.None);
        (bool closed, bool relocked) = _noStickyClose();
        assertTrue(closed, "the close is recorded with nothing available");
        assertFalse(relocked, "no lock after the close");
        _expectHolds();
    }
}
