#if Server
import Coffer
import Crypto
import Foundation

/// Keys as rows (docs/key-server-operating.md): each version of each key is 256
/// bits from the system's CSPRNG, sealed under the server's KEK with its
/// name and version as context. The rows live in SQLite (one machine;
/// several processes may serve one file) or PostgreSQL (any number of
/// replicas on one database, ``ServerKeyStore/open(postgres:password:kek:reload:connections:deadline:creating:now:)``);
/// every change is one transaction.
public final class ServerKeyStore: Sendable {
    let rows: any KeyRows
    /// The KEK ring, replaced when a row names a key it lacks (another
    /// process rotated the KEK: ``ServerKeyStore/rewrap(batchSize:progress:)``).
    let ring: Locked<KeyRing>
    /// Reads the ring again (``useKEK(_:reload:)`` may set it after opening).
    let reloader: Locked<(@Sendable () async throws -> KeyRing)?>
    /// KEK key ids a reading of the ring lacked, with when it was read: a
    /// row naming one fails at once for ``absentFor`` seconds, or until
    /// the ring is read again for another reason, instead of reading the
    /// ring (scrypt, for a passphrase) on every request.
    let absent = Locked<[UInt32: Int64]>([:])
    /// How long a KEK key id a reading lacked is not looked for again: as
    /// long as the server waits between its own readings of the ring.
    static let absentFor: Int64 = 30
    var kek: KeyRing { ring.withLock { $0 } }
    /// The id of the KEK's primary key, as `kek list` prints it (for the start-up log).
    public var kekPrimaryID: UInt32 { kek.primaryID }
    /// Seconds since 1970; tests move it.
    package let now: @Sendable () -> Int64
    /// Reads and audits key releases, many per transaction.
    package let releases: Batcher<ReleaseRequest, StoredVersion?>
    /// The rate limits' counts, in memory and in the database.
    package let limiter: RateLimiter
    /// The audit anchors' MAC key, once read from the database.
    let anchorKey = Locked<SymmetricKey?>(nil)
    /// The last anchor made, and how anchoring went (``AnchorState``).
    let anchoring = Locked(AnchorState())
    /// Keys opened in the last minute (``OpenedKeys``).
    let opened = OpenedKeys()
    /// Why the KEK's holder (an HSM) cannot be reached, nil while it can
    /// (``kekHolder(reachable:)``).
    let holderDown = Locked<String?>(nil)
    /// Refused operator calls written to the audit chain this minute.
    let refusals = RefusalAudit()

    /// Opens (creating when missing, if `creating`) the SQLite database at `path`.
    /// - Parameters:
    ///   - path: the SQLite file.
    ///   - creating: whether to make the file when it is not there; when
    ///     false a missing file is refused (`coffer-server` makes it only
    ///     in `kek init`, so that a misspelt path is an error, not a new
    ///     empty key server).
    ///   - kek: the key ring that seals and opens every key.
    ///   - reload: reads the key ring again, when a stored key names a KEK
    ///     key the ring in memory lacks (the KEK was rotated meanwhile).
    ///   - now: the clock, in seconds since 1970.
    public convenience init(
        path: String, kek: KeyRing, reload: (@Sendable () async throws -> KeyRing)? = nil, creating: Bool = true,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    )
        throws
    {
        guard creating || FileManager.default.fileExists(atPath: path) else {
            throw CofferError(
                .refused,
                "there is no key server database at \(path): coffer-server kek init makes it, once, for a new key server"
            )
        }
        self.init(rows: try SQLiteKeyRows(path: path), kek: kek, reload: reload, now: now)
    }

    init(
        rows: any KeyRows, kek: KeyRing, reload: (@Sendable () async throws -> KeyRing)?,
        now: @escaping @Sendable () -> Int64
    ) {
        self.rows = rows
        releases = Batcher(loop: { next, answer in
            try await rows.releaseBatches(next: next, answer: answer, now: now)
        })
        limiter = RateLimiter(rows: rows, now: now)
        ring = Locked(kek)
        reloader = Locked(reload)
        self.now = now
        linkAuditAppends()
    }

    /// Closes the database's connections (PostgreSQL); a store is not used afterwards.
    public func close() async { await rows.close() }

    /// Throws unless the database answers: what `GET /v1/ready` asks.
    public func ping() async throws { try await rows.ping() }

    // MARK: releasing keys

    /// The current version of `name`'s key, created on first use: of many
    /// first requests at once, exactly one key is made and all receive it.
    /// Every release is in the audit log before the key is returned.
    public func current(_ name: KeyName) async throws -> ReleasedKey {
        try await current(name, proof: nil)
    }

    /// `proof`: the DPoP proof of the request, refused as a replay if any
    /// replica saw it before (recorded in the release's transaction).
    /// `counts`: the request's shared rate counts (``RateLimiter/release(_:)``).
    /// `releasedTo`: the operator the key goes to, when not its subject
    /// (scope `keys:release`), as the audit names it.
    package func current(
        _ name: KeyName, proof: ProofUse?, counts: [LimitedCount] = [], releasedTo: String? = nil
    ) async throws -> ReleasedKey {
        // A release is linked in the batch's transaction, which cannot wait.
        _ = try await rows.auditLinks.key()
        let request = ReleaseRequest(
            name: name, version: nil, proof: proof, counts: counts, releasedTo: releasedTo)
        if let row = try await limiter.release(request, releases) {
            return try await open(row, name)
        }
        let sealed = try seal(SymmetricKey(size: .bits256), name, version: 1)
        return try await open(
            try await rows.create(name, wrapped: sealed, now: now(), actor: request.actor), name)
    }

    /// Version `version` of `name`'s key: `key-not-found` when it was never
    /// made, `key-retired` below the key's minimum version.
    public func version(_ version: Int, of name: KeyName) async throws -> ReleasedKey {
        try await self.version(version, of: name, proof: nil)
    }

    package func version(
        _ version: Int, of name: KeyName, proof: ProofUse?, counts: [LimitedCount] = [], releasedTo: String? = nil
    ) async throws -> ReleasedKey {
        _ = try await rows.auditLinks.key()
        // Versions count from 1; a version beyond what a backend stores
        // names no row there.
        guard version >= 1,
            let row = try await limiter.release(
                ReleaseRequest(name: name, version: version, proof: proof, counts: counts, releasedTo: releasedTo),
                releases)
        else { throw KeyServerError(.keyNotFound, "this key has no version \(version)") }
        return try await open(row, name)
    }

    // MARK: changing keys (operators)

    /// Adds a version and makes it current; returns it. A key never made
    /// gets its version 1. `actor` names who asked, in the audit log.
    ///
    /// Without `creating`, a subject the server has never held a key for
    /// (nor been asked to shred) is refused as `subject-unknown`: an
    /// operator's typo makes nothing.
    public func rotate(_ name: KeyName, creating: Bool = true, by actor: String = "server") async throws
        -> ReleasedKey
    {
        if !creating { try await requireKnown(realm: name.realm, subject: name.subject) }
        let now = self.now()
        let row = try await rows.rotate(name, now: now, audit: .init(actor: actor, action: "rotate", name)) { version in
            try self.seal(SymmetricKey(size: .bits256), name, version: version)
        }
        return try await open(row, name)
    }

    /// Stops releasing versions below `minimum` (at most the current one).
    public func retire(_ name: KeyName, below minimum: Int, by actor: String = "server") async throws {
        guard minimum >= 1 else {
            throw KeyServerError(.invalidMinimumVersion, "the minimum version is a whole number from 1")
        }
        try await rows.retire(
            name, minimum: minimum, now: now(),
            audit: .init(actor: actor, action: "retire", name, version: minimum, detail: "minimum version \(minimum)"))
    }

    // MARK: rows

    func seal(_ key: SymmetricKey, _ name: KeyName, version: Int) throws -> Data {
        try requireKEKHolder()
        return try key.withUnsafeBytes { try kek.seal($0, context: try name.context(version: version)) }
    }

    /// Opens a stored version, or finds it opened in the last minute.
    func open(_ row: StoredVersion, _ name: KeyName) async throws -> ReleasedKey {
        let now = now()
        if let key = opened.find(name, row, now: now) { return key }
        try requireKEKHolder()
        let (version, wrapped) = (row.version, row.wrapped)
        // Built once: it opens the key and names it.
        let context = try name.context(version: version)
        let bytes: Data
        do {
            bytes = try await openWrapped(wrapped, context: context)
        } catch {
            // A row moved to another name, or a KEK that is not this store's.
            throw KeyServerError(.keyUnreadable, "a stored key did not open under the server's KEK")
        }
        let key = ReleasedKey(
            name: name, version: version, keyID: KeyName.keyID(of: bytes), key: SymmetricKey(data: bytes))
        opened.keep(key, row, now: now)
        return key
    }

    /// Opens a sealed key; a KEK key the ring lacks makes it read the
    /// ring again once, unless a reading in the last ``absentFor``
    /// seconds lacked that key too (a replica whose KEK is not the
    /// database's would otherwise read its ring on every request).
    func openWrapped(_ wrapped: Data, context: SealingContext) async throws -> Data {
        do {
            return try kek.open(wrapped, context: context)
        } catch let error as CofferError where error.code == .keyNotFound {
            guard let reload = reloader.withLock({ $0 }), let id = try? SealedValue.keyID(of: wrapped) else {
                throw error
            }
            let time = now()
            if let read = absent.withLock({ $0[id] }), time >= read, time - read < Self.absentFor { throw error }
            let fresh: KeyRing
            do {
                fresh = try await reload()
            } catch {
                absent.withLock { $0[id] = time }
                throw error
            }
            replaceRing(with: fresh)
            opened.clear()
            do {
                return try fresh.open(wrapped, context: context)
            } catch let again as CofferError where again.code == .keyNotFound {
                absent.withLock { $0[id] = time }
                throw again
            }
        }
    }

    /// Records whether the KEK's holder (an HSM's token) answers, as the
    /// server's check finds every few seconds: while it does not, what
    /// needs the KEK answers `503 kek-unavailable` (keys opened in the
    /// last minute are still answered). Returns whether this changed it.
    @discardableResult
    public func kekHolder(reachable: Bool, reason: String = "") -> Bool {
        holderDown.withLock { down in
            let changed = (down == nil) != reachable
            down = reachable ? nil : reason
            return changed
        }
    }

    func requireKEKHolder() throws {
        if holderDown.withLock({ $0 }) != nil {
            throw KeyServerError(
                .kekUnavailable, "the HSM that holds the server's KEK cannot be reached; try again shortly")
        }
    }

    /// Puts `ring` in place, and how to read it again: for a ring read
    /// from the database this store opened (``KEKRingRow``).
    public func useKEK(_ ring: KeyRing, reload: (@Sendable () async throws -> KeyRing)?) {
        reloader.withLock { $0 = reload }
        replaceRing(with: ring)
        opened.clear()
    }

    /// Puts a ring just read in place, forgetting the ids the old one lacked.
    func replaceRing(with fresh: KeyRing) {
        ring.withLock { $0 = fresh }
        absent.withLock { $0.removeAll() }
    }
}
#endif
