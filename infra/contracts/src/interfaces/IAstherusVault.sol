// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IAstherusVault
/// @notice The subset of Aster's vault that routers use.
/// @dev On the real vault `depositFor` is gated by `DEPOSIT_ROLE`: the router must hold it, or there is no margin
///      path (a plain `deposit` would credit the router itself, never the user).
interface IAstherusVault {
    /// @notice Same shape as the real vault's event; `account` is the credited account.
    event Deposit(address indexed account, address indexed currency, bool isNative, uint256 amount, uint256 broker);

    /// @notice Credits `forAddress` with `amount` of `currency` pulled from the caller.
    function depositFor(address currency, address forAddress, uint256 amount, uint256 broker) external;

    /// @notice Credits the caller with `amount` of `currency` pulled from the caller.
    function deposit(address currency, uint256 amount, uint256 broker) external;
}
