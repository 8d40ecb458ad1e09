// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {IMockAsterVault, IMockVenue} from "../interfaces/IVenueMocks.sol";

/// @title MockAsterVault
/// @notice Devnet stand-in for Aster's vault: `depositFor` needs the deposit role (like DEPOSIT_ROLE), emits the
///         real vault's `Deposit` event and records each credit per (user, currency).
/// @dev Holds deposits of any currency; `release` pays out `token` only (the devnet's single token).
contract MockAsterVault is IMockAsterVault, Ownable {
    using SafeERC20 for IERC20;

    /// @notice The token `release` pays out.
    IERC20 public immutable token;
    /// @inheritdoc IMockAsterVault
    mapping(address user => mapping(address currency => uint256)) public deposits;
    /// @inheritdoc IMockAsterVault
    mapping(address account => bool) public depositors;
    /// @inheritdoc IMockVenue
    bool public refusing;

    /// @param token_ The devnet token (MockUSDC).
    /// @param owner_ Who may grant the deposit role, switch refusal and release funds.
    constructor(IERC20 token_, address owner_) Ownable(owner_) {
        token = token_;
    }

    /// @inheritdoc IMockVenue
    function setRefusing(bool refusing_) external onlyOwner {
        refusing = refusing_;
        emit RefusingSet(refusing_);
    }

    /// @inheritdoc IMockAsterVault
    function setDepositor(address account, bool allowed) external onlyOwner {
        depositors[account] = allowed;
        emit DepositorSet(account, allowed);
    }

    /// @inheritdoc IMockVenue
    function release(address to, uint256 amount) external onlyOwner {
        emit Released(to, amount);
        token.safeTransfer(to, amount);
    }

    /// @notice Credits `forAddress` (deposit role only), pulling `amount` of `currency` from the caller.
    function depositFor(address currency, address forAddress, uint256 amount, uint256 broker) external {
        if (!depositors[msg.sender]) revert DepositNotAllowed();
        _deposit(currency, forAddress, amount, broker);
    }

    /// @notice Credits the caller, pulling `amount` of `currency` from the caller.
    function deposit(address currency, uint256 amount, uint256 broker) external {
        _deposit(currency, msg.sender, amount, broker);
    }

    function _deposit(address currency, address account, uint256 amount, uint256 broker) private {
        if (refusing) revert DepositRefused();
        deposits[account][currency] += amount;
        emit Deposit(account, currency, false, amount, broker);
        IERC20(currency).safeTransferFrom(msg.sender, address(this), amount);
    }
}
