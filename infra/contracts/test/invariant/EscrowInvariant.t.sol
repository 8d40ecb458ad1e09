// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {TestBase} from "../utils/TestBase.sol";
import {EscrowHandler} from "./EscrowHandler.sol";
import {ISettlementEscrow} from "../../src/interfaces/ISettlementEscrow.sol";
import {SettlementEscrow} from "../../src/SettlementEscrow.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";
import {MockCoreDepositWallet} from "../../src/mocks/MockCoreDepositWallet.sol";

/// @notice Money is conserved and only signed-for addresses are ever paid, whatever the call sequence.
contract EscrowInvariantTest is TestBase {
    EscrowHandler internal handler;
    SettlementEscrow internal escrow;
    MockUSDC internal usdc;
    MockCoreDepositWallet internal cdw;

    function setUp() public {
        vm.warp(1_700_000_000);
        handler = new EscrowHandler();
        escrow = handler.escrow();
        usdc = handler.usdc();
        cdw = handler.cdw();
        targetContract(address(handler));
        // Only the actions: the handler's public getters would waste calls.
        bytes4[] memory actions = new bytes4[](13);
        actions[0] = EscrowHandler.fund.selector;
        actions[1] = EscrowHandler.closeWithSig.selector;
        actions[2] = EscrowHandler.operatorClose.selector;
        actions[3] = EscrowHandler.lock.selector;
        actions[4] = EscrowHandler.pay.selector;
        actions[5] = EscrowHandler.claim.selector;
        actions[6] = EscrowHandler.claimPayment.selector;
        actions[7] = EscrowHandler.refund.selector;
        actions[8] = EscrowHandler.refundPayment.selector;
        actions[9] = EscrowHandler.cancelLock.selector;
        actions[10] = EscrowHandler.warp.selector;
        actions[11] = EscrowHandler.setRefusing.selector;
        actions[12] = EscrowHandler.forge.selector;
        targetSelector(FuzzSelector({addr: address(handler), selectors: actions}));
    }

    /// @dev The handler's honest paths really succeed (otherwise the invariants would only watch reverts).
    function test_handlerHonestFlowsSucceed() public {
        handler.fund(0, 0, 1e9, true);
        handler.fund(1, 1, 1e9, false);
        handler.lock(0, 1e8, 0, true, 3600);
        handler.lock(1, 1e8, 1, false, 3600);
        handler.lock(2, 1e8, 2, true, 60);
        handler.pay(0);
        handler.pay(1);
        handler.claim(0, false);
        handler.claimPayment(0, false);
        handler.cancelLock(1, false);
        handler.warp(3 hours);
        handler.refund(0);
        handler.refundPayment(0);
        handler.closeWithSig(0, 0, true, false);
        handler.operatorClose(1, 0, false);
        string[10] memory names =
            ["fund", "lock", "pay", "claim", "claimPayment", "cancelLock", "refund", "refundPayment", "close", "operatorClose"];
        uint256[10] memory expected = [uint256(2), 3, 2, 1, 1, 1, 1, 1, 1, 1];
        for (uint256 i; i < names.length; ++i) {
            assertEq(handler.successes(bytes32(bytes(names[i]))), expected[i], names[i]);
        }
        invariant_balanceEqualsLiabilities();
        invariant_lockedMatchesLiveLocks();
        invariant_noPayoutToUnsignedAddresses();
    }

    /// @dev token balance == Σ available + Σ zero-id balances + Σ locked + Σ held payments == totalLiabilities.
    function invariant_balanceEqualsLiabilities() public view {
        uint256 sum;
        uint256 n = handler.orderCount();
        for (uint256 i; i < n; ++i) {
            ISettlementEscrow.Order memory o = escrow.getOrder(handler.orderIds(i));
            sum += o.available + o.locked;
        }
        address[] memory parties = handler.parties();
        for (uint256 i; i < parties.length; ++i) {
            sum += escrow.balanceOf(parties[i]);
        }
        uint256 m = handler.fillCount();
        for (uint256 i; i < m; ++i) {
            ISettlementEscrow.Payment memory p = escrow.getPayment(handler.fillAt(i).fillId);
            if (p.state == ISettlementEscrow.PaymentState.Held) sum += p.amountIn;
        }
        assertEq(usdc.balanceOf(address(escrow)), sum, "balance == sum of parts");
        assertEq(escrow.totalLiabilities(), sum, "totalLiabilities == sum of parts");
    }

    /// @dev Each order's locked equals the amounts of its live locks; quote capacity counts live + claimed.
    function invariant_lockedMatchesLiveLocks() public view {
        uint256 n = handler.orderCount();
        uint256 m = handler.fillCount();
        for (uint256 i; i < n; ++i) {
            bytes32 id = handler.orderIds(i);
            uint256 live;
            uint256[3] memory used;
            for (uint256 j; j < m; ++j) {
                ISettlementEscrow.Fill memory f = handler.fillAt(j);
                if (f.orderId != id) continue;
                ISettlementEscrow.LockState st = escrow.getLock(f.fillId).state;
                if (st == ISettlementEscrow.LockState.Locked) live += f.amountOut;
                if (st == ISettlementEscrow.LockState.Locked || st == ISettlementEscrow.LockState.Claimed) {
                    used[f.sequence] += f.amountOut;
                }
            }
            assertEq(escrow.getOrder(id).locked, live, "locked == live locks");
            for (uint64 s; s < 3; ++s) {
                assertEq(escrow.filledOut(id, s), used[s], "filledOut == live + claimed");
            }
        }
    }

    /// @dev The operator, relayers and strangers signed for nothing and must never receive anything.
    function invariant_noPayoutToUnsignedAddresses() public view {
        address[3] memory outsiders = [handler.operator(), handler.attacker(), handler.relayer()];
        for (uint256 i; i < 3; ++i) {
            address x = outsiders[i];
            assertEq(usdc.balanceOf(x), 0, "no tokens");
            assertEq(escrow.balanceOf(x), 0, "no zero-id balance");
            assertEq(cdw.deposits(x, 0), 0, "no perps credit");
            assertEq(cdw.deposits(x, type(uint32).max), 0, "no spot credit");
        }
        assertFalse(handler.breach(), handler.breachReason());
    }
}
