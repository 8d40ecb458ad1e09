// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Signing} from "./Signing.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ISettlementEscrow} from "../../src/interfaces/ISettlementEscrow.sol";
import {IMarginRouter} from "../../src/interfaces/IMarginRouter.sol";
import {SettlementEscrow} from "../../src/SettlementEscrow.sol";
import {HyperliquidMarginRouter} from "../../src/routers/HyperliquidMarginRouter.sol";
import {MockCoreDepositWallet} from "../../src/mocks/MockCoreDepositWallet.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";

/// @notice Deploys a Hyperliquid-shaped chain (MockUSDC, MockCoreDepositWallet, router, escrow) with named actors,
///         and builds typed data for them.
abstract contract EscrowFixture is Signing {
    uint64 internal constant REVEAL = 600;
    uint64 internal constant MAX_LOCK = 1 days;
    uint32 internal constant SPOT = type(uint32).max;
    uint256 internal constant T0 = 1_700_000_000;

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

    function permitFor(uint256 pk, address spender, uint256 value, uint256 deadline)
        internal
        view
        returns (ISettlementEscrow.Permit memory)
    {
        return permitSig(usdc, pk, spender, value, deadline);
    }

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
        bytes memory s = sig(ownerPk, fundDigest(address(escrow), o));
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
        bytes memory qs = sig(quotePk, quoteSetDigest(address(escrow), s));
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
