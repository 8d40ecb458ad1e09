// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IMarginRouter} from "../../src/interfaces/IMarginRouter.sol";
import {SettlementEscrowV2} from "../../src/SettlementEscrowV2.sol";
import {EscrowHashingV2} from "../../src/lib/EscrowHashingV2.sol";

/// @notice Mutation canaries (test only, never deployed): SettlementEscrowV2 with exactly one v1 hole reopened
///         through its hooks. test/v2/V2Canaries.t.sol shows that each one lets the adversarial operator break an
///         invariant of the suite, which the real contract keeps for the same sequence of calls.
contract SettlementEscrowV2Canary is SettlementEscrowV2 {
    enum Hole {
        None,
        /// @dev The order's operator may cancel a lock (v1's cancelLock).
        OperatorCancel,
        /// @dev Locks and payments are keyed by the caller-chosen fillId, not the Fill digest.
        KeyById,
        /// @dev lock does not check that the Fill's taker escrow is the one the maker quoted.
        NoTakerEscrowCheck,
        /// @dev A refund (or cancel) frees the lock's hashlock.
        HashlockFreed,
        /// @dev A close pays out only what is available (NothingToClose when nothing is) and is not sticky.
        NoStickyClose
    }

    Hole public immutable hole;

    constructor(
        Hole hole_,
        IERC20 token_,
        IMarginRouter router_,
        uint64 maxLock,
        uint64 payByMax,
        uint64 claimWindow,
        uint64 maxQuoteLife,
        uint64 takerTimeoutMin
    ) SettlementEscrowV2(token_, router_, maxLock, payByMax, claimWindow, maxQuoteLife, takerTimeoutMin) {
        hole = hole_;
    }

    function _fillKey(Fill calldata f, bytes32 digest) internal view override returns (bytes32) {
        return hole == Hole.KeyById ? f.fillId : digest;
    }

    function _checkTakerEscrow(Quote calldata q, Fill calldata f) internal view override {
        if (hole != Hole.NoTakerEscrowCheck) super._checkTakerEscrow(q, f);
    }

    function _checkCancelAuthorised(FillLock storage l, bytes32 key, bytes calldata sig) internal view override {
        if (hole == Hole.OperatorCancel && msg.sender == _orders[EscrowHashingV2.orderKey(l.owner, l.orderId)].operator)
        {
            return;
        }
        super._checkCancelAuthorised(l, key, sig);
    }

    function _requestClose(Order storage order, bytes32 key, address owner, bytes32 orderId, uint32 dex, bool toMargin)
        internal
        override
    {
        if (hole == Hole.NoStickyClose) {
            if (order.available == 0) revert NothingToClose(owner, orderId);
            return;
        }
        super._requestClose(order, key, owner, orderId, dex, toMargin);
    }

    function _afterRelease(FillLock storage l) internal override {
        if (hole == Hole.HashlockFreed) hashlockUsed[l.hashlock] = false;
    }
}
