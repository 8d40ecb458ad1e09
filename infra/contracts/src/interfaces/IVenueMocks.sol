// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ICoreDepositWallet} from "./ICoreDepositWallet.sol";
import {IAstherusVault} from "./IAstherusVault.sol";

/// @title IMockVenue
/// @notice Devnet-only controls shared by the venue mocks: refuse deposits on demand, pay out for simulators.
interface IMockVenue {
    /// @notice The mock was told to refuse deposits.
    error DepositRefused();
    /// @notice The caller lacks the deposit role (Aster) or the dex is unknown (Hyperliquid).
    error DepositNotAllowed();

    /// @notice The refusing switch changed.
    event RefusingSet(bool refusing);
    /// @notice The venue simulator paid `amount` out of the deposited pool to `to` (a simulated withdrawal).
    event Released(address indexed to, uint256 amount);

    /// @notice Owner only: make every deposit revert (true) or succeed (false).
    function setRefusing(bool refusing) external;

    /// @notice Owner only: pay `amount` of the deposited tokens to `to` (simulated venue withdrawal).
    function release(address to, uint256 amount) external;

    /// @notice Whether deposits currently revert.
    function refusing() external view returns (bool);
}

/// @title IMockCoreDepositWallet
/// @notice Devnet CoreDepositWallet: records every credit per (user, dex) on chain.
interface IMockCoreDepositWallet is ICoreDepositWallet, IMockVenue {
    /// @notice `sender` paid `amount`; `recipient` is credited on `dex`.
    event CoreDeposit(address indexed sender, address indexed recipient, uint256 amount, uint32 dex);

    /// @notice Total credited to `user` on `dex`.
    function deposits(address user, uint32 dex) external view returns (uint256);
}

/// @title IMockAsterVault
/// @notice Devnet Aster vault: records every credit per (user, currency); perps only (Aster has no dex split).
interface IMockAsterVault is IAstherusVault, IMockVenue {
    /// @notice The deposit role changed for `account` (mirrors the real vault's DEPOSIT_ROLE).
    event DepositorSet(address indexed account, bool allowed);

    /// @notice Owner only: grant or revoke the right to call `depositFor`.
    function setDepositor(address account, bool allowed) external;

    /// @notice Whether `account` may call `depositFor`.
    function depositors(address account) external view returns (bool);

    /// @notice Total credited to `user` in `currency`.
    function deposits(address user, address currency) external view returns (uint256);
}
