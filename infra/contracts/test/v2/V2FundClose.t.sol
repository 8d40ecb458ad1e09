// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {V2Fixture} from "./utils/V2Fixture.sol";
import {ISettlementEscrowV2} from "../../src/interfaces/ISettlementEscrowV2.sol";
import {IMarginRouter} from "../../src/interfaces/IMarginRouter.sol";
import {SettlementEscrowV2} from "../../src/SettlementEscrowV2.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";
import {Wallet1271} from "../mocks/TestDoubles.sol";

/// @notice fund / closeWithSig / close / operatorClose / invalidateNonce / constructor: every path and every revert.
contract V2FundCloseTest is V2Fixture {
    bytes32 internal constant FILL = keccak256("fill-1");

    function _fundCall(ISettlementEscrowV2.FundOrder memory o, uint256 signerPk, bytes memory err) internal {
        onA();
        ISettlementEscrowV2.Permit memory p = permit2(usdcA, ownerPk, address(escrowA), o.amount, block.timestamp + 1);
        bytes memory s = sig(signerPk, fundDigest2(CHAIN_A, address(escrowA), o));
        if (err.length > 0) vm.expectRevert(err);
        vm.prank(relayer);
        escrowA.fund(o, s, p);
    }

    // ------------------------------------------------------------ fund

    function test_fund_createsTheOrderUnderOwnerAndId() public {
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(ORDER, 100e6);
        bytes32 d = fundDigest2(CHAIN_A, address(escrowA), o);
        assertEq(escrowA.hashFundOrder(o), d, "hashFundOrder");
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.OrderFunded(
            orderKeyOf(owner, ORDER), owner, ORDER, operator, quoteSigner, 100e6, 100e6, true, d
        );
        fundA(ORDER, 100e6);
        ISettlementEscrowV2.Order memory ord = escrowA.getOrder(owner, ORDER);
        assertEq(ord.owner, owner, "owner");
        assertEq(ord.operator, operator, "operator");
        assertEq(ord.quoteSigner, quoteSigner, "quote signer");
        assertEq(ord.available, 100e6, "available");
        assertFalse(ord.closeRequested, "no close");
        assertTrue(escrowA.fundDigestUsed(d), "digest used");
        assertEq(escrowA.orderKey(owner, ORDER), orderKeyOf(owner, ORDER), "orderKey");
        assertEq(usdcA.balanceOf(address(escrowA)), 100e6, "pulled");
        assertSolvent2();
    }

    function test_fund_topUpKeepsTerms() public {
        fundA(ORDER, 100e6);
        vm.warp(block.timestamp + 1); // another deadline, another digest
        fundA(ORDER, 50e6);
        assertEq(escrowA.getOrder(owner, ORDER).available, 150e6, "topped up");
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(ORDER, 1e6);
        o.operator = stranger;
        _fundCall(o, ownerPk, abi.encodeWithSelector(ISettlementEscrowV2.OrderTermsMismatch.selector, owner, ORDER));
        o = fundOrder2(ORDER, 1e6);
        o.quoteSigner = stranger;
        _fundCall(o, ownerPk, abi.encodeWithSelector(ISettlementEscrowV2.OrderTermsMismatch.selector, owner, ORDER));
    }

    function test_fund_revertsOnBadTerms() public {
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(bytes32(0), 1e6);
        _fundCall(o, ownerPk, abi.encodeWithSelector(ISettlementEscrowV2.ZeroOrderId.selector));
        o = fundOrder2(ORDER, 0);
        _fundCall(o, ownerPk, abi.encodeWithSelector(ISettlementEscrowV2.ZeroAmount.selector));
        o = fundOrder2(ORDER, 1e6);
        o.operator = address(0);
        _fundCall(o, ownerPk, abi.encodeWithSelector(ISettlementEscrowV2.ZeroAddress.selector));
        o = fundOrder2(ORDER, 1e6);
        o.quoteSigner = address(0);
        _fundCall(o, ownerPk, abi.encodeWithSelector(ISettlementEscrowV2.ZeroAddress.selector));
    }

    function test_fund_deadlineIsInclusive() public {
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(ORDER, 1e6);
        vm.warp(o.deadline + 1);
        _fundCall(o, ownerPk, abi.encodeWithSelector(ISettlementEscrowV2.SignatureExpired.selector, o.deadline));
        vm.warp(o.deadline);
        _fundCall(o, ownerPk, "");
    }

    function test_fund_digestIsSingleUse() public {
        ISettlementEscrowV2.FundOrder memory o = fundA(ORDER, 100e6);
        _fundCall(
            o,
            ownerPk,
            abi.encodeWithSelector(
                ISettlementEscrowV2.FundOrderAlreadyUsed.selector, fundDigest2(CHAIN_A, address(escrowA), o)
            )
        );
    }

    function test_fund_revertsWithoutTheOwnersSignature() public {
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(ORDER, 1e6);
        bytes memory err = abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, owner);
        _fundCall(o, operatorPk, err);
        _fundCall(o, strangerPk, err);
        onA();
        // The owner's signature for chain B's escrow, and its high-s twin here.
        bytes memory other = sig(ownerPk, fundDigest2(CHAIN_B, address(escrowB), o));
        vm.expectRevert(err);
        escrowA.fund(o, other, noPermit2());
        vm.expectRevert(err);
        escrowA.fund(o, highS(sig(ownerPk, fundDigest2(CHAIN_A, address(escrowA), o))), noPermit2());
    }

    function test_fund_allowanceFallbackAndFrontRunPermit() public {
        onA();
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(ORDER, 100e6);
        bytes memory s = sig(ownerPk, fundDigest2(CHAIN_A, address(escrowA), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InsufficientAllowance.selector, owner, 0, 100e6));
        escrowA.fund(o, s, noPermit2());
        ISettlementEscrowV2.Permit memory p = permit2(usdcA, ownerPk, address(escrowA), 100e6, block.timestamp + 1);
        // Someone submits the permit first: the fund still goes through on the allowance.
        usdcA.permit(owner, address(escrowA), p.value, p.deadline, p.v, p.r, p.s);
        escrowA.fund(o, s, p);
        assertEq(escrowA.getOrder(owner, ORDER).available, 100e6, "funded");
        // Plain allowance, no permit.
        vm.prank(owner);
        usdcA.approve(address(escrowA), 1e6);
        o = fundOrder2(ORDER, 1e6);
        o.deadline += 1;
        escrowA.fund(o, sig(ownerPk, fundDigest2(CHAIN_A, address(escrowA), o)), noPermit2());
        assertEq(escrowA.getOrder(owner, ORDER).available, 101e6, "topped up");
    }

    function test_fund_idSquattingIsImpossible() public {
        // A stranger funds 1 unit under the owner's id first, with its own operator: a separate order.
        onA();
        usdcA.mint(stranger, 1);
        ISettlementEscrowV2.FundOrder memory squat = ISettlementEscrowV2.FundOrder({
            orderId: ORDER,
            owner: stranger,
            operator: stranger,
            quoteSigner: stranger,
            amount: 1,
            deadline: block.timestamp + 1
        });
        escrowA.fund(
            squat,
            sig(strangerPk, fundDigest2(CHAIN_A, address(escrowA), squat)),
            permit2(usdcA, strangerPk, address(escrowA), 1, block.timestamp + 1)
        );
        fundA(ORDER, 100e6);
        assertEq(escrowA.getOrder(owner, ORDER).available, 100e6, "owner's order");
        assertEq(escrowA.getOrder(owner, ORDER).operator, operator, "owner's operator");
        assertEq(escrowA.getOrder(stranger, ORDER).available, 1, "stranger's order");
    }

    function test_fund_refusesATopUpOfAClosedOrder() public {
        fundA(ORDER, 100e6);
        closeA(ORDER, 0, false, 1);
        _fundCall(
            fundOrder2(ORDER, 1e6),
            ownerPk,
            abi.encodeWithSelector(ISettlementEscrowV2.OrderClosing.selector, owner, ORDER)
        );
    }

    function test_fund_andCloseByAContractOwner() public {
        onA();
        Wallet1271 w = new Wallet1271(owner);
        usdcA.mint(address(w), 10e6);
        vm.prank(owner);
        w.approve(IERC20(address(usdcA)), address(escrowA), 10e6);
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(ORDER, 10e6);
        o.owner = address(w);
        escrowA.fund(o, sig(ownerPk, fundDigest2(CHAIN_A, address(escrowA), o)), noPermit2());
        ISettlementEscrowV2.CloseOffer memory c = closeOffer2(ORDER, 0, false, 9);
        c.owner = address(w);
        escrowA.closeWithSig(c, sig(ownerPk, closeDigest2(CHAIN_A, address(escrowA), c)));
        assertEq(usdcA.balanceOf(address(w)), 10e6, "back to the wallet");
        assertTrue(escrowA.closeRequested(address(w), ORDER), "sticky");
    }

    // ------------------------------------------------------------ closeWithSig

    function test_closeWithSig_paysAvailableAndSetsTheStickyRequest() public {
        fundA(ORDER, 100e6);
        uint256 before = usdcA.balanceOf(owner);
        ISettlementEscrowV2.CloseOffer memory c = closeOffer2(ORDER, 0, false, 42);
        assertEq(escrowA.hashCloseOffer(c), closeDigest2(CHAIN_A, address(escrowA), c), "hashCloseOffer");
        bytes32 k = orderKeyOf(owner, ORDER);
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.CloseRequested(k, owner, ORDER, 0, false);
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.OrderClosed(
            k, owner, ORDER, relayer, 100e6, 0, false, false, ISettlementEscrowV2.CloseKind.Signature, 42
        );
        closeA(ORDER, 0, false, 42);
        assertEq(usdcA.balanceOf(owner) - before, 100e6, "paid to the owner");
        ISettlementEscrowV2.Order memory o = escrowA.getOrder(owner, ORDER);
        assertEq(o.available, 0, "drained");
        assertTrue(o.closeRequested, "sticky");
        assertTrue(escrowA.nonceUsed(owner, 42), "nonce used");
        assertSolvent2();
    }

    function test_closeWithSig_withEverythingLockedStillRecordsTheClose() public {
        fundA(ORDER, 100e6);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.OrderClosed(
            orderKeyOf(owner, ORDER),
            owner,
            ORDER,
            relayer,
            0,
            SPOT,
            true,
            false,
            ISettlementEscrowV2.CloseKind.Signature,
            1
        );
        closeA(ORDER, SPOT, true, 1);
        ISettlementEscrowV2.Order memory o = escrowA.getOrder(owner, ORDER);
        assertTrue(o.closeRequested, "sticky");
        assertEq(uint256(o.closeDex), SPOT, "dex remembered");
        assertTrue(o.closeToMargin, "toMargin remembered");
        // The lock refunds straight to the owner's margin, as the close said.
        vm.warp(f.makerExpiry);
        escrowA.refund(fillDigest2(f));
        assertEq(cdwA.deposits(owner, SPOT), 100e6, "refund to the owner's spot margin");
        assertEq(escrowA.getOrder(owner, ORDER).available, 0, "nothing parked");
        assertSolvent2();
    }

    function test_closeWithSig_toMarginAndRefused() public {
        fundA(ORDER, 100e6);
        closeA(ORDER, 0, true, 1);
        assertEq(cdwA.deposits(owner, 0), 100e6, "perps credit");
        bytes32 id2 = keccak256("order-2");
        fundA(id2, 30e6);
        cdwA.setRefusing(true);
        closeA(id2, 0, true, 2);
        assertEq(escrowA.balanceOf(owner), 30e6, "refused: zero-id balance");
        // The zero-id balance is closed the same way, without a sticky request.
        cdwA.setRefusing(false);
        uint256 before = usdcA.balanceOf(owner);
        closeA(bytes32(0), 0, false, 3);
        assertEq(usdcA.balanceOf(owner) - before, 30e6, "zero-id paid");
        assertEq(escrowA.balanceOf(owner), 0, "zero-id drained");
        assertSolvent2();
    }

    function test_closeWithSig_revertsOnAnEmptyZeroIdBalanceOrAnUnknownOrder() public {
        onA();
        ISettlementEscrowV2.CloseOffer memory c = closeOffer2(bytes32(0), 0, false, 1);
        bytes memory s = sig(ownerPk, closeDigest2(CHAIN_A, address(escrowA), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NothingToClose.selector, owner, bytes32(0)));
        escrowA.closeWithSig(c, s);
        c = closeOffer2(ORDER, 0, false, 1);
        s = sig(ownerPk, closeDigest2(CHAIN_A, address(escrowA), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.UnknownOrder.selector, owner, ORDER));
        escrowA.closeWithSig(c, s);
    }

    function test_closeWithSig_nonceDeadlineSignatureAndMode() public {
        fundA(ORDER, 100e6);
        onA();
        ISettlementEscrowV2.CloseOffer memory c = closeOffer2(ORDER, 0, false, 7);
        bytes memory s = sig(ownerPk, closeDigest2(CHAIN_A, address(escrowA), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, owner));
        escrowA.closeWithSig(c, sig(operatorPk, closeDigest2(CHAIN_A, address(escrowA), c)));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, owner));
        escrowA.closeWithSig(c, sig(ownerPk, closeDigest2(CHAIN_B, address(escrowB), c)));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, owner));
        escrowA.closeWithSig(c, highS(s));
        vm.warp(c.deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.SignatureExpired.selector, c.deadline));
        escrowA.closeWithSig(c, s);
        vm.warp(c.deadline);
        escrowA.closeWithSig(c, s);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NonceAlreadyUsed.selector, owner, 7));
        escrowA.closeWithSig(c, s);
        c = closeOffer2(ORDER, SPOT, false, 8);
        s = sig(ownerPk, closeDigest2(CHAIN_A, address(escrowA), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WalletPayoutRequiresDexZero.selector, SPOT));
        escrowA.closeWithSig(c, s);
    }

    function test_closeWithSig_aLaterCloseUpdatesThePayoutMode() public {
        fundA(ORDER, 100e6);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        closeA(ORDER, 0, true, 1);
        closeA(ORDER, 0, false, 2);
        uint256 before = usdcA.balanceOf(owner);
        vm.warp(f.makerExpiry);
        escrowA.refund(fillDigest2(f));
        assertEq(usdcA.balanceOf(owner) - before, 100e6, "refund to the wallet, as the last close said");
    }

    function test_invalidateNonce_burnsTheNonce() public {
        fundA(ORDER, 100e6);
        onA();
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.NonceInvalidated(owner, 5);
        vm.prank(owner);
        escrowA.invalidateNonce(5);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NonceAlreadyUsed.selector, owner, 5));
        escrowA.invalidateNonce(5);
        ISettlementEscrowV2.CloseOffer memory c = closeOffer2(ORDER, 0, false, 5);
        bytes memory s = sig(ownerPk, closeDigest2(CHAIN_A, address(escrowA), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NonceAlreadyUsed.selector, owner, 5));
        escrowA.closeWithSig(c, s);
    }

    // ------------------------------------------------------------ close (the owner's own call)

    function test_close_byTheOwnerItself() public {
        fundA(ORDER, 100e6);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 40e6, 0);
        lockA(f);
        uint256 before = usdcA.balanceOf(owner);
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.OrderClosed(
            orderKeyOf(owner, ORDER), owner, ORDER, owner, 60e6, 0, false, false, ISettlementEscrowV2.CloseKind.Owner, 0
        );
        vm.prank(owner);
        escrowA.close(ORDER, 0, false);
        assertEq(usdcA.balanceOf(owner) - before, 60e6, "available paid");
        assertTrue(escrowA.closeRequested(owner, ORDER), "sticky");
        // Nothing left: closing again still succeeds (no NothingToClose for an order).
        vm.prank(owner);
        escrowA.close(ORDER, 0, false);
        // A stranger's own call names its own (nonexistent) order.
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.UnknownOrder.selector, stranger, ORDER));
        escrowA.close(ORDER, 0, false);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WalletPayoutRequiresDexZero.selector, 1));
        escrowA.close(ORDER, 1, false);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NothingToClose.selector, owner, bytes32(0)));
        escrowA.close(bytes32(0), 0, false);
    }

    // ------------------------------------------------------------ operatorClose

    function test_operatorClose_paysTheOwnerWithoutAStickyRequest() public {
        fundA(ORDER, 100e6);
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.OrderClosed(
            orderKeyOf(owner, ORDER),
            owner,
            ORDER,
            operator,
            100e6,
            SPOT,
            true,
            false,
            ISettlementEscrowV2.CloseKind.Operator,
            0
        );
        vm.prank(operator);
        escrowA.operatorClose(owner, ORDER, SPOT, true);
        assertEq(cdwA.deposits(owner, SPOT), 100e6, "to the owner's margin");
        assertFalse(escrowA.closeRequested(owner, ORDER), "not sticky");
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NothingToClose.selector, owner, ORDER));
        escrowA.operatorClose(owner, ORDER, 0, false);
    }

    function test_operatorClose_onlyTheOrdersOperator() public {
        fundA(ORDER, 100e6);
        address[3] memory callers = [owner, stranger, quoteSigner];
        for (uint256 i; i < 3; ++i) {
            vm.prank(callers[i]);
            vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotOperator.selector, owner, ORDER, callers[i]));
            escrowA.operatorClose(owner, ORDER, 0, false);
        }
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotOperator.selector, stranger, ORDER, operator));
        escrowA.operatorClose(stranger, ORDER, 0, false);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WalletPayoutRequiresDexZero.selector, SPOT));
        escrowA.operatorClose(owner, ORDER, SPOT, false);
    }

    // ------------------------------------------------------------ constructor and views

    function test_constructor_exposesTheTimeBounds() public view {
        assertEq(uint256(escrowA.MAX_LOCK()), LOCK_MAX, "MAX_LOCK");
        assertEq(uint256(escrowA.PAY_BY_MAX()), PAYBY_MAX, "PAY_BY_MAX");
        assertEq(uint256(escrowA.CLAIM_WINDOW()), CLAIM_WIN, "CLAIM_WINDOW");
        assertEq(uint256(escrowA.MAX_QUOTE_LIFE()), QUOTE_LIFE, "MAX_QUOTE_LIFE");
        assertEq(uint256(escrowA.TAKER_TIMEOUT_MIN()), TAKER_TIMEOUT, "TAKER_TIMEOUT_MIN");
        assertEq(escrowA.token(), address(usdcA), "token");
        assertEq(escrowA.router(), address(routerA), "router");
    }

    function test_constructor_refusesInconsistentBounds() public {
        IERC20 t = IERC20(address(usdcA));
        IMarginRouter r = IMarginRouter(address(routerA));
        bytes memory bad = abi.encodeWithSelector(ISettlementEscrowV2.InvalidConfig.selector);
        // PAY_BY_MAX + TAKER_TIMEOUT_MIN + CLAIM_WINDOW must fit in MAX_LOCK.
        vm.expectRevert(bad);
        new SettlementEscrowV2(t, r, 1500 - 1, 300, 600, 900, 600);
        new SettlementEscrowV2(t, r, 1500, 300, 600, 900, 600);
        uint64[5][6] memory cfgs = [
            [uint64(0), 300, 600, 900, 600],
            [uint64(3600), 0, 600, 900, 600],
            [uint64(3600), 300, 0, 900, 600],
            [uint64(3600), 300, 600, 0, 600],
            [uint64(3600), 300, 600, 900, 0],
            [uint64(3600), 300, 600, 3601, 600] // quote life longer than a lock
        ];
        for (uint256 i; i < cfgs.length; ++i) {
            vm.expectRevert(bad);
            new SettlementEscrowV2(t, r, cfgs[i][0], cfgs[i][1], cfgs[i][2], cfgs[i][3], cfgs[i][4]);
        }
        vm.expectRevert(bad);
        new SettlementEscrowV2(t, r, 30 days + 1, 300, 600, 900, 600);
        new SettlementEscrowV2(t, r, 30 days, 300, 600, 900, 600);
        IERC20 other = IERC20(address(new MockUSDC()));
        vm.expectRevert(bad); // router for another token
        new SettlementEscrowV2(other, r, 3600, 300, 600, 900, 600);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.ZeroAddress.selector));
        new SettlementEscrowV2(IERC20(address(0)), r, 3600, 300, 600, 900, 600);
        SettlementEscrowV2 noRouter = new SettlementEscrowV2(t, IMarginRouter(address(0)), 3600, 300, 600, 900, 600);
        assertEq(noRouter.router(), address(0), "no margin path");
    }

    function test_views_domainAndHelpersMatchTheIndependentEncoding() public {
        onA();
        assertEq(escrowA.domainSeparator(), domainOf2(CHAIN_A, address(escrowA)), "domain A");
        assertEq(
            escrowA.domainSeparatorFor(CHAIN_B, address(escrowB)), domainOf2(CHAIN_B, address(escrowB)), "domain B"
        );
        onB();
        assertEq(escrowB.domainSeparator(), domainOf2(CHAIN_B, address(escrowB)), "domain B on B");
        bytes32[] memory ds = new bytes32[](2);
        ds[0] = keccak256("a");
        ds[1] = keccak256("b");
        assertEq(escrowB.hashPayTake(ds), payTakeDigest(CHAIN_B, address(escrowB), ds), "hashPayTake");
        onA();
        assertEq(escrowA.hashCancelFill(ds[0]), cancelDigest(CHAIN_A, address(escrowA), ds[0]), "hashCancelFill");
        assertEq(escrowA.hashlockLeaf(3, ds[1]), leafOf(3, ds[1]), "hashlockLeaf");
        ISettlementEscrowV2.QuoteSet memory s = quoteSetA(ORDER, SEQ, 1);
        assertEq(escrowA.hashQuoteSet(s), quoteSetDigest2(CHAIN_A, address(escrowA), s), "hashQuoteSet");
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 1, 0);
        assertEq(escrowA.hashFill(f), fillDigest2(f), "hashFill on the maker chain");
        onB();
        assertEq(escrowB.hashFill(f), fillDigest2(f), "hashFill on the taker chain");
    }
}
