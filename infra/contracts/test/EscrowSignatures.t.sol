// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {ISettlementEscrow} from "../src/interfaces/ISettlementEscrow.sol";

/// @notice Fuzzed signature handling: malleability, v forms, domains, signers, nonces, deadlines, prices.
contract EscrowSignaturesTest is EscrowFixture {
    uint256 internal constant T_CHAIN = 31337;

    function _key(uint256 seed) internal pure returns (uint256) {
        return bound(seed, 1, SECP256K1_N - 1);
    }

    /// @dev Funds ORDER for the owner key `pk` (allowance path) and returns the owner.
    function _fundFor(uint256 pk, uint256 amount) internal returns (address o) {
        o = vm.addr(pk);
        usdc.mint(o, amount);
        vm.prank(o);
        usdc.approve(address(escrow), amount);
        ISettlementEscrow.FundOrder memory f = fundOrder(ORDER, amount);
        f.owner = o;
        escrow.fund(f, sig(pk, fundDigest(address(escrow), f)), noPermit());
    }

    function _offer(address o, uint256 nonce) internal view returns (ISettlementEscrow.CloseOffer memory c) {
        c = closeOffer(ORDER, 0, false, nonce);
        c.owner = o;
    }

    function testFuzz_close_rejectsHighS_acceptsLowS(uint256 pkSeed, uint256 nonce) public {
        uint256 pk = _key(pkSeed);
        address o = _fundFor(pk, 10e6);
        ISettlementEscrow.CloseOffer memory c = _offer(o, nonce);
        bytes memory good = sig(pk, closeDigest(address(escrow), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, o));
        escrow.closeWithSig(c, highS(good));
        uint256 before = usdc.balanceOf(o);
        escrow.closeWithSig(c, good);
        assertEq(usdc.balanceOf(o), before + 10e6, "closed with the canonical form");
    }

    function testFuzz_close_acceptsParityV_rejectsOtherV(uint256 pkSeed, uint8 badV) public {
        uint256 pk = _key(pkSeed);
        address o = _fundFor(pk, 10e6);
        ISettlementEscrow.CloseOffer memory c = _offer(o, 1);
        bytes memory good = sig(pk, closeDigest(address(escrow), c));
        vm.assume(badV != 0 && badV != 1 && badV != 27 && badV != 28);
        (bytes32 r, bytes32 s,) = split(good);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, o));
        escrow.closeWithSig(c, abi.encodePacked(r, s, badV));
        uint256 before = usdc.balanceOf(o);
        escrow.closeWithSig(c, parityV(good));
        assertEq(usdc.balanceOf(o), before + 10e6, "v in {0,1} accepted");
    }

    function testFuzz_close_rejectsWrongSigner(uint256 pkSeed, uint256 otherSeed) public {
        uint256 pk = _key(pkSeed);
        uint256 other = _key(otherSeed);
        vm.assume(pk != other);
        address o = _fundFor(pk, 10e6);
        ISettlementEscrow.CloseOffer memory c = _offer(o, 1);
        bytes memory bad = sig(other, closeDigest(address(escrow), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, o));
        escrow.closeWithSig(c, bad);
    }

    function testFuzz_close_rejectsWrongChain(uint256 chainId) public {
        vm.assume(chainId != block.chainid);
        fundWithPermit(ORDER, 10e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, false, 1);
        bytes32 h = keccak256(
            abi.encode(CLOSE_OFFER_TYPEHASH, c.orderId, c.owner, c.dex, c.toMargin, c.nonce, c.deadline)
        );
        bytes memory bad = sig(ownerPk, typed(domainOf(chainId, address(escrow)), h));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.closeWithSig(c, bad);
    }

    function testFuzz_close_rejectsWrongContract(address other) public {
        vm.assume(other != address(escrow));
        fundWithPermit(ORDER, 10e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, false, 1);
        bytes32 h = keccak256(
            abi.encode(CLOSE_OFFER_TYPEHASH, c.orderId, c.owner, c.dex, c.toMargin, c.nonce, c.deadline)
        );
        bytes memory bad = sig(ownerPk, typed(domainOf(block.chainid, other), h));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.closeWithSig(c, bad);
    }

    function testFuzz_close_rejectsReplayedNonce(uint256 nonce) public {
        fundWithPermit(ORDER, 10e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, false, nonce);
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        escrow.closeWithSig(c, s);
        vm.warp(block.timestamp + 1);
        fundWithPermit(ORDER, 10e6);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.NonceAlreadyUsed.selector, owner, nonce));
        escrow.closeWithSig(c, s);
    }

    function testFuzz_close_rejectsExpiredDeadline(uint256 deadline) public {
        deadline = bound(deadline, 0, block.timestamp - 1);
        fundWithPermit(ORDER, 10e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, false, 1);
        c.deadline = deadline;
        bytes memory s = sig(ownerPk, closeDigest(address(escrow), c));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.SignatureExpired.selector, deadline));
        escrow.closeWithSig(c, s);
    }

    function testFuzz_close_rejectsGarbage(bytes calldata garbage) public {
        fundWithPermit(ORDER, 10e6);
        ISettlementEscrow.CloseOffer memory c = closeOffer(ORDER, 0, false, 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.closeWithSig(c, garbage);
    }

    function testFuzz_fund_rejectsHighSAndWrongDomain(uint256 chainId, address otherEscrow) public {
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        vm.prank(owner);
        usdc.approve(address(escrow), 10e6);
        bytes memory good = sig(ownerPk, fundDigest(address(escrow), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
        escrow.fund(o, highS(good), noPermit());
        bytes32 h = keccak256(
            abi.encode(FUND_ORDER_TYPEHASH, o.orderId, o.owner, o.operator, o.quoteSigner, o.amount, o.deadline)
        );
        if (chainId != block.chainid || otherEscrow != address(escrow)) {
            bytes memory bad = sig(ownerPk, typed(domainOf(chainId, otherEscrow), h));
            vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, owner));
            escrow.fund(o, bad, noPermit());
        }
        escrow.fund(o, good, noPermit());
    }

    function testFuzz_fund_rejectsExpiredDeadline(uint256 deadline) public {
        deadline = bound(deadline, 0, block.timestamp - 1);
        ISettlementEscrow.FundOrder memory o = fundOrder(ORDER, 10e6);
        o.deadline = deadline;
        bytes memory s = sig(ownerPk, fundDigest(address(escrow), o));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.SignatureExpired.selector, deadline));
        escrow.fund(o, s, noPermit());
    }

    function testFuzz_lock_rejectsFillFromAnotherDomainOrSigner(uint256 chainId, address otherEscrow, uint256 pkSeed)
        public
    {
        fundWithPermit(ORDER, 1_000e6);
        ISettlementEscrow.Fill memory f = fillOf(keccak256("f"), ORDER, 100e6);
        ISettlementEscrow.QuoteSet memory s = quoteSet(ORDER, block.chainid, 500e6);
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), s));
        if (chainId != f.takerChainId || otherEscrow != f.takerEscrow) {
            bytes memory bad = sig(payerPk, typed(domainOf(chainId, otherEscrow), fillStructHash(f)));
            vm.prank(operator);
            vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
            escrow.lock(f, bad, s, 1, qsig);
        }
        uint256 pk = _key(pkSeed);
        if (pk != payerPk) {
            vm.prank(operator);
            vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
            escrow.lock(f, sig(pk, fillDigest(f)), s, 1, qsig);
        }
        bytes memory good = sig(payerPk, fillDigest(f));
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
        escrow.lock(f, highS(good), s, 1, qsig);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, quoteSigner));
        escrow.lock(f, good, s, 1, highS(qsig));
        vm.prank(operator);
        escrow.lock(f, parityV(good), s, 1, parityV(qsig));
    }

    function testFuzz_lock_quoteSetFromAnotherDomainOrSigner(uint256 chainId, uint256 pkSeed) public {
        chainId = bound(chainId, 1, type(uint64).max - 1);
        vm.assume(chainId != block.chainid);
        fundWithPermit(ORDER, 1_000e6);
        ISettlementEscrow.Fill memory f = fillOf(keccak256("f"), ORDER, 100e6);
        ISettlementEscrow.QuoteSet memory s = quoteSet(ORDER, block.chainid, 500e6);
        bytes memory fs = sig(payerPk, fillDigest(f));
        vm.chainId(chainId);
        bytes memory otherChain = sig(quotePk, quoteSetDigest(address(escrow), s));
        vm.chainId(T_CHAIN);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, quoteSigner));
        escrow.lock(f, fs, s, 1, otherChain);
        uint256 pk = _key(pkSeed);
        vm.assume(pk != quotePk);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, quoteSigner));
        escrow.lock(f, fs, s, 1, sig(pk, quoteSetDigest(address(escrow), s)));
    }

    function testFuzz_pay_rejectsHighSAndWrongSigner(uint256 pkSeed) public {
        ISettlementEscrow.Fill memory f = fillOf(keccak256("f"), ORDER, 100e6);
        vm.prank(payer);
        usdc.approve(address(escrow), f.amountIn);
        bytes memory good = sig(payerPk, fillDigest(f));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
        escrow.pay(f, highS(good), noPermit());
        uint256 pk = _key(pkSeed);
        if (pk != payerPk) {
            vm.expectRevert(abi.encodeWithSelector(ISettlementEscrow.InvalidSignature.selector, payer));
            escrow.pay(f, sig(pk, fillDigest(f)), noPermit());
        }
        escrow.pay(f, good, noPermit());
    }

    /// @dev lock succeeds iff amountIn × supply ≥ amountOut × receive (and the other bounds hold).
    function testFuzz_lock_priceBound(uint256 amountOut, uint256 amountIn) public {
        fundWithPermit(ORDER, 1_000e6);
        amountOut = bound(amountOut, 10e6, 500e6);
        amountIn = bound(amountIn, 1, 1_000e6);
        ISettlementEscrow.Fill memory f = fillOf(keccak256("f"), ORDER, amountOut);
        f.amountIn = amountIn;
        ISettlementEscrow.QuoteSet memory s = quoteSet(ORDER, block.chainid, 500e6);
        bytes memory fs = sig(payerPk, fillDigest(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest(address(escrow), s));
        bool fair = amountIn * 100 >= amountOut * 101;
        vm.prank(operator);
        if (!fair) vm.expectRevert(ISettlementEscrow.PriceBelowQuote.selector);
        escrow.lock(f, fs, s, 1, qsig);
        assertEq(escrow.getOrder(ORDER).locked, fair ? amountOut : 0, "locked iff fair");
    }
}
