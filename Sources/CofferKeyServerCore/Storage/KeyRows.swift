#if Server
import Foundation

/// Where a key server's rows live: SQLite through GRDB (one machine) or
/// PostgreSQL through postgres-nio (any number of replicas). The store's
/// policy (sealing, opening, what a shred or a minimum version forbids) is
/// written once in ``ServerKeyStore``; a backend only runs each operation
/// as one transaction, with the checks below inside it.
protocol KeyRows: Sendable {
    var auditLinks: AuditLinks { get }  // each append's link key
    /// For each request, in order: the version to release (nil when the
    /// key has none) or the problem its shared rate counts (one full,
    /// ``ReleaseRequest/counts``, raised first: ``CountPlan``), its DPoP
    /// proof (a replay), its subject's shred state or its minimum version raises. The proofs
    /// are recorded (``KeySnapshot/spend(_:recorded:)``) and the released
    /// versions appended to the audit chain (a `release` to the subject)
    /// in one transaction before it returns (on PostgreSQL, one statement).
    func release(_ requests: [ReleaseRequest], now: Int64) async throws -> [Result<StoredVersion?, any Error>]
    /// Runs batches of releases taken from `next` until it gives nil or
    /// the backend chooses to stop, each answered through `answer` once
    /// committed (``Batcher/Loop``).
    func releaseBatches(
        next: @escaping @Sendable (Duration) -> [ReleaseRequest]?,
        answer: @escaping @Sendable ([Result<StoredVersion?, any Error>]) -> Void, now: @escaping @Sendable () -> Int64
    ) async throws
    /// Version 1 of `name` unless a version exists; then the latest. One
    /// transaction, refused by the subject's shred state; audited as a
    /// `create` (when it made the row) and a `release` to `actor`.
    func create(_ name: KeyName, wrapped: Data, now: Int64, actor: String) async throws -> StoredVersion
    /// A new latest version, sealed by `seal(version)`; one transaction,
    /// with `audit` (its version filled in).
    func rotate(
        _ name: KeyName, now: Int64, audit: AuditEntry.Record, seal: @escaping @Sendable (Int) throws -> Data
    ) async throws -> StoredVersion
    /// Sets the minimum version (checked by ``RetireRule``).
    func retire(_ name: KeyName, minimum: Int, now: Int64, audit: AuditEntry.Record) async throws
    /// Schedules a shred at `at` (or keeps an earlier one); returns when.
    func shred(realm: String, subject: String, at: Int64, now: Int64, audit: AuditEntry.Record) async throws -> Int64
    func undoShred(realm: String, subject: String, now: Int64, audit: AuditEntry.Record) async throws
    /// Deletes the keys of every subject whose shred is due; returns how
    /// many subjects it marked shredded (each audited as a `sweep`).
    func sweep(now: Int64) async throws -> Int

    /// How many rows each KEK key sealed, by the key's id as sealed values name it (4 bytes, big-endian).
    func wrappedCounts() async throws -> [Data: Int]
    /// Rows sealed under a KEK key other than `keyID` (4 bytes, big-endian).
    func wrapped(notUnder keyID: Data, limit: Int) async throws -> [PendingRow]
    /// Replaces each row's sealed key if it is still as read; returns how
    /// many it replaced (audited as one `rewrap`).
    func replaceWrapped(_ rows: [(PendingRow, Data)], now: Int64, audit: AuditEntry.Record) async throws -> Int

    func addOperator(
        hash: Data, name: String, scopes: String, realm: String, created: Int64, expires: Int64?,
        audit: AuditEntry.Record) async throws
    func operatorInfo(hash: Data) async throws -> OperatorInfo?
    func operators() async throws -> [OperatorInfo]
    func removeOperator(name: String, now: Int64, audit: AuditEntry.Record) async throws -> Bool

    /// Entries after `seq`, in order, at most `limit`.
    func auditEntries(after seq: Int64, limit: Int) async throws -> [AuditEntry]
    /// Every entry about one subject, in order.
    func auditEntries(realm: String, subject: String) async throws -> [AuditEntry]
    /// The chain's last entry's number and hash; nil while it is empty.
    func auditHead() async throws -> AuditHead?
    /// Stores `anchor` unless one at its number is there already.
    func addAuditAnchor(_ anchor: AuditAnchor) async throws
    /// Anchors after `seq`, in order, at most `limit`.
    func auditAnchors(after seq: Int64, limit: Int) async throws -> [AuditAnchor]
    /// The anchor with the highest number; nil when there is none.
    func lastAuditAnchor() async throws -> AuditAnchor?

    /// Raises the request count of each bucket in the window ending at its
    /// `windowEnd` by one, all in one transaction, and returns each new
    /// count in order (a bucket named twice gets two consecutive counts).
    func countRequests(_ counts: [RateCount]) async throws -> [Int]
    /// The secret named `name`, stored as `make` by whichever replica asked first.
    func secret(named name: String, make: Data) async throws -> Data
    /// Every stored secret, by name, as sealed (for the KEK's rewrap and list).
    func secrets() async throws -> [String: Data]
    /// Replaces the secret `name` by `sealed` if it is still `old`; returns
    /// whether it did (audited as one `rewrap`).
    func replaceSecret(named name: String, old: Data, sealed: Data, now: Int64, audit: AuditEntry.Record)
        async throws -> Bool
    /// Forgets the rate-limit counts of windows and the proofs that ended before `now`.
    func forgetExpired(before now: Int64) async throws

    /// The anchored state of the CofferStore `store` in `realm`, as stored.
    func storeAnchor(realm: String, store: String) async throws -> Data?
    /// In one transaction: `decide` is given the stored state and returns
    /// the one to store instead (nil: keep it); a state stored is audited
    /// as `audit`. Returns the state stored after.
    func updateStoreAnchor(
        realm: String, store: String, now: Int64, audit: AuditEntry.Record,
        _ decide: @escaping @Sendable (Data?) throws -> Data?
    ) async throws -> Data
    /// `subject`'s keys in `realm` and its shred state.
    func subjectKeys(realm: String, subject: String) async throws -> SubjectKeys
    /// The subjects of `realm` with a key or a shred, in order, the first
    /// `limit` after `after`.
    func subjects(realm: String, after: String, limit: Int) async throws -> [String]
    /// The KEK ring's bytes kept in the database (``KEKRingRow``), nil when none.
    func kekRing() async throws -> Data?
    /// `ring` in place of `old` (nil: of none); false, writing nothing, when the row is not `old`.
    func replaceKEKRing(_ ring: Data, replacing old: Data?) async throws -> Bool
    func appendAudit(_ records: [AuditEntry.Record], now: Int64) async throws  // alone in a transaction
    func ping() async throws  // throws unless the database answers (readiness)
    func close() async  // closes connections; the rows stay
}

/// A version as stored: the key sealed under the KEK.
package struct StoredVersion: Sendable {
    let version: Int
    let wrapped: Data
}

/// One key as a backend read it: the subject's shred state, the key's
/// minimum version and the wanted version (nil: the latest), in one snapshot.
struct KeySnapshot: Sendable {
    let shredAt: Int64?
    let shredded: Bool
    let minimum: Int
    let stored: StoredVersion?

    /// The version to release, nil when there is none; throws what the
    /// subject's shred state or the key's minimum version forbids.
    func released(now: Int64, version: Int?) throws -> StoredVersion? {
        if let shredAt { try ShredRule.refuse(shredAt: shredAt, shredded: shredded, now: now) }
        if let version, version < minimum {
            throw KeyServerError(
                .keyRetired,
                "version \(version) of this key is retired (the lowest version still released is \(minimum))")
        }
        return stored
    }

    /// What ``KeyRows/release(_:now:)`` answers for `request`, and the
    /// audit entry of a release.
    /// `fresh`: for each request, false when its proof was used before.
    static func outcomes(_ snapshots: [(ReleaseRequest, KeySnapshot)], fresh: [Bool], now: Int64)
        -> (results: [Result<StoredVersion?, any Error>], audit: [AuditEntry.Record])
    {
        var results: [Result<StoredVersion?, any Error>] = []
        var audit: [AuditEntry.Record] = []
        results.reserveCapacity(snapshots.count)
        for ((request, snapshot), fresh) in zip(snapshots, fresh) {
            do {
                guard fresh else { throw KeyServerError.proofReplayed }
                let row = try snapshot.released(now: now, version: request.version)
                if let row {
                    audit.append(.init(actor: request.actor, action: "release", request.name, version: row.version))
                }
                results.append(.success(row))
            } catch {
                results.append(.failure(error))
            }
        }
        return (results, audit)
    }

    /// Which requests' proofs are fresh, given which proofs the database
    /// newly recorded: a proof's later copies in one batch are replays.
    static func spend(_ requests: [ReleaseRequest], recorded: (Data) -> Bool) -> [Bool] {
        var seen: Set<Data> = []
        return requests.map { request in
            guard let proof = request.proof else { return true }
            return seen.insert(proof.hash).inserted && recorded(proof.hash)
        }
    }
}

/// A batch's shared rate counts, raised together: each bucket once, by
/// how many of the batch's requests count against it (a client's
/// requests share their buckets, so they cost one upsert per bucket a
/// batch, not one each), in the order of their buckets (so two
/// transactions lock the rows they share in one order); the k-th request
/// of a bucket then sees the count before the batch plus k, as if each
/// had been raised alone, in order.
struct CountPlan {
    let counts: [[LimitedCount]]
    /// Each bucket and by how much it is raised, sorted.
    let raises: [(RateCount, Int)]

    init(_ counts: [[LimitedCount]]) {
        self.counts = counts
        var totals: [RateCount: Int] = [:]
        for limited in counts.joined() { totals[limited.count, default: 0] += 1 }
        raises = totals.sorted { ($0.key.bucket, $0.key.windowEnd) < ($1.key.bucket, $1.key.windowEnd) }
            .map { ($0.key, $0.value) }
    }

    /// For each request, what refuses it, given each bucket's count after
    /// the batch's raise.
    func refusals(_ after: [RateCount: Int]) -> [SharedCountFull?] {
        let totals = Dictionary(uniqueKeysWithValues: raises)
        var seen: [RateCount: Int] = [:]
        return counts.map { request in
            var refusal: SharedCountFull?
            for limited in request {
                let position = seen[limited.count, default: 0] + 1
                seen[limited.count] = position
                let count = (after[limited.count] ?? totals[limited.count]!) - totals[limited.count]! + position
                refusal = refusal ?? limited.refusal(count)
            }
            return refusal
        }
    }

    /// Every request's answer: its refusal, or in order the answers of
    /// those admitted.
    static func merge(_ refused: [SharedCountFull?], _ released: [Result<StoredVersion?, any Error>])
        -> [Result<StoredVersion?, any Error>]
    {
        var admitted = released[...]
        return refused.map { refusal in refusal.map { .failure($0) } ?? admitted.removeFirst() }
    }
}

/// A DPoP proof seen: its replay hash and when it can be forgotten.
package struct ProofUse: Sendable {
    let hash: Data
    let expires: Int64

    package init(hash: Data, expires: Int64) {
        self.hash = hash
        self.expires = expires
    }
}

/// A row for KEK rotation to seal again.
struct PendingRow: Sendable {
    let name: KeyName
    let version: Int
    let wrapped: Data
}

/// What a subject's shred state forbids.
enum ShredRule {
    /// Throws for a subject with a shred scheduled at `at`.
    static func refuse(shredAt at: Int64, shredded: Bool, now: Int64) throws {
        if shredded || at <= now {
            throw KeyServerError(.keyShredded, "this subject's keys were destroyed")
        }
        throw KeyServerError(
            .shredPending,
            "this subject's keys are to be destroyed at \(timestamp(at)); until then an operator can undo it")
    }

    /// A shred asked for at `at` of a subject whose state is `existing`:
    /// when it happens (never later than one already scheduled).
    static func scheduled(at: Int64, existing: (shredAt: Int64, shredded: Bool)?) throws -> Int64 {
        guard let existing else { return at }
        if existing.shredded { throw KeyServerError(.keyShredded, "this subject's keys were destroyed") }
        return min(existing.shredAt, at)
    }

    /// Checks that a shred can be undone.
    static func undo(existing: (shredAt: Int64, shredded: Bool)?, now: Int64) throws {
        guard let existing else {
            throw KeyServerError(.shredNotPending, "no shred of this subject is pending")
        }
        guard !existing.shredded, existing.shredAt > now else {
            throw KeyServerError(.keyShredded, "this subject's keys were destroyed; a shred cannot be undone")
        }
    }

    static func timestamp(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}

/// What a new minimum version must respect.
enum RetireRule {
    static func check(minimum: Int, current: Int?, floor: Int) throws {
        guard let current else { throw KeyServerError(.keyNotFound, "this key was never made") }
        guard minimum <= current else {
            throw KeyServerError(
                .minimumAboveCurrent, "the minimum version cannot pass the current version, \(current)")
        }
        guard minimum >= floor else {
            throw KeyServerError(.retireBackwards, "versions below \(floor) are retired already")
        }
    }
}

extension KeyRows {
    /// One batch per turn, through ``release(_:now:)``: a backend whose
    /// batch is one statement gains nothing by holding a connection longer.
    func releaseBatches(
        next: @escaping @Sendable (Duration) -> [ReleaseRequest]?,
        answer: @escaping @Sendable ([Result<StoredVersion?, any Error>]) -> Void, now: @escaping @Sendable () -> Int64
    ) async throws {
        guard let requests = next(.zero) else { return }
        answer(try await release(requests, now: now()))
    }

    /// The most expired rows (DPoP proofs, rate-limit counts) one delete
    /// removes; a sweep repeats it until fewer are left.
    static var forgetBatch: Int { 2000 }
}
#endif
