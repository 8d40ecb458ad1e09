// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IMarginRouter
/// @notice Credits a user's margin on a venue with tokens pulled from the caller.
/// @dev Pull model: the caller approves `amount` of `token()` to the router, then calls `deposit`; the router pulls
///      exactly `amount` with `transferFrom` and forwards it to the venue's deposit contract in the same call. A
///      router never keeps tokens or allowances between calls, so a revert anywhere leaves the caller's tokens (and
///      only its allowance) in place. The escrow relies on this: "refused" means "nothing left the escrow".
interface IMarginRouter {
    /// @notice The venue does not support this destination dex.
    error UnsupportedDex(uint32 dex);
    /// @notice A constructor argument was the zero address.
    error ZeroAddress();

    /// @notice Emitted after the venue accepted a deposit for `user`.
    event MarginDeposited(address indexed caller, address indexed user, uint256 amount, uint32 dex);

    /// @notice The ERC-20 this router moves.
    function token() external view returns (address);

    /// @notice Pulls `amount` of `token()` from the caller and credits it to `user`'s margin on the venue.
    /// @dev Reverts when the venue refuses (unsupported dex, paused, missing role, …).
    /// @param user The venue account credited.
    /// @param amount Token base units.
    /// @param dex Destination on the venue: 0 = perps; 4294967295 = spot where the venue has one.
    function deposit(address user, uint256 amount, uint32 dex) external;
}
