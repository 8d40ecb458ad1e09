// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ICoreDepositWallet
/// @notice The subset of Circle's CoreDepositWallet on HyperEVM that routers use (USDC → HyperCore).
/// @dev `destinationDex`: 0 = default perps dex, type(uint32).max = spot. The caller must approve `amount` first;
///      USDC sent directly to the contract is not credited.
interface ICoreDepositWallet {
    /// @notice Credits `recipient` on HyperCore with `amount` USDC pulled from the caller.
    function depositFor(address recipient, uint256 amount, uint32 destinationDex) external;

    /// @notice Credits the caller on HyperCore with `amount` USDC pulled from the caller.
    function deposit(uint256 amount, uint32 destinationDex) external;
}
