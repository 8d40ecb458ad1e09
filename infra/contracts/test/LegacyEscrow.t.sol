// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {TestBase} from "./utils/TestBase.sol";
import {ILegacyEscrow} from "../src/interfaces/ILegacyEscrow.sol";
import {LegacyEscrow} from "../src/LegacyEscrow.sol";
import {MockUSDC} from "../src/mocks/MockUSDC.sol";

contract LegacyEscrowTest is TestBase {
    MockUSDC internal usdc;
    LegacyEscrow internal legacy;
    address internal alice = address(0xA11CE);
    address internal bob = address(0xB0B);

    function setUp() public {
        vm.warp(1_700_000_000);
        usdc = new MockUSDC();
        legacy = new LegacyEscrow(IERC20(address(usdc)));
        usdc.mint(alice, 100e6);
        vm.prank(alice);
        usdc.approve(address(legacy), type(uint256).max);
    }

    function test_createOffer_recordsAndEmits() public {
        uint64 refundAt = uint64(block.timestamp + 1 days);
        vm.expectEmit(true, true, true, true, address(legacy));
        emit ILegacyEscrow.OfferCreated(1, alice, 10e6, refundAt);
        vm.prank(alice);
        uint256 id = legacy.createOffer(10e6, refundAt);
        assertEq(id, 1, "first id");
        ILegacyEscrow.Offer memory o = legacy.getOffer(id);
        assertEq(o.owner, alice, "owner");
        assertEq(o.amount, 10e6, "amount");
        assertEq(uint256(o.refundAt), refundAt, "refundAt");
        assertFalse(o.reclaimed, "not reclaimed");
        assertFalse(legacy.isReclaimable(id), "not yet");
        assertEq(legacy.offerCount(), 1, "count");
        assertEq(legacy.token(), address(usdc), "token");
        assertEq(usdc.balanceOf(address(legacy)), 10e6, "held");
    }

    function test_createOffer_rejectsZero() public {
        vm.prank(alice);
        vm.expectRevert(ILegacyEscrow.ZeroAmount.selector);
        legacy.createOffer(0, 0);
    }

    function test_reclaim_afterRefundAt_byOwnerOnly() public {
        uint64 refundAt = uint64(block.timestamp + 1 days);
        vm.prank(alice);
        uint256 id = legacy.createOffer(10e6, refundAt);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(ILegacyEscrow.NotYetReclaimable.selector, id, refundAt));
        legacy.reclaim(id);
        vm.warp(refundAt);
        assertTrue(legacy.isReclaimable(id), "reclaimable at refundAt");
        vm.prank(bob);
        vm.expectRevert(abi.encodeWithSelector(ILegacyEscrow.NotOfferOwner.selector, id));
        legacy.reclaim(id);
        vm.expectEmit(true, true, true, true, address(legacy));
        emit ILegacyEscrow.OfferReclaimed(id, alice, 10e6);
        vm.prank(alice);
        legacy.reclaim(id);
        assertEq(usdc.balanceOf(alice), 100e6, "back");
        assertFalse(legacy.isReclaimable(id), "done");
        assertTrue(legacy.getOffer(id).reclaimed, "flag");
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(ILegacyEscrow.AlreadyReclaimed.selector, id));
        legacy.reclaim(id);
    }

    function test_reclaim_unknown() public {
        vm.expectRevert(abi.encodeWithSelector(ILegacyEscrow.UnknownOffer.selector, 9));
        legacy.reclaim(9);
        assertFalse(legacy.isReclaimable(9), "unknown");
    }
}
