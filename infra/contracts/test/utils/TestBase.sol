// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Vm} from "./Vm.sol";

/// @notice Minimal stand-in for forge-std's Test: the cheatcode handle, `bound`, and the invariant target hooks
///         forge looks up by name (`targetContracts`, `targetSelectors`).
abstract contract TestBase {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    struct FuzzSelector {
        address addr;
        bytes4[] selectors;
    }

    address[] private _targetContracts;
    FuzzSelector[] private _targetSelectors;

    function targetContracts() public view returns (address[] memory) {
        return _targetContracts;
    }

    function targetSelectors() public view returns (FuzzSelector[] memory) {
        return _targetSelectors;
    }

    function targetContract(address target) internal {
        _targetContracts.push(target);
    }

    function targetSelector(FuzzSelector memory selector) internal {
        _targetSelectors.push(selector);
    }

    /// @dev Maps `x` uniformly-ish into [min, max] (inclusive), like forge-std's bound.
    function bound(uint256 x, uint256 min, uint256 max) internal pure returns (uint256) {
        require(min <= max, "bound: min > max");
        if (x >= min && x <= max) return x;
        uint256 size = max - min + 1;
        if (size == 0) return x; // full range
        return min + (x % size);
    }

    function assertTrue(bool c, string memory m) internal pure {
        vm.assertTrue(c, m);
    }

    function assertFalse(bool c, string memory m) internal pure {
        vm.assertFalse(c, m);
    }

    function assertEq(uint256 a, uint256 b, string memory m) internal pure {
        vm.assertEq(a, b, m);
    }

    function assertEq(address a, address b, string memory m) internal pure {
        vm.assertEq(a, b, m);
    }

    function assertEq(bytes32 a, bytes32 b, string memory m) internal pure {
        vm.assertEq(a, b, m);
    }

    function assertEq(bool a, bool b, string memory m) internal pure {
        vm.assertEq(a, b, m);
    }
}
