// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ILegacyEscrow
/// @notice A retired deployment shape kept for the legacy scan: single-owner offers reclaimable after `refundAt`.
interface ILegacyEscrow {
    /// @notice One offer (`kind` "offer" in the legacy scan).
    struct Offer {
        address owner;
        uint64 refundAt;
        bool reclaimed;
        uint256 amount;
    }

    error ZeroAmount();
    error UnknownOffer(uint256 id);
    error NotOfferOwner(uint256 id);
    error NotYetReclaimable(uint256 id, uint64 refundAt);
    error AlreadyReclaimed(uint256 id);

    /// @notice An offer was created (funds pulled from `owner`).
    event OfferCreated(uint256 indexed id, address indexed owner, uint256 amount, uint64 refundAt);
    /// @notice The owner took the offer's funds back.
    event OfferReclaimed(uint256 indexed id, address indexed owner, uint256 amount);

    /// @notice Pulls `amount` from the caller into a new offer reclaimable from `refundAt` (Unix seconds).
    /// @return id The new offer's id (sequential from 1).
    function createOffer(uint256 amount, uint64 refundAt) external returns (uint256 id);

    /// @notice The offer's owner takes its funds back once `block.timestamp >= refundAt`.
    function reclaim(uint256 id) external;

    /// @notice Reads an offer (zero values for an unknown id).
    function getOffer(uint256 id) external view returns (Offer memory);

    /// @notice True while the offer holds funds and `refundAt` has passed.
    function isReclaimable(uint256 id) external view returns (bool);

    /// @notice The number of offers created so far (ids are 1..offerCount).
    function offerCount() external view returns (uint256);

    /// @notice The escrowed token.
    function token() external view returns (address);
}
