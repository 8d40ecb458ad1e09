// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {ISettlementEscrow} from "../src/interfaces/ISettlementEscrow.sol";
import {IMarginRouter} from "../src/interfaces/IMarginRouter.sol";
import {SettlementEscrow} from "../src/SettlementEscrow.sol";
import {MockUSDC} from "../src/mocks/MockUSDC.sol";
import {FeeToken, GasGuzzlerRouter, NoopRouter, PartialRouter, Wallet1271} from "./mocks/TestDoubles.sol";

/// @notice Constructor, views, fund, closeWithSig, operatorClose, invalidateNonce: every path and every revert.
contract EscrowFundCloseTest is EscrowFixture {
    // ------------------------------------------------------------ constructor and views

    function test_constructor_setsImmutables() public view {
        assertEq(escrow.token(), address(usdc), "token");
        assertEq(escrow.router(), address(router), "router");
        assertEq(uint256(escrow.REVEAL_WINDOW()), REVEAL, "reveal");
        assertEq(uint256(escrow.MAX_LOCK_DURATION()), MAX_LOCK, "max lock");
        assertEq(escrow.totalLiabilities(), 0, "liabilities");
    }

    function test_constructor_revertsOnZeroToken() public {
        vm.expectRevert(ISettlementEscrow.ZeroAddress.selector);
        new SettlementEscrow(IERC20(address(0)), IMarginRouter(address(router)), REVEAL, MAX_LOCK);
    }

    function test_constructor_revertsOnZeroWindows() public {
        vm.expectRevert(ISettlementEscrow.InvalidConfig.selector);
        new SettlementEscrow(IERC20(address(usdc)), IMarginRouter(address(router)), 0, MAX_LOCK);
        vm.expectRevert(ISettlementEscrow.InvalidConfig.selector);
        new SettlementEscrow(IERC20(address(usdc)), IMarginRouter(address(router)), REVEAL, 0);
    }

    function test_constructor_revertsOnRouterForAnotherToken() public {
        MockUSDC other = new MockUSDC();
        vm.expectRevert(ISettlementEscrow.InvalidConfig.selector);
        new SettlementEscrow(IERC20(address(other)), IMarginRouter(address(router)), REVEAL, MAX_LOCK);
    }

    function test_domain_matchesEip712AndRecomputation() public view {
        (bytes1 fields, string memory name, string memory version, uint256 chainId, address verifying,,) =
            escrow.eip712Domain();
        assertEq(uint256(uint8(fields)), 0x0f, "fields: name, version, chainId, verifyingContract");
        assertEq(keccak256(bytes(name)), keccak256("SettlementEscrow"), "name");
        assertEq(keccak256(bytes(version)), keccak256("1"), "version");
        assertEq(chainId, block.chainid, "chainId");
        assertEq(verifying, address(escrow), "verifyingContract");
        assertEq(escrow.domainSeparator(), domainOf(block.chainid, address(escrow)), "separator");
        assertEq(escrow.domainSeparatorFor(block.chainid, address(escrow)), escrow.domainSeparator(), "recomputed");
    }

    function test_hashViews_matchIndependentDigests() public view {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 5e6);
        assertEq(escrow.hashFundOrder(o), fundDigest(address(escrow), o), "FundOrder");
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, SPOT, true, 99);
        assertEq(escrow.hashCloseOffer(c), closeDigest(address(escrow), c), "CloseOffer");
        ISettlementEscrow.QuoteSet memory s = quoteSet(ORDER, block.chainid, 1e9);
        assertEq(escrow.hashQuoteSet(s), quoteSetDigest(address(escrow), s), "QuoteSet");
        ISettlementEscrow.Fill memory f = fillOf(keccak256("f"), ORDER, 20e6);
        f.takerChainId = 999;
        f.takerEscrow = address(0x1234);
        assertEq(escrow.hashFill(f), fillDigest(f), "Fill in the taker domain");
    }

    // ------------------------------------------------------------ fund

    function test_fund_withPermit_byRelayer() public {
        vm.expectEmit(true, true, true, true, address(escrow));
        ISettlementEscrow.FundOrder memory expected = fundOrder(ORDER, 100e6);
        emit ISettlementEscrow.OrderFunded(
            ORDER, owner, operator, quoteSigner, 100e6, 100e6, true, fundDigest(address(escrow), expected)
        );
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.Order memory o = escrow.getOrder(ORDER);
        assertEq(o.owner, owner, "owner");
        assertEq(o.operator, operator, "operator");
        assertEq(o.quoteSigner, quoteSigner, "quote signer");
        assertEq(o.available, 100e6, "available");
        assertEq(o.locked, 0, "locked");
        assertEq(usdc.balanceOf(address(escrow)), 100e6, "pulled");
        assertTrue(escrow.fundDigestUsed(fundDigest(address(escrow), expected)), "digest used");
        assertSolvent();
    }

    function test_fund_withAllowance_noPermit() public {
        vm.prank(owner);
        usdc.approve(address(escrow), 50e6);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 50e6);
        escrow.fund(o, sig(ownerPk, fundDigest(address(escrow), o)), noPermit());
        assertEq(escrow.getOrder(ORDER).available, 50e6, "available");
        assertSolvent();
    }

    function test_fund_toleratesFrontRunPermit() public {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 50e6);
        ISettlementEscrow.Permit memory p = permitFor(ownerPk, address(escrow), 50e6, block.timestamp + 1 hours);
        // Someone copies the permit from the mempool and submits it first.
        usdc.permit(owner, address(escrow), p.value, p.deadline, p.v, p.r, p.s);
        escrow.fund(o, sig(ownerPk, fundDigest(address(escrow), o)), p);
        assertEq(escrow.getOrder(ORDER).available, 50e6, "funded anyway");
    }

    function test_fund_revertsWhenPermitFailsAndNoAllowance() public {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 50e6);
        ISettlementEscrow.Permit memory p = permitFor(strangerPk, address(escrow), 50e6, block.timestamp + 1 hours);
        bytes memory s = sig(ownerPk, fundDigest(address(escrow), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InsufficientAllowance.selector, owner, 0, 50e6));
        escrow.fund(o, s, p);
    }

    function test_fund_topUpKeepsTerms() public {
        fundWithPermit(ORDER, 100e6);
        vm.warp(block.timestamp + 1);
        ISettlementEscrow.FundOrder memory o = fundWithPermit(ORDER, 30e6);
        assertEq(escrow.getOrder(ORDER).available, 130e6, "topped up");
        assertEq(escrow.getOrder(ORDER).operator, o.operator, "operator kept");
        assertSolvent();
    }

    function test_fund_revertsOnTopUpWithOtherOperatorOrSigner() public {
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        o.operator = stranger; // even the owner cannot re-assign a funded order
        vm.prank(owner);
        usdc.approve(address(escrow), 10e6);
        bytes memory s = sig(ownerPk, fundDigest(address(escrow), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.OrderTermsMismatch.selector, ORDER));
        escrow.fund(o, s, noPermit());
        o.operator = operator;
        o.quoteSigner = stranger;
        s = sig(ownerPk, fundDigest(address(escrow), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.OrderTermsMismatch.selector, ORDER));
        escrow.fund(o, s, noPermit());
    }

    function test_fund_revertsOnTopUpByAnotherOwner() public {
        fundWithPermit(ORDER, 100e6);
        usdc.mint(stranger, 10e6);
        vm.prank(stranger);
        usdc.approve(address(escrow), 10e6);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        o.owner = stranger;
        bytes memory s = sig(strangerPk, fundDigest(address(escrow), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.OrderTermsMismatch.selector, ORDER));
        escrow.fund(o, s, noPermit());
    }

    function test_fund_relayerCannotChooseOperatorSignerOrAmount() public {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 100e6);
        ISettlementEscrow.Permit memory p = permitFor(ownerPk, address(escrow), 1_000e6, block.timestamp + 1 hours);
        bytes memory s = sig(ownerPk, fundDigest(address(escrow), o));
        ISettlementEscrow.FundOrder memory t = o;
        t.operator = relayer;
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.fund(t, s, p);
        t = fundOrder(ORDER, 100e6);
        t.quoteSigner = relayer;
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.fund(t, s, p);
        t = fundOrder(ORDER, 1_000e6);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.fund(t, s, p);
    }

    function test_fund_revertsOnReplay() public {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        vm.prank(owner);
        usdc.approve(address(escrow), 100e6);
        bytes memory s = sig(ownerPk, fundDigest(address(escrow), o));
        escrow.fund(o, s, noPermit());
        vm.expectRevert(
            abi.encodeWithSelector(ISettlementEscrow.FundOrderAlreadyUsed.selector, fundDigest(address(escrow), o))
        );
        escrow.fund(o, s, noPermit());
        // The malleated twin is not a way around it either (and is rejected as a signature anyway).
        vm.expectRevert(
            abi.encodeWithSelector(ISettlementEscrow.FundOrderAlreadyUsed.selector, fundDigest(address(escrow), o))
        );
        escrow.fund(o, highS(s), noPermit());
    }

    function test_fund_revertsOnZeroOrderIdAmountOrAddresses() public {
        ISettlementEscrow.FundOrder memory o = fundOrder(bytes32(0), 10e6);
        vm.expectRevert(ISettlementEscrow.ZeroOrderId.selector);
        escrow.fund(o, "", noPermit());
        o = fundOrder(ORDER, 0);
        vm.expectRevert(ISettlementEscrow.ZeroAmount.selector);
        escrow.fund(o, "", noPermit());
        o = fundOrder(ORDER, 10e6);
        o.operator = address(0);
        vm.expectRevert(ISettlementEscrow.ZeroAddress.selector);
        escrow.fund(o, "", noPermit());
        o = fundOrder(ORDER, 10e6);
        o.quoteSigner = address(0);
        vm.expectRevert(ISettlementEscrow.ZeroAddress.selector);
        escrow.fund(o, "", noPermit());
    }

    function test_fund_revertsAfterDeadline() public {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        bytes memory s = sig(ownerPk, fundDigest(address(escrow), o));
        vm.warp(o.deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.SignatureExpired.selector, o.deadline));
        escrow.fund(o, s, noPermit());
    }

    function test_fund_acceptsDeadlineInclusive() public {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        bytes memory s = sig(ownerPk, fundDigest(address(escrow), o));
        vm.prank(owner);
        usdc.approve(address(escrow), 10e6);
        vm.warp(o.deadline);
        escrow.fund(o, s, noPermit());
    }

    function test_fund_revertsOnWrongSigner() public {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        bytes memory s = sig(strangerPk, fundDigest(address(escrow), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.fund(o, s, noPermit());
    }

    function test_fund_revertsOnFeeOnTransferToken() public {
        FeeToken fee = new FeeToken();
        SettlementEscrow e = new SettlementEscrow(IERC20(address(fee)), IMarginRouter(address(0)), REVEAL, MAX_LOCK);
        fee.mint(owner, 100e6);
        vm.prank(owner);
        fee.approve(address(e), 100e6);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 100e6);
        bytes memory s = sig(ownerPk, fundDigest(address(e), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.UnexpectedTransferAmount.selector, 100e6, 99e6));
        e.fund(o, s, noPermit());
    }

    function test_fund_and_close_byErc1271Owner() public {
        Wallet1271 wallet = new Wallet1271(owner);
        usdc.mint(address(wallet), 10e6);
        vm.prank(owner);
        wallet.approve(IERC20(address(usdc)), address(escrow), 10e6);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        o.owner = address(wallet);
        escrow.fund(o, sig(ownerPk, fundDigest(address(escrow), o)), noPermit());
        assertEq(escrow.getOrder(ORDER).owner, address(wallet), "contract owner");

        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, false, 1);
        c.owner = address(wallet);
        bytes memory bad = sig(strangerPk, closeDigest(address(escrow), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, address(wallet)));
        escrow.closeWithSig(c, bad);
        escrow.closeWithSig(c, sig(ownerPk, closeDigest(address(escrow), c)));
        assertEq(usdc.balanceOf(address(wallet)), 10e6, "paid to the wallet contract");
    }

    // ------------------------------------------------------------ closeWithSig

    function _close(ISettlementEscrow.CloseOffer memory c) internal {
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        vm.prank(relayer);
        escrow.closeWithSig(c, s);
    }

    function test_close_toPerpsMargin() public {
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 42);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.OrderClosed(ORDER, owner, relayer, 100e6, 0, true, false, false, 42);
        _close(c);
        assertEq(cdw.deposits(owner, 0), 100e6, "perps credit");
        assertEq(escrow.getOrder(ORDER).available, 0, "released");
        assertTrue(escrow.nonceUsed(owner, 42), "nonce used");
        assertEq(usdc.allowance(address(escrow), address(router)), 0, "no leftover allowance");
        assertEq(usdc.balanceOf(address(router)), 0, "router holds nothing");
        assertSolvent();
    }

    function test_close_toSpotMargin() public {
        fundWithPermit(ORDER, 100e6);
        _close(closeOffer(ORDER, SPOT, true, 1));
        assertEq(cdw.deposits(owner, SPOT), 100e6, "spot credit");
    }

    function test_close_refusedByVenue_landsInZeroIdBalance_thenClosesToWallet() public {
        fundWithPermit(ORDER, 100e6);
        cdw.setRefusing(true);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.OrderClosed(ORDER, owner, relayer, 100e6, 0, true, true, false, 1);
        _close(closeOffer(ORDER, 0, true, 1));
        assertEq(escrow.balanceOf(owner), 100e6, "zero-id credit");
        assertEq(cdw.deposits(owner, 0), 0, "no venue credit");
        assertSolvent();

        _close(closeOffer(bytes32(0), 0, false, 2));
        assertEq(escrow.balanceOf(owner), 0, "zero-id released");
        assertEq(usdc.balanceOf(owner), 1_000_000e6, "back in the wallet");
        assertSolvent();
    }

    function test_close_zeroIdToMargin_refusedAgain_keepsBalance() public {
        fundWithPermit(ORDER, 100e6);
        cdw.setRefusing(true);
        _close(closeOffer(ORDER, 0, true, 1));
        _close(closeOffer(bytes32(0), 0, true, 2));
        assertEq(escrow.balanceOf(owner), 100e6, "still in zero-id balance");
        cdw.setRefusing(false);
        _close(closeOffer(bytes32(0), 0, true, 3));
        assertEq(cdw.deposits(owner, 0), 100e6, "finally in margin");
        assertSolvent();
    }

    function test_close_unsupportedDex_isRefusedNotLost() public {
        fundWithPermit(ORDER, 100e6);
        _close(closeOffer(ORDER, 5, true, 1));
        assertEq(escrow.balanceOf(owner), 100e6, "refused by the router");
        assertSolvent();
    }

    function test_close_toWallet() public {
        fundWithPermit(ORDER, 100e6);
        uint256 before = usdc.balanceOf(owner);
        _close(closeOffer(ORDER, 0, false, 1));
        assertEq(usdc.balanceOf(owner), before + 100e6, "wallet");
        assertSolvent();
    }

    function test_close_toWallet_requiresDexZero() public {
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, SPOT, false, 1);
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.WalletPayoutRequiresDexZero.selector, SPOT));
        escrow.closeWithSig(c, s);
    }

    function test_close_revertsAfterDeadline() public {
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 1);
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        vm.warp(c.deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.SignatureExpired.selector, c.deadline));
        escrow.closeWithSig(c, s);
    }

    function test_close_revertsOnReplayedNonce() public {
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 7);
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        escrow.closeWithSig(c, s);
        vm.warp(block.timestamp + 1);
        fundWithPermit(ORDER, 1e6);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NonceAlreadyUsed.selector, owner, 7));
        escrow.closeWithSig(c, s);
    }

    function test_close_revertsOnTamperedTerms() public {
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 1);
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        c.toMargin = false;
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.closeWithSig(c, s);
        c.toMargin = true;
        c.dex = SPOT;
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.closeWithSig(c, s);
    }

    function test_close_revertsWhenSignerIsNotTheOrderOwner() public {
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, false, 1);
        c.owner = stranger;
        bytes memory s = sig(strangerPk, closeDigest(address(escrow), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOrderOwner.selector, ORDER, stranger));
        escrow.closeWithSig(c, s);
    }

    function test_close_revertsWhenNothingToClose() public {
        ISettlementEscrow.CloseOffer memory c = closeOffer(bytes32(0), 0, false, 1);
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NothingToClose.selector, bytes32(0)));
        escrow.closeWithSig(c, s);
        fundWithPermit(ORDER, 100e6);
        _close(closeOffer(ORDER, 0, false, 2));
        c = closeOffer(ORDER, 0, false, 3);
        s = sig(ownerPk, closeDigest(address(escrow), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NothingToClose.selector, ORDER));
        escrow.closeWithSig(c, s);
    }

    function test_close_withoutRouter_creditsZeroId() public {
        SettlementEscrow e = new SettlementEscrow(IERC20(address(usdc)), IMarginRouter(address(0)), REVEAL, MAX_LOCK);
        vm.prank(owner);
        usdc.approve(address(e), 10e6);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        e.fund(o, sig(ownerPk, fundDigest(address(e), o)), noPermit());
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 1);
        e.closeWithSig(c, sig(ownerPk, closeDigest(address(e), c)));
        assertEq(e.balanceOf(owner), 10e6, "no margin path: zero-id balance");
    }

    function _escrowWithRouter(IMarginRouter r) internal returns (SettlementEscrow e) {
        e = new SettlementEscrow(IERC20(address(usdc)), r, REVEAL, MAX_LOCK);
        vm.prank(owner);
        usdc.approve(address(e), 10e6);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        e.fund(o, sig(ownerPk, fundDigest(address(e), o)), noPermit());
    }

    function test_close_routerPullingPart_reverts() public {
        SettlementEscrow e = _escrowWithRouter(new PartialRouter(address(usdc)));
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 1);
        bytes memory s = sig(ownerPk, closeDigest(address(e), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.RouterMisbehaved.selector, 10e6, 5e6));
        e.closeWithSig(c, s);
    }

    function test_close_routerPullingNothing_isARefusal() public {
        NoopRouter noop = new NoopRouter(address(usdc));
        SettlementEscrow e = _escrowWithRouter(noop);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 1);
        e.closeWithSig(c, sig(ownerPk, closeDigest(address(e), c)));
        assertEq(e.balanceOf(owner), 10e6, "credited");
        assertEq(usdc.allowance(address(e), address(noop)), 0, "allowance reset");
        assertEq(usdc.balanceOf(address(e)), e.totalLiabilities(), "solvent");
    }

    function test_close_routerOutOfGas_revertsInsteadOfFallingBack() public {
        SettlementEscrow e = _escrowWithRouter(new GasGuzzlerRouter(address(usdc)));
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 1);
        bytes memory s = sig(ownerPk, closeDigest(address(e), c));
        vm.expectRevert(ISettlementEscrow.RouterOutOfGas.selector);
        e.closeWithSig{gas: 500_000}(c, s);
    }

    // ------------------------------------------------------------ operatorClose

    function test_operatorClose_paysOwnerOnly() public {
        fundWithPermit(ORDER, 100e6);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.OrderClosed(ORDER, owner, operator, 100e6, SPOT, true, false, true, 0);
        vm.prank(operator);
        escrow.operatorClose(ORDER, SPOT, true);
        assertEq(cdw.deposits(owner, SPOT), 100e6, "owner credited");
        assertEq(usdc.balanceOf(operator), 0, "operator got nothing");
        assertSolvent();
    }

    function test_operatorClose_toWalletAndRefused() public {
        fundWithPermit(ORDER, 100e6);
        cdw.setRefusing(true);
        vm.prank(operator);
        escrow.operatorClose(ORDER, 0, true);
        assertEq(escrow.balanceOf(owner), 100e6, "refused: zero-id");
        vm.warp(block.timestamp + 1);
        fundWithPermit(ORDER, 5e6);
        uint256 before = usdc.balanceOf(owner);
        vm.prank(operator);
        escrow.operatorClose(ORDER, 0, false);
        assertEq(usdc.balanceOf(owner), before + 5e6, "wallet");
        assertSolvent();
    }

    function test_operatorClose_revertsForOthers() public {
        fundWithPermit(ORDER, 100e6);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOperator.selector, ORDER, owner));
        escrow.operatorClose(ORDER, 0, true);
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOperator.selector, ORDER, stranger));
        escrow.operatorClose(ORDER, 0, true);
    }

    function test_operatorClose_revertsOnZeroIdAndUnknown() public {
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOperator.selector, bytes32(0), operator));
        escrow.operatorClose(bytes32(0), 0, true);
        vm.prank(address(0));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NotOperator.selector, ORDER, address(0)));
        escrow.operatorClose(ORDER, 0, true);
    }

    function test_operatorClose_revertsOnWalletWithDexAndOnEmpty() public {
        fundWithPermit(ORDER, 100e6);
        vm.startPrank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.WalletPayoutRequiresDexZero.selector, uint32(1)));
        escrow.operatorClose(ORDER, 1, false);
        escrow.operatorClose(ORDER, 0, false);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NothingToClose.selector, ORDER));
        escrow.operatorClose(ORDER, 0, false);
        vm.stopPrank();
    }

    // ------------------------------------------------------------ invalidateNonce

    function test_invalidateNonce_revokesASignedClose() public {
        fundWithPermit(ORDER, 100e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, true, 77);
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        vm.expectEmit(true, true, true, true, address(escrow));
        emit ISettlementEscrow.NonceInvalidated(owner, 77);
        vm.prank(owner);
        escrow.invalidateNonce(77);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NonceAlreadyUsed.selector, owner, 77));
        escrow.closeWithSig(c, s);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NonceAlreadyUsed.selector, owner, 77));
        escrow.invalidateNonce(77);
    }
}
