// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";

/// @title MockUSDC
/// @notice Devnet/test USDC: 6 decimals, EIP-2612 permit (domain name "USD Coin", version "1"), open minting.
/// @dev Never deploy outside devnet: anyone can mint.
contract MockUSDC is ERC20, ERC20Permit {
    constructor() ERC20("USD Coin", "USDC") ERC20Permit("USD Coin") {}

    /// @notice 6, like USDC.
    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice Mints `amount` to `to` (anyone; devnet only).
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
