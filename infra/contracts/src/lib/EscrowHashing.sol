// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ISettlementEscrow} from "../interfaces/ISettlementEscrow.sol";

/// @title EscrowHashing
/// @notice EIP-712 struct hashes of the escrow's typed data. The type strings below are the single Solidity source
///         of truth; src/Domain/EscrowTypedData.ts must produce byte-identical digests (tested both ways).
/// @dev FundOrder, CloseOffer, Quote and Fill are static structs: `abi.encode(TYPEHASH, s)` lays out exactly
///      `typeHash ‖ enc(field₁) ‖ … ‖ enc(fieldₙ)` (every atomic field padded to 32 bytes), which is EIP-712's
///      encodeData. It also keeps the 17-field Fill off the stack.
library EscrowHashing {
    bytes32 internal constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 internal constant NAME_HASH = keccak256("SettlementEscrow");
    bytes32 internal constant VERSION_HASH = keccak256("1");

    bytes32 internal constant FUND_ORDER_TYPEHASH = keccak256(
        "FundOrder(bytes32 orderId,address owner,address operator,address quoteSigner,uint256 amount,uint256 deadline)"
    );
    bytes32 internal constant CLOSE_OFFER_TYPEHASH =
        keccak256("CloseOffer(bytes32 orderId,address owner,uint32 dex,bool toMargin,uint256 nonce,uint256 deadline)");
    bytes32 internal constant QUOTE_TYPEHASH = keccak256(
        "Quote(uint256 chainId,address token,address recipient,uint256 supply,uint256 receive,uint256 minFill)"
    );
    bytes32 internal constant QUOTE_SET_TYPEHASH = keccak256(
        "QuoteSet(bytes32 orderId,uint64 sequence,uint64 generation,uint256 quoteSize,uint64 validUntil,Quote[] quotes)"
        "Quote(uint256 chainId,address token,address recipient,uint256 supply,uint256 receive,uint256 minFill)"
    );
    bytes32 internal constant FILL_TYPEHASH = keccak256(
        "Fill(bytes32 fillId,bytes32 orderId,uint64 sequence,uint256 makerChainId,address makerEscrow,"
        "uint256 takerChainId,address takerEscrow,address payer,address payee,uint256 amountIn,address recipient,"
        "uint256 amountOut,uint32 dex,bool toMargin,bytes32 hashlock,uint64 makerExpiry,uint64 takerExpiry)"
    );

    /// @notice The domain separator of a SettlementEscrow at `escrow` on `chainId`.
    function domainSeparator(uint256 chainId, address escrow) internal pure returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, chainId, escrow));
    }

    function hashFundOrder(ISettlementEscrow.FundOrder calldata o) internal pure returns (bytes32) {
        return keccak256(abi.encode(FUND_ORDER_TYPEHASH, o));
    }

    function hashCloseOffer(ISettlementEscrow.CloseOffer calldata c) internal pure returns (bytes32) {
        return keccak256(abi.encode(CLOSE_OFFER_TYPEHASH, c));
    }

    function hashQuoteSet(ISettlementEscrow.QuoteSet calldata s) internal pure returns (bytes32) {
        uint256 n = s.quotes.length;
        bytes32[] memory quoteHashes = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            quoteHashes[i] = keccak256(abi.encode(QUOTE_TYPEHASH, s.quotes[i]));
        }
        return keccak256(
            abi.encode(
                QUOTE_SET_TYPEHASH,
                s.orderId,
                s.sequence,
                s.generation,
                s.quoteSize,
                s.validUntil,
                keccak256(abi.encodePacked(quoteHashes))
            )
        );
    }

    function hashFill(ISettlementEscrow.Fill calldata f) internal pure returns (bytes32) {
        return keccak256(abi.encode(FILL_TYPEHASH, f));
    }

    /// @notice The Fill's digest in its taker chain escrow's domain (where the payer signed it).
    function fillDigest(ISettlementEscrow.Fill calldata f) internal pure returns (bytes32) {
        return toTypedDataHash(domainSeparator(f.takerChainId, f.takerEscrow), hashFill(f));
    }

    function toTypedDataHash(bytes32 domainSep, bytes32 structHash) internal pure returns (bytes32) {
        return keccak256(abi.encodePacked(hex"1901", domainSep, structHash));
    }
}
