// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {TestBase} from "./TestBase.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ISettlementEscrow} from "../../src/interfaces/ISettlementEscrow.sol";
import {IMarginRouter} from "../../src/interfaces/IMarginRouter.sol";
import {SettlementEscrow} from "../../src/SettlementEscrow.sol";
import {HyperliquidMarginRouter} from "../../src/routers/HyperliquidMarginRouter.sol";
import {MockCoreDepositWallet} from "../../src/mocks/MockCoreDepositWallet.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";

/// @notice Deploys a Hyperliquid-shaped chain (MockUSDC, MockCoreDepositWallet, router, escrow) and signs typed data.
/// @dev Digests are computed here from the type strings independently of EscrowHashing (fields listed one by one),
///      so a mistake in either place shows up as an invalid signature.
abstract contract EscrowFixture is TestBase {
    uint64 internal constant REVEAL = 600;
    uint64 internal constant MAX_LOCK = 1 days;
    uint32 internal constant SPOT = type(uint32).max;
    uint256 internal constant SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141;
    uint256 internal constant T0 = 1_700_000_000;

    bytes32 internal constant FUND_ORDER_TYPEHASH = keccak256(
        "FundOrder(bytes32 orderId,address owner,address operator,address quoteSigner,uint256 amount,uint256 deadline)"
    );
    bytes32 internal constant CLOSE_OFFER_TYPEHASH =
        keccak256("CloseOffer(bytes32 orderId,address owner,uint32 dex,bool toMargin,uint256 nonce,uint256 deadline)");
    bytes32 internal constant QUOTE_TYPEHASH = keccak256(
        "Quote(uint256 chainId,address token,address recipient,uint256 supply,uint256 receive,uint256 minFill)"
    );
    bytes32 internal constant QUOTE_SET_TYPEHASH = keccak256(
        "QuoteSet(bytes32 orderId,uint64 sequence,uint64 generation,uint256 quoteSize,uint64 validUntil,Quote[] quotes)Quote(uint256 chainId,address token,address recipient,uint256 supply,uint256 receive,uint256 minFill)"
    );
    bytes32 internal constant FILL_TYPEHASH = keccak256(
        "Fill(bytes32 fillId,bytes32 orderId,uint64 sequence,uint256 makerChainId,address makerEscrow,uint256 takerChainId,address takerEscrow,address payer,address payee,uint256 amountIn,address recipient,uint256 amountOut,uint32 dex,bool toMargin,bytes32 hashlock,uint64 makerExpiry,uint64 takerExpiry)"
    );
    bytes32 internal constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    MockUSDC internal usdc;
    MockCoreDepositWallet internal cdw;
    HyperliquidMarginRouter internal router;
    SettlementEscrow internal escrow;

    uint256 internal ownerPk = 0xA11CE;
    uint256 internal operatorPk = 0x0BE4A7;
    uint256 internal quotePk = 0x0407E;
    uint256 internal payerPk = 0xBA7E4;
    uint256 internal strangerPk = 0x57A4;
    address internal owner;
    address internal operator;
    address internal quoteSigner;
    address internal payer;
    address internal stranger;
    address internal relayer = address(0x4E1A7E4);
    address internal payee = address(0xBEEF);
    address internal recipient = address(0xCAFE);

    bytes32 internal constant ORDER = keccak256("order-1");
    bytes32 internal constant SECRET = keccak256("secret");
    bytes32 internal constant HASHLOCK = keccak256(abi.encodePacked(SECRET));

    function setUp() public virtual {
        vm.warp(T0);
        owner = vm.addr(ownerPk);
        operator = vm.addr(operatorPk);
        quoteSigner = vm.addr(quotePk);
        payer = vm.addr(payerPk);
        stranger = vm.addr(strangerPk);
        usdc = new MockUSDC();
        cdw = new MockCoreDepositWallet(IERC20(address(usdc)), address(this));
        router = new HyperliquidMarginRouter(IERC20(address(usdc)), cdw);
        escrow = new SettlementEscrow(IERC20(address(usdc)), IMarginRouter(address(router)), REVEAL, MAX_LOCK);
        usdc.mint(owner, 1_000_000e6);
        usdc.mint(payer, 1_000_000e6);
    }

    // ------------------------------------------------------------ signing

    function sig(uint256 pk, bytes32 digest) internal pure returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(pk, digest);
        return abi.encodePacked(r, s, v);
    }

    /// @dev The EIP-2 malleated twin of a valid signature: s' = n − s, v flipped. ecrecover accepts it.
    function highS(bytes memory good) internal pure returns (bytes memory) {
        (bytes32 r, bytes32 s, uint8 v) = split(good);
        return abi.encodePacked(r, bytes32(SECP256K1_N - uint256(s)), v == 27 ? uint8(28) : uint8(27));
    }

    /// @dev The same signature with v in yParity form (0/1).
    function parityV(bytes memory good) internal pure returns (bytes memory) {
        (bytes32 r, bytes32 s, uint8 v) = split(good);
        return abi.encodePacked(r, s, v - 27);
    }

    function split(bytes memory sg) internal pure returns (bytes32 r, bytes32 s, uint8 v) {
        assembly {
            r := mload(add(sg, 32))
            s := mload(add(sg, 64))
            v := byte(0, mload(add(sg, 96)))
        }
    }

    function domainOf(uint256 chainId, address escrowAddr) internal pure returns (bytes32) {
        return keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256("SettlementEscrow"),
                keccak256("1"),
                chainId,
                escrowAddr
            )
        );
    }

    function typed(bytes32 domainSep, bytes32 structHash) internal pure returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", domainSep, structHash));
    }

    function fundDigest(SettlementEscrow e, ISettlementEscrow.FundOrder memory o) internal view returns (bytes32) {
        bytes32 h = keccak256(
            abi.encode(FUND_ORDER_TYPEHASH, o.orderId, o.owner, o.operator, o.quoteSigner, o.amount, o.deadline)
        );
        return typed(domainOf(block.chainid, address(e)), h);
    }

    function closeDigest(SettlementEscrow e, ISettlementEscrow.CloseOffer memory c) internal view returns (bytes32) {
        bytes32 h =
            keccak256(abi.encode(CLOSE_OFFER_TYPEHASH, c.orderId, c.owner, c.dex, c.toMargin, c.nonce, c.deadline));
        return typed(domainOf(block.chainid, address(e)), h);
    }

    function quoteSetDigest(SettlementEscrow e, ISettlementEscrow.QuoteSet memory s) internal view returns (bytes32) {
        bytes32[] memory hs = new bytes32[](s.quotes.length);
        for (uint256 i; i < s.quotes.length; ++i) {
            ISettlementEscrow.Quote memory q = s.quotes[i];
            hs[i] = keccak256(
                abi.encode(QUOTE_TYPEHASH, q.chainId, q.token, q.recipient, q.supply, q.receive_, q.minFill)
            );
        }
        bytes32 h = keccak256(
            abi.encode(
                QUOTE_SET_TYPEHASH,
                s.orderId,
                s.sequence,
                s.generation,
                s.quoteSize,
                s.validUntil,
                keccak256(abi.encodePacked(hs))
            )
        );
        return typed(domainOf(block.chainid, address(e)), h);
    }

    function fillDigest(ISettlementEscrow.Fill memory f) internal pure returns (bytes32) {
        return typed(domainOf(f.takerChainId, f.takerEscrow), fillStructHash(f));
    }

    function fillStructHash(ISettlementEscrow.Fill memory f) internal pure returns (bytes32) {
        bytes memory a = abi.encode(
            FILL_TYPEHASH, f.fillId, f.orderId, f.sequence, f.makerChainId, f.makerEscrow, f.takerChainId, f.takerEscrow
        );
        bytes memory b = abi.encode(f.payer, f.payee, f.amountIn, f.recipient, f.amountOut, f.dex);
        bytes memory c = abi.encode(f.toMargin, f.hashlock, f.makerExpiry, f.takerExpiry);
        return keccak256(bytes.concat(a, b, c));
    }

    function permitFor(uint256 pk, address spender, uint256 value, uint256 deadline)
        internal
        view
        returns (ISettlementEscrow.Permit memory p)
    {
        address holder = vm.addr(pk);
        bytes32 h = keccak256(abi.encode(PERMIT_TYPEHASH, holder, spender, value, usdc.nonces(holder), deadline));
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(pk, typed(usdc.DOMAIN_SEPARATOR(), h));
        p = ISettlementEscrow.Permit({value: value, deadline: deadline, v: v, r: r, s: s});
    }

    function noPermit() internal pure returns (ISettlementEscrow.Permit memory p) {}

    // ------------------------------------------------------------ builders

    function fundOrder(bytes32 id, uint256 amount) internal view returns (ISettlementEscrow.FundOrder memory) {
        return ISettlementEscrow.FundOrder({
            orderId: id,
            owner: owner,
            operator: operator,
            quoteSigner: quoteSigner,
            amount: amount,
            deadline: block.timestamp + 1 hours
        });
    }

    /// @dev Funds `id` with `amount` for `owner` through a permit, relayed by `relayer`.
    function fundWithPermit(bytes32 id, uint256 amount) internal returns (ISettlementEscrow.FundOrder memory o) {
        o = fundOrder(id, amount);
        ISettlementEscrow.Permit memory p = permitFor(ownerPk, address(escrow), amount, block.timestamp + 1 hours);
        bytes memory s = sig(ownerPk, fundDigest(escrow, o));
        vm.prank(relayer);
        escrow.fund(o, s, p);
    }

    function closeOffer(bytes32 id, uint32 dex, bool toMargin, uint256 nonce)
        internal
        view
        returns (ISettlementEscrow.CloseOffer memory)
    {
        return ISettlementEscrow.CloseOffer({
            orderId: id,
            owner: owner,
            dex: dex,
            toMargin: toMargin,
            nonce: nonce,
            deadline: block.timestamp + 1 hours
        });
    }

    /// @dev One quote: 1 unit out for 1 unit in on chain `takerChainId`, paying `payee`.
    function quoteSet(bytes32 id, uint256 takerChainId, uint256 quoteSize)
        internal
        view
        returns (ISettlementEscrow.QuoteSet memory s)
    {
        s.orderId = id;
        s.sequence = 7;
        s.generation = 3;
        s.quoteSize = quoteSize;
        s.validUntil = uint64(block.timestamp + 60);
        s.quotes = new ISettlementEscrow.Quote[](2);
        s.quotes[0] = ISettlementEscrow.Quote({
            chainId: 12345,
            token: address(0x7070),
            recipient: address(0xD00D),
            supply: 1,
            receive_: 2,
            minFill: 1
        });
        s.quotes[1] = ISettlementEscrow.Quote({
            chainId: takerChainId,
            token: address(usdc),
            recipient: payee,
            supply: 100,
            receive_: 101,
            minFill: 10e6
        });
    }

    /// @dev A fill of `amountOut` at exactly the quote's price, maker and taker both on this chain and escrow
    ///      unless the caller edits the escrows/chains.
    function fillOf(bytes32 fillId, bytes32 id, uint256 amountOut) internal view returns (ISettlementEscrow.Fill memory f) {
        f.fillId = fillId;
        f.orderId = id;
        f.sequence = 7;
        f.makerChainId = block.chainid;
        f.makerEscrow = address(escrow);
        f.takerChainId = block.chainid;
        f.takerEscrow = address(escrow);
        f.payer = payer;
        f.payee = payee;
        f.amountIn = (amountOut * 101 + 99) / 100; // round up: the maker never gets less than its price
        f.recipient = recipient;
        f.amountOut = amountOut;
        f.dex = 0;
        f.toMargin = true;
        f.hashlock = HASHLOCK;
        f.makerExpiry = uint64(block.timestamp + 1 hours);
        f.takerExpiry = uint64(block.timestamp + 1 hours + REVEAL);
    }

    function lockFill(ISettlementEscrow.Fill memory f, ISettlementEscrow.QuoteSet memory s) internal {
        bytes memory fs = sig(payerPk, fillDigest(f));
        bytes memory qs = sig(quotePk, quoteSetDigest(escrow, s));
        vm.prank(operator);
        escrow.lock(f, fs, s, 1, qs);
    }

    function payFill(ISettlementEscrow.Fill memory f) internal {
        ISettlementEscrow.Permit memory p = permitFor(payerPk, address(escrow), f.amountIn, block.timestamp + 1 hours);
        bytes memory fs = sig(payerPk, fillDigest(f));
        vm.prank(relayer);
        escrow.pay(f, fs, p);
    }

    /// @dev Σ liabilities must equal the escrow's token balance whenever nobody donated.
    function assertSolvent() internal view {
        assertEq(usdc.balanceOf(address(escrow)), escrow.totalLiabilities(), "balance == liabilities");
    }
}
