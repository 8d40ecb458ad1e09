// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {V2Signing} from "../utils/V2Signing.sol";
import {ISettlementEscrowV2} from "../../../src/interfaces/ISettlementEscrowV2.sol";
import {IMarginRouter} from "../../../src/interfaces/IMarginRouter.sol";
import {SettlementEscrowV2} from "../../../src/SettlementEscrowV2.sol";
import {HyperliquidMarginRouter} from "../../../src/routers/HyperliquidMarginRouter.sol";
import {MockCoreDepositWallet} from "../../../src/mocks/MockCoreDepositWallet.sol";
import {MockUSDC} from "../../../src/mocks/MockUSDC.sol";
import {SettlementEscrowV2Canary} from "../SettlementEscrowV2Canary.sol";

/// @notice What a maker client reads and calls on the escrow its lock's Fill names as taker escrow.
interface IPaymentView {
    function getPayment(bytes32 key) external view returns (ISettlementEscrowV2.Payment memory);
    function claimPayment(bytes32 key, bytes32 secret) external;
}

/// @notice The adversary's fake taker escrow: reports whatever payment it was told to and records reveals.
contract FakeEscrow is IPaymentView {
    mapping(bytes32 key => ISettlementEscrowV2.Payment) internal _payments;
    mapping(bytes32 key => bytes32) public revealed;

    function setPayment(bytes32 key, ISettlementEscrowV2.Payment memory p) external {
        _payments[key] = p;
    }

    function getPayment(bytes32 key) external view returns (ISettlementEscrowV2.Payment memory) {
        return _payments[key];
    }

    function claimPayment(bytes32 key, bytes32 secret) external {
        revealed[key] = secret;
    }
}

/// @notice Adversarial-operator handler for settlement v2 over TWO escrows standing for two chains (A = index 0,
///         B = index 1; `vm.chainId` is switched per call, the clock is shared).
///
///         The adversary is the operator (it relays and locks every order, honest ones included) and makes keys of
///         its own: a maker identity (owner, quote signer, payee; its own funded orders and quote sets, whose
///         secrets it knows) and a taker identity (payer, pay key, recipient). It calls every escrow function in any
///         order with arbitrary Fills, secrets, proofs, permits and times, replays every public signature and every
///         public secret, and can deploy a fake escrow.
///
///         Honest parties follow the client rules: makers (owner + quote signer + payee, secrets kept private)
///         quote 1:1 against the other chain's real escrow and reveal (by `claimPayment`) only after seeing, on the
///         escrow their lock's Fill names, a held payment under the lock's key to their payee, with their hashlock,
///         the Fill's amount and at least REVEAL_CUTOFF left, while their own lock is live; takers sign Fills only
///         for their own payer, recipient and fresh pay key, real escrows and a price of at least 1:1, let their pay
///         key sign PayTake only after reading each lock (same key) live, cancel only before authorising or after
///         payBy with no payment, and claim as soon as their payment's secret is public; owners close by signature
///         or directly.
///
///         Every escrow call goes through a low-level call (a revert is an outcome, never a handler failure).
///         Violations found at call time (a claim or reveal that should be impossible, a blocked honest fund, an
///         accepted forgery) are recorded; state invariants are exposed as views. `successes[name]` counts the
///         successful calls of each escrow entry point (both escrows).
contract V2Handler is V2Signing {
    // Short enough that a run of the suite (its warps) crosses several MAX_LOCKs.
    uint64 public constant LOCK_MAX = 1200;
    uint64 public constant PAYBY_MAX = 300;
    uint64 public constant CLAIM_WIN = 300;
    uint64 public constant QUOTE_LIFE = 900;
    uint64 public constant TAKER_TIMEOUT = 300;
    /// @notice The honest maker client's reveal cutoff: it reveals only with at least this long before takerExpiry.
    uint64 public constant REVEAL_CUTOFF = 60;
    uint32 internal constant SPOT = type(uint32).max;
    uint8 internal constant ADV = 2; // OrderRef.who of the adversary's orders

    // ------------------------------------------------------------ world

    SettlementEscrowV2Canary.Hole public hole;
    uint256[2] public chainIds = [uint256(1001), 2002];
    MockUSDC[2] public tokens;
    MockCoreDepositWallet[2] public cdws;
    SettlementEscrowV2[2] public escrows;
    FakeEscrow public fake;

    uint256 internal constant OP_PK = 0x0D1;
    uint256 internal constant ADV_OWNER_PK = 0xE01;
    uint256 internal constant ADV_QUOTE_PK = 0xE02;
    uint256 internal constant ADV_PAYER_PK = 0xE03;
    uint256 internal constant ADV_PAYKEY_PK = 0xE04;
    address public operator;
    address public advOwner;
    address public advPayer;
    address public advPayKey;
    address public advPayee = address(0xAD0E1);
    address public advRecipient = address(0xAD0E2);
    address public relayer = address(0x4E1A7);

    uint256[2] internal ownerPks = [uint256(0x0A1), 0x0A2];
    uint256[2] internal quotePks = [uint256(0x0C1), 0x0C2];
    uint256[2] internal payerPks = [uint256(0x0B1), 0x0B2];
    address[2] public payees = [address(0x9A7EE1), address(0x9A7EE2)];
    address[2] public recipients = [address(0x4EC1), address(0x4EC2)];

    // ------------------------------------------------------------ records

    struct OrderRef {
        uint8 chain;
        uint8 who; // 0, 1: honest maker; ADV: the adversary
        address owner;
        bytes32 id;
    }

    struct SetRef {
        uint8 chain;
        uint256 orderIdx;
        uint64 sequence;
        uint256 quoteSize;
        uint64 issuedAt;
        uint64 validUntil;
        bytes32 root;
        uint32 count;
        ISettlementEscrowV2.Quote quote;
        bytes sig;
    }

    struct LockRec {
        uint8 chain;
        bytes32 key;
        bytes32 digest;
        uint256 orderIdx;
        ISettlementEscrowV2.Fill f;
    }

    struct PayRec {
        uint8 chain;
        bytes32 key;
        bytes32 digest;
        bool honest;
        ISettlementEscrowV2.Fill f;
    }

    struct Take {
        uint8 taker;
        uint8 payChain;
        uint256 payKeyPk; // the honest client's secret: adversary actions never read it
        uint256 n;
        uint256 setIdx;
        bool authorised;
        bool cancelled;
    }

    OrderRef[] public orders;
    mapping(uint8 chain => mapping(address owner => mapping(bytes32 id => uint256))) internal orderIdxPlus1;
    mapping(uint256 orderIdx => uint64) internal lastSequence;
    /// @notice When an honest owner first asked to close the order (0: never).
    mapping(uint256 orderIdx => uint256) public closeAskedAt;

    SetRef[] internal sets;
    mapping(uint256 setIdx => bytes32[]) internal setHashlocks;
    mapping(bytes32 hashlock => bytes32) internal makerSecret; // honest makers only: private
    mapping(bytes32 hashlock => bytes32) internal advSecret; // the adversary's own
    mapping(bytes32 hashlock => bytes32) public publicSecret; // every secret that appeared in a transaction
    bytes32[] internal publicSecrets;

    LockRec[] internal locks;
    mapping(uint8 chain => mapping(bytes32 key => uint256)) internal lockAtPlus1;
    PayRec[] internal pays;
    mapping(uint8 chain => mapping(bytes32 key => uint256)) internal payAtPlus1;
    mapping(uint8 chain => mapping(bytes32 digest => bool)) public paymentClaimedDigest;

    Take[] internal takes;
    mapping(uint256 takeIdx => mapping(uint256 i => ISettlementEscrowV2.Fill)) internal takeFill;
    mapping(uint256 takeIdx => mapping(uint256 i => bytes)) internal takeFillSig; // public once signed
    mapping(uint256 takeIdx => bytes) internal takeAuth; // public once signed
    mapping(uint256 takeIdx => ISettlementEscrowV2.Permit) internal takePermit; // public once signed

    ISettlementEscrowV2.CloseOffer internal lastHonestClose;
    bytes internal lastHonestCloseSig;
    uint8 internal lastHonestCloseChain;

    uint256[2] public mintedMaker;
    uint256[2] public mintedTaker;
    uint256 internal counter;

    /// @notice Successful calls per escrow entry point (both escrows).
    mapping(bytes32 name => uint256) public successes;
    bool public violated;
    string public violation;
    uint256 public violations;

    constructor(SettlementEscrowV2Canary.Hole hole_) {
        hole = hole_;
        operator = vm.addr(OP_PK);
        advOwner = vm.addr(ADV_OWNER_PK);
        advPayer = vm.addr(ADV_PAYER_PK);
        advPayKey = vm.addr(ADV_PAYKEY_PK);
        for (uint8 c; c < 2; ++c) {
            vm.chainId(chainIds[c]);
            tokens[c] = new MockUSDC();
            cdws[c] = new MockCoreDepositWallet(IERC20(address(tokens[c])), address(this));
            HyperliquidMarginRouter r = new HyperliquidMarginRouter(IERC20(address(tokens[c])), cdws[c]);
            if (hole_ == SettlementEscrowV2Canary.Hole.None) {
                escrows[c] = new SettlementEscrowV2(
                    IERC20(address(tokens[c])),
                    IMarginRouter(address(r)),
                    LOCK_MAX,
                    PAYBY_MAX,
                    CLAIM_WIN,
                    QUOTE_LIFE,
                    TAKER_TIMEOUT
                );
            } else {
                escrows[c] = new SettlementEscrowV2Canary(
                    hole_,
                    IERC20(address(tokens[c])),
                    IMarginRouter(address(r)),
                    LOCK_MAX,
                    PAYBY_MAX,
                    CLAIM_WIN,
                    QUOTE_LIFE,
                    TAKER_TIMEOUT
                );
            }
        }
        fake = new FakeEscrow();
    }

    /// @notice Whether each client reacts on its own before every action: 0, 1 the honest makers (reveal), 2, 3 the
    ///         honest takers (authorise and pay), 4 the operator (locks honest takes promptly: a strategy the
    ///         adversary may drop). Offline makers fade, offline takers never pay (unless driven by the explicit
    ///         actions, which stand for a late reaction).
    bool[5] public online = [true, true, true, true, true];

    /// @dev Honest clients react before every action (so the adversary acts between any two honest steps), and
    ///      takers' clients claim as soon as a secret they wait for is public: right after the reactions (a reveal
    ///      among them) and after the action, before any further time passes.
    modifier tick() {
        _react();
        _watch();
        _;
        _watch();
    }

    // ================================================================ fuzz entry points: honest parties

    /// @notice An honest owner funds (or tops up) one of its orders; its maker client then quotes it.
    function ownerFund(uint256 makerSeed, uint256 chainSeed, uint256 idSeed, uint256 amount, bool usePermit)
        external
        tick
    {
        amount = bound(amount, 1e6, 1e9);
        (bool ok, uint256 oi) =
            ownerFundExact(uint8(makerSeed % 2), uint8(chainSeed % 2), idSeed % 4, amount, usePermit);
        if (ok) {
            makerQuoteExact(
                oi,
                bound(amount >> 3, 1, amount),
                uint64(bound(idSeed >> 8, 60, QUOTE_LIFE)),
                uint32(bound(idSeed >> 16, 1, 4))
            );
        }
    }

    function makerQuote(uint256 orderSeed, uint256 sizeSeed, uint256 lifeSeed, uint256 countSeed) external tick {
        (bool found, uint256 oi) = _pickOrder(orderSeed, true);
        if (!found) return;
        OrderRef storage o = orders[oi];
        uint256 available = escrows[o.chain].getOrder(o.owner, o.id).available;
        makerQuoteExact(
            oi,
            bound(sizeSeed, 1, available + 1),
            uint64(bound(lifeSeed, 1, QUOTE_LIFE)),
            uint32(bound(countSeed, 1, 4))
        );
    }

    function ownerClose(uint256 orderSeed, uint256 mode, uint256 dexSeed) external tick {
        (bool found, uint256 oi) = _pickOrder(orderSeed, true);
        if (!found) return;
        bool toMargin = dexSeed % 2 == 0;
        // Order closes end an order for good (sticky): one call in four, the others close the zero-id balance or
        // burn a nonce, so that orders live long enough to trade.
        uint8 m = uint8(mode % 8);
        ownerCloseExact(
            oi, m < 2 ? m : m < 5 ? 2 : 3, toMargin ? [uint32(0), SPOT, 7][(dexSeed >> 1) % 3] : 0, toMargin
        );
    }

    function takerTake(uint256 takerSeed, uint256 setSeed, uint256 amountSeed, uint256 shapeSeed) external tick {
        (bool found, uint256 si) = _pickLiveSet(setSeed);
        if (!found) return;
        SetRef storage s = sets[si];
        TakeArgs memory a;
        a.taker = uint8(takerSeed % 2);
        a.setIdx = si;
        a.amountOut = bound(amountSeed, 1, _fillable(si));
        a.index = uint32(shapeSeed % s.count);
        a.index2 = uint32((shapeSeed >> 8) % s.count);
        a.two = (shapeSeed >> 16) % 3 == 0;
        if (a.two) a.amountOut = (a.amountOut + 1) / 2;
        a.payDelay = uint64(bound(shapeSeed >> 24, (shapeSeed >> 20) % 8 == 0 ? 1 : PAYBY_MAX / 2, PAYBY_MAX));
        a.dexChoice = uint8((shapeSeed >> 32) % 4);
        takerTakeExact(a);
    }

    function takerAuthorize(uint256 takeSeed, bool relay) external tick {
        uint256 n = takes.length;
        for (uint256 j; j < n; ++j) {
            uint256 ti = (takeSeed % n + j) % n;
            if (!takes[ti].authorised && !takes[ti].cancelled && _locksLive(ti)) {
                takerAuthorizeExact(ti, relay);
                return;
            }
        }
    }

    function takerCancel(uint256 takeSeed) external tick {
        if (takes.length == 0) return;
        takerCancelExact(takeSeed % takes.length);
    }

    function makerReveal(uint256 lockSeed) external tick {
        uint256 n = locks.length;
        for (uint256 j; j < n; ++j) {
            uint256 li = (lockSeed % n + j) % n;
            if (orders[locks[li].orderIdx].who != ADV && _revealable(li)) {
                makerRevealExact(li);
                return;
            }
        }
    }

    // ================================================================ fuzz entry points: the adversary

    function advFund(uint256 chainSeed, uint256 idSeed, uint256 amount) external tick {
        // Half of its ids copy an honest owner's ids (squatting attempts).
        bytes32 id = idSeed % 2 == 0
            ? _honestId(uint8((idSeed >> 1) % 2), (idSeed >> 2) % 4)
            : keccak256(abi.encode("adv-order", idSeed % 4));
        advFundExact(uint8(chainSeed % 2), id, bound(amount, 1, 1e9));
    }

    function advQuote(uint256 orderSeed, uint256 shape, uint256 sizeSeed, uint256 priceSeed) external tick {
        (bool found, uint256 oi) = _pickOrder(orderSeed, false);
        if (!found) return;
        AdvQuoteArgs memory a;
        a.orderIdx = oi;
        a.quoteChain = shape % 4 == 0 ? orders[oi].chain : 1 - orders[oi].chain;
        a.escrowChoice = (shape >> 4) % 5 == 0 ? uint8(1) : (shape >> 4) % 7 == 0 ? uint8(2) : uint8(0);
        a.recipient = (shape >> 8) % 6 == 0 ? payees[0] : advPayee;
        a.supply = bound(priceSeed, 1, 4);
        a.receive_ = bound(priceSeed >> 8, 1, 4);
        a.quoteSize = bound(sizeSeed, 1, 2e9);
        a.life = uint64(bound(shape >> 16, 1, QUOTE_LIFE + 1)); // one past the cap sometimes
        a.count = uint32(bound(shape >> 32, 1, 4));
        advQuoteExact(a);
    }

    /// @notice The operator locks an honest taker's Fill (its duty; it may also never do it).
    function advLockHonest(uint256 takeSeed, uint256 fillSeed) external tick {
        uint256 n = takes.length;
        for (uint256 j; j < n; ++j) {
            uint256 ti = (takeSeed % n + j) % n;
            bool any;
            for (uint256 i; i < takes[ti].n; ++i) {
                // Now and then it skips one of the take's fills (the operator may lock part of a take only).
                if (takes[ti].n > 1 && fillSeed % 5 == i) continue;
                ISettlementEscrowV2.Fill storage f = takeFill[ti][i];
                (, uint8 mc) = _chainIdx(f.makerChainId);
                if (
                    f.payBy > block.timestamp
                        && escrows[mc].getLock(keyOf(f)).state == ISettlementEscrowV2.LockState.None
                ) {
                    advLockHonestExact(ti, i);
                    any = true;
                }
            }
            if (any) return;
        }
    }

    /// @notice The operator locks a Fill of its own taker identity, from honest-looking to malformed.
    function advLockOwn(uint256 setSeed, uint256 variant, uint256 amountSeed, uint256 timeSeed) external tick {
        if (sets.length == 0) return;
        AdvLockArgs memory a;
        (bool live, uint256 si) = _pickLiveSet(setSeed);
        a.setIdx = live && variant % 16 != 0 ? si : setSeed % sets.length; // now and then an expired set
        SetRef storage s = sets[a.setIdx];
        uint256 v = variant % 12;
        a.hlIndex = uint32((variant >> 8) % s.count);
        a.amountOut = bound(amountSeed, 1, _fillable(a.setIdx) + (variant % 13 == 0 ? 1 : 0));
        a.fillId = keccak256(abi.encode("adv-fill", ++counter));
        if (v == 6) a.escrowChoice = 1; // the fake escrow
        if (v == 7) a.escrowChoice = 2; // the other real escrow
        if (v == 8 && takes.length > 0) a.fillId = takeFill[(variant >> 16) % takes.length][0].fillId; // a copied id
        if (v == 9) a.proofMode = uint8(1 + (variant >> 24) % 3); // internal node, public hashlock, index past count
        if (v == 10) a.timeMode = 1;
        if (v == 11) a.priceMode = uint8(1 + (variant >> 32) % 2);
        a.timeSeed = timeSeed;
        advLockOwnExact(a);
    }

    /// @notice The adversary pays a Fill of its own (with or without a lock).
    function advPayOwn(uint256 lockSeed, bool fabricated, uint256 setSeed, uint256 amountSeed) external tick {
        if (!fabricated) {
            uint256 n = locks.length;
            for (uint256 j; j < n; ++j) {
                uint256 li = (lockSeed % n + j) % n;
                if (locks[li].f.payer == advPayer) {
                    advPayOwnExact(locks[li].f);
                    return;
                }
            }
        }
        (bool live, uint256 si) = _pickLiveSet(setSeed);
        if (!live) return;
        AdvLockArgs memory a;
        a.setIdx = si;
        a.amountOut = bound(amountSeed, 1, sets[a.setIdx].quoteSize);
        a.hlIndex = uint32(setSeed % sets[a.setIdx].count);
        a.fillId = keccak256(abi.encode("adv-fill", ++counter));
        a.timeSeed = amountSeed;
        advPayOwnExact(_advFill(a));
    }

    /// @notice Anyone relays an honest take whose pay key authorised it (or a mix that must fail).
    function advPayTake(uint256 takeSeed, uint256 mode) external tick {
        if (takes.length == 0) return;
        advPayTakeExact(takeSeed % takes.length, uint8(mode % 4));
    }

    /// @notice The adversary claims: mostly a live lock whose secret it knows (public or its own), now and then any
    ///         lock with any secret it has.
    function advClaim(uint256 lockSeed, uint256 secretSeed) external tick {
        uint256 n = locks.length;
        if (n == 0) return;
        for (uint256 j; j < n && secretSeed % 4 != 0; ++j) {
            LockRec storage r = locks[(lockSeed % n + j) % n];
            bytes32 known =
                publicSecret[r.f.hashlock] != bytes32(0) ? publicSecret[r.f.hashlock] : advSecret[r.f.hashlock];
            if (known == bytes32(0) || escrows[r.chain].getLock(r.key).state != ISettlementEscrowV2.LockState.Locked) {
                continue;
            }
            _claimAs(operator, r.chain, r.key, known);
            return;
        }
        LockRec storage any = locks[lockSeed % n];
        _claimAs(operator, any.chain, any.key, _secretFor(any.f.hashlock, secretSeed));
    }

    function advClaimPayment(uint256 paySeed, uint256 secretSeed) external tick {
        if (pays.length == 0) return;
        PayRec storage p = pays[paySeed % pays.length];
        _claimPaymentAs(operator, p.chain, p.key, _secretFor(p.f.hashlock, secretSeed));
    }

    function advCancel(uint256 lockSeed, uint256 mode) external tick {
        if (locks.length == 0) return;
        advCancelExact(lockSeed % locks.length, uint8(mode % 4));
    }

    /// @notice Anyone refunds: mostly an expired live lock, now and then any lock (early refunds must fail).
    function anyRefund(uint256 lockSeed) external tick {
        uint256 n = locks.length;
        if (n == 0) return;
        uint256 li = lockSeed % n;
        for (uint256 j; j < n && lockSeed % 4 != 0; ++j) {
            uint256 k = (lockSeed % n + j) % n;
            ISettlementEscrowV2.FillLock memory l = escrows[locks[k].chain].getLock(locks[k].key);
            if (l.state == ISettlementEscrowV2.LockState.Locked && l.expiry <= block.timestamp) {
                li = k;
                break;
            }
        }
        _call(locks[li].chain, relayer, abi.encodeCall(ISettlementEscrowV2.refund, (locks[li].key)), "refund");
    }

    /// @notice Anyone refunds a payment: mostly an expired held one, now and then any (early ones must fail).
    function anyRefundPayment(uint256 paySeed) external tick {
        uint256 n = pays.length;
        if (n == 0) return;
        uint256 pi = paySeed % n;
        for (uint256 j; j < n && paySeed % 4 != 0; ++j) {
            uint256 k = (paySeed % n + j) % n;
            ISettlementEscrowV2.Payment memory p = escrows[pays[k].chain].getPayment(pays[k].key);
            if (p.state == ISettlementEscrowV2.PaymentState.Held && p.expiry <= block.timestamp) {
                pi = k;
                break;
            }
        }
        _call(
            pays[pi].chain, relayer, abi.encodeCall(ISettlementEscrowV2.refundPayment, (pays[pi].key)), "refundPayment"
        );
    }

    function advClose(uint256 orderSeed, uint256 mode) external tick {
        (bool found, uint256 oi) = _pickOrder(orderSeed, false);
        if (!found) return;
        advCloseExact(oi, uint8(mode % 6 < 4 ? 1 : mode % 6 - 4 == 0 ? 0 : 2)); // closes one call in three
    }

    function advOperatorClose(uint256 orderSeed, uint256 dexSeed) external tick {
        if (orders.length == 0) return;
        OrderRef storage o = orders[orderSeed % orders.length];
        bool toMargin = dexSeed % 2 == 0;
        uint32 dex = toMargin ? [uint32(0), SPOT, 7][(dexSeed >> 1) % 3] : 0;
        _call(
            o.chain,
            operator,
            abi.encodeCall(ISettlementEscrowV2.operatorClose, (o.owner, o.id, dex, toMargin)),
            "operatorClose"
        );
    }

    /// @notice Strategy: as maker, once an honest taker paid into a lock on its own order, try to take the lock back
    ///         (every cancel it can sign or call) and reveal its own secret.
    function advRugPull(uint256 lockSeed) external tick {
        uint256 n = locks.length;
        for (uint256 j; j < n; ++j) {
            uint256 li = (lockSeed % n + j) % n;
            LockRec storage r = locks[li];
            if (orders[r.orderIdx].who != ADV) continue;
            (bool real, uint8 tc) = _chainIdx(r.f.takerChainId);
            bytes32 key = keyOf(r.f);
            if (!real || escrows[tc].getPayment(key).state != ISettlementEscrowV2.PaymentState.Held) continue;
            for (uint8 mode; mode < 4; ++mode) {
                if (advCancelExact(li, mode)) break;
            }
            _claimPaymentAs(operator, tc, key, advSecret[r.f.hashlock]);
            return;
        }
    }

    /// @notice Strategy: lock a Fill of its own under the id of an honest Fill nobody locked yet.
    function advSquat(uint256 takeSeed, uint256 setSeed) external tick {
        uint256 n = takes.length;
        (bool live, uint256 si) = _pickLiveSet(setSeed);
        if (!live) return;
        for (uint256 j; j < n; ++j) {
            uint256 ti = (takeSeed % n + j) % n;
            ISettlementEscrowV2.Fill storage f = takeFill[ti][0];
            (, uint8 mc) = _chainIdx(f.makerChainId);
            if (escrows[mc].getLock(keyOf(f)).state != ISettlementEscrowV2.LockState.None || f.payBy <= block.timestamp)
            {
                continue;
            }
            AdvLockArgs memory a;
            a.setIdx = si;
            a.hlIndex = uint32(setSeed % sets[si].count);
            a.amountOut = bound(setSeed >> 8, 1, _fillable(si));
            a.fillId = f.fillId;
            a.timeSeed = setSeed >> 16;
            advLockOwnExact(a);
            return;
        }
    }

    /// @notice Strategy: lock a hashlock whose secret is public again (under a Fill of its own it never pays) and
    ///         claim it at once.
    function advReuseRevealed(uint256 setSeed, uint256 amountSeed) external tick {
        uint256 n = sets.length;
        for (uint256 j; j < n; ++j) {
            uint256 si = (setSeed % n + j) % n;
            if (sets[si].validUntil < block.timestamp) continue;
            for (uint32 i; i < sets[si].count; ++i) {
                bytes32 secret = publicSecret[setHashlocks[si][i]];
                if (secret == bytes32(0)) continue;
                AdvLockArgs memory a;
                a.setIdx = si;
                a.hlIndex = i;
                a.amountOut = bound(amountSeed, 1, _fillable(si));
                a.fillId = keccak256(abi.encode("adv-fill", ++counter));
                a.timeSeed = amountSeed;
                (bool ok, uint256 li) = advLockOwnExact(a);
                if (ok) _claimAs(operator, locks[li].chain, locks[li].key, secret);
                return;
            }
        }
    }

    /// @notice Strategy (v1's close starvation): on an order its owner asked to close, refund every expired lock and
    ///         lock the funds again for as long as possible.
    function advStarve(uint256 orderSeed, uint256 amountSeed) external tick {
        uint256 n = orders.length;
        for (uint256 j; j < n; ++j) {
            uint256 oi = (orderSeed % n + j) % n;
            if (closeAskedAt[oi] == 0) continue;
            for (uint256 k; k < locks.length; ++k) {
                if (locks[k].orderIdx != oi) continue;
                ISettlementEscrowV2.FillLock memory l = escrows[locks[k].chain].getLock(locks[k].key);
                if (l.state == ISettlementEscrowV2.LockState.Locked && l.expiry <= block.timestamp) refundExact(k);
            }
            for (uint256 si; si < sets.length; ++si) {
                if (sets[si].orderIdx != oi || sets[si].validUntil < block.timestamp) continue;
                AdvLockArgs memory a;
                a.setIdx = si;
                a.hlIndex = uint32(amountSeed % sets[si].count);
                a.amountOut = bound(amountSeed, 1, _fillable(si));
                a.fillId = keccak256(abi.encode("adv-fill", ++counter));
                a.timeMode = 1;
                a.timeSeed = (uint256(4) << 32) | (uint256(10) << 40); // makerExpiry = now + MAX_LOCK
                advLockOwnExact(a);
            }
            return;
        }
    }

    function advFakePayment(uint256 lockSeed) external tick {
        uint256 n = locks.length;
        for (uint256 j; j < n; ++j) {
            uint256 li = (lockSeed % n + j) % n;
            if (locks[li].f.takerEscrow == address(fake)) {
                advFakePaymentExact(li);
                return;
            }
        }
    }

    function advForge(uint256 seed) external tick {
        advForgeExact(uint8(seed % 6), seed >> 8);
    }

    function setOnline(uint256 who, bool on) external tick {
        online[who % 5] = on;
    }

    /// @notice Half the time seconds (flows complete), half the time up to MAX_LOCK (timeouts and expiries).
    function warp(uint256 secs) external tick {
        vm.warp(block.timestamp + (secs % 2 == 0 ? bound(secs >> 1, 1, LOCK_MAX) : bound(secs >> 1, 1, 30)));
    }

    function setRefusing(uint256 chainSeed, bool refusing) external tick {
        cdws[chainSeed % 2].setRefusing(refusing);
    }

    // ================================================================ exact actions (also used by scripted tests)

    function ownerFundExact(uint8 m, uint8 c, uint256 k, uint256 amount, bool usePermit)
        public
        returns (bool ok, uint256 oi)
    {
        address owner = vm.addr(ownerPks[m]);
        bytes32 id = _honestId(m, k);
        uint256 known = orderIdxPlus1[c][owner][id];
        if (known != 0 && closeAskedAt[known - 1] != 0) return (false, 0); // an owner does not top up what it closes
        ok = _honestFund(m, c, id, amount, usePermit);
        if (!ok) {
            _violate("an honest owner's fund was blocked");
            return (false, 0);
        }
        oi = _registerOrder(c, m, owner, id);
    }

    function _honestFund(uint8 m, uint8 c, bytes32 id, uint256 amount, bool usePermit) internal returns (bool ok) {
        address owner = vm.addr(ownerPks[m]);
        ISettlementEscrowV2.FundOrder memory o = ISettlementEscrowV2.FundOrder({
            orderId: id,
            owner: owner,
            operator: operator,
            quoteSigner: vm.addr(quotePks[m]),
            amount: amount,
            deadline: block.timestamp + 1 hours + (++counter)
        });
        tokens[c].mint(owner, amount);
        mintedMaker[m] += amount;
        vm.chainId(chainIds[c]);
        ISettlementEscrowV2.Permit memory p;
        if (usePermit) {
            p = permit2(tokens[c], ownerPks[m], address(escrows[c]), amount, block.timestamp + 1 hours);
            // Half the time the adversary submits the public permit first (EIP-2612 front-running).
            if (amount % 2 == 0) tokens[c].permit(owner, address(escrows[c]), p.value, p.deadline, p.v, p.r, p.s);
        } else {
            vm.prank(owner);
            tokens[c].approve(address(escrows[c]), amount);
        }
        bytes memory s = sig(ownerPks[m], fundDigest2(chainIds[c], address(escrows[c]), o));
        (ok,) = _call(c, relayer, abi.encodeCall(ISettlementEscrowV2.fund, (o, s, p)), "fund");
    }

    function makerQuoteExact(uint256 oi, uint256 quoteSize, uint64 life, uint32 count)
        public
        returns (bool, uint256 si)
    {
        OrderRef storage o = orders[oi];
        if (o.who == ADV || closeAskedAt[oi] != 0) return (false, 0);
        uint8 qc = 1 - o.chain;
        si = sets.length;
        sets.push();
        SetRef storage s = sets[si];
        s.chain = o.chain;
        s.orderIdx = oi;
        s.sequence = ++lastSequence[oi];
        s.quoteSize = quoteSize;
        s.issuedAt = uint64(block.timestamp);
        s.validUntil = uint64(block.timestamp) + life;
        s.count = count;
        s.quote = ISettlementEscrowV2.Quote({
            chainId: chainIds[qc],
            token: address(tokens[qc]),
            escrow: address(escrows[qc]),
            recipient: payees[o.who],
            supply: 1,
            receive_: 1,
            minFill: 1
        });
        for (uint256 i; i < count; ++i) {
            // Stand-in for the maker client's HMAC: a key only the maker has, over the set's fields but the root.
            bytes32 secret = keccak256(
                abi.encode(
                    keccak256(abi.encode("maker key", o.who)),
                    chainIds[o.chain],
                    address(escrows[o.chain]),
                    o.owner,
                    o.id,
                    s.sequence,
                    i
                )
            );
            bytes32 h = hashlockOf(secret);
            makerSecret[h] = secret;
            setHashlocks[si].push(h);
        }
        s.root = merkleRoot(leavesOf(setHashlocks[si]));
        s.sig = sig(quotePks[o.who], quoteSetDigest2(chainIds[o.chain], address(escrows[o.chain]), _setMemory(si)));
        return (true, si);
    }

    function ownerCloseExact(uint256 oi, uint8 mode, uint32 dex, bool toMargin) public returns (bool ok) {
        OrderRef storage o = orders[oi];
        if (o.who == ADV) return false;
        uint256 pk = ownerPks[o.who];
        if (mode == 3) {
            (ok,) = _call(
                o.chain, o.owner, abi.encodeCall(ISettlementEscrowV2.invalidateNonce, (++counter)), "invalidateNonce"
            );
            return ok;
        }
        bytes32 id = mode == 2 ? bytes32(0) : o.id;
        if (mode != 2 && closeAskedAt[oi] == 0) closeAskedAt[oi] = block.timestamp;
        if (mode == 1) {
            (ok,) = _call(o.chain, o.owner, abi.encodeCall(ISettlementEscrowV2.close, (id, dex, toMargin)), "close");
            return ok;
        }
        ISettlementEscrowV2.CloseOffer memory c = ISettlementEscrowV2.CloseOffer({
            orderId: id,
            owner: o.owner,
            dex: dex,
            toMargin: toMargin,
            nonce: ++counter,
            deadline: block.timestamp + 1 hours
        });
        bytes memory s = sig(pk, closeDigest2(chainIds[o.chain], address(escrows[o.chain]), c));
        (ok,) = _call(o.chain, relayer, abi.encodeCall(ISettlementEscrowV2.closeWithSig, (c, s)), "closeWithSig");
        if (ok) {
            lastHonestClose = c;
            lastHonestCloseSig = s;
            lastHonestCloseChain = o.chain;
        }
    }

    struct TakeArgs {
        uint8 taker;
        uint256 setIdx;
        uint256 amountOut;
        uint32 index;
        uint32 index2;
        bool two;
        uint64 payDelay;
        uint8 dexChoice;
    }

    /// @notice An honest taker signs the Fill(s) the service (the adversary) proposed from a published set, after
    ///         checking them against its own intent.
    function takerTakeExact(TakeArgs memory a) public returns (bool, uint256 ti) {
        SetRef storage s = sets[a.setIdx];
        // Intent checks: real escrows on both sides (from its configuration), a price of at least 1:1.
        (bool okT, uint8 pc) = _chainIdx(s.quote.chainId);
        if (!okT || s.quote.escrow != address(escrows[pc])) return (false, 0);
        uint256 amountIn = (a.amountOut * s.quote.receive_ + s.quote.supply - 1) / s.quote.supply;
        if (amountIn == 0 || a.amountOut < amountIn) return (false, 0);
        if (a.two && (s.count < 2 || a.index2 == a.index)) a.two = false;
        ti = takes.length;
        takes.push(
            Take({
                taker: a.taker,
                payChain: pc,
                payKeyPk: _freshKey(),
                n: a.two ? 2 : 1,
                setIdx: a.setIdx,
                authorised: false,
                cancelled: false
            })
        );
        for (uint256 i; i < takes[ti].n; ++i) {
            ISettlementEscrowV2.Fill memory f = _honestFill(a, ti, i, amountIn);
            takeFill[ti][i] = f;
            takeFillSig[ti][i] = sig(payerPks[a.taker], fillDigest2(f));
        }
        return (true, ti);
    }

    function takerAuthorizeExact(uint256 ti, bool relay) public returns (bool) {
        Take storage tk = takes[ti];
        if (tk.authorised || tk.cancelled || !_locksLive(ti)) return false;
        bytes32[] memory keys = new bytes32[](tk.n);
        uint256 sum;
        for (uint256 i; i < tk.n; ++i) {
            keys[i] = keyOf(takeFill[ti][i]);
            sum += takeFill[ti][i].amountIn;
        }
        uint8 pc = tk.payChain;
        takeAuth[ti] = sig(tk.payKeyPk, payTakeDigest(chainIds[pc], address(escrows[pc]), keys));
        tk.authorised = true;
        address payer = vm.addr(payerPks[tk.taker]);
        tokens[pc].mint(payer, sum);
        mintedTaker[tk.taker] += sum;
        vm.chainId(chainIds[pc]);
        takePermit[ti] = permit2(tokens[pc], payerPks[tk.taker], address(escrows[pc]), sum, block.timestamp + 1 hours);
        if (relay) {
            ISettlementEscrowV2.Permit memory p = takePermit[ti];
            // Half the time the adversary submits the public permit first (EIP-2612 front-running).
            if (sum % 2 == 0) tokens[pc].permit(payer, address(escrows[pc]), p.value, p.deadline, p.v, p.r, p.s);
            _payTake(ti, relayer, p);
        }
        return true;
    }

    function takerCancelExact(uint256 ti) public {
        Take storage tk = takes[ti];
        for (uint256 i; i < tk.n; ++i) {
            ISettlementEscrowV2.Fill memory f = takeFill[ti][i];
            (, uint8 mc) = _chainIdx(f.makerChainId);
            bytes32 key = keyOf(f);
            if (escrows[mc].getLock(key).state != ISettlementEscrowV2.LockState.Locked) continue;
            // Only before authorising, or once payBy passed with no payment.
            bool noPayment = escrows[tk.payChain].getPayment(key).state == ISettlementEscrowV2.PaymentState.None;
            if (tk.authorised && !(block.timestamp > f.payBy && noPayment)) continue;
            if (!tk.authorised) tk.cancelled = true;
            bytes memory s = sig(tk.payKeyPk, cancelDigest(chainIds[mc], address(escrows[mc]), key));
            _call(mc, relayer, abi.encodeCall(ISettlementEscrowV2.cancelLock, (key, s)), "cancelLock");
        }
    }

    /// @notice The honest maker client's reveal for its lock `li` (it learnt the Fill from the Locked event).
    function makerRevealExact(uint256 li) public returns (bool ok) {
        if (!_revealable(li)) return false;
        LockRec storage r = locks[li];
        bytes32 secret = makerSecret[r.f.hashlock];
        _publish(r.f.hashlock, secret);
        (, uint8 tc) = _chainIdx(r.f.takerChainId);
        bytes32 key = keyOf(r.f);
        vm.chainId(r.f.takerChainId);
        vm.prank(payees[orders[r.orderIdx].who]);
        (ok,) = r.f.takerEscrow.call(abi.encodeCall(IPaymentView.claimPayment, (key, secret)));
        if (ok && r.f.takerEscrow == address(escrows[tc])) {
            successes["claimPayment"]++;
            _afterClaimPayment(tc, key);
        }
    }

    function advFundExact(uint8 c, bytes32 id, uint256 amount) public returns (bool ok, uint256 oi) {
        ISettlementEscrowV2.FundOrder memory o = ISettlementEscrowV2.FundOrder({
            orderId: id,
            owner: advOwner,
            operator: operator,
            quoteSigner: vm.addr(ADV_QUOTE_PK),
            amount: amount,
            deadline: block.timestamp + 1 hours + (++counter)
        });
        tokens[c].mint(advOwner, amount);
        vm.prank(advOwner);
        tokens[c].approve(address(escrows[c]), amount);
        bytes memory s = sig(ADV_OWNER_PK, fundDigest2(chainIds[c], address(escrows[c]), o));
        (ok,) = _call(c, operator, abi.encodeCall(ISettlementEscrowV2.fund, (o, s, noPermit2())), "fund");
        if (ok) oi = _registerOrder(c, ADV, advOwner, id);
    }

    struct AdvQuoteArgs {
        uint256 orderIdx;
        uint8 quoteChain;
        uint8 escrowChoice; // 0 the quote chain's real escrow, 1 the fake, 2 the other real escrow
        address recipient;
        uint256 supply;
        uint256 receive_;
        uint256 quoteSize;
        uint64 life;
        uint32 count;
    }

    function advQuoteExact(AdvQuoteArgs memory a) public returns (uint256 si) {
        OrderRef storage o = orders[a.orderIdx];
        si = sets.length;
        sets.push();
        SetRef storage s = sets[si];
        s.chain = o.chain;
        s.orderIdx = a.orderIdx;
        s.sequence = ++lastSequence[a.orderIdx];
        s.quoteSize = a.quoteSize;
        s.issuedAt = uint64(block.timestamp);
        s.validUntil = uint64(block.timestamp) + a.life;
        s.count = a.count;
        address e = a.escrowChoice == 1
            ? address(fake)
            : a.escrowChoice == 2 ? address(escrows[1 - a.quoteChain]) : address(escrows[a.quoteChain]);
        s.quote = ISettlementEscrowV2.Quote({
            chainId: chainIds[a.quoteChain],
            token: address(tokens[a.quoteChain]),
            escrow: e,
            recipient: a.recipient,
            supply: a.supply,
            receive_: a.receive_,
            minFill: 1
        });
        for (uint256 i; i < a.count; ++i) {
            bytes32 secret = keccak256(abi.encode("adv-secret", si, i));
            bytes32 h = hashlockOf(secret);
            advSecret[h] = secret;
            setHashlocks[si].push(h);
        }
        s.root = merkleRoot(leavesOf(setHashlocks[si]));
        s.sig = sig(ADV_QUOTE_PK, quoteSetDigest2(chainIds[o.chain], address(escrows[o.chain]), _setMemory(si)));
    }

    function advLockHonestExact(uint256 ti, uint256 i) public returns (bool ok) {
        ISettlementEscrowV2.Fill memory f = takeFill[ti][i];
        uint256 si = takes[ti].setIdx;
        bytes32[] memory proof = merkleProof(leavesOf(setHashlocks[si]), f.hashlockIndex);
        ok = _lock(sets[si].chain, f, takeFillSig[ti][i], si, proof);
    }

    struct AdvLockArgs {
        uint256 setIdx;
        uint32 hlIndex;
        uint256 amountOut;
        bytes32 fillId;
        uint8 escrowChoice; // 0 the quoted escrow, 1 the fake, 2 the other real escrow
        uint8 proofMode; // 0 right, 1 an internal node as hashlock, 2 a public (revealed) hashlock, 3 index past count
        uint8 timeMode; // 0 legal, 1 around the bounds
        uint8 priceMode; // 0 the quote's price, 1 one unit short, 2 another payee
        uint256 timeSeed;
    }

    function advLockOwnExact(AdvLockArgs memory a) public returns (bool ok, uint256 li) {
        ISettlementEscrowV2.Fill memory f = _advFill(a);
        bytes32[] memory leaves = leavesOf(setHashlocks[a.setIdx]);
        bytes32[] memory proof = merkleProof(leaves, a.hlIndex < leaves.length ? a.hlIndex : 0);
        if (a.proofMode == 1 && leaves.length > 1) {
            f.hashlock = hashPair(leaves[0], leaves[1]);
            bytes32[] memory full = merkleProof(leaves, 0);
            proof = new bytes32[](full.length - 1);
            for (uint256 i = 1; i < full.length; ++i) {
                proof[i - 1] = full[i];
            }
        } else if (a.proofMode == 2 && publicSecrets.length > 0) {
            f.hashlock = hashlockOf(publicSecrets[a.timeSeed % publicSecrets.length]);
        } else if (a.proofMode == 3) {
            f.hashlockIndex = sets[a.setIdx].count;
        }
        li = locks.length;
        ok = _lock(sets[a.setIdx].chain, f, sig(ADV_PAYER_PK, fillDigest2(f)), a.setIdx, proof);
        if (ok && f.takerEscrow == address(fake)) advFakePaymentExact(li); // the fake reports it paid at once
    }

    function advPayOwnExact(ISettlementEscrowV2.Fill memory f) public returns (bool ok) {
        (bool real, uint8 tc) = _chainIdx(f.takerChainId);
        if (!real) return false;
        ISettlementEscrowV2.Fill[] memory fs = new ISettlementEscrowV2.Fill[](1);
        fs[0] = f;
        bytes[] memory sigs = new bytes[](1);
        sigs[0] = sig(ADV_PAYER_PK, fillDigest2(f));
        bytes memory auth = sig(ADV_PAYKEY_PK, payTakeDigest(chainIds[tc], address(escrows[tc]), one(keyOf(f))));
        tokens[tc].mint(advPayer, f.amountIn);
        vm.chainId(chainIds[tc]);
        ISettlementEscrowV2.Permit memory p =
            permit2(tokens[tc], ADV_PAYER_PK, address(escrows[tc]), f.amountIn, block.timestamp + 1);
        (ok,) = _call(tc, operator, abi.encodeCall(ISettlementEscrowV2.payTake, (fs, sigs, auth, p)), "payTake");
        if (ok) _recordPayment(tc, f, false);
    }

    /// @param mode 0 as authorised, 1 without the permit (allowance only), 2 only the first Fill (the authorisation
    ///        covers all), 3 with an adversary Fill appended.
    function advPayTakeExact(uint256 ti, uint8 mode) public returns (bool ok) {
        if (takeAuth[ti].length == 0) return false;
        if (mode == 0 || mode == 1) {
            ISettlementEscrowV2.Permit memory p;
            if (mode == 0) p = takePermit[ti];
            return _payTake(ti, operator, p);
        }
        Take storage tk = takes[ti];
        uint256 n = mode == 2 ? 1 : tk.n + 1;
        if (mode == 2 && tk.n == 1) return false;
        ISettlementEscrowV2.Fill[] memory fs = new ISettlementEscrowV2.Fill[](n);
        bytes[] memory sigs = new bytes[](n);
        for (uint256 i; i < n && i < tk.n; ++i) {
            fs[i] = takeFill[ti][i];
            sigs[i] = takeFillSig[ti][i];
        }
        if (mode == 3) {
            fs[n - 1] = takeFill[ti][0];
            fs[n - 1].payer = advPayer;
            fs[n - 1].fillId = keccak256(abi.encode("adv-fill", ++counter));
            sigs[n - 1] = sig(ADV_PAYER_PK, fillDigest2(fs[n - 1]));
        }
        (ok,) = _call(
            tk.payChain,
            operator,
            abi.encodeCall(ISettlementEscrowV2.payTake, (fs, sigs, takeAuth[ti], takePermit[ti])),
            "payTake"
        );
        if (ok) _violate("payTake accepted Fills the pay key did not authorise");
    }

    /// @param mode 0 its own pay key's CancelFill, 1 the operator's call (with its own signature), 2 its maker
    ///        identity's signature, 3 no signature.
    function advCancelExact(uint256 li, uint8 mode) public returns (bool ok) {
        LockRec storage r = locks[li];
        bytes32 d = cancelDigest(chainIds[r.chain], address(escrows[r.chain]), r.key);
        bytes memory s = mode == 0
            ? sig(ADV_PAYKEY_PK, d)
            : mode == 1 ? sig(OP_PK, d) : mode == 2 ? sig(ADV_OWNER_PK, d) : bytes("");
        (ok,) = _call(r.chain, operator, abi.encodeCall(ISettlementEscrowV2.cancelLock, (r.key, s)), "cancelLock");
    }

    function advCloseExact(uint256 oi, uint8 mode) public returns (bool ok) {
        OrderRef storage o = orders[oi];
        if (mode == 2) {
            (ok,) = _call(o.chain, advOwner, abi.encodeCall(ISettlementEscrowV2.close, (o.id, 0, false)), "close");
            return ok;
        }
        if (mode == 1) {
            (ok,) = _call(
                o.chain, advOwner, abi.encodeCall(ISettlementEscrowV2.invalidateNonce, (++counter)), "invalidateNonce"
            );
            return ok;
        }
        ISettlementEscrowV2.CloseOffer memory c =
            ISettlementEscrowV2.CloseOffer(o.id, advOwner, 0, true, ++counter, block.timestamp + 1);
        bytes memory s = sig(ADV_OWNER_PK, closeDigest2(chainIds[o.chain], address(escrows[o.chain]), c));
        (ok,) = _call(o.chain, operator, abi.encodeCall(ISettlementEscrowV2.closeWithSig, (c, s)), "closeWithSig");
    }

    function advFakePaymentExact(uint256 li) public {
        ISettlementEscrowV2.Fill memory f = locks[li].f;
        fake.setPayment(
            keyOf(f),
            ISettlementEscrowV2.Payment({
                payer: advPayer,
                expiry: f.takerExpiry,
                state: ISettlementEscrowV2.PaymentState.Held,
                payee: f.payee,
                hashlock: f.hashlock,
                amountIn: f.amountIn
            })
        );
    }

    /// @notice Forgeries that must all revert.
    function advForgeExact(uint8 kind, uint256 seed) public {
        uint8 m = uint8(seed % 2);
        uint8 c = uint8((seed >> 1) % 2);
        address owner = vm.addr(ownerPks[m]);
        bool ok;
        if (kind == 0) {
            // A FundOrder in an honest owner's name, signed by the operator (its allowance is there).
            vm.prank(owner);
            tokens[c].approve(address(escrows[c]), type(uint256).max);
            ISettlementEscrowV2.FundOrder memory o = ISettlementEscrowV2.FundOrder(
                _honestId(m, seed >> 2), owner, operator, operator, 1, block.timestamp + 1
            );
            bytes memory s = sig(OP_PK, fundDigest2(chainIds[c], address(escrows[c]), o));
            (ok,) = _call(c, operator, abi.encodeCall(ISettlementEscrowV2.fund, (o, s, noPermit2())), "fund");
            vm.prank(owner);
            tokens[c].approve(address(escrows[c]), 0);
        } else if (kind == 1) {
            // A close of an honest owner's zero-id balance to the operator's liking, signed by the operator.
            ISettlementEscrowV2.CloseOffer memory cl =
                ISettlementEscrowV2.CloseOffer(bytes32(0), owner, 0, true, seed, block.timestamp + 1);
            bytes memory s = sig(OP_PK, closeDigest2(chainIds[c], address(escrows[c]), cl));
            (ok,) = _call(c, operator, abi.encodeCall(ISettlementEscrowV2.closeWithSig, (cl, s)), "closeWithSig");
        } else if (kind == 2 && lastHonestCloseSig.length > 0) {
            (ok,) = _call(
                lastHonestCloseChain,
                operator,
                abi.encodeCall(ISettlementEscrowV2.closeWithSig, (lastHonestClose, lastHonestCloseSig)),
                "closeWithSig"
            );
        } else if (kind == 3 && takes.length > 0) {
            // An honest Fill re-pointed to the operator's recipient, with the payer's signature of the original.
            uint256 ti = seed % takes.length;
            ISettlementEscrowV2.Fill memory f = takeFill[ti][0];
            f.recipient = advRecipient;
            uint256 si = takes[ti].setIdx;
            ok = _lock(
                sets[si].chain, f, takeFillSig[ti][0], si, merkleProof(leavesOf(setHashlocks[si]), f.hashlockIndex)
            );
        } else if (kind == 4 && takes.length > 1) {
            // One take's pay-key authorisation used for another take.
            uint256 a = seed % takes.length;
            uint256 b = (a + 1 + (seed >> 8) % (takes.length - 1)) % takes.length;
            if (takeAuth[a].length == 0 || takes[a].payChain != takes[b].payChain) return;
            ISettlementEscrowV2.Fill[] memory fs = new ISettlementEscrowV2.Fill[](1);
            bytes[] memory sigs = new bytes[](1);
            fs[0] = takeFill[b][0];
            sigs[0] = takeFillSig[b][0];
            (ok,) = _call(
                takes[b].payChain,
                operator,
                abi.encodeCall(ISettlementEscrowV2.payTake, (fs, sigs, takeAuth[a], takePermit[b])),
                "payTake"
            );
        } else if (kind == 5 && locks.length > 0) {
            // A claim with a guessed secret.
            LockRec storage r = locks[seed % locks.length];
            bytes32 guess = keccak256(abi.encode("guess", seed));
            if (publicSecret[r.f.hashlock] == guess || advSecret[r.f.hashlock] == guess) return;
            (ok,) = _call(r.chain, operator, abi.encodeCall(ISettlementEscrowV2.claim, (r.key, guess)), "claim");
        }
        if (ok) _violate("a forgery was accepted");
    }

    /// @notice The adversary claims lock `li` with `secret` (scripted tests).
    function advClaimWith(uint256 li, bytes32 secret) public returns (bool) {
        return _claimAs(operator, locks[li].chain, locks[li].key, secret);
    }

    /// @notice The adversary claims payment `pi` with `secret` (scripted tests).
    function advClaimPaymentWith(uint256 pi, bytes32 secret) public returns (bool) {
        return _claimPaymentAs(operator, pays[pi].chain, pays[pi].key, secret);
    }

    function refundExact(uint256 li) public returns (bool ok) {
        (ok,) = _call(locks[li].chain, relayer, abi.encodeCall(ISettlementEscrowV2.refund, (locks[li].key)), "refund");
    }

    /// @notice Nothing but the clients' reactions and the takers' watcher (scripted tests).
    function react() external tick {}

    // ================================================================ invariant views

    /// @notice Σ order available + locked, zero-id balances and held payments on chain `c`.
    function sumOfParts(uint8 c) public view returns (uint256 sum) {
        SettlementEscrowV2 e = escrows[c];
        for (uint256 i; i < orders.length; ++i) {
            if (orders[i].chain != c) continue;
            ISettlementEscrowV2.Order memory o = e.getOrder(orders[i].owner, orders[i].id);
            sum += o.available + o.locked;
        }
        address[] memory ps = parties();
        for (uint256 i; i < ps.length; ++i) {
            sum += e.balanceOf(ps[i]);
        }
        for (uint256 i; i < pays.length; ++i) {
            if (pays[i].chain != c) continue;
            ISettlementEscrowV2.Payment memory p = e.getPayment(pays[i].key);
            if (p.state == ISettlementEscrowV2.PaymentState.Held) sum += p.amountIn;
        }
    }

    /// @notice Everyone who may hold a zero-id balance.
    function parties() public view returns (address[] memory a) {
        a = new address[](13);
        for (uint256 i; i < 2; ++i) {
            a[i] = vm.addr(ownerPks[i]);
            a[2 + i] = payees[i];
            a[4 + i] = vm.addr(payerPks[i]);
            a[6 + i] = recipients[i];
        }
        a[8] = advOwner;
        a[9] = advPayee;
        a[10] = advPayer;
        a[11] = advRecipient;
        a[12] = operator;
    }

    /// @notice Honest maker m's wealth (owner and payee, both chains, and its orders); quotes are 1:1, so it never
    ///         falls below what was minted for its fundings unless someone took its funds.
    function makerWealth(uint8 m) public view returns (uint256 w) {
        address owner = vm.addr(ownerPks[m]);
        for (uint8 c; c < 2; ++c) {
            w += _holdings(c, owner) + _holdings(c, payees[m]);
        }
        for (uint256 i; i < orders.length; ++i) {
            if (orders[i].who != m) continue;
            ISettlementEscrowV2.Order memory o = escrows[orders[i].chain].getOrder(orders[i].owner, orders[i].id);
            w += o.available + o.locked;
        }
    }

    /// @notice Honest taker t's wealth (payer and recipient, both chains, and its held payments); it takes only at
    ///         1:1 or better, so it never falls below what was minted for its payments unless someone took its funds.
    function takerWealth(uint8 t) public view returns (uint256 w) {
        address payer = vm.addr(payerPks[t]);
        for (uint8 c; c < 2; ++c) {
            w += _holdings(c, payer) + _holdings(c, recipients[t]);
        }
        for (uint256 i; i < pays.length; ++i) {
            if (!pays[i].honest || pays[i].f.payer != payer) continue;
            ISettlementEscrowV2.Payment memory p = escrows[pays[i].chain].getPayment(pays[i].key);
            if (p.state == ISettlementEscrowV2.PaymentState.Held) w += p.amountIn;
        }
    }

    /// @notice A close an honest owner asked for is complete MAX_LOCK after the request: nothing available in the
    ///         order and every live lock of it refundable (to the owner) now.
    function closeOverdue() public view returns (bool overdue, uint256 orderIdx) {
        for (uint256 i; i < orders.length; ++i) {
            uint256 asked = closeAskedAt[i];
            if (asked == 0 || block.timestamp < asked + LOCK_MAX) continue;
            OrderRef storage o = orders[i];
            if (escrows[o.chain].getOrder(o.owner, o.id).available != 0) return (true, i);
            for (uint256 j; j < locks.length; ++j) {
                LockRec storage r = locks[j];
                if (r.orderIdx != i) continue;
                ISettlementEscrowV2.FillLock memory l = escrows[r.chain].getLock(r.key);
                if (l.state == ISettlementEscrowV2.LockState.Locked && l.expiry > block.timestamp) return (true, i);
            }
        }
    }

    /// @notice Each order's `locked` equals the amounts of its live locks.
    function lockedMismatch() public view returns (bool bad, uint256 orderIdx) {
        for (uint256 i; i < orders.length; ++i) {
            uint256 live;
            for (uint256 j; j < locks.length; ++j) {
                if (locks[j].orderIdx != i) continue;
                ISettlementEscrowV2.FillLock memory l = escrows[locks[j].chain].getLock(locks[j].key);
                if (l.state == ISettlementEscrowV2.LockState.Locked) live += l.amountOut;
            }
            if (escrows[orders[i].chain].getOrder(orders[i].owner, orders[i].id).locked != live) return (true, i);
        }
    }

    /// @notice Every invariant at once: (true, "") or (false, the first broken one).
    function checkAll() external view returns (bool, string memory) {
        if (violated) return (false, violation);
        for (uint8 c; c < 2; ++c) {
            uint256 bal = tokens[c].balanceOf(address(escrows[c]));
            if (bal != escrows[c].totalLiabilities()) return (false, "token balance != totalLiabilities");
            if (bal != sumOfParts(c)) return (false, "token balance != sum of parts");
        }
        for (uint8 m; m < 2; ++m) {
            if (makerWealth(m) < mintedMaker[m]) return (false, "an honest maker lost funds");
            if (takerWealth(m) < mintedTaker[m]) return (false, "an honest taker lost funds");
        }
        (bool overdue,) = closeOverdue();
        if (overdue) return (false, "a requested close did not complete within MAX_LOCK");
        (bool bad,) = lockedMismatch();
        if (bad) return (false, "order.locked != live locks");
        return (true, "");
    }

    function counts()
        external
        view
        returns (uint256 nOrders, uint256 nSets, uint256 nTakes, uint256 nLocks, uint256 nPays)
    {
        return (orders.length, sets.length, takes.length, locks.length, pays.length);
    }

    function lockAt(uint256 li) external view returns (uint8 chain, bytes32 key, bytes32 digest, uint256 orderIdx) {
        LockRec storage r = locks[li];
        return (r.chain, r.key, r.digest, r.orderIdx);
    }

    function lockFill(uint256 li) external view returns (ISettlementEscrowV2.Fill memory) {
        return locks[li].f;
    }

    function takeFillAt(uint256 ti, uint256 i) external view returns (ISettlementEscrowV2.Fill memory) {
        return takeFill[ti][i];
    }

    function advSecretOf(bytes32 hashlock) external view returns (bytes32) {
        return advSecret[hashlock];
    }

    function setHashlock(uint256 si, uint256 i) external view returns (bytes32) {
        return setHashlocks[si][i];
    }

    /// @notice The key the escrows store a Fill's lock and payment under (its digest; the fillId under KeyById).
    function keyOf(ISettlementEscrowV2.Fill memory f) public view returns (bytes32) {
        return hole == SettlementEscrowV2Canary.Hole.KeyById ? f.fillId : fillDigest2(f);
    }

    // ================================================================ internals

    function _call(uint8 c, address from, bytes memory data, bytes32 name)
        internal
        returns (bool ok, bytes memory ret)
    {
        vm.chainId(chainIds[c]);
        vm.prank(from);
        (ok, ret) = address(escrows[c]).call(data);
        if (ok) successes[name]++;
    }

    function _lock(uint8 c, ISettlementEscrowV2.Fill memory f, bytes memory fs, uint256 si, bytes32[] memory proof)
        internal
        returns (bool ok)
    {
        bytes memory data = abi.encodeCall(ISettlementEscrowV2.lock, (f, fs, _setMemory(si), 0, sets[si].sig, proof));
        (ok,) = _call(c, operator, data, "lock");
        if (ok) {
            bytes32 key = keyOf(f);
            lockAtPlus1[c][key] = locks.length + 1;
            locks.push(
                LockRec({
                    chain: c, key: key, digest: fillDigest2(f), orderIdx: orderIdxPlus1[c][f.owner][f.orderId] - 1, f: f
                })
            );
        }
    }

    function _payTake(uint256 ti, address from, ISettlementEscrowV2.Permit memory p) internal returns (bool ok) {
        Take storage tk = takes[ti];
        ISettlementEscrowV2.Fill[] memory fs = new ISettlementEscrowV2.Fill[](tk.n);
        bytes[] memory sigs = new bytes[](tk.n);
        for (uint256 i; i < tk.n; ++i) {
            fs[i] = takeFill[ti][i];
            sigs[i] = takeFillSig[ti][i];
        }
        (ok,) = _call(
            tk.payChain, from, abi.encodeCall(ISettlementEscrowV2.payTake, (fs, sigs, takeAuth[ti], p)), "payTake"
        );
        if (ok) {
            for (uint256 i; i < tk.n; ++i) {
                _recordPayment(tk.payChain, fs[i], true);
            }
        }
    }

    function _recordPayment(uint8 c, ISettlementEscrowV2.Fill memory f, bool honest) internal {
        bytes32 key = keyOf(f);
        payAtPlus1[c][key] = pays.length + 1;
        pays.push(PayRec({chain: c, key: key, digest: fillDigest2(f), honest: honest, f: f}));
    }

    function _claimAs(address from, uint8 c, bytes32 key, bytes32 secret) internal returns (bool ok) {
        _publish(bytes32(0), secret);
        (ok,) = _call(c, from, abi.encodeCall(ISettlementEscrowV2.claim, (key, secret)), "claim");
        if (ok) _afterClaim(c, key, secret);
    }

    function _claimPaymentAs(address from, uint8 c, bytes32 key, bytes32 secret) internal returns (bool ok) {
        _publish(bytes32(0), secret);
        (ok,) = _call(c, from, abi.encodeCall(ISettlementEscrowV2.claimPayment, (key, secret)), "claimPayment");
        if (ok) _afterClaimPayment(c, key);
    }

    /// @dev Maker funds left the order: to the recipient of a Fill whose payment (same digest, a real escrow, the
    ///      maker's payee, the maker's 1:1 price) was claimed, or the invariant is broken.
    function _afterClaim(uint8 c, bytes32 key, bytes32 secret) internal {
        _publish(hashlockOf(secret), secret);
        LockRec storage r = locks[lockAtPlus1[c][key] - 1];
        uint8 m = orders[r.orderIdx].who;
        if (m == ADV) return;
        (bool real, uint8 tc) = _chainIdx(r.f.takerChainId);
        if (!real || r.f.takerEscrow != address(escrows[tc])) {
            _violate("maker funds paid against a payment on an escrow the maker did not quote");
        } else if (!paymentClaimedDigest[tc][r.digest]) {
            _violate("maker funds paid without a claimed payment with the same Fill digest");
        } else if (r.f.payee != payees[m] || r.f.amountIn < r.f.amountOut) {
            _violate("maker funds paid for a payment to another payee or below the maker's price");
        }
    }

    /// @dev An honest taker's payment left to the payee: the lock with the same digest must be live with its
    ///      recipient still able to claim (>= CLAIM_WINDOW left), or already claimed.
    function _afterClaimPayment(uint8 c, bytes32 key) internal {
        PayRec storage p = pays[payAtPlus1[c][key] - 1];
        paymentClaimedDigest[c][p.digest] = true;
        if (!p.honest) return;
        (, uint8 mc) = _chainIdx(p.f.makerChainId);
        bytes32 lockKey = keyOf(p.f);
        uint256 lp1 = lockAtPlus1[mc][lockKey];
        if (lp1 == 0 || locks[lp1 - 1].digest != p.digest) {
            _violate("an honest payment went to the payee without a lock of the same Fill");
            return;
        }
        ISettlementEscrowV2.FillLock memory l = escrows[mc].getLock(lockKey);
        if (l.state == ISettlementEscrowV2.LockState.Claimed) return;
        if (l.state != ISettlementEscrowV2.LockState.Locked || l.expiry < block.timestamp + CLAIM_WIN) {
            _violate("an honest payment went to the payee while its lock could not be claimed");
        }
    }

    /// @dev Online honest clients: takers authorise (and relay) takes whose locks they see live; makers reveal for
    ///      locks whose payment they see.
    function _react() internal {
        if (online[4]) {
            for (uint256 ti; ti < takes.length; ++ti) {
                for (uint256 i; i < takes[ti].n; ++i) {
                    ISettlementEscrowV2.Fill storage f = takeFill[ti][i];
                    (, uint8 mc) = _chainIdx(f.makerChainId);
                    if (
                        f.payBy > block.timestamp
                            && escrows[mc].getLock(keyOf(f)).state == ISettlementEscrowV2.LockState.None
                    ) {
                        advLockHonestExact(ti, i);
                    }
                }
            }
        }
        for (uint256 ti; ti < takes.length; ++ti) {
            Take storage tk = takes[ti];
            if (online[2 + tk.taker] && !tk.authorised && !tk.cancelled && _locksLive(ti)) {
                takerAuthorizeExact(ti, true);
            }
        }
        for (uint256 li; li < locks.length; ++li) {
            uint8 who = orders[locks[li].orderIdx].who;
            if (who != ADV && online[who] && _revealable(li)) makerRevealExact(li);
        }
    }

    /// @dev Honest takers' clients claim as soon as their payment's secret is public.
    function _watch() internal {
        for (uint256 ti; ti < takes.length; ++ti) {
            Take storage tk = takes[ti];
            if (!tk.authorised) continue;
            for (uint256 i; i < tk.n; ++i) {
                ISettlementEscrowV2.Fill storage f = takeFill[ti][i];
                bytes32 key = keyOf(f);
                ISettlementEscrowV2.Payment memory p = escrows[tk.payChain].getPayment(key);
                if (p.state != ISettlementEscrowV2.PaymentState.Claimed) continue;
                bytes32 secret = publicSecret[p.hashlock];
                (, uint8 mc) = _chainIdx(f.makerChainId);
                ISettlementEscrowV2.FillLock memory l = escrows[mc].getLock(key);
                if (
                    secret == bytes32(0) || l.state != ISettlementEscrowV2.LockState.Locked
                        || block.timestamp >= l.expiry
                ) {
                    continue;
                }
                _claimAs(recipients[tk.taker], mc, key, secret);
            }
        }
    }

    /// @dev The honest taker client's check before authorising: every lock (same key) live, payBy not passed.
    function _locksLive(uint256 ti) internal view returns (bool) {
        Take storage tk = takes[ti];
        for (uint256 i; i < tk.n; ++i) {
            ISettlementEscrowV2.Fill storage f = takeFill[ti][i];
            (, uint8 mc) = _chainIdx(f.makerChainId);
            ISettlementEscrowV2.FillLock memory l = escrows[mc].getLock(keyOf(f));
            if (
                l.state != ISettlementEscrowV2.LockState.Locked || block.timestamp >= l.expiry
                    || block.timestamp > f.payBy
            ) {
                return false;
            }
        }
        return true;
    }

    /// @dev The honest maker client's check before revealing for its lock `li`.
    function _revealable(uint256 li) internal view returns (bool) {
        LockRec storage r = locks[li];
        OrderRef storage o = orders[r.orderIdx];
        if (o.who == ADV) return false;
        ISettlementEscrowV2.FillLock memory l = escrows[r.chain].getLock(r.key);
        if (
            l.state != ISettlementEscrowV2.LockState.Locked || block.timestamp >= l.expiry || l.hashlock != r.f.hashlock
        ) {
            return false;
        }
        if (makerSecret[r.f.hashlock] == bytes32(0)) return false;
        (bool ok, ISettlementEscrowV2.Payment memory p) = _readPayment(r.f.takerEscrow, keyOf(r.f));
        return ok && p.state == ISettlementEscrowV2.PaymentState.Held && p.payee == payees[o.who]
            && p.hashlock == r.f.hashlock && p.amountIn >= r.f.amountIn && p.expiry >= block.timestamp + REVEAL_CUTOFF;
    }

    function _readPayment(address target, bytes32 key)
        internal
        view
        returns (bool, ISettlementEscrowV2.Payment memory p)
    {
        (bool ok, bytes memory ret) = target.staticcall(abi.encodeCall(IPaymentView.getPayment, (key)));
        if (!ok || ret.length != 192) return (false, p);
        return (true, abi.decode(ret, (ISettlementEscrowV2.Payment)));
    }

    function _honestFill(TakeArgs memory a, uint256 ti, uint256 i, uint256 amountIn)
        internal
        view
        returns (ISettlementEscrowV2.Fill memory f)
    {
        SetRef storage s = sets[a.setIdx];
        OrderRef storage o = orders[s.orderIdx];
        uint32 idx = i == 0 ? a.index : a.index2;
        f.fillId = keccak256(abi.encode("take", ti, i));
        f.owner = o.owner;
        f.orderId = o.id;
        f.sequence = s.sequence;
        f.makerChainId = chainIds[o.chain];
        f.makerEscrow = address(escrows[o.chain]);
        f.takerChainId = s.quote.chainId;
        f.takerEscrow = s.quote.escrow;
        f.payer = vm.addr(payerPks[a.taker]);
        f.payee = s.quote.recipient;
        f.amountIn = amountIn;
        f.recipient = recipients[a.taker];
        f.amountOut = a.amountOut;
        f.toMargin = a.dexChoice != 0;
        f.dex = [uint32(0), 0, SPOT, 7][a.dexChoice];
        f.hashlock = setHashlocks[a.setIdx][idx];
        f.hashlockIndex = idx;
        f.payKey = vm.addr(takes[ti].payKeyPk);
        f.payBy = uint64(block.timestamp) + a.payDelay;
        f.takerExpiry = f.payBy + TAKER_TIMEOUT;
        f.makerExpiry = f.takerExpiry + CLAIM_WIN;
    }

    function _advFill(AdvLockArgs memory a) internal view returns (ISettlementEscrowV2.Fill memory f) {
        SetRef storage s = sets[a.setIdx];
        OrderRef storage o = orders[s.orderIdx];
        f.fillId = a.fillId;
        f.owner = o.owner;
        f.orderId = o.id;
        f.sequence = s.sequence;
        f.makerChainId = chainIds[o.chain];
        f.makerEscrow = address(escrows[o.chain]);
        f.takerChainId = s.quote.chainId;
        (bool real, uint8 qc) = _chainIdx(s.quote.chainId);
        f.takerEscrow = a.escrowChoice == 1
            ? address(fake)
            : a.escrowChoice == 2 && real ? address(escrows[1 - qc]) : s.quote.escrow;
        f.payer = advPayer;
        f.payee = a.priceMode == 2 ? advRecipient : s.quote.recipient;
        f.amountOut = a.amountOut;
        f.amountIn = (a.amountOut * s.quote.receive_ + s.quote.supply - 1) / s.quote.supply;
        if (a.priceMode == 1 && f.amountIn > 0) f.amountIn -= 1;
        f.recipient = advRecipient;
        f.toMargin = a.timeSeed % 3 != 0;
        f.dex = f.toMargin ? [uint32(0), SPOT, 7][(a.timeSeed >> 2) % 3] : 0;
        f.hashlockIndex = a.hlIndex < s.count ? a.hlIndex : 0;
        f.hashlock = setHashlocks[a.setIdx][f.hashlockIndex];
        f.payKey = advPayKey;
        uint64 t = uint64(block.timestamp);
        f.payBy = t + uint64(bound(a.timeSeed >> 8, 1, PAYBY_MAX));
        f.takerExpiry = f.payBy + TAKER_TIMEOUT + uint64((a.timeSeed >> 16) % 60);
        uint64 latest = t + LOCK_MAX;
        uint64 earliest = f.takerExpiry + CLAIM_WIN;
        f.makerExpiry = earliest + uint64((a.timeSeed >> 24) % (latest - earliest + 1));
        if (a.timeMode == 1) {
            // One bound one second off either way, or exactly on it.
            uint256 which = (a.timeSeed >> 32) % 5;
            uint64 off = uint64((a.timeSeed >> 40) % 3); // x - 1 + off ∈ {x - 1, x, x + 1}
            if (which == 0) f.payBy = t - 1 + off;
            if (which == 1) f.payBy = t + PAYBY_MAX - 1 + off;
            if (which == 2) f.takerExpiry = f.payBy + TAKER_TIMEOUT - 1 + off;
            if (which == 3) f.makerExpiry = f.takerExpiry + CLAIM_WIN - 1 + off;
            if (which == 4) f.makerExpiry = latest - 1 + off;
        }
    }

    function _setMemory(uint256 si) internal view returns (ISettlementEscrowV2.QuoteSet memory q) {
        SetRef storage s = sets[si];
        OrderRef storage o = orders[s.orderIdx];
        q.owner = o.owner;
        q.orderId = o.id;
        q.sequence = s.sequence;
        q.generation = 1;
        q.quoteSize = s.quoteSize;
        q.issuedAt = s.issuedAt;
        q.validUntil = s.validUntil;
        q.hashlockRoot = s.root;
        q.hashlockCount = s.count;
        q.quotes = new ISettlementEscrowV2.Quote[](1);
        q.quotes[0] = s.quote;
    }

    function _secretFor(bytes32 hashlock, uint256 seed) internal view returns (bytes32) {
        uint256 choice = seed % 4;
        if (choice == 0 && advSecret[hashlock] != bytes32(0)) return advSecret[hashlock];
        if (choice == 1 && publicSecret[hashlock] != bytes32(0)) return publicSecret[hashlock];
        if (choice == 2 && publicSecrets.length > 0) return publicSecrets[(seed >> 8) % publicSecrets.length];
        if (advSecret[hashlock] != bytes32(0)) return advSecret[hashlock];
        if (publicSecret[hashlock] != bytes32(0)) return publicSecret[hashlock];
        return keccak256(abi.encode("guess", seed));
    }

    function _publish(bytes32 hashlock, bytes32 secret) internal {
        if (secret == bytes32(0)) return;
        bytes32 h = hashlock == bytes32(0) ? hashlockOf(secret) : hashlock;
        if (publicSecret[h] == bytes32(0)) {
            publicSecret[h] = secret;
            publicSecrets.push(secret);
        }
    }

    /// @dev A set still valid now on an order that can trade (what the service routes to), from a random start.
    function _pickLiveSet(uint256 seed) internal view returns (bool, uint256) {
        uint256 n = sets.length;
        for (uint256 j; j < n; ++j) {
            uint256 i = (seed % n + j) % n;
            if (sets[i].validUntil < block.timestamp) continue;
            OrderRef storage o = orders[sets[i].orderIdx];
            ISettlementEscrowV2.Order memory ord = escrows[o.chain].getOrder(o.owner, o.id);
            if (!ord.closeRequested && ord.available > 0) return (true, i);
        }
        return (false, 0);
    }

    /// @dev What the service would offer from a set: its quote size bounded by the order's available (at least 1).
    function _fillable(uint256 si) internal view returns (uint256) {
        SetRef storage s = sets[si];
        OrderRef storage o = orders[s.orderIdx];
        uint256 available = escrows[o.chain].getOrder(o.owner, o.id).available;
        uint256 cap = s.quoteSize < available ? s.quoteSize : available;
        return cap == 0 ? 1 : cap;
    }

    function _pickOrder(uint256 seed, bool honest) internal view returns (bool, uint256) {
        uint256 n = orders.length;
        for (uint256 j; j < n; ++j) {
            uint256 i = (seed % n + j) % n;
            if ((orders[i].who != ADV) == honest) return (true, i);
        }
        return (false, 0);
    }

    function _registerOrder(uint8 c, uint8 who, address owner, bytes32 id) internal returns (uint256) {
        uint256 known = orderIdxPlus1[c][owner][id];
        if (known != 0) return known - 1;
        orders.push(OrderRef({chain: c, who: who, owner: owner, id: id}));
        orderIdxPlus1[c][owner][id] = orders.length;
        return orders.length - 1;
    }

    function _honestId(uint8 m, uint256 k) internal pure returns (bytes32) {
        return keccak256(abi.encode("order", m, k % 4));
    }

    function _chainIdx(uint256 chainId) internal view returns (bool, uint8) {
        if (chainId == chainIds[0]) return (true, 0);
        if (chainId == chainIds[1]) return (true, 1);
        return (false, 0);
    }

    function _freshKey() internal returns (uint256) {
        return uint256(keccak256(abi.encode("pay key", ++counter))) % (SECP256K1_N - 1) + 1;
    }

    /// @dev Token, zero-id balance and margin credit of `who` on chain `c`.
    function _holdings(uint8 c, address who) internal view returns (uint256) {
        return
            tokens[c].balanceOf(who) + escrows[c].balanceOf(who) + cdws[c].deposits(who, 0)
                + cdws[c].deposits(who, SPOT);
    }

    function _violate(string memory why) internal {
        if (!violated) {
            violated = true;
            violation = why;
        }
        violations++;
    }
}
