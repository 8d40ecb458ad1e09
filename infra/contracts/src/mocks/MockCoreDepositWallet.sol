// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {IMockCoreDepositWallet, IMockVenue} from "../interfaces/IVenueMocks.sol";

/// @title MockCoreDepositWallet
/// @notice Devnet stand-in for Circle's CoreDepositWallet. Keeps the deposited USDC and records each credit per
///         (user, dex) so that the Hyperliquid simulator (and tests) can read HyperCore margin from the chain.
contract MockCoreDepositWallet is IMockCoreDepositWallet, Ownable {
    using SafeERC20 for IERC20;

    /// @notice The deposited token.
    IERC20 public immutable usdc;
    /// @inheritdoc IMockCoreDepositWallet
    mapping(address user => mapping(uint32 dex => uint256)) public deposits;
    /// @inheritdoc IMockVenue
    bool public refusing;

    /// @param usdc_ The token credited (MockUSDC on devnet).
    /// @param owner_ Who may switch refusal and release funds (the devnet deployer).
    constructor(IERC20 usdc_, address owner_) Ownable(owner_) {
        usdc = usdc_;
    }

    /// @inheritdoc IMockVenue
    function setRefusing(bool refusing_) external onlyOwner {
        refusing = refusing_;
        emit RefusingSet(refusing_);
    }

    /// @inheritdoc IMockVenue
    function release(address to, uint256 amount) external onlyOwner {
        emit Released(to, amount);
        usdc.safeTransfer(to, amount);
    }

    /// @notice Credits `recipient` on `destinationDex` (0 perps, 2^32-1 spot) with USDC pulled from the caller.
    function depositFor(address recipient, uint256 amount, uint32 destinationDex) external {
        _deposit(recipient, amount, destinationDex);
    }

    /// @notice Credits the caller on `destinationDex` with USDC pulled from the caller.
    function deposit(uint256 amount, uint32 destinationDex) external {
        _deposit(msg.sender, amount, destinationDex);
    }

    function _deposit(address recipient, uint256 amount, uint32 dex) private {
        if (refusing) revert DepositRefused();
        if (dex != 0 && dex != type(uint32).max) revert DepositNotAllowed();
        deposits[recipient][dex] += amount;
        emit CoreDeposit(msg.sender, recipient, amount, dex);
        usdc.safeTransferFrom(msg.sender, address(this), amount);
    }
}
