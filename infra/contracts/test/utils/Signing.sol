// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {TestBase} from "./TestBase.sol";
import {ISettlementEscrow} from "../../src/interfaces/ISettlementEscrow.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";

/// @notice Signing helpers. Digests are computed here from the type strings independently of EscrowHashing (fields
///         listed one by one), so a mistake in either place shows up as an invalid signature.
abstract contract Signing is TestBase {
    uint256 internal constant SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141;
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

    function fundDigest(address e, ISettlementEscrow.FundOrder memory o) internal view returns (bytes32) {
        bytes32 h = keccak256(
            abi.encode(FUND_ORDER_TYPEHASH, o.orderId, o.owner, o.operator, o.quoteSigner, o.amount, o.deadline)
        );
        return typed(domainOf(block.chainid, e), h);
    }

    function closeDigest(address e, ISettlementEscrow.CloseOffer memory c) internal view returns (bytes32) {
        bytes32 h =
            keccak256(abi.encode(CLOSE_OFFER_TYPEHASH, c.orderId, c.owner, c.dex, c.toMargin, c.nonce, c.deadline));
        return typed(domainOf(block.chainid, e), h);
    }

    function quoteSetDigest(address e, ISettlementEscrow.QuoteSet memory s) internal view returns (bytes32) {
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
        return typed(domainOf(block.chainid, e), h);
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

    function permitSig(MockUSDC token, uint256 pk, address spender, uint256 value, uint256 deadline)
        internal
        view
        returns (ISettlementEscrow.Permit memory p)
    {
        address holder = vm.addr(pk);
        bytes32 h = keccak256(abi.encode(PERMIT_TYPEHASH, holder, spender, value, token.nonces(holder), deadline));
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(pk, typed(token.DOMAIN_SEPARATOR(), h));
        p = ISettlementEscrow.Permit({value: value, deadline: deadline, v: v, r: r, s: s});
    }

    function noPermit() internal pure returns (ISettlementEscrow.Permit memory p) {}
}
