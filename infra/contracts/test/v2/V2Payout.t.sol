// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {V2Fixture} from "./utils/V2Fixture.sol";
import {ISettlementEscrowV2} from "../../src/interfaces/ISettlementEscrowV2.sol";
import {IMarginRouter} from "../../src/interfaces/IMarginRouter.sol";
import {SettlementEscrowV2} from "../../src/SettlementEscrowV2.sol";
import {SettlementEscrowV2Canary} from "./SettlementEscrowV2Canary.sol";
import {FeeToken, GasGuzzlerRouter, NoopRouter, PartialRouter} from "../mocks/TestDoubles.sol";

/// @notice Payout and pull edge cases of v2 (misbehaving routers, no router, fee-on-transfer tokens) and the
///         defence-in-depth LockExists check, which the real contract cannot reach (see the test).
contract V2PayoutTest is V2Fixture {
    bytes32 internal constant FILL = keccak256("fill-1");

    /// @dev Replaces chain A's escrow by one with router `r` (zero: none) and funds ORDER with 100 USDC.
    function _escrowAWith(IMarginRouter r) internal {
        onA();
        escrowA = new SettlementEscrowV2(
            IERC20(address(usdcA)), r, LOCK_MAX, PAYBY_MAX, CLAIM_WIN, QUOTE_LIFE, TAKER_TIMEOUT
        );
        fundA(ORDER, 100e6);
    }

    function _lockAndClaim() internal returns (bytes32 d) {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        d = fillDigest2(f);
        escrowA.claim(d, secretAt(ORDER, SEQ, 0));
    }

    function test_claim_withoutRouterCreditsTheRecipientsZeroIdBalance() public {
        _escrowAWith(IMarginRouter(address(0)));
        _lockAndClaim();
        assertEq(escrowA.balanceOf(recipient), 100e6, "no margin path: zero-id balance");
        assertSolvent2();
    }

    function test_claim_routerPullingNothingIsARefusal() public {
        NoopRouter noop = new NoopRouter(address(usdcA));
        _escrowAWith(IMarginRouter(address(noop)));
        _lockAndClaim();
        assertEq(escrowA.balanceOf(recipient), 100e6, "credited");
        assertEq(usdcA.allowance(address(escrowA), address(noop)), 0, "allowance reset");
        assertSolvent2();
    }

    function test_claim_routerPullingPartReverts() public {
        _escrowAWith(IMarginRouter(address(new PartialRouter(address(usdcA)))));
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.RouterMisbehaved.selector, 100e6, 50e6));
        escrowA.claim(fillDigest2(f), secretAt(ORDER, SEQ, 0));
    }

    function test_claim_routerOutOfGasRevertsInsteadOfFallingBack() public {
        _escrowAWith(IMarginRouter(address(new GasGuzzlerRouter(address(usdcA)))));
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        bytes32 d = fillDigest2(f);
        bytes32 s = secretAt(ORDER, SEQ, 0);
        vm.expectRevert(ISettlementEscrowV2.RouterOutOfGas.selector);
        escrowA.claim{gas: 500_000}(d, s);
        assertEq(lockStateA(d), 1, "still locked: the claim can be retried with more gas");
    }

    function test_fundAndPayTake_refuseFeeOnTransferTokens() public {
        FeeToken fee = new FeeToken();
        onB();
        SettlementEscrowV2 e = new SettlementEscrowV2(
            IERC20(address(fee)), IMarginRouter(address(0)), LOCK_MAX, PAYBY_MAX, CLAIM_WIN, QUOTE_LIFE, TAKER_TIMEOUT
        );
        fee.mint(owner, 100e6);
        vm.prank(owner);
        fee.approve(address(e), 100e6);
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(ORDER, 100e6);
        bytes memory s = sig(ownerPk, fundDigest2(CHAIN_B, address(e), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.UnexpectedTransferAmount.selector, 100e6, 99e6));
        e.fund(o, s, noPermit2());
        // A payment into the same escrow.
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.takerEscrow = address(e);
        fee.mint(payer, f.amountIn);
        vm.prank(payer);
        fee.approve(address(e), f.amountIn);
        ISettlementEscrowV2.Fill[] memory take = takeOf(f);
        bytes[] memory sigs = fillSigs(take);
        bytes memory auth = sig(payKeyPk, payTakeDigest(CHAIN_B, address(e), one(fillDigest2(f))));
        uint256 expected = f.amountIn - f.amountIn / 100;
        vm.expectRevert(
            abi.encodeWithSelector(ISettlementEscrowV2.UnexpectedTransferAmount.selector, f.amountIn, expected)
        );
        e.payTake(take, sigs, auth, noPermit2());
    }

    function test_lockExists_isDefenceInDepth() public {
        // With digest keys the same key means the same Fill, hence the same hashlock, and HashlockUsed answers first
        // (V2LockTest.test_lock_theSameFillTwiceReverts). LockExists is reached when keys are chosen ids: the
        // KeyById canary shows the check itself.
        onA();
        escrowA = SettlementEscrowV2(
            address(
                new SettlementEscrowV2Canary(
                    SettlementEscrowV2Canary.Hole.KeyById,
                    IERC20(address(usdcA)),
                    IMarginRouter(address(routerA)),
                    LOCK_MAX,
                    PAYBY_MAX,
                    CLAIM_WIN,
                    QUOTE_LIFE,
                    TAKER_TIMEOUT
                )
            )
        );
        fundA(ORDER, 100e6);
        lockA(fillAB(FILL, ORDER, 10e6, 0));
        expectLockRevert(
            fillAB(FILL, ORDER, 10e6, 1),
            quoteSetA(ORDER, SEQ, 500e6),
            proofAt(ORDER, SEQ, 1),
            abi.encodeWithSelector(ISettlementEscrowV2.LockExists.selector, FILL)
        );
    }
}
