// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Signing} from "../../utils/Signing.sol";
import {ISettlementEscrowV2} from "../../../src/interfaces/ISettlementEscrowV2.sol";
import {MockUSDC} from "../../../src/mocks/MockUSDC.sol";

/// @notice v2 digests, computed here from the pinned type strings (notes/v2-types.md) field by field, independently
///         of EscrowHashingV2, so a mistake in either place shows up as an invalid signature; plus a Merkle tree
///         builder (commutative keccak pairs, double-hashed leaves, as OpenZeppelin's MerkleProof verifies).
abstract contract V2Signing is Signing {
    bytes32 internal constant V2_FUND_ORDER_TYPEHASH = keccak256(
        "FundOrder(bytes32 orderId,address owner,address operator,address quoteSigner,uint256 amount,uint256 deadline)"
    );
    bytes32 internal constant V2_CLOSE_OFFER_TYPEHASH =
        keccak256("CloseOffer(bytes32 orderId,address owner,uint32 dex,bool toMargin,uint256 nonce,uint256 deadline)");
    bytes32 internal constant V2_QUOTE_TYPEHASH = keccak256(
        "Quote(uint256 chainId,address token,address escrow,address recipient,uint256 supply,uint256 receive,uint256 minFill)"
    );
    bytes32 internal constant V2_QUOTE_SET_TYPEHASH = keccak256(
        "QuoteSet(address owner,bytes32 orderId,uint64 sequence,uint64 generation,uint256 quoteSize,uint64 issuedAt,uint64 validUntil,bytes32 hashlockRoot,uint32 hashlockCount,Quote[] quotes)Quote(uint256 chainId,address token,address escrow,address recipient,uint256 supply,uint256 receive,uint256 minFill)"
    );
    bytes32 internal constant V2_FILL_TYPEHASH = keccak256(
        "Fill(bytes32 fillId,address owner,bytes32 orderId,uint64 sequence,uint256 makerChainId,address makerEscrow,uint256 takerChainId,address takerEscrow,address payer,address payee,uint256 amountIn,address recipient,uint256 amountOut,uint32 dex,bool toMargin,bytes32 hashlock,uint32 hashlockIndex,address payKey,uint64 payBy,uint64 makerExpiry,uint64 takerExpiry)"
    );
    bytes32 internal constant V2_PAY_TAKE_TYPEHASH = keccak256("PayTake(bytes32[] fills)");
    bytes32 internal constant V2_CANCEL_FILL_TYPEHASH = keccak256("CancelFill(bytes32 fill)");

    function domainOf2(uint256 chainId, address escrowAddr) internal pure returns (bytes32) {
        return keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256("SettlementEscrow"),
                keccak256("2"),
                chainId,
                escrowAddr
            )
        );
    }

    function orderKeyOf(address owner, bytes32 orderId) internal pure returns (bytes32) {
        return keccak256(abi.encode(owner, orderId));
    }

    function fundDigest2(uint256 chainId, address e, ISettlementEscrowV2.FundOrder memory o)
        internal
        pure
        returns (bytes32)
    {
        bytes32 h = keccak256(
            abi.encode(V2_FUND_ORDER_TYPEHASH, o.orderId, o.owner, o.operator, o.quoteSigner, o.amount, o.deadline)
        );
        return typed(domainOf2(chainId, e), h);
    }

    function closeDigest2(uint256 chainId, address e, ISettlementEscrowV2.CloseOffer memory c)
        internal
        pure
        returns (bytes32)
    {
        bytes32 h = keccak256(
            abi.encode(V2_CLOSE_OFFER_TYPEHASH, c.orderId, c.owner, c.dex, c.toMargin, c.nonce, c.deadline)
        );
        return typed(domainOf2(chainId, e), h);
    }

    function quoteSetDigest2(uint256 chainId, address e, ISettlementEscrowV2.QuoteSet memory s)
        internal
        pure
        returns (bytes32)
    {
        bytes32[] memory hs = new bytes32[](s.quotes.length);
        for (uint256 i; i < s.quotes.length; ++i) {
            ISettlementEscrowV2.Quote memory q = s.quotes[i];
            hs[i] = keccak256(
                abi.encode(
                    V2_QUOTE_TYPEHASH, q.chainId, q.token, q.escrow, q.recipient, q.supply, q.receive_, q.minFill
                )
            );
        }
        bytes memory a = abi.encode(V2_QUOTE_SET_TYPEHASH, s.owner, s.orderId, s.sequence, s.generation);
        bytes memory b = abi.encode(s.quoteSize, s.issuedAt, s.validUntil, s.hashlockRoot, s.hashlockCount);
        return typed(domainOf2(chainId, e), keccak256(bytes.concat(a, b, abi.encode(keccak256(abi.encodePacked(hs))))));
    }

    function fillStructHash2(ISettlementEscrowV2.Fill memory f) internal pure returns (bytes32) {
        bytes memory a = abi.encode(
            V2_FILL_TYPEHASH,
            f.fillId,
            f.owner,
            f.orderId,
            f.sequence,
            f.makerChainId,
            f.makerEscrow,
            f.takerChainId,
            f.takerEscrow
        );
        bytes memory b = abi.encode(f.payer, f.payee, f.amountIn, f.recipient, f.amountOut, f.dex, f.toMargin);
        bytes memory c = abi.encode(f.hashlock, f.hashlockIndex, f.payKey, f.payBy, f.makerExpiry, f.takerExpiry);
        return keccak256(bytes.concat(a, b, c));
    }

    /// @dev The Fill digest: its EIP-712 digest in the taker escrow's domain.
    function fillDigest2(ISettlementEscrowV2.Fill memory f) internal pure returns (bytes32) {
        return typed(domainOf2(f.takerChainId, f.takerEscrow), fillStructHash2(f));
    }

    function payTakeDigest(uint256 chainId, address e, bytes32[] memory digests) internal pure returns (bytes32) {
        return
            typed(
                domainOf2(chainId, e), keccak256(abi.encode(V2_PAY_TAKE_TYPEHASH, keccak256(abi.encodePacked(digests))))
            );
    }

    function cancelDigest(uint256 chainId, address e, bytes32 digest) internal pure returns (bytes32) {
        return typed(domainOf2(chainId, e), keccak256(abi.encode(V2_CANCEL_FILL_TYPEHASH, digest)));
    }

    function permit2(MockUSDC token, uint256 pk, address spender, uint256 value, uint256 deadline)
        internal
        view
        returns (ISettlementEscrowV2.Permit memory p)
    {
        address holder = vm.addr(pk);
        bytes32 h = keccak256(abi.encode(PERMIT_TYPEHASH, holder, spender, value, token.nonces(holder), deadline));
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(pk, typed(token.DOMAIN_SEPARATOR(), h));
        p = ISettlementEscrowV2.Permit({value: value, deadline: deadline, v: v, r: r, s: s});
    }

    function noPermit2() internal pure returns (ISettlementEscrowV2.Permit memory p) {}

    function one(bytes32 x) internal pure returns (bytes32[] memory a) {
        a = new bytes32[](1);
        a[0] = x;
    }

    // ------------------------------------------------------------ hashlocks and Merkle trees

    function hashlockOf(bytes32 secret) internal pure returns (bytes32) {
        return keccak256(abi.encodePacked(secret));
    }

    function leafOf(uint256 index, bytes32 hashlock) internal pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(index, hashlock))));
    }

    function hashPair(bytes32 a, bytes32 b) internal pure returns (bytes32) {
        return a < b ? keccak256(abi.encodePacked(a, b)) : keccak256(abi.encodePacked(b, a));
    }

    /// @dev The leaves of `hashlocks` (leaf i = leafOf(i, hashlocks[i])).
    function leavesOf(bytes32[] memory hashlocks) internal pure returns (bytes32[] memory leaves) {
        leaves = new bytes32[](hashlocks.length);
        for (uint256 i; i < hashlocks.length; ++i) {
            leaves[i] = leafOf(i, hashlocks[i]);
        }
    }

    /// @dev Pairs neighbours level by level; an unpaired last node moves up unchanged.
    function merkleRoot(bytes32[] memory leaves) internal pure returns (bytes32) {
        bytes32[] memory level = leaves;
        while (level.length > 1) {
            level = _up(level);
        }
        return level[0];
    }

    function merkleProof(bytes32[] memory leaves, uint256 index) internal pure returns (bytes32[] memory proof) {
        bytes32[] memory buf = new bytes32[](32);
        uint256 n;
        bytes32[] memory level = leaves;
        while (level.length > 1) {
            uint256 sibling = index ^ 1;
            if (sibling < level.length) buf[n++] = level[sibling];
            level = _up(level);
            index >>= 1;
        }
        proof = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            proof[i] = buf[i];
        }
    }

    function _up(bytes32[] memory level) private pure returns (bytes32[] memory next) {
        next = new bytes32[]((level.length + 1) / 2);
        for (uint256 i; i < next.length; ++i) {
            next[i] = 2 * i + 1 < level.length ? hashPair(level[2 * i], level[2 * i + 1]) : level[2 * i];
        }
    }
}
