// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

import {IMarginRouter} from "../interfaces/IMarginRouter.sol";
import {IAstherusVault} from "../interfaces/IAstherusVault.sol";

/// @title AsterMarginRouter
/// @notice Credits Aster perps margin through the vault's `depositFor` (perps only: dex must be 0).
/// @dev The real vault gates `depositFor` with DEPOSIT_ROLE: without that role granted to this router every deposit
///      reverts, and the escrow falls back to the owner's zero-id balance. Stateless like every router.
contract AsterMarginRouter is IMarginRouter {
    using SafeERC20 for IERC20;

    IERC20 private immutable _token;
    /// @notice The Aster vault on this chain.
    IAstherusVault public immutable vault;
    /// @notice Broker id passed to the vault.
    uint256 public immutable broker;

    /// @param token_ The deposited ERC-20 (USDC/USDT or the devnet MockUSDC).
    /// @param vault_ The AstherusVault (or the devnet MockAsterVault).
    /// @param broker_ The broker id to credit deposits under.
    constructor(IERC20 token_, IAstherusVault vault_, uint256 broker_) {
        if (address(token_) == address(0) || address(vault_) == address(0)) revert ZeroAddress();
        _token = token_;
        vault = vault_;
        broker = broker_;
    }

    /// @inheritdoc IMarginRouter
    function token() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc IMarginRouter
    function deposit(address user, uint256 amount, uint32 dex) external {
        if (dex != 0) revert UnsupportedDex(dex);
        _token.safeTransferFrom(msg.sender, address(this), amount);
        _token.forceApprove(address(vault), amount);
        vault.depositFor(address(_token), user, amount, broker);
        _token.forceApprove(address(vault), 0);
        emit MarginDeposited(msg.sender, user, amount, dex);
    }
}
