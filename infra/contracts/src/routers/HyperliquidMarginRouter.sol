// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

import {IMarginRouter} from "../interfaces/IMarginRouter.sol";
import {ICoreDepositWallet} from "../interfaces/ICoreDepositWallet.sol";

/// @title HyperliquidMarginRouter
/// @notice Credits HyperCore margin through Circle's CoreDepositWallet: dex 0 = perps, 4294967295 = spot.
/// @dev Stateless and permissionless: it only ever moves the caller's own tokens, pulled and forwarded in one call,
///      and resets its allowance afterwards, so it holds nothing between calls.
contract HyperliquidMarginRouter is IMarginRouter {
    using SafeERC20 for IERC20;

    /// @notice HyperCore's default perps dex.
    uint32 public constant PERPS_DEX = 0;
    /// @notice HyperCore's spot dex.
    uint32 public constant SPOT_DEX = type(uint32).max;

    IERC20 private immutable _token;
    /// @notice Circle's CoreDepositWallet on this chain.
    ICoreDepositWallet public immutable coreDepositWallet;

    /// @param token_ USDC on HyperEVM (or the devnet MockUSDC).
    /// @param coreDepositWallet_ CoreDepositWallet (or the devnet MockCoreDepositWallet).
    constructor(IERC20 token_, ICoreDepositWallet coreDepositWallet_) {
        if (address(token_) == address(0) || address(coreDepositWallet_) == address(0)) revert ZeroAddress();
        _token = token_;
        coreDepositWallet = coreDepositWallet_;
    }

    /// @inheritdoc IMarginRouter
    function token() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc IMarginRouter
    /// @dev Any dex other than perps (0) and spot (2^32-1) is refused here rather than risking a silent loss.
    function deposit(address user, uint256 amount, uint32 dex) external {
        if (dex != PERPS_DEX && dex != SPOT_DEX) revert UnsupportedDex(dex);
        _token.safeTransferFrom(msg.sender, address(this), amount);
        _token.forceApprove(address(coreDepositWallet), amount);
        coreDepositWallet.depositFor(user, amount, dex);
        _token.forceApprove(address(coreDepositWallet), 0);
        emit MarginDeposited(msg.sender, user, amount, dex);
    }
}
