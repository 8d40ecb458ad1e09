// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Signing} from "../utils/Signing.sol";
import {ISettlementEscrow} from "../../src/interfaces/ISettlementEscrow.sol";
import {IMarginRouter} from "../../src/interfaces/IMarginRouter.sol";
import {SettlementEscrow} from "../../src/SettlementEscrow.sol";
import {HyperliquidMarginRouter} from "../../src/routers/HyperliquidMarginRouter.sol";
import {MockCoreDepositWallet} from "../../src/mocks/MockCoreDepositWallet.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";

/// @notice Drives the escrow with honest signed flows and with every forgery the operator or a stranger could try.
/// @dev Honest parties: owners (FundOrder, CloseOffer), the quote signer (QuoteSet, pays to `payee`) and payers
///      (Fill, naming `recipients`). The operator, a relayer and an attacker sign nothing anyone accepted, so
///      they must never end up with tokens, zero-id balance or venue credit. A forgery that succeeds sets `breach`.
contract EscrowHandler is Signing {
    uint64 internal constant REVEAL = 600;
    uint64 internal constant MAX_LOCK = 1 days;
    uint32 internal constant SPOT = type(uint32).max;

    MockUSDC public usdc;
    MockCoreDepositWallet public cdw;
    SettlementEscrow public escrow;

    uint256[3] internal ownerPks = [uint256(0x0A1), 0x0A2, 0x0A3];
    uint256[2] internal payerPks = [uint256(0x0B1), 0x0B2];
    uint256 internal quotePk = 0x0C1;
    uint256 internal operatorPk = 0x0D1;
    uint256 internal attackerPk = 0x0E1;

    address public operator;
    address public attacker;
    address public relayer = address(0x4E1A7);
    address public quoteSigner;
    address public payee = address(0x9A7EE);
    address[3] public recipients = [address(0x4EC1), address(0x4EC2), address(0x4EC3)];

    bytes32[] public orderIds;
    mapping(bytes32 => bool) internal knownOrder;
    ISettlementEscrow.Fill[] internal fills;
    uint256 internal counter;

    ISettlementEscrow.CloseOffer internal lastClose;
    bytes internal lastCloseSig;

    bool public breach;
    string public breachReason;

    /// @notice Honest successes per action, to see that the run exercised the real paths (not only reverts).
    mapping(bytes32 action => uint256) public successes;

    constructor() {
        usdc = new MockUSDC();
        cdw = new MockCoreDepositWallet(IERC20(address(usdc)), address(this));
        HyperliquidMarginRouter router = new HyperliquidMarginRouter(IERC20(address(usdc)), cdw);
        escrow = new SettlementEscrow(IERC20(address(usdc)), IMarginRouter(address(router)), REVEAL, MAX_LOCK);
        operator = vm.addr(operatorPk);
        attacker = vm.addr(attackerPk);
        quoteSigner = vm.addr(quotePk);
    }

    // ------------------------------------------------------------ views for the invariants

    function orderCount() external view returns (uint256) {
        return orderIds.length;
    }

    function fillCount() external view returns (uint256) {
        return fills.length;
    }

    function fillAt(uint256 i) external view returns (ISettlementEscrow.Fill memory) {
        return fills[i];
    }

    /// @notice Everyone who may hold a zero-id balance (anyone else must be zero anyway).
    function parties() external view returns (address[] memory a) {
        a = new address[](3 + 2 + 3 + 4);
        for (uint256 i; i < 3; ++i) a[i] = vm.addr(ownerPks[i]);
        for (uint256 i; i < 2; ++i) a[3 + i] = vm.addr(payerPks[i]);
        for (uint256 i; i < 3; ++i) a[5 + i] = recipients[i];
        a[8] = payee;
        a[9] = operator;
        a[10] = attacker;
        a[11] = relayer;
    }

    function secretOf(bytes32 fillId) public pure returns (bytes32) {
        return keccak256(abi.encode("secret", fillId));
    }

    // ------------------------------------------------------------ honest flows (relayed by strangers)

    function _orderId(uint256 ownerIdx, uint256 orderSeed) internal pure returns (bytes32) {
        return keccak256(abi.encode("order", ownerIdx, orderSeed % 3));
    }

    function fund(uint256 ownerSeed, uint256 orderSeed, uint256 amount, bool usePermit) external {
        uint256 k = ownerSeed % 3;
        address owner = vm.addr(ownerPks[k]);
        amount = bound(amount, 1, 1e12);
        bytes32 id = _orderId(k, orderSeed);
        ISettlementEscrow.FundOrder memory o = ISettlementEscrow.FundOrder({
            orderId: id,
            owner: owner,
            operator: operator,
            quoteSigner: quoteSigner,
            amount: amount,
            deadline: block.timestamp + 1 hours + (++counter)
        });
        usdc.mint(owner, amount);
        ISettlementEscrow.Permit memory p;
        if (usePermit) {
            p = permitSig(usdc, ownerPks[k], address(escrow), amount, block.timestamp + 1 hours);
        } else {
            vm.prank(owner);
            usdc.approve(address(escrow), amount);
        }
        vm.prank(relayer);
        try escrow.fund(o, sig(ownerPks[k], fundDigest(address(escrow), o)), p) {
            successes["fund"]++;
            if (!knownOrder[id]) {
                knownOrder[id] = true;
                orderIds.push(id);
            }
        } catch {}
    }

    function closeWithSig(uint256 orderSeed, uint256 dexSeed, bool toMargin, bool zeroId) external {
        // Closes drain whole orders; acting one time in three leaves funds for fills to exercise.
        if (orderIds.length == 0 || orderSeed % 3 != 0) return;
        bytes32 id = orderIds[orderSeed % orderIds.length];
        address owner = escrow.getOrder(id).owner;
        uint256 k = owner == vm.addr(ownerPks[0]) ? 0 : owner == vm.addr(ownerPks[1]) ? 1 : 2;
        uint32 dex = toMargin ? [uint32(0), SPOT, 7][dexSeed % 3] : 0;
        ISettlementEscrow.CloseOffer memory c = ISettlementEscrow.CloseOffer({
            orderId: zeroId ? bytes32(0) : id,
            owner: owner,
            dex: dex,
            toMargin: toMargin,
            nonce: ++counter,
            deadline: block.timestamp + 1 hours
        });
        bytes memory s = sig(ownerPks[k], closeDigest(address(escrow), c));
        vm.prank(attacker);
        try escrow.closeWithSig(c, highS(s)) {
            _breach("high-s close accepted");
        } catch {}
        vm.prank(attacker);
        try escrow.closeWithSig(c, s) {
            successes["close"]++;
            lastClose = c;
            lastCloseSig = s;
        } catch {}
    }

    function operatorClose(uint256 orderSeed, uint256 dexSeed, bool toMargin) external {
        if (orderIds.length == 0 || dexSeed % 3 != 0) return;
        bytes32 id = orderIds[orderSeed % orderIds.length];
        vm.prank(operator);
        try escrow.operatorClose(id, toMargin ? [uint32(0), SPOT, 7][dexSeed % 3] : 0, toMargin) {
            successes["operatorClose"]++;
        } catch {}
    }

    function lock(uint256 orderSeed, uint256 amountOut, uint256 partySeed, bool toMargin, uint256 expirySeed) external {
        (bool found, bytes32 id) = _pickFunded(orderSeed);
        if (!found) return;
        uint256 available = escrow.getOrder(id).available;
        amountOut = bound(amountOut, 1, available < 1e11 ? available : 1e11); // 10 fills fit one quoteSize
        (ISettlementEscrow.Fill memory f, ISettlementEscrow.QuoteSet memory s) =
            _honestFill(id, amountOut, partySeed, toMargin, expirySeed);
        bytes memory fs = sig(payerPks[partySeed % 2], fillDigest(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), s));
        vm.prank(operator);
        try escrow.lock(f, fs, s, 0, qsig) {
            successes["lock"]++;
            fills.push(f);
        } catch {}
    }

    function pay(uint256 fillSeed) external {
        (bool found, uint256 i) = _pickPayment(fillSeed, ISettlementEscrow.PaymentState.None);
        if (!found) return;
        ISettlementEscrow.Fill memory f = fills[i];
        uint256 pk = f.payer == vm.addr(payerPks[0]) ? payerPks[0] : payerPks[1];
        usdc.mint(f.payer, f.amountIn);
        ISettlementEscrow.Permit memory p = permitSig(usdc, pk, address(escrow), f.amountIn, block.timestamp + 1 hours);
        vm.prank(relayer);
        try escrow.pay(f, sig(pk, fillDigest(f)), p) {
            successes["pay"]++;
        } catch {}
    }

    function claim(uint256 fillSeed, bool wrongSecret) external {
        (bool found, uint256 i) = _pickLock(fillSeed);
        if (!found) return;
        bytes32 fillId = fills[i].fillId;
        vm.prank(attacker);
        if (wrongSecret) {
            try escrow.claim(fillId, bytes32(fillSeed)) {
                _breach("claim with a wrong secret");
            } catch {}
        } else {
            try escrow.claim(fillId, secretOf(fillId)) {
                successes["claim"]++;
            } catch {}
        }
    }

    function claimPayment(uint256 fillSeed, bool wrongSecret) external {
        (bool found, uint256 i) = _pickPayment(fillSeed, ISettlementEscrow.PaymentState.Held);
        if (!found) return;
        bytes32 fillId = fills[i].fillId;
        vm.prank(attacker);
        if (wrongSecret) {
            try escrow.claimPayment(fillId, bytes32(fillSeed)) {
                _breach("claimPayment with a wrong secret");
            } catch {}
        } else {
            try escrow.claimPayment(fillId, secretOf(fillId)) {
                successes["claimPayment"]++;
            } catch {}
        }
    }

    function refund(uint256 fillSeed) external {
        (bool found, uint256 i) = _pickLock(fillSeed);
        if (!found) return;
        vm.prank(attacker);
        try escrow.refund(fills[i].fillId) {
            successes["refund"]++;
        } catch {}
    }

    function refundPayment(uint256 fillSeed) external {
        (bool found, uint256 i) = _pickPayment(fillSeed, ISettlementEscrow.PaymentState.Held);
        if (!found) return;
        vm.prank(attacker);
        try escrow.refundPayment(fills[i].fillId) {
            successes["refundPayment"]++;
        } catch {}
    }

    function cancelLock(uint256 fillSeed, bool asAttacker) external {
        (bool found, uint256 i) = _pickLock(fillSeed);
        if (!found) return;
        bytes32 fillId = fills[i].fillId;
        vm.prank(asAttacker ? attacker : operator);
        try escrow.cancelLock(fillId) {
            if (asAttacker) _breach("cancelLock by a non-operator");
            successes["cancelLock"]++;
        } catch {}
    }

    function warp(uint256 secs) external {
        vm.warp(block.timestamp + bound(secs, 1, 3 hours));
    }

    function setRefusing(bool refusing) external {
        cdw.setRefusing(refusing);
    }

    // ------------------------------------------------------------ forgeries (each must revert)

    function forge(uint256 seed) external {
        uint256 kind = seed % 6;
        uint256 k = (seed >> 8) % 3;
        address owner = vm.addr(ownerPks[k]);
        if (kind == 0) {
            // The operator signs a close of someone else's balance to its own margin.
            ISettlementEscrow.CloseOffer memory c = ISettlementEscrow.CloseOffer(bytes32(0), owner, 0, true, seed, block.timestamp + 1);
            bytes memory s = sig(operatorPk, closeDigest(address(escrow), c));
            vm.prank(operator);
            try escrow.closeWithSig(c, s) {
                _breach("operator-signed close");
            } catch {}
        } else if (kind == 1) {
            // Replay of the last relayed close.
            if (lastCloseSig.length == 0) return;
            try escrow.closeWithSig(lastClose, lastCloseSig) {
                _breach("replayed close");
            } catch {}
        } else if (kind == 2 && orderIds.length > 0) {
            // The operator locks to its own recipient with a Fill it signed itself in the payer's name.
            bytes32 id = orderIds[seed % orderIds.length];
            (ISettlementEscrow.Fill memory f, ISettlementEscrow.QuoteSet memory s) = _honestFill(id, 1, seed, true, seed);
            f.recipient = operator;
            bytes memory fs = sig(operatorPk, fillDigest(f));
            bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), s));
            vm.prank(operator);
            try escrow.lock(f, fs, s, 0, qsig) {
                _breach("lock with a forged Fill");
            } catch {}
        } else if (kind == 3 && orderIds.length > 0) {
            // The operator prices and redirects the maker's proceeds with a quote set it signed itself.
            bytes32 id = orderIds[seed % orderIds.length];
            (ISettlementEscrow.Fill memory f, ISettlementEscrow.QuoteSet memory s) = _honestFill(id, 1, seed, true, seed);
            s.quotes[0].recipient = operator;
            f.payee = operator;
            bytes memory fs = sig(payerPks[seed % 2], fillDigest(f));
            bytes memory qsig = sig(operatorPk, quoteSetDigest(address(escrow), s));
            vm.prank(operator);
            try escrow.lock(f, fs, s, 0, qsig) {
                _breach("lock with an operator-signed quote set");
            } catch {}
        } else if (kind == 4) {
            // A FundOrder signed by the attacker that names an honest owner (pull from the owner's allowance).
            ISettlementEscrow.FundOrder memory o =
                ISettlementEscrow.FundOrder(_orderId(k, seed), owner, attacker, attacker, 1, block.timestamp + 1);
            vm.prank(attacker);
            try escrow.fund(o, sig(attackerPk, fundDigest(address(escrow), o)), noPermit()) {
                _breach("fund signed by a stranger");
            } catch {}
        } else if (kind == 5 && fills.length > 0) {
            // Paying a Fill with a high-s twin of the payer's signature.
            ISettlementEscrow.Fill memory f = fills[seed % fills.length];
            uint256 pk = f.payer == vm.addr(payerPks[0]) ? payerPks[0] : payerPks[1];
            try escrow.pay(f, highS(sig(pk, fillDigest(f))), noPermit()) {
                _breach("high-s pay accepted");
            } catch {}
        }
    }

    // ------------------------------------------------------------ helpers

    /// @dev An order with available funds, scanning from a random start.
    function _pickFunded(uint256 seed) internal view returns (bool, bytes32) {
        uint256 n = orderIds.length;
        for (uint256 j; j < n; ++j) {
            bytes32 id = orderIds[(seed % n + j) % n];
            if (escrow.getOrder(id).available > 0) return (true, id);
        }
        return (false, bytes32(0));
    }

    /// @dev A fill whose maker lock is live, scanning from a random start (time may have expired it).
    function _pickLock(uint256 seed) internal view returns (bool, uint256) {
        uint256 n = fills.length;
        for (uint256 j; j < n; ++j) {
            uint256 i = (seed % n + j) % n;
            if (escrow.getLock(fills[i].fillId).state == ISettlementEscrow.LockState.Locked) return (true, i);
        }
        return (false, 0);
    }

    function _pickPayment(uint256 seed, ISettlementEscrow.PaymentState state) internal view returns (bool, uint256) {
        uint256 n = fills.length;
        for (uint256 j; j < n; ++j) {
            uint256 i = (seed % n + j) % n;
            if (escrow.getPayment(fills[i].fillId).state == state) return (true, i);
        }
        return (false, 0);
    }

    function _honestFill(bytes32 id, uint256 amountOut, uint256 partySeed, bool toMargin, uint256 expirySeed)
        internal
        returns (ISettlementEscrow.Fill memory f, ISettlementEscrow.QuoteSet memory s)
    {
        uint256 n = ++counter;
        s.orderId = id;
        s.sequence = uint64(n % 3);
        s.generation = 1;
        s.quoteSize = 1e12;
        s.validUntil = uint64(block.timestamp + 30);
        s.quotes = new ISettlementEscrow.Quote[](1);
        s.quotes[0] = ISettlementEscrow.Quote(block.chainid, address(usdc), payee, 1, 1, 1);
        f.fillId = keccak256(abi.encode("fill", n));
        f.orderId = id;
        f.sequence = s.sequence;
        f.makerChainId = block.chainid;
        f.makerEscrow = address(escrow);
        f.takerChainId = block.chainid;
        f.takerEscrow = address(escrow);
        f.payer = vm.addr(payerPks[partySeed % 2]);
        f.payee = payee;
        f.amountIn = amountOut;
        f.recipient = recipients[partySeed % 3];
        f.amountOut = amountOut;
        f.dex = toMargin ? [uint32(0), SPOT, 7][(partySeed >> 4) % 3] : 0;
        f.toMargin = toMargin;
        f.hashlock = keccak256(abi.encodePacked(secretOf(f.fillId)));
        f.makerExpiry = uint64(block.timestamp + bound(expirySeed, 1, 2 hours));
        f.takerExpiry = f.makerExpiry + REVEAL;
    }

    function _breach(string memory reason) internal {
        breach = true;
        breachReason = reason;
    }
}
