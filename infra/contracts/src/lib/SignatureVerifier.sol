// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";

/// @title SignatureVerifier
/// @notice `isValidNow` accepts exactly: a 65-byte r‖s‖v ECDSA signature with v ∈ {0,1,27,28} and low s (EIP-2)
///         that recovers to `signer`, or, when `signer` has code, whatever its ERC-1271 `isValidSignature` accepts.
///         `isValidECDSA` accepts the ECDSA case only.
/// @dev OZ ECDSA rejects high s and v ∉ {27,28}; wallets that emit the yParity form (v ∈ {0,1}) are normalised
///      first. ECDSA is tried before ERC-1271 so that EIP-7702 delegated EOAs (which have code) still verify
///      by key. Replay protection never relies on signature bytes (nonces and digests do that).
library SignatureVerifier {
    function isValidNow(address signer, bytes32 digest, bytes calldata signature) internal view returns (bool) {
        if (signer == address(0)) return false;
        if (signature.length == 65) {
            bytes32 r = bytes32(signature[0:32]);
            bytes32 s = bytes32(signature[32:64]);
            uint8 v = uint8(signature[64]);
            if (v < 2) v += 27;
            (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, v, r, s);
            if (err == ECDSA.RecoverError.NoError && recovered == signer) return true;
        }
        if (signer.code.length == 0) return false;
        return SignatureChecker.isValidERC1271SignatureNow(signer, digest, signature);
    }

    /// @notice Plain ECDSA only (never ERC-1271, whatever code `signer` has): the same 65-byte, v ∈ {0,1,27,28},
    ///         low-s rules as `isValidNow`. Settlement v2 checks payers and pay keys with it: a payer's address on
    ///         another chain may be somebody else's contract, so a contract's say-so must never count for it.
    function isValidECDSA(address signer, bytes32 digest, bytes calldata signature) internal pure returns (bool) {
        if (signer == address(0) || signature.length != 65) return false;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 2) v += 27;
        (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, v, r, s);
        return err == ECDSA.RecoverError.NoError && recovered == signer;
    }
}
