// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice The subset of forge's cheatcodes these tests use (forge-std is not vendored: everything here must work
///         offline from npm packages). Signatures match forge-std's Vm.sol.
interface Vm {
    struct Log {
        bytes32[] topics;
        bytes data;
        address emitter;
    }

    function warp(uint256 newTimestamp) external;
    function chainId(uint256 newChainId) external;
    function prank(address msgSender) external;
    function startPrank(address msgSender) external;
    function stopPrank() external;
    function expectRevert() external;
    function expectRevert(bytes4 revertData) external;
    function expectRevert(bytes calldata revertData) external;
    function expectEmit(bool checkTopic1, bool checkTopic2, bool checkTopic3, bool checkData, address emitter)
        external;
    function recordLogs() external;
    function getRecordedLogs() external returns (Log[] memory logs);
    function sign(uint256 privateKey, bytes32 digest) external pure returns (uint8 v, bytes32 r, bytes32 s);
    function addr(uint256 privateKey) external pure returns (address keyAddr);
    function assume(bool condition) external pure;
    function label(address account, string calldata newLabel) external;
    function etch(address target, bytes calldata newRuntimeBytecode) external;
    function getBlockTimestamp() external view returns (uint256 timestamp);
    function envOr(string calldata name, uint256 defaultValue) external view returns (uint256 value);
    function skip(bool skipTest) external;

    function assertTrue(bool condition, string calldata err) external pure;
    function assertFalse(bool condition, string calldata err) external pure;
    function assertEq(bool left, bool right, string calldata err) external pure;
    function assertEq(uint256 left, uint256 right, string calldata err) external pure;
    function assertEq(address left, address right, string calldata err) external pure;
    function assertEq(bytes32 left, bytes32 right, string calldata err) external pure;
    function assertGe(uint256 left, uint256 right, string calldata err) external pure;
}
