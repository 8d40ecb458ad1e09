// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

import {ILegacyEscrow} from "./interfaces/ILegacyEscrow.sol";

/// @title LegacyEscrow
/// @notice The retired escrow shape the legacy scan reads: offers owned by one address, reclaimable by that owner
///         once `refundAt` has passed. Kept deployable so devnet has history to scan.
contract LegacyEscrow is ILegacyEscrow, ReentrancyGuard {
    using SafeERC20 for IERC20;

    IERC20 private immutable _token;
    mapping(uint256 id => Offer) private _offers;
    /// @inheritdoc ILegacyEscrow
    uint256 public offerCount;

    /// @param token_ The escrowed token.
    constructor(IERC20 token_) {
        _token = token_;
    }

    /// @inheritdoc ILegacyEscrow
    function createOffer(uint256 amount, uint64 refundAt) external nonReentrant returns (uint256 id) {
        if (amount == 0) revert ZeroAmount();
        id = ++offerCount;
        _offers[id] = Offer({owner: msg.sender, refundAt: refundAt, reclaimed: false, amount: amount});
        emit OfferCreated(id, msg.sender, amount, refundAt);
        _token.safeTransferFrom(msg.sender, address(this), amount);
    }

    /// @inheritdoc ILegacyEscrow
    function reclaim(uint256 id) external nonReentrant {
        Offer storage offer = _offers[id];
        if (offer.owner == address(0)) revert UnknownOffer(id);
        if (offer.owner != msg.sender) revert NotOfferOwner(id);
        if (offer.reclaimed) revert AlreadyReclaimed(id);
        if (block.timestamp < offer.refundAt) revert NotYetReclaimable(id, offer.refundAt);
        offer.reclaimed = true;
        emit OfferReclaimed(id, msg.sender, offer.amount);
        _token.safeTransfer(msg.sender, offer.amount);
    }

    /// @inheritdoc ILegacyEscrow
    function getOffer(uint256 id) external view returns (Offer memory) {
        return _offers[id];
    }

    /// @inheritdoc ILegacyEscrow
    function isReclaimable(uint256 id) external view returns (bool) {
        Offer storage offer = _offers[id];
        return offer.owner != address(0) && !offer.reclaimed && block.timestamp >= offer.refundAt;
    }

    /// @inheritdoc ILegacyEscrow
    function token() external view returns (address) {
        return address(_token);
    }
}
