// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {ISettlementEscrow} from "../src/interfaces/ISettlementEscrow.sol";
import {IMarginRouter} from "../src/interfaces/IMarginRouter.sol";
import {IMockVenue, IMockCoreDepositWallet} from "../src/interfaces/IVenueMocks.sol";
import {IAstherusVault} from "../src/interfaces/IAstherusVault.sol";
import {ICoreDepositWallet} from "../src/interfaces/ICoreDepositWallet.sol";
import {SettlementEscrow} from "../src/SettlementEscrow.sol";
import {HyperliquidMarginRouter} from "../src/routers/HyperliquidMarginRouter.sol";
import {AsterMarginRouter} from "../src/routers/AsterMarginRouter.sol";
import {MockAsterVault} from "../src/mocks/MockAsterVault.sol";

/// @notice Margin routers, venue mocks and MockUSDC.
contract RoutersTest is EscrowFixture {
    MockAsterVault internal vault;
    AsterMarginRouter internal asterRouter;
    address internal user = address(0x05E4);

    function setUp() public override {
        super.setUp();
        vault = new MockAsterVault(IERC20(address(usdc)), address(this));
        asterRouter = new AsterMarginRouter(IERC20(address(usdc)), vault, 1000);
        vault.setDepositor(address(asterRouter), true);
        usdc.mint(address(this), 1_000e6);
    }

    // ------------------------------------------------------------ Hyperliquid

    function test_hyperliquidRouter_perpsAndSpot() public {
        usdc.approve(address(router), 30e6);
        vm.expectEmit(true, true, true, true, address(cdw));
        emit IMockCoreDepositWallet.CoreDeposit(address(router), user, 10e6, 0);
        vm.expectEmit(true, true, true, true, address(router));
        emit IMarginRouter.MarginDeposited(address(this), user, 10e6, 0);
        router.deposit(user, 10e6, 0);
        router.deposit(user, 20e6, SPOT);
        assertEq(cdw.deposits(user, 0), 10e6, "perps");
        assertEq(cdw.deposits(user, SPOT), 20e6, "spot");
        assertEq(usdc.balanceOf(address(cdw)), 30e6, "held by the venue");
        assertEq(usdc.balanceOf(address(router)), 0, "router holds nothing");
        assertEq(usdc.allowance(address(router), address(cdw)), 0, "no standing allowance");
        assertEq(router.token(), address(usdc), "token");
        assertEq(address(router.coreDepositWallet()), address(cdw), "cdw");
    }

    function test_hyperliquidRouter_refusesOtherDex() public {
        usdc.approve(address(router), 10e6);
        vm.expectRevert(abi.encodeWithSelector(IMarginRouter.UnsupportedDex.selector, uint32(1)));
        router.deposit(user, 10e6, 1);
    }

    function test_hyperliquidRouter_propagatesRefusal() public {
        cdw.setRefusing(true);
        usdc.approve(address(router), 10e6);
        vm.expectRevert(IMockVenue.DepositRefused.selector);
        router.deposit(user, 10e6, 0);
    }

    function test_hyperliquidRouter_constructorRejectsZero() public {
        vm.expectRevert(IMarginRouter.ZeroAddress.selector);
        new HyperliquidMarginRouter(IERC20(address(0)), cdw);
        vm.expectRevert(IMarginRouter.ZeroAddress.selector);
        new HyperliquidMarginRouter(IERC20(address(usdc)), ICoreDepositWallet(address(0)));
    }

    // ------------------------------------------------------------ Aster

    function test_asterRouter_depositsForUser() public {
        usdc.approve(address(asterRouter), 10e6);
        vm.expectEmit(true, true, true, true, address(vault));
        emit IAstherusVault.Deposit(user, address(usdc), false, 10e6, 1000);
        asterRouter.deposit(user, 10e6, 0);
        assertEq(vault.deposits(user, address(usdc)), 10e6, "credited to the user");
        assertEq(usdc.balanceOf(address(asterRouter)), 0, "router holds nothing");
        assertEq(asterRouter.broker(), 1000, "broker");
        assertEq(address(asterRouter.vault()), address(vault), "vault");
        assertEq(asterRouter.token(), address(usdc), "token");
    }

    function test_asterRouter_perpsOnly() public {
        usdc.approve(address(asterRouter), 10e6);
        vm.expectRevert(abi.encodeWithSelector(IMarginRouter.UnsupportedDex.selector, SPOT));
        asterRouter.deposit(user, 10e6, SPOT);
    }

    function test_asterRouter_needsDepositRole() public {
        vault.setDepositor(address(asterRouter), false);
        usdc.approve(address(asterRouter), 10e6);
        vm.expectRevert(IMockVenue.DepositNotAllowed.selector);
        asterRouter.deposit(user, 10e6, 0);
    }

    function test_asterRouter_constructorRejectsZero() public {
        vm.expectRevert(IMarginRouter.ZeroAddress.selector);
        new AsterMarginRouter(IERC20(address(0)), vault, 0);
        vm.expectRevert(IMarginRouter.ZeroAddress.selector);
        new AsterMarginRouter(IERC20(address(usdc)), IAstherusVault(address(0)), 0);
    }

    function test_asterEscrow_closeToMargin_andRefusedWithoutRole() public {
        SettlementEscrow e = new SettlementEscrow(IERC20(address(usdc)), asterRouter, REVEAL, MAX_LOCK);
        vm.prank(owner);
        usdc.approve(address(e), 20e6);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 20e6);
        e.fund(o, sig(ownerPk, fundDigest(address(e), o)), noPermit());
        vm.prank(operator);
        e.operatorClose(ORDER, 0, true);
        assertEq(vault.deposits(owner, address(usdc)), 20e6, "aster margin");

        vm.warp(block.timestamp + 1);
        o = fundOrder(ORDER, 20e6);
        vm.prank(owner);
        usdc.approve(address(e), 20e6);
        e.fund(o, sig(ownerPk, fundDigest(address(e), o)), noPermit());
        vault.setDepositor(address(asterRouter), false);
        vm.prank(operator);
        e.operatorClose(ORDER, 0, true);
        assertEq(e.balanceOf(owner), 20e6, "no role: zero-id balance");
        assertEq(usdc.balanceOf(address(e)), e.totalLiabilities(), "solvent");
    }

    // ------------------------------------------------------------ mocks

    function test_mocks_selfDeposit() public {
        usdc.approve(address(cdw), 5e6);
        cdw.deposit(5e6, SPOT);
        assertEq(cdw.deposits(address(this), SPOT), 5e6, "cdw self");
        usdc.approve(address(vault), 5e6);
        vault.deposit(address(usdc), 5e6, 0);
        assertEq(vault.deposits(address(this), address(usdc)), 5e6, "vault self");
    }

    function test_mocks_cdwRejectsUnknownDex() public {
        usdc.approve(address(cdw), 5e6);
        vm.expectRevert(IMockVenue.DepositNotAllowed.selector);
        cdw.deposit(5e6, 3);
    }

    function test_mocks_refusingSwitch() public {
        vm.expectEmit(true, true, true, true, address(cdw));
        emit IMockVenue.RefusingSet(true);
        cdw.setRefusing(true);
        assertTrue(cdw.refusing(), "cdw refusing");
        vault.setRefusing(true);
        assertTrue(vault.refusing(), "vault refusing");
        usdc.approve(address(vault), 5e6);
        vm.expectRevert(IMockVenue.DepositRefused.selector);
        vault.deposit(address(usdc), 5e6, 0);
        usdc.approve(address(cdw), 5e6);
        vm.expectRevert(IMockVenue.DepositRefused.selector);
        cdw.deposit(5e6, 0);
    }

    function test_mocks_ownerOnly() public {
        vm.startPrank(stranger);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        cdw.setRefusing(true);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        cdw.release(stranger, 1);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        vault.setRefusing(true);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        vault.setDepositor(stranger, true);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        vault.release(stranger, 1);
        vm.stopPrank();
    }

    function test_mocks_release() public {
        usdc.approve(address(router), 10e6);
        router.deposit(user, 10e6, 0);
        vm.expectEmit(true, true, true, true, address(cdw));
        emit IMockVenue.Released(user, 4e6);
        cdw.release(user, 4e6);
        assertEq(usdc.balanceOf(user), 4e6, "simulated withdrawal");
        usdc.approve(address(asterRouter), 10e6);
        asterRouter.deposit(user, 10e6, 0);
        vault.release(user, 6e6);
        assertEq(usdc.balanceOf(user), 10e6, "aster withdrawal");
    }

    // ------------------------------------------------------------ MockUSDC

    function test_usdc_decimalsMintPermit() public {
        assertEq(uint256(usdc.decimals()), 6, "decimals");
        usdc.mint(stranger, 7);
        assertEq(usdc.balanceOf(stranger), 7, "open mint");
        ISettlementEscrow.Permit memory p = permitFor(ownerPk, stranger, 55, block.timestamp + 1);
        usdc.permit(owner, stranger, p.value, p.deadline, p.v, p.r, p.s);
        assertEq(usdc.allowance(owner, stranger), 55, "permit");
        assertEq(usdc.nonces(owner), 1, "nonce");
    }
}
