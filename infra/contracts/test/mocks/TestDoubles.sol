// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {IMarginRouter} from "../../src/interfaces/IMarginRouter.sol";

/// @notice Misbehaving routers: the escrow must never lose track of funds because of them.
contract PartialRouter is IMarginRouter {
    address public immutable token;

    constructor(address token_) {
        token = token_;
    }

    /// @notice Pulls half and "succeeds".
    function deposit(address, uint256 amount, uint32) external {
        IERC20(token).transferFrom(msg.sender, address(this), amount / 2);
    }
}

contract NoopRouter is IMarginRouter {
    address public immutable token;

    constructor(address token_) {
        token = token_;
    }

    /// @notice Succeeds without pulling anything (treated as a refusal).
    function deposit(address, uint256, uint32) external {}
}

contract GasGuzzlerRouter is IMarginRouter {
    address public immutable token;

    constructor(address token_) {
        token = token_;
    }

    /// @notice Burns every unit of gas it is given.
    function deposit(address, uint256, uint32) external view {
        uint256 i;
        while (gasleft() > 0) {
            i++;
        }
    }
}

/// @notice Takes a 1% fee on transfers: unsupported, must be refused rather than mis-accounted.
contract FeeToken is ERC20 {
    constructor() ERC20("Fee", "FEE") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function _update(address from, address to, uint256 value) internal override {
        if (from != address(0) && to != address(0)) {
            uint256 fee = value / 100;
            super._update(from, address(0xFEE), fee);
            value -= fee;
        }
        super._update(from, to, value);
    }
}

/// @notice A smart-contract owner: ERC-1271 valid when its `signer` key signed the digest.
contract Wallet1271 is IERC1271 {
    address public immutable signer;

    constructor(address signer_) {
        signer = signer_;
    }

    function approve(IERC20 token, address spender, uint256 amount) external {
        require(msg.sender == signer, "not signer");
        token.approve(spender, amount);
    }

    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4) {
        (address rec, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, signature);
        return err == ECDSA.RecoverError.NoError && rec == signer ? IERC1271.isValidSignature.selector : bytes4(0);
    }
}
