// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ISettlementEscrowV2} from "../interfaces/ISettlementEscrowV2.sol";

/// @title EscrowHashingV2
/// @notice EIP-712 struct hashes of settlement v2's typed data and its hashlock Merkle leaves. The type strings below
///         are pinned (notes/v2-types.md): the TypeScript side builds byte-identical digests from the same strings.
/// @dev FundOrder, CloseOffer, Quote and Fill are static structs: `abi.encode(TYPEHASH, s)` lays out exactly
///      `typeHash ‖ enc(field₁) ‖ … ‖ enc(fieldₙ)` (every atomic field padded to 32 bytes), which is EIP-712's
///      encodeData; it also keeps the 21-field Fill off the stack. Arrays follow EIP-712: `bytes32[]` and `Quote[]`
///      encode as the keccak256 of the concatenated element encodings.
library EscrowHashingV2 {
    bytes32 internal constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 internal constant NAME_HASH = keccak256("SettlementEscrow");
    bytes32 internal constant VERSION_HASH = keccak256("2");

    bytes32 internal constant FUND_ORDER_TYPEHASH = keccak256(
        "FundOrder(bytes32 orderId,address owner,address operator,address quoteSigner,uint256 amount,uint256 deadline)"
    );
    bytes32 internal constant CLOSE_OFFER_TYPEHASH =
        keccak256("CloseOffer(bytes32 orderId,address owner,uint32 dex,bool toMargin,uint256 nonce,uint256 deadline)");
    bytes32 internal constant QUOTE_TYPEHASH = keccak256(
        "Quote(uint256 chainId,address token,address escrow,address recipient,uint256 supply,uint256 receive,"
        "uint256 minFill)"
    );
    bytes32 internal constant QUOTE_SET_TYPEHASH = keccak256(
        "QuoteSet(address owner,bytes32 orderId,uint64 sequence,uint64 generation,uint256 quoteSize,uint64 issuedAt,"
        "uint64 validUntil,bytes32 hashlockRoot,uint32 hashlockCount,Quote[] quotes)"
        "Quote(uint256 chainId,address token,address escrow,address recipient,uint256 supply,uint256 receive,"
        "uint256 minFill)"
    );
    bytes32 internal constant FILL_TYPEHASH = keccak256(
        "Fill(bytes32 fillId,address owner,bytes32 orderId,uint64 sequence,uint256 makerChainId,address makerEscrow,"
        "uint256 takerChainId,address takerEscrow,address payer,address payee,uint256 amountIn,address recipient,"
        "uint256 amountOut,uint32 dex,bool toMargin,bytes32 hashlock,uint32 hashlockIndex,address payKey,uint64 payBy,"
        "uint64 makerExpiry,uint64 takerExpiry)"
    );
    bytes32 internal constant PAY_TAKE_TYPEHASH = keccak256("PayTake(bytes32[] fills)");
    bytes32 internal constant CANCEL_FILL_TYPEHASH = keccak256("CancelFill(bytes32 fill)");

    /// @notice The domain separator of a SettlementEscrow v2 at `escrow` on `chainId`.
    function domainSeparator(uint256 chainId, address escrow) internal pure returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, chainId, escrow));
    }

    /// @notice The storage key of an order: `keccak256(abi.encode(owner, orderId))`.
    function orderKey(address owner, bytes32 orderId) internal pure returns (bytes32) {
        return keccak256(abi.encode(owner, orderId));
    }

    /// @notice Merkle leaf of hashlock `index`: `keccak256(bytes.concat(keccak256(abi.encode(uint256(index), hashlock))))`.
    /// @dev Double hashing (OpenZeppelin StandardMerkleTree) makes a leaf's preimage 32 bytes, never the 64 bytes of
    ///      an internal node, so an internal node can never pass as a leaf.
    function hashlockLeaf(uint256 index, bytes32 hashlock) internal pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(index, hashlock))));
    }

    function hashFundOrder(ISettlementEscrowV2.FundOrder calldata o) internal pure returns (bytes32) {
        return keccak256(abi.encode(FUND_ORDER_TYPEHASH, o));
    }

    function hashCloseOffer(ISettlementEscrowV2.CloseOffer calldata c) internal pure returns (bytes32) {
        return keccak256(abi.encode(CLOSE_OFFER_TYPEHASH, c));
    }

    function hashQuoteSet(ISettlementEscrowV2.QuoteSet calldata s) internal pure returns (bytes32) {
        uint256 n = s.quotes.length;
        bytes32[] memory quoteHashes = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            quoteHashes[i] = keccak256(abi.encode(QUOTE_TYPEHASH, s.quotes[i]));
        }
        bytes memory head =
            abi.encode(QUOTE_SET_TYPEHASH, s.owner, s.orderId, s.sequence, s.generation, s.quoteSize, s.issuedAt);
        bytes memory tail =
            abi.encode(s.validUntil, s.hashlockRoot, s.hashlockCount, keccak256(abi.encodePacked(quoteHashes)));
        return keccak256(bytes.concat(head, tail));
    }

    function hashFill(ISettlementEscrowV2.Fill calldata f) internal pure returns (bytes32) {
        return keccak256(abi.encode(FILL_TYPEHASH, f));
    }

    function hashPayTake(bytes32[] memory digests) internal pure returns (bytes32) {
        return keccak256(abi.encode(PAY_TAKE_TYPEHASH, keccak256(abi.encodePacked(digests))));
    }

    function hashCancelFill(bytes32 digest) internal pure returns (bytes32) {
        return keccak256(abi.encode(CANCEL_FILL_TYPEHASH, digest));
    }

    /// @notice The Fill's digest in its taker chain escrow's domain (where the payer signed it): the key of its lock
    ///         on the maker chain and of its payment on the taker chain.
    function fillDigest(ISettlementEscrowV2.Fill calldata f) internal pure returns (bytes32) {
        return toTypedDataHash(domainSeparator(f.takerChainId, f.takerEscrow), hashFill(f));
    }

    function toTypedDataHash(bytes32 domainSep, bytes32 structHash) internal pure returns (bytes32) {
        return keccak256(abi.encodePacked(hex"1901", domainSep, structHash));
    }
}
