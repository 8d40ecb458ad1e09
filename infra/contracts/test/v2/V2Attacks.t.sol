// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {V2Fixture} from "./utils/V2Fixture.sol";
import {ISettlementEscrowV2} from "../../src/interfaces/ISettlementEscrowV2.sol";
import {Wallet1271} from "../mocks/TestDoubles.sol";

/// @notice The named attacks of issue 23, each tried the way the operator (with keys of its own, also acting as a
///         maker or a taker) would, and each refused on chain.
contract V2AttacksTest is V2Fixture {
    bytes32 internal constant FILL = keccak256("fill-1");
    uint256 internal constant FAKE_PAYER_PK = 0xFA4E9A7E4;
    uint256 internal constant FAKE_PAYKEY_PK = 0xFA4E4E7;

    function setUp() public override {
        super.setUp();
        fundA(ORDER, 1_000e6);
    }

    function _set() internal view returns (ISettlementEscrowV2.QuoteSet memory) {
        return quoteSetA(ORDER, SEQ, 1_000e6);
    }

    /// @dev The operator locks `f` signed by `payerKey` (its own key) against the maker's live set.
    function _operatorLock(
        ISettlementEscrowV2.Fill memory f,
        uint256 payerKey,
        bytes32[] memory proof,
        bytes memory err
    ) internal {
        onA();
        ISettlementEscrowV2.QuoteSet memory s = _set();
        bytes memory fs = sig(payerKey, fillDigest2(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        vm.prank(operator);
        if (err.length > 0) vm.expectRevert(err);
        escrowA.lock(f, fs, s, 1, qsig, proof);
    }

    function _fakeFill(bytes32 fillId, uint256 amountOut, uint32 index)
        internal
        view
        returns (ISettlementEscrowV2.Fill memory f)
    {
        f = fillAB(fillId, ORDER, amountOut, index);
        f.payer = vm.addr(FAKE_PAYER_PK);
        f.payKey = vm.addr(FAKE_PAYKEY_PK);
        f.recipient = operator;
    }

    // ------------------------------------------------------------ the v1 hole

    function test_attack_operatorPayerKeyWithItsOwnSecretCannotLock() public {
        // v1: a fresh payer key signs a Fill under the operator's own hashlock, locks it against the maker's live set
        // and claims it with the operator's secret. v2: the hashlock must be a leaf of the maker's signed root.
        bytes32 opSecret = keccak256("operator secret");
        ISettlementEscrowV2.Fill memory f = _fakeFill(FILL, 500e6, 0);
        f.hashlock = hashlockOf(opSecret);
        _operatorLock(
            f,
            FAKE_PAYER_PK,
            proofAt(ORDER, SEQ, 0),
            abi.encodeWithSelector(ISettlementEscrowV2.InvalidHashlockProof.selector)
        );
        // A root of its own over its own hashlock is not what the quote signer signed.
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.hashlockRoot = leafOf(0, f.hashlock);
        s.hashlockCount = 1;
        bytes memory fs = sig(FAKE_PAYER_PK, fillDigest2(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), _set()));
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, quoteSigner));
        escrowA.lock(f, fs, s, 1, qsig, new bytes32[](0));
    }

    function test_attack_operatorPayerKeyWithTheMakersHashlockGetsNothing() public {
        // With one of the maker's hashlocks the lock goes through (the operator is just a taker) but only the maker
        // knows the secret, and it reveals only after a payment with this digest: without paying, nothing comes out.
        ISettlementEscrowV2.Fill memory f = _fakeFill(FILL, 500e6, 0);
        _operatorLock(f, FAKE_PAYER_PK, proofAt(ORDER, SEQ, 0), "");
        bytes32 d = fillDigest2(f);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WrongSecret.selector));
        escrowA.claim(d, keccak256("operator secret"));
        vm.warp(f.makerExpiry);
        escrowA.refund(d);
        assertEq(escrowA.getOrder(owner, ORDER).available, 1_000e6, "maker whole");
        assertEq(cdwA.deposits(operator, 0), 0, "operator got nothing");
        assertEq(usdcA.balanceOf(operator), 0, "operator got nothing");
    }

    // ------------------------------------------------------------ close starvation

    function test_attack_refundThenRelockCannotStarveAClose() public {
        // Everything locked: in v1 the close reverted NothingToClose and the operator refunded and relocked forever.
        ISettlementEscrowV2.Fill memory f = _fakeFill(FILL, 1_000e6, 0);
        _operatorLock(f, FAKE_PAYER_PK, proofAt(ORDER, SEQ, 0), "");
        closeA(ORDER, 0, false, 1); // does not revert
        assertTrue(escrowA.closeRequested(owner, ORDER), "sticky");
        vm.warp(f.makerExpiry);
        uint256 before = usdcA.balanceOf(owner);
        escrowA.refund(fillDigest2(f));
        // The relock in the same block is refused, and the refund already went to the owner.
        ISettlementEscrowV2.Fill memory g = _fakeFill(keccak256("fill-2"), 1_000e6, 1);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.issuedAt = now_();
        s.validUntil = now_() + 60;
        bytes memory fs = sig(FAKE_PAYER_PK, fillDigest2(g));
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        bytes32[] memory p = proofAt(ORDER, SEQ, 1);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.OrderClosing.selector, owner, ORDER));
        escrowA.lock(g, fs, s, 1, qsig, p);
        assertEq(usdcA.balanceOf(owner) - before, 1_000e6, "the owner has everything");
        assertEq(escrowA.totalLiabilities(), 0, "the order is empty");
    }

    function test_attack_closeCompletesWithinMaxLockOfTheRequest() public {
        // The operator locks as late and as long as it can before the close: still done by close + MAX_LOCK.
        ISettlementEscrowV2.Fill memory f = _fakeFill(FILL, 600e6, 0);
        f.payBy = now_() + PAYBY_MAX;
        f.takerExpiry = f.payBy + TAKER_TIMEOUT;
        f.makerExpiry = now_() + LOCK_MAX;
        _operatorLock(f, FAKE_PAYER_PK, proofAt(ORDER, SEQ, 0), "");
        uint256 closedAt = block.timestamp;
        closeA(ORDER, 0, false, 1);
        vm.warp(closedAt + LOCK_MAX);
        escrowA.refund(fillDigest2(f));
        assertEq(usdcA.balanceOf(owner), 1_000_000e6, "all of it back by close + MAX_LOCK");
    }

    // ------------------------------------------------------------ squatting

    function test_attack_fundIdSquattingCannotBlockTheOwner() public {
        bytes32 id = keccak256("fresh-id");
        onA();
        usdcA.mint(operator, 1);
        ISettlementEscrowV2.FundOrder memory squat =
            ISettlementEscrowV2.FundOrder(id, operator, operator, operator, 1, block.timestamp + 1);
        escrowA.fund(
            squat,
            sig(operatorPk, fundDigest2(CHAIN_A, address(escrowA), squat)),
            permit2(usdcA, operatorPk, address(escrowA), 1, block.timestamp + 1)
        );
        // Nor can it fund in the owner's name (to fix operator or quote signer first).
        ISettlementEscrowV2.FundOrder memory forged =
            ISettlementEscrowV2.FundOrder(id, owner, operator, operator, 1, block.timestamp + 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, owner));
        escrowA.fund(forged, sig(operatorPk, fundDigest2(CHAIN_A, address(escrowA), forged)), noPermit2());
        fundA(id, 100e6);
        assertEq(escrowA.getOrder(owner, id).available, 100e6, "the owner's fund went through");
        assertEq(escrowA.getOrder(owner, id).quoteSigner, quoteSigner, "with its own terms");
    }

    // ------------------------------------------------------------ hashlock reuse

    function test_attack_hashlockReusedAtAnotherIndex() public {
        ISettlementEscrowV2.Fill memory f = _fakeFill(FILL, 100e6, 0);
        f.hashlockIndex = 1; // hashlock 0 at index 1
        _operatorLock(
            f,
            FAKE_PAYER_PK,
            proofAt(ORDER, SEQ, 1),
            abi.encodeWithSelector(ISettlementEscrowV2.InvalidHashlockProof.selector)
        );
        _operatorLock(
            f,
            FAKE_PAYER_PK,
            proofAt(ORDER, SEQ, 0),
            abi.encodeWithSelector(ISettlementEscrowV2.InvalidHashlockProof.selector)
        );
    }

    function test_attack_hashlockReusedAfterARefund() public {
        // Lock, pay, reveal (the secret is public), let the lock expire unclaimed and refund: the hashlock is burnt.
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        payB(f);
        bytes32 d = fillDigest2(f);
        onB();
        escrowB.claimPayment(d, secretAt(ORDER, SEQ, 0));
        vm.warp(f.makerExpiry);
        onA();
        escrowA.refund(d);
        ISettlementEscrowV2.Fill memory g = _fakeFill(keccak256("fill-2"), 100e6, 0);
        _operatorLock(
            g,
            FAKE_PAYER_PK,
            proofAt(ORDER, SEQ, 0),
            abi.encodeWithSelector(ISettlementEscrowV2.HashlockUsed.selector, g.hashlock)
        );
        // And after a cancel.
        ISettlementEscrowV2.Fill memory h = fillAB(keccak256("fill-3"), ORDER, 100e6, 1);
        lockA(h);
        escrowA.cancelLock(fillDigest2(h), cancelSig(payKeyPk, fillDigest2(h)));
        ISettlementEscrowV2.Fill memory k = _fakeFill(keccak256("fill-4"), 100e6, 1);
        _operatorLock(
            k,
            FAKE_PAYER_PK,
            proofAt(ORDER, SEQ, 1),
            abi.encodeWithSelector(ISettlementEscrowV2.HashlockUsed.selector, k.hashlock)
        );
    }

    function test_attack_hashlockReusedUnderAnotherSequence() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        // Sequence 8's tree does not hold sequence 7's hashlock ...
        ISettlementEscrowV2.Fill memory g = _fakeFill(keccak256("fill-2"), 100e6, 0);
        g.sequence = SEQ + 1;
        ISettlementEscrowV2.QuoteSet memory s8 = quoteSetA(ORDER, SEQ + 1, 1_000e6);
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s8));
        bytes memory fs = sig(FAKE_PAYER_PK, fillDigest2(g));
        bytes32[] memory p0 = proofAt(ORDER, SEQ + 1, 0);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidHashlockProof.selector));
        escrowA.lock(g, fs, s8, 1, qsig, p0);
        // ... and even a maker client that reused it in a new set (a bug) is covered by the never-cleared mark.
        bytes32[] memory hs = hashlocksOf(ORDER, SEQ, N_LOCKS);
        s8.hashlockRoot = merkleRoot(leavesOf(hs));
        qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s8));
        p0 = merkleProof(leavesOf(hs), 0);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.HashlockUsed.selector, g.hashlock));
        escrowA.lock(g, fs, s8, 1, qsig, p0);
    }

    // ------------------------------------------------------------ quote-set and Merkle forgeries

    function test_attack_quoteSetReplayedOnAnotherOwnersOrderWithTheSameId() public {
        // The stranger's order has the same id and even the same quote signer (a shared maker service key).
        onA();
        usdcA.mint(stranger, 1_000e6);
        ISettlementEscrowV2.FundOrder memory o =
            ISettlementEscrowV2.FundOrder(ORDER, stranger, operator, quoteSigner, 1_000e6, block.timestamp + 1);
        escrowA.fund(
            o,
            sig(strangerPk, fundDigest2(CHAIN_A, address(escrowA), o)),
            permit2(usdcA, strangerPk, address(escrowA), 1_000e6, block.timestamp + 1)
        );
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        f.owner = stranger;
        ISettlementEscrowV2.QuoteSet memory s = _set(); // the owner's signed set
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        bytes memory fs = sig(payerPk, fillDigest2(f));
        bytes32[] memory p = proofAt(ORDER, SEQ, 0);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.QuoteSetMismatch.selector));
        escrowA.lock(f, fs, s, 1, qsig, p);
        s.owner = stranger; // edited: no longer what the quote signer signed
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, quoteSigner));
        escrowA.lock(f, fs, s, 1, qsig, p);
    }

    function test_attack_merkleInternalNodeOrIndexPastTheCount() public {
        bytes32[] memory leaves = leavesOf(hashlocksOf(ORDER, SEQ, N_LOCKS));
        bytes32[] memory full = merkleProof(leaves, 2); // [l3, h(l0,l1), l4]
        bytes32[] memory upper = new bytes32[](2);
        upper[0] = full[1];
        upper[1] = full[2];
        ISettlementEscrowV2.Fill memory f = _fakeFill(FILL, 100e6, 1);
        f.hashlock = hashPair(leaves[2], leaves[3]);
        _operatorLock(
            f, FAKE_PAYER_PK, upper, abi.encodeWithSelector(ISettlementEscrowV2.InvalidHashlockProof.selector)
        );
        // An index past the signed count, with a tree that has a leaf there.
        bytes32[] memory more = leavesOf(hashlocksOf(ORDER, SEQ, N_LOCKS + 3));
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.hashlockRoot = merkleRoot(more);
        ISettlementEscrowV2.Fill memory g = _fakeFill(FILL, 100e6, N_LOCKS + 2);
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        bytes memory fs = sig(FAKE_PAYER_PK, fillDigest2(g));
        bytes32[] memory p = merkleProof(more, N_LOCKS + 2);
        vm.prank(operator);
        vm.expectRevert(
            abi.encodeWithSelector(ISettlementEscrowV2.HashlockIndexOutOfRange.selector, N_LOCKS + 2, N_LOCKS)
        );
        escrowA.lock(g, fs, s, 1, qsig, p);
    }

    function test_attack_takerEscrowTheMakerDidNotQuote() public {
        // A fake escrow that would report a held payment, and a real escrow the maker did not quote.
        address[2] memory fakes = [address(new Wallet1271(operator)), address(escrowA)];
        for (uint256 i; i < 2; ++i) {
            ISettlementEscrowV2.Fill memory f = _fakeFill(FILL, 100e6, 0);
            f.takerEscrow = fakes[i];
            _operatorLock(
                f,
                FAKE_PAYER_PK,
                proofAt(ORDER, SEQ, 0),
                abi.encodeWithSelector(ISettlementEscrowV2.TakerEscrowMismatch.selector, address(escrowB), fakes[i])
            );
        }
    }

    // ------------------------------------------------------------ identity of a fill

    function test_attack_lockUnderAnotherFillsIdOrDigest() public {
        // The honest taker signed F (fill id X). The operator locks its own F' with the same id first.
        ISettlementEscrowV2.Fill memory honest = fillAB(FILL, ORDER, 100e6, 0);
        ISettlementEscrowV2.Fill memory own = _fakeFill(FILL, 100e6, 1);
        _operatorLock(own, FAKE_PAYER_PK, proofAt(ORDER, SEQ, 1), "");
        bytes32 dh = fillDigest2(honest);
        // The honest taker's check (its own digest) sees no lock, so its pay key never authorises.
        assertEq(lockStateA(dh), 0, "no lock under the honest digest");
        assertEq(lockStateA(FILL), 0, "nothing under the chosen id");
        // Nor can the operator put its recipient into the honest Fill: that is another digest the payer never signed.
        ISettlementEscrowV2.Fill memory edited = fillAB(FILL, ORDER, 100e6, 2);
        edited.recipient = operator;
        bytes memory honestSig = sig(payerPk, dh);
        ISettlementEscrowV2.QuoteSet memory s = _set();
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        bytes32[] memory p = proofAt(ORDER, SEQ, 2);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, payer));
        escrowA.lock(edited, honestSig, s, 1, qsig, p);
        // The honest Fill itself still locks under its own digest.
        lockA(honest);
        assertEq(lockStateA(dh), 1, "honest lock");
        // A payment exists only for what the pay key authorised: the operator's F' digest is not payable with the
        // honest pay key's authorisation for F.
        onB();
        vm.prank(payer);
        usdcB.approve(address(escrowB), type(uint256).max);
        bytes memory auth = sig(payKeyPk, payTakeDigest(CHAIN_B, address(escrowB), one(dh)));
        ISettlementEscrowV2.Fill[] memory take = takeOf(own);
        bytes[] memory ownSigs = new bytes[](1);
        ownSigs[0] = sig(FAKE_PAYER_PK, fillDigest2(own));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, own.payKey));
        escrowB.payTake(take, ownSigs, auth, noPermit2());
    }

    // ------------------------------------------------------------ payment authorisation

    function test_attack_payWithoutAuthorisationOverOtherDigestsOrAfterPayBy() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        bytes32 d = fillDigest2(f);
        onB();
        vm.prank(payer);
        usdcB.approve(address(escrowB), type(uint256).max); // an allowance alone never pays
        ISettlementEscrowV2.Fill[] memory take = takeOf(f);
        bytes[] memory fs = fillSigs(take);
        bytes memory err = abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, payKey);
        vm.expectRevert(err);
        escrowB.payTake(take, fs, "", noPermit2());
        vm.expectRevert(err); // the operator signs the authorisation itself
        escrowB.payTake(take, fs, sig(operatorPk, payTakeDigest(CHAIN_B, address(escrowB), one(d))), noPermit2());
        vm.expectRevert(err); // the pay key authorised another take
        escrowB.payTake(
            take, fs, sig(payKeyPk, payTakeDigest(CHAIN_B, address(escrowB), one(keccak256("x")))), noPermit2()
        );
        bytes memory good = sig(payKeyPk, payTakeDigest(CHAIN_B, address(escrowB), one(d)));
        vm.warp(f.payBy + 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.PayByPassed.selector, f.payBy));
        escrowB.payTake(take, fs, good, noPermit2());
        assertEq(paymentStateB(d), 0, "never paid");
    }

    // ------------------------------------------------------------ cancel

    function test_attack_cancelByTheOperatorTheMakerOrAContract() public {
        // Operator-as-maker scenario: the honest taker paid; a cancel now would let the maker reveal and keep both.
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        payB(f);
        bytes32 d = fillDigest2(f);
        onA();
        bytes memory err = abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, payKey);
        uint256[3] memory pks = [operatorPk, ownerPk, quotePk];
        for (uint256 i; i < 3; ++i) {
            vm.prank(vm.addr(pks[i]));
            vm.expectRevert(err);
            escrowA.cancelLock(d, cancelSig(pks[i], d));
        }
        // A contract pay key that would accept the key's signature by ERC-1271 is refused too.
        Wallet1271 w = new Wallet1271(payKey);
        ISettlementEscrowV2.Fill memory g = fillAB(keccak256("fill-2"), ORDER, 100e6, 1);
        g.payKey = address(w);
        lockA(g);
        bytes32 dg = fillDigest2(g);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, address(w)));
        escrowA.cancelLock(dg, cancelSig(payKeyPk, dg));
        assertEq(lockStateA(d), 1, "the paid lock stays live");
    }

    // ------------------------------------------------------------ expiries on both chains

    function test_attack_expiryEdgesOnBothChains() public {
        ISettlementEscrowV2.Fill memory f = fillAB(FILL, ORDER, 100e6, 0);
        lockA(f);
        payB(f);
        bytes32 d = fillDigest2(f);
        bytes32 secret = secretAt(ORDER, SEQ, 0);
        // Taker chain: at takerExpiry the reveal is closed and the refund open; one second earlier the reverse.
        onB();
        vm.warp(f.takerExpiry - 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotExpired.selector, f.takerExpiry));
        escrowB.refundPayment(d);
        escrowB.claimPayment(d, secret); // the last possible reveal
        // Maker chain: the recipient still has CLAIM_WINDOW + 1 s; at makerExpiry the claim is closed.
        onA();
        vm.warp(f.makerExpiry - 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.NotExpired.selector, f.makerExpiry));
        escrowA.refund(d);
        escrowA.claim(d, secret);
        assertEq(cdwA.deposits(recipient, 0), 100e6, "claimed in the last second");
        assertTrue(f.makerExpiry - (f.takerExpiry - 1) >= CLAIM_WIN + 1, "claim window after the last reveal");
    }

    // ------------------------------------------------------------ replays across escrows and chains

    function test_attack_signaturesReplayedAcrossEscrowsAndChains() public {
        // FundOrder and CloseOffer for chain A's escrow, replayed on chain B's escrow.
        onA();
        ISettlementEscrowV2.FundOrder memory o = fundOrder2(keccak256("replay"), 10e6);
        bytes memory fsig = sig(ownerPk, fundDigest2(CHAIN_A, address(escrowA), o));
        onB();
        vm.prank(owner);
        usdcB.approve(address(escrowB), type(uint256).max);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, owner));
        escrowB.fund(o, fsig, noPermit2());
        // Same escrow, another chain id (a fork): the domain differs.
        onA();
        vm.prank(owner);
        usdcA.approve(address(escrowA), type(uint256).max);
        vm.chainId(9999);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, owner));
        escrowA.fund(o, fsig, noPermit2());
        onA();
        escrowA.fund(o, fsig, noPermit2());

        // An order on chain B with the same owner, id and quote signer: chain A's signed quote set does not lock it.
        onB();
        ISettlementEscrowV2.FundOrder memory ob = fundOrder2(ORDER, 500e6);
        escrowB.fund(ob, sig(ownerPk, fundDigest2(CHAIN_B, address(escrowB), ob)), noPermit2());
        ISettlementEscrowV2.QuoteSet memory s = _set();
        s.quotes[1].chainId = CHAIN_A;
        s.quotes[1].escrow = address(escrowA);
        bytes memory qsigA = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        ISettlementEscrowV2.Fill memory fb = fillAB(FILL, ORDER, 100e6, 0);
        fb.makerChainId = CHAIN_B;
        fb.makerEscrow = address(escrowB);
        fb.takerChainId = CHAIN_A;
        fb.takerEscrow = address(escrowA);
        bytes memory fbSig = sig(payerPk, fillDigest2(fb));
        bytes32[] memory p = proofAt(ORDER, SEQ, 0);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, quoteSigner));
        escrowB.lock(fb, fbSig, s, 1, qsigA, p);
        // With B's own signature it locks; then the pay key's CancelFill for A's domain does not cancel it on B.
        vm.prank(operator);
        escrowB.lock(fb, fbSig, s, 1, sig(quotePk, quoteSetDigest2(CHAIN_B, address(escrowB), s)), p);
        bytes32 db = fillDigest2(fb);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, payKey));
        escrowB.cancelLock(db, sig(payKeyPk, cancelDigest(CHAIN_A, address(escrowA), db)));

        // A Fill signed for taker escrow B cannot be paid on A (and re-targeting it changes its digest).
        ISettlementEscrowV2.Fill memory f = fillAB(keccak256("fill-x"), ORDER, 100e6, 1);
        ISettlementEscrowV2.Fill[] memory take = takeOf(f);
        bytes[] memory sigs = fillSigs(take);
        bytes memory authB = payKeySigB(take);
        onA();
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.WrongChainOrEscrow.selector));
        escrowA.payTake(take, sigs, authB, noPermit2());
        take[0].takerChainId = CHAIN_A;
        take[0].takerEscrow = address(escrowA);
        vm.prank(payer);
        usdcA.approve(address(escrowA), type(uint256).max);
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, payer));
        escrowA.payTake(take, sigs, authB, noPermit2());
        // Even with a fresh Fill signature for A, B's PayTake authorisation does not carry over.
        sigs[0] = sig(payerPk, fillDigest2(take[0]));
        vm.expectRevert(abi.encodeWithSelector(ISettlementEscrowV2.InvalidSignature.selector, payKey));
        escrowA.payTake(take, sigs, authB, noPermit2());
    }
}
