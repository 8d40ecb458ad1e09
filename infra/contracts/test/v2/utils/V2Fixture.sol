// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {V2Signing} from "./V2Signing.sol";
import {ISettlementEscrowV2} from "../../../src/interfaces/ISettlementEscrowV2.sol";
import {IMarginRouter} from "../../../src/interfaces/IMarginRouter.sol";
import {SettlementEscrowV2} from "../../../src/SettlementEscrowV2.sol";
import {HyperliquidMarginRouter} from "../../../src/routers/HyperliquidMarginRouter.sol";
import {MockCoreDepositWallet} from "../../../src/mocks/MockCoreDepositWallet.sol";
import {MockUSDC} from "../../../src/mocks/MockUSDC.sol";

/// @notice Two Hyperliquid-shaped chains (A = maker chain, B = taker chain in the default fill), each with its
///         MockUSDC, MockCoreDepositWallet, router and SettlementEscrowV2; the two share one clock and are told apart
///         by `vm.chainId`. Named actors and builders for typed data, quote sets with hashlock trees and Fills.
abstract contract V2Fixture is V2Signing {
    uint64 internal constant LOCK_MAX = 3600;
    uint64 internal constant PAYBY_MAX = 300;
    uint64 internal constant CLAIM_WIN = 600;
    uint64 internal constant QUOTE_LIFE = 900;
    uint64 internal constant TAKER_TIMEOUT = 600;
    uint256 internal constant CHAIN_A = 1001;
    uint256 internal constant CHAIN_B = 2002;
    uint32 internal constant SPOT = type(uint32).max;
    uint256 internal constant T0 = 1_700_000_000;
    uint64 internal constant SEQ = 7;
    uint32 internal constant N_LOCKS = 5; // hashlocks per default quote set (odd: exercises an unpaired node)

    MockUSDC internal usdcA;
    MockUSDC internal usdcB;
    MockCoreDepositWallet internal cdwA;
    MockCoreDepositWallet internal cdwB;
    HyperliquidMarginRouter internal routerA;
    HyperliquidMarginRouter internal routerB;
    SettlementEscrowV2 internal escrowA;
    SettlementEscrowV2 internal escrowB;

    uint256 internal ownerPk = 0xA11CE;
    uint256 internal operatorPk = 0x0BE4A7;
    uint256 internal quotePk = 0x0407E;
    uint256 internal payerPk = 0xBA7E4;
    uint256 internal payKeyPk = 0x9A7C3;
    uint256 internal strangerPk = 0x57A4;
    address internal owner;
    address internal operator;
    address internal quoteSigner;
    address internal payer;
    address internal payKey;
    address internal stranger;
    address internal relayer = address(0x4E1A7E4);
    address internal payee = address(0xBEEF);
    address internal recipient = address(0xCAFE);

    bytes32 internal constant ORDER = keccak256("order-1");

    function setUp() public virtual {
        vm.warp(T0);
        owner = vm.addr(ownerPk);
        operator = vm.addr(operatorPk);
        quoteSigner = vm.addr(quotePk);
        payer = vm.addr(payerPk);
        payKey = vm.addr(payKeyPk);
        stranger = vm.addr(strangerPk);
        vm.chainId(CHAIN_A);
        (usdcA, cdwA, routerA, escrowA) = _deployChain();
        vm.chainId(CHAIN_B);
        (usdcB, cdwB, routerB, escrowB) = _deployChain();
        vm.chainId(CHAIN_A);
        usdcA.mint(owner, 1_000_000e6);
        usdcB.mint(owner, 1_000_000e6);
        usdcA.mint(payer, 1_000_000e6);
        usdcB.mint(payer, 1_000_000e6);
    }

    function _deployChain()
        internal
        returns (MockUSDC usdc, MockCoreDepositWallet cdw, HyperliquidMarginRouter r, SettlementEscrowV2 e)
    {
        usdc = new MockUSDC();
        cdw = new MockCoreDepositWallet(IERC20(address(usdc)), address(this));
        r = new HyperliquidMarginRouter(IERC20(address(usdc)), cdw);
        e = new SettlementEscrowV2(
            IERC20(address(usdc)), IMarginRouter(address(r)), LOCK_MAX, PAYBY_MAX, CLAIM_WIN, QUOTE_LIFE, TAKER_TIMEOUT
        );
    }

    function onA() internal {
        vm.chainId(CHAIN_A);
    }

    function onB() internal {
        vm.chainId(CHAIN_B);
    }

    function now_() internal view returns (uint64) {
        return uint64(vm.getBlockTimestamp());
    }

    // ------------------------------------------------------------ funding and closing

    function fundOrder2(bytes32 id, uint256 amount) internal view returns (ISettlementEscrowV2.FundOrder memory) {
        return ISettlementEscrowV2.FundOrder({
            orderId: id,
            owner: owner,
            operator: operator,
            quoteSigner: quoteSigner,
            amount: amount,
            deadline: block.timestamp + 1 hours
        });
    }

    /// @dev Funds `id` on chain A with `amount` for `owner` through a permit, relayed by `relayer`.
    function fundA(bytes32 id, uint256 amount) internal returns (ISettlementEscrowV2.FundOrder memory o) {
        onA();
        o = fundOrder2(id, amount);
        ISettlementEscrowV2.Permit memory p =
            permit2(usdcA, ownerPk, address(escrowA), amount, block.timestamp + 1 hours);
        bytes memory s = sig(ownerPk, fundDigest2(CHAIN_A, address(escrowA), o));
        vm.prank(relayer);
        escrowA.fund(o, s, p);
    }

    function closeOffer2(bytes32 id, uint32 dex, bool toMargin, uint256 nonce)
        internal
        view
        returns (ISettlementEscrowV2.CloseOffer memory)
    {
        return ISettlementEscrowV2.CloseOffer({
            orderId: id, owner: owner, dex: dex, toMargin: toMargin, nonce: nonce, deadline: block.timestamp + 1 hours
        });
    }

    function closeA(bytes32 id, uint32 dex, bool toMargin, uint256 nonce) internal {
        onA();
        ISettlementEscrowV2.CloseOffer memory c = closeOffer2(id, dex, toMargin, nonce);
        vm.prank(relayer);
        escrowA.closeWithSig(c, sig(ownerPk, closeDigest2(CHAIN_A, address(escrowA), c)));
    }

    // ------------------------------------------------------------ quote sets and hashlocks

    /// @dev The maker's secret i of (order, sequence): a stand-in for the maker client's HMAC derivation.
    function secretAt(bytes32 id, uint64 seq, uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("maker-secret", id, seq, i));
    }

    function hashlocksOf(bytes32 id, uint64 seq, uint256 n) internal pure returns (bytes32[] memory h) {
        h = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            h[i] = hashlockOf(secretAt(id, seq, i));
        }
    }

    function proofAt(bytes32 id, uint64 seq, uint256 i) internal pure returns (bytes32[] memory) {
        return merkleProof(leavesOf(hashlocksOf(id, seq, N_LOCKS)), i);
    }

    /// @dev The maker's set for `owner`'s order on chain A: quote 0 a decoy on another chain, quote 1 pays `payee`
    ///      on chain B through escrowB at 101 in for 100 out, minFill 10 USDC.
    function quoteSetA(bytes32 id, uint64 seq, uint256 quoteSize)
        internal
        view
        returns (ISettlementEscrowV2.QuoteSet memory s)
    {
        s.owner = owner;
        s.orderId = id;
        s.sequence = seq;
        s.generation = 3;
        s.quoteSize = quoteSize;
        s.issuedAt = now_();
        s.validUntil = now_() + 60;
        s.hashlockRoot = merkleRoot(leavesOf(hashlocksOf(id, seq, N_LOCKS)));
        s.hashlockCount = N_LOCKS;
        s.quotes = new ISettlementEscrowV2.Quote[](2);
        s.quotes[0] = ISettlementEscrowV2.Quote({
            chainId: 12345,
            token: address(0x7070),
            escrow: address(0xE5C0),
            recipient: address(0xD00D),
            supply: 1,
            receive_: 2,
            minFill: 1
        });
        s.quotes[1] = ISettlementEscrowV2.Quote({
            chainId: CHAIN_B,
            token: address(usdcB),
            escrow: address(escrowB),
            recipient: payee,
            supply: 100,
            receive_: 101,
            minFill: 10e6
        });
    }

    /// @dev A fill of `owner`'s order on chain A paid on chain B, at exactly the quote's price (rounded for the
    ///      maker), with hashlock `index` of (id, SEQ) and the tightest legal times from now.
    function fillAB(bytes32 fillId, bytes32 id, uint256 amountOut, uint32 index)
        internal
        view
        returns (ISettlementEscrowV2.Fill memory f)
    {
        f.fillId = fillId;
        f.owner = owner;
        f.orderId = id;
        f.sequence = SEQ;
        f.makerChainId = CHAIN_A;
        f.makerEscrow = address(escrowA);
        f.takerChainId = CHAIN_B;
        f.takerEscrow = address(escrowB);
        f.payer = payer;
        f.payee = payee;
        f.amountIn = (amountOut * 101 + 99) / 100;
        f.recipient = recipient;
        f.amountOut = amountOut;
        f.dex = 0;
        f.toMargin = true;
        f.hashlock = hashlockOf(secretAt(id, SEQ, index));
        f.hashlockIndex = index;
        f.payKey = payKey;
        f.payBy = now_() + 120;
        f.takerExpiry = f.payBy + TAKER_TIMEOUT;
        f.makerExpiry = f.takerExpiry + CLAIM_WIN;
    }

    function lockCall(ISettlementEscrowV2.Fill memory f, ISettlementEscrowV2.QuoteSet memory s, bytes32[] memory proof)
        internal
    {
        onA();
        bytes memory fs = sig(payerPk, fillDigest2(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        vm.prank(operator);
        escrowA.lock(f, fs, s, 1, qsig, proof);
    }

    /// @dev Locks `f` (default set of its order and sequence, its own index's proof) on chain A.
    function lockA(ISettlementEscrowV2.Fill memory f) internal {
        lockCall(f, quoteSetA(f.orderId, f.sequence, 500e6), proofAt(f.orderId, f.sequence, f.hashlockIndex));
    }

    function expectLockRevert(
        ISettlementEscrowV2.Fill memory f,
        ISettlementEscrowV2.QuoteSet memory s,
        bytes32[] memory proof,
        bytes memory err
    ) internal {
        onA();
        bytes memory fs = sig(payerPk, fillDigest2(f));
        bytes memory qsig = sig(quotePk, quoteSetDigest2(CHAIN_A, address(escrowA), s));
        vm.prank(operator);
        vm.expectRevert(err);
        escrowA.lock(f, fs, s, 1, qsig, proof);
    }

    function takeOf(ISettlementEscrowV2.Fill memory f) internal pure returns (ISettlementEscrowV2.Fill[] memory fs) {
        fs = new ISettlementEscrowV2.Fill[](1);
        fs[0] = f;
    }

    function fillSigs(ISettlementEscrowV2.Fill[] memory fs) internal view returns (bytes[] memory sigs) {
        sigs = new bytes[](fs.length);
        for (uint256 i; i < fs.length; ++i) {
            sigs[i] = sig(payerPk, fillDigest2(fs[i]));
        }
    }

    function payKeySigB(ISettlementEscrowV2.Fill[] memory fs) internal view returns (bytes memory) {
        bytes32[] memory ds = new bytes32[](fs.length);
        for (uint256 i; i < fs.length; ++i) {
            ds[i] = fillDigest2(fs[i]);
        }
        return sig(payKeyPk, payTakeDigest(CHAIN_B, address(escrowB), ds));
    }

    /// @dev The whole take paid on chain B by `relayer`, with the pay key's authorisation and a permit for the sum.
    function payB(ISettlementEscrowV2.Fill[] memory fs) internal {
        onB();
        uint256 sum;
        for (uint256 i; i < fs.length; ++i) {
            sum += fs[i].amountIn;
        }
        ISettlementEscrowV2.Permit memory p = permit2(usdcB, payerPk, address(escrowB), sum, block.timestamp + 1 hours);
        bytes[] memory sigs = fillSigs(fs);
        bytes memory auth = payKeySigB(fs);
        vm.prank(relayer);
        escrowB.payTake(fs, sigs, auth, p);
    }

    function payB(ISettlementEscrowV2.Fill memory f) internal {
        payB(takeOf(f));
    }

    function cancelSig(uint256 pk, bytes32 digest) internal view returns (bytes memory) {
        return sig(pk, cancelDigest(CHAIN_A, address(escrowA), digest));
    }

    function lockStateA(bytes32 digest) internal view returns (uint256) {
        return uint256(escrowA.getLock(digest).state);
    }

    function paymentStateB(bytes32 digest) internal view returns (uint256) {
        return uint256(escrowB.getPayment(digest).state);
    }

    /// @dev Σ liabilities equal the escrow's token balance on both chains whenever nobody donated.
    function assertSolvent2() internal view {
        assertEq(usdcA.balanceOf(address(escrowA)), escrowA.totalLiabilities(), "A: balance == liabilities");
        assertEq(usdcB.balanceOf(address(escrowB)), escrowB.totalLiabilities(), "B: balance == liabilities");
    }
}
