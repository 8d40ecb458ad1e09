// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {V2Fixture} from "./utils/V2Fixture.sol";
import {ISettlementEscrowV2} from "../../src/interfaces/ISettlementEscrowV2.sol";
import {Wallet1271} from "../mocks/TestDoubles.sol";

/// @notice lock: the happy path and every revert, with each time bound at its edge (±1 s).
contract V2LockTest is V2Fixture {
    bytes32 internal constant FILL = keccak256("fill-1");

    function setUp() public override {
        super.setUp();
        fundA(ORDER, 1_000e6);
    }

    function _set() internal view returns (ISettlementEscrowV2.QuoteSet memory) {
        return quoteSetA(ORDER, SEQ, 500e6);
    }

    function _proof(uint32 i) internal pure returns (bytes32[] memory) {
        return proofAt(ORDER, SEQ, i);
    }

    function _err(bytes4 sel) internal pure returns (bytes memory) {
        return abi.encodeWithSelector(sel);
    }

    // ------------------------------------------------------------ happy path

    function test_lock_movesAvailableToLockedUnderTheFillDigest() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 2);
        bytes32 d = fillDigest2(f);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        vm.expectEmit(true, true, true, true, address(escrowA));
        emit ISettlementEscrowV2.Locked(
            d, orderKeyOf(owner, ORDER), payKey, f, 1, quoteSetDigest2(CHAIN_A, address(escrowA), s)
        );
        lockCall(f, s, _proof(2));
        assertEq(escrowA.hashFill(f), d, "hashFill == independent digest");
        ISettlementEscrowV2.Order memory o = escrowA.getOrder(owner, ORDER);
        assertEq(o.available, 900e6, "available");
        assertEq(o.locked, 100e6, "locked");
        assertEq(escrowA.filledOut(orderKeyOf(owner, ORDER), SEQ), 100e6, "filled");
        assertTrue(escrowA.hashlockUsed(f.hashlock), "hashlock used");
        ISettlementEscrowV2.FillLock memory l = escrowA.getLock(d);
        assertEq(uint256(l.state), uint256(ISettlementEscrowV2.LockState.Locked), "state");
        assertEq(l.owner, owner, "owner");
        assertEq(l.orderId, ORDER, "orderId");
        assertEq(uint256(l.sequence), SEQ, "sequence");
        assertEq(uint256(l.expiry), f.makerExpiry, "expiry");
        assertEq(l.recipient, recipient, "recipient");
        assertEq(l.payKey, payKey, "payKey");
        assertEq(l.hashlock, f.hashlock, "hashlock");
        assertEq(l.amountOut, 100e6, "amount");
        assertEq(uint256(escrowA.getLock(FILL).state), 0, "nothing under the fillId");
        assertSolvent2();
    }

    function test_lock_singleHashlockSetHasTheLeafAsRoot() public {
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.hashlockCount = 1;
        s.hashlockRoot = leafOf(0, hashlockOf(secretAt(ORDER, SEQ, 0)));
        lockCall(fillAB(FILL, ORDER, 100e6, 0), s, new bytes32[](0));
        assertEq(escrowA.getOrder(owner, ORDER).locked, 100e6, "locked");
    }

    function test_lock_everyIndexOfTheTreeLocksOnce() public {
        for (uint32 i; i < N_LOCKS; ++i) {
            lockA(fillAB(keccak256(abi.encode(i)), ORDER, 10e6, i));
        }
        assertEq(escrowA.getOrder(owner, ORDER).locked, 50e6, "five locks");
    }

    function test_lock_acceptsSameChainFills() public {
        // Maker and taker on chain A, one escrow holding the lock and the payment.
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.quotes[1].chainId = CHAIN_A;
        s.quotes[1].escrow = address(escrowA);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.takerChainId = CHAIN_A;
        f.takerEscrow = address(escrowA);
        lockCall(f, s, _proof(0));
        ISettlementEscrowV2.Fill[] memory take = takeOf(f);
        bytes32[] memory ds = one(fillDigest2(f));
        vm.prank(payer);
        usdcA.approve(address(escrowA), f.amountIn);
        escrowA.payTake(take, fillSigs(take), sig(payKeyPk, payTakeDigest(CHAIN_A, address(escrowA), ds)), noPermit2());
        escrowA.claimPayment(ds[0], secretAt(ORDER, SEQ, 0));
        escrowA.claim(ds[0], secretAt(ORDER, SEQ, 0));
        assertEq(usdcA.balanceOf(payee), f.amountIn, "payee paid");
        assertEq(cdwA.deposits(recipient, 0), 100e6, "recipient credited");
        assertSolvent2();
    }

    // ------------------------------------------------------------ who and which order

    function test_lock_revertsForAnyoneButTheOperator() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        bytes memory fs = sig(payerPk, fillDigest2(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        address[4] memory callers = [owner, quoteSigner, stranger, payer];
        for (uint256 i; i < 4; ++i) {
            vm.prank(callers[i]);
            vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotOperator.selector, owner, ORDER, callers[i]));
            escrowA.lock(f, fs, s, 1, qsig, _proof(0));
        }
    }

    function test_lock_revertsForAnotherOwnersOrderWithTheSameId() public {
        // The operator names a stranger as owner: no such order (orders are keyed by owner and id).
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.owner = stranger;
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.owner = stranger;
        expectLockRevert(
            f, s, _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.NotOperator.selector, stranger, ORDER, operator)
        );
    }

    function test_lock_revertsOnceTheOwnerClosed() public {
        closeA(ORDER, 0, false, 1);
        expectLockRevert(
            fillAB(FILL, ORDER, 100e6, 0),
            _set(),
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.OrderClosing.selector, owner, ORDER)
        );
    }

    function test_lock_revertsOnAnotherMakerChainOrEscrow() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.makerEscrow = address(escrowB);
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.WrongChainOrEscrow.selector));
        f = fillAB(FILL, ORDER, 100e6, 0);
        f.makerChainId = CHAIN_B;
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.WrongChainOrEscrow.selector));
    }

    // ------------------------------------------------------------ the quote set

    function test_lock_revertsWhenTheSetNamesAnotherOwnerIdOrSequence() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.owner = stranger;
        expectLockRevert(f, s, _proof(0), _err(ISettlementEscrowV2.QuoteSetMismatch.selector));
        s = _set();
        s.orderId = keccak256("other");
        expectLockRevert(f, s, _proof(0), _err(ISettlementEscrowV2.QuoteSetMismatch.selector));
        s = _set();
        s.sequence = SEQ + 1;
        expectLockRevert(f, s, _proof(0), _err(ISettlementEscrowV2.QuoteSetMismatch.selector));
    }

    function test_lock_quoteLifeIsCappedAtMaxQuoteLife() public {
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.validUntil = s.issuedAt + QUOTE_LIFE + 1;
        expectLockRevert(
            fillAB(FILL, ORDER, 100e6, 0),
            s,
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.QuoteLifeTooLong.selector, s.issuedAt, s.validUntil)
        );
        s.issuedAt = now_() + 10;
        s.validUntil = now_() + 9; // before issuedAt
        expectLockRevert(
            fillAB(FILL, ORDER, 100e6, 0),
            s,
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.QuoteLifeTooLong.selector, s.issuedAt, s.validUntil)
        );
        s = _set();
        s.validUntil = s.issuedAt + QUOTE_LIFE; // exactly the cap
        lockCall(fillAB(FILL, ORDER, 100e6, 0), s, _proof(0));
    }

    function test_lock_validUntilIsInclusive() public {
        ISettlementEscrowV2.QuoteSet memory s = _set();
        vm.warp(s.validUntil + 1);
        expectLockRevert(
            fillAB(FILL, ORDER, 100e6, 0),
            s,
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.QuoteExpired.selector, s.validUntil)
        );
        vm.warp(s.validUntil);
        lockCall(fillAB(FILL, ORDER, 100e6, 0), s, _proof(0));
    }

    function test_lock_revertsOnAQuoteIndexPastTheSet() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        bytes memory fs = sig(payerPk, fillDigest2(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        bytes32[] memory p = _proof(0);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.QuoteIndexOutOfRange.selector, 2, 2));
        escrowA.lock(f, fs, s, 2, qsig, p);
    }

    function test_lock_revertsWhenTheQuoteIsForAnotherChain() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.takerChainId = 999;
        expectLockRevert(
            f, _set(), _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.QuoteChainMismatch.selector, CHAIN_B, 999)
        );
    }

    function test_lock_revertsOnATakerEscrowTheMakerDidNotQuote() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.takerEscrow = address(0xFA4E);
        expectLockRevert(
            f,
            _set(),
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.TakerEscrowMismatch.selector, address(escrowB), address(0xFA4E))
        );
    }

    function test_lock_revertsWhenThePayeeIsNotTheQuotesRecipient() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.payee = operator;
        expectLockRevert(
            f, _set(), _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.PayeeMismatch.selector, payee, operator)
        );
    }

    function test_lock_revertsOnZeroRecipientOrPayKey() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.recipient = address(0);
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.ZeroAddress.selector));
        f = fillAB(FILL, ORDER, 100e6, 0);
        f.payKey = address(0);
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.ZeroAddress.selector));
    }

    function test_lock_revertsOnZeroAmounts() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.amountIn = 0;
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.ZeroAmount.selector));
        f = fillAB(FILL, ORDER, 100e6, 0);
        f.amountOut = 0;
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.ZeroAmount.selector));
    }

    function test_lock_revertsBelowMinFill() public {
        expectLockRevert(
            fillAB(FILL, ORDER, 10e6 - 1, 0),
            _set(),
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.BelowMinFill.selector, 10e6 - 1, 10e6)
        );
        lockA(fillAB(FILL, ORDER, 10e6, 0));
    }

    function test_lock_revertsBelowTheQuotedPrice() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.amountIn -= 1;
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.PriceBelowQuote.selector));
    }

    function test_lock_revertsOnAWalletPayoutWithADex() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.toMargin = false;
        f.dex = SPOT;
        expectLockRevert(
            f, _set(), _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.WalletPayoutRequiresDexZero.selector, SPOT)
        );
    }

    // ------------------------------------------------------------ time bounds (each edge ±1 s)

    function test_lock_payByMustBeAfterNow() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.payBy = now_();
        expectLockRevert(f, _set(), _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.BadPayBy.selector, f.payBy));
        f.payBy = now_() + 1;
        f.takerExpiry = f.payBy + TAKER_TIMEOUT;
        f.makerExpiry = f.takerExpiry + CLAIM_WIN;
        lockA(f);
    }

    function test_lock_payByAtMostPayByMax() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.payBy = now_() + PAYBY_MAX + 1;
        f.takerExpiry = f.payBy + TAKER_TIMEOUT;
        f.makerExpiry = f.takerExpiry + CLAIM_WIN;
        expectLockRevert(f, _set(), _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.BadPayBy.selector, f.payBy));
        f.payBy = now_() + PAYBY_MAX;
        f.takerExpiry = f.payBy + TAKER_TIMEOUT;
        f.makerExpiry = f.takerExpiry + CLAIM_WIN;
        lockA(f);
    }

    function test_lock_takerTimeoutAtLeastTheMinimum() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.takerExpiry = f.payBy + TAKER_TIMEOUT - 1;
        expectLockRevert(
            f,
            _set(),
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.TakerTimeoutTooShort.selector, f.payBy, f.takerExpiry)
        );
        f.takerExpiry = f.payBy + TAKER_TIMEOUT;
        lockA(f);
    }

    function test_lock_claimWindowAtLeastTheMinimum() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.makerExpiry = f.takerExpiry + CLAIM_WIN - 1;
        expectLockRevert(
            f,
            _set(),
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.ClaimWindowTooShort.selector, f.takerExpiry, f.makerExpiry)
        );
        f.makerExpiry = f.takerExpiry + CLAIM_WIN;
        lockA(f);
    }

    function test_lock_makerExpiryAtMostMaxLock() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.makerExpiry = now_() + LOCK_MAX + 1;
        expectLockRevert(
            f, _set(), _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.LockTooLong.selector, f.makerExpiry)
        );
        f.makerExpiry = now_() + LOCK_MAX;
        lockA(f);
    }

    // ------------------------------------------------------------ hashlocks

    function test_lock_revertsOnAnIndexPastTheCount() public {
        // The tree holds one more leaf than the maker signed for: that leaf is still refused.
        bytes32[] memory h = hashlocksOf(ORDER, SEQ, N_LOCKS + 1);
        bytes32[] memory leaves = leavesOf(h);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.hashlockRoot = merkleRoot(leaves);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, N_LOCKS);
        expectLockRevert(
            f,
            s,
            merkleProof(leaves, N_LOCKS),
            abi.encodeWithSelector(ISettlementEscrowV2.HashlockIndexOutOfRange.selector, N_LOCKS, N_LOCKS)
        );
        // Index count - 1 of the same tree is fine.
        lockCall(fillAB(FILL, ORDER, 100e6, N_LOCKS - 1), s, merkleProof(leaves, N_LOCKS - 1));
    }

    function test_lock_revertsOnAHashlockAtAnotherIndex() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 1);
        f.hashlockIndex = 0; // hashlock 1 claimed at index 0
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.InvalidHashlockProof.selector));
        expectLockRevert(f, _set(), _proof(1), _err(ISettlementEscrowV2.InvalidHashlockProof.selector));
    }

    function test_lock_revertsOnAHashlockOutsideTheTree() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.hashlock = hashlockOf(keccak256("operator secret"));
        expectLockRevert(f, _set(), _proof(0), _err(ISettlementEscrowV2.InvalidHashlockProof.selector));
        expectLockRevert(f, _set(), new bytes32[](0), _err(ISettlementEscrowV2.InvalidHashlockProof.selector));
    }

    function test_lock_revertsOnAMerkleInternalNodeAsHashlock() public {
        // With 5 leaves: level1 = [h(l0,l1), h(l2,l3), l4]; take node h(l0,l1) and prove it with the rest of the path.
        bytes32[] memory leaves = leavesOf(hashlocksOf(ORDER, SEQ, N_LOCKS));
        bytes32 node = hashPair(leaves[0], leaves[1]);
        bytes32[] memory full = merkleProof(leaves, 0); // [l1, h(l2,l3), l4]
        bytes32[] memory upper = new bytes32[](full.length - 1);
        for (uint256 i = 1; i < full.length; ++i) {
            upper[i - 1] = full[i];
        }
        // As the hashlock itself, at index 0 or at the node's own position in its level (0):
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.hashlock = node;
        expectLockRevert(f, _set(), upper, _err(ISettlementEscrowV2.InvalidHashlockProof.selector));
        // And a node whose preimage is (index, hashlock) encoding: the double hash still differs.
        f.hashlock = leaves[0];
        expectLockRevert(f, _set(), full, _err(ISettlementEscrowV2.InvalidHashlockProof.selector));
    }

    function test_lock_hashlockLocksOnceEvenUnderAnotherFill() public {
        lockA(fillAB(FILL, ORDER, 100e6, 0));
        ISettlementEscrowV2.Fill memory f = fillAB(keccak256("fill-2"), ORDER, 50e6, 0);
        expectLockRevert(
            f, _set(), _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.HashlockUsed.selector, f.hashlock)
        );
    }

    function test_lock_theSameFillTwiceReverts() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        // Same digest, so same hashlock: the never-cleared hashlock mark answers first.
        expectLockRevert(
            f, _set(), _proof(0), abi.encodeWithSelector(ISettlementEscrowV2.HashlockUsed.selector, f.hashlock)
        );
    }

    // ------------------------------------------------------------ capacity

    function test_lock_quoteSizeCapsLockedPlusClaimedPerSequence() public {
        lockA(fillAB(FILL, ORDER, 400e6, 0));
        expectLockRevert(
            fillAB(keccak256("fill-2"), ORDER, 100e6 + 1, 1),
            _set(),
            _proof(1),
            abi.encodeWithSelector(ISettlementEscrowV2.QuoteSizeExceeded.selector, 500e6 + 1, 500e6)
        );
        lockA(fillAB(keccak256("fill-2"), ORDER, 100e6, 1));
    }

    function test_lock_revertsBeyondAvailable() public {
        ISettlementEscrowV2.QuoteSet memory s = quoteSetA(ORDER, SEQ, 5_000e6);
        expectLockRevert(
            fillAB(FILL, ORDER, 1_000e6 + 1, 0),
            s,
            _proof(0),
            abi.encodeWithSelector(ISettlementEscrowV2.InsufficientAvailable.selector, 1_000e6, 1_000e6 + 1)
        );
    }

    // ------------------------------------------------------------ signatures

    function test_lock_revertsOnAQuoteSetNotSignedByTheQuoteSigner() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        bytes memory fs = sig(payerPk, fillDigest2(f));
        bytes32 qd = quoteSetDigest2(CHAIN_A, address(escrowA), s);
        bytes[4] memory bad = [
            sig(operatorPk, qd),
            sig(ownerPk, qd),
            sig(quotePk, quoteSetDigest2(CHAIN_B, address(escrowB), s)), // the other escrow's domain
            highS(sig(quotePk, qd))
        ];
        bytes32[] memory p = _proof(0);
        for (uint256 i; i < 4; ++i) {
            vm.prank(operator);
            vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, quoteSigner));
            escrowA.lock(f, fs, s, 1, bad[i], p);
        }
        vm.prank(operator);
        escrowA.lock(f, fs, s, 1, parityV(sig(quotePk, qd)), p);
    }

    function test_lock_revertsOnAFillNotSignedByThePayerInTheTakerDomain() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        bytes32 d = fillDigest2(f);
        bytes[4] memory bad = [
            sig(operatorPk, d),
            sig(payKeyPk, d),
            sig(payerPk, typed(domainOf2(CHAIN_A, address(escrowA)), fillStructHash2(f))), // maker domain
            highS(sig(payerPk, d))
        ];
        bytes32[] memory p = _proof(0);
        for (uint256 i; i < 4; ++i) {
            vm.prank(operator);
            vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, payer));
            escrowA.lock(f, bad[i], s, 1, qsig, p);
        }
    }

    function test_lock_refusesAContractPayer() public {
        // A contract that would accept the payer key's signature by ERC-1271: payers are plain ECDSA only.
        Wallet1271 w = new Wallet1271(payer);
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.payer = address(w);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        bytes memory fs = sig(payerPk, fillDigest2(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        bytes32[] memory p = _proof(0);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, address(w)));
        escrowA.lock(f, fs, s, 1, qsig, p);
    }

    function test_lock_acceptsAContractQuoteSigner() public {
        // Quote signers (like owners) may be ERC-1271 wallets.
        Wallet1271 w = new Wallet1271(quoteSigner);
        bytes32 id = keccak256("wallet-order");
        onA();
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(id, 100e6);
        o.quoteSigner = address(w);
        vm.prank(relayer);
        escrowA.fund(
            o,
            sig(ownerPk, fundDigest2(CHAIN_A, address(escrowA), o)),
            permit2(usdcA, ownerPk, address(escrowA), 100e6, block.timestamp + 1)
        );
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, id, 100e6, 0);
        lockCall(f, quoteSetA(id, SEQ, 500e6), proofAt(id, SEQ, 0));
        assertEq(escrowA.getOrder(owner, id).locked, 100e6, "locked");
    }
}
