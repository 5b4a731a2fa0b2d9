import Coffer
import Crypto
import Foundation
import GRDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Creates `path` empty and 0600, refusing one that exists (`refused`).
func createPrivateFile(_ path: String) throws {
    let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
        if errno == EEXIST { throw CofferError(.refused, "\(path) already exists; a new store needs a new file") }
        throw CofferError(.io, "cannot create the store \(path): \(String(cString: strerror(errno)))")
    }
    close(descriptor)
}

/// A record store in one SQLite file (WAL, several processes writing at
/// once), whose sealed fields are sealed and whose clear fields are plain
/// columns (docs/store.md).
///
/// ```swift
/// let store = try RecordStore.create(sqlite: "presents.sqlite", schema: schema, secret: .password(passphrase))
/// let id = try store.put(["to": .text("Grandma"), "description": .text("a knitted scarf")], into: "presents")
/// let found = try store.find("presents", where: "to", equals: .text("Grandma"))
/// ```
///
/// The store's key ring (sealed under `secret` in key slots) and its index
/// roots (sealed under the key ring) live in the database's `coffer_meta`
/// table, so the file is the whole store. SQLite's `secure_delete` is on,
/// so deleted plaintext-free pages are zeroed too.
public final class RecordStore: Sendable {
    let state: Locked<StoreState>
    let backend: any StoreBackend
    var path: String { backend.location }
    /// Where the highest epoch written to this store is kept outside its
    /// database (docs/store.md, "The store's state"); nil for none.
    let rollbackGuard: (any RollbackGuard)?
    /// The highest epoch this process opened, loaded in a write or wrote:
    /// a write transaction that finds an older one was rolled back.
    let highestEpoch: Locked<UInt64>
    /// A delete or an update committed whose old cells may still be in the
    /// WAL, because the checkpoint that would clear them could not run.
    let residue = Locked(false)
    /// Set by ``close()``: no transaction starts after it.
    let closed = Locked(false)
    /// Write transactions this handle committed: observations wake on it.
    let commits = Locked<UInt64>(0)
    /// Where the store's state is kept outside its database (``keepAnchored(at:policy:)``).
    let anchors = Locked<[AnchorKeeper]>([])
    /// Set when an anchor found the database older than its state: every
    /// call after it is refused with it.
    let anchorFailure = Locked<CofferError?>(nil)

    static let format = "coffer store v1"

    /// The tables and fields, as of the last transaction (a migration
    /// changes them).
    public var schema: StoreSchema { state.withLock { $0.schema } }

    /// The job begun and not finished (rotate, reindex or migrate), if any.
    public func pendingJob() throws -> StoreJob? {
        try read { work in
            let (db, state) = (work.db, work.state)
            return try StoreJob.fetch(db, keys: state.keys, where: path)
        }
    }

    init(state: StoreState, backend: any StoreBackend, rollbackGuard: (any RollbackGuard)?) {
        self.state = Locked(state)
        self.backend = backend
        self.rollbackGuard = rollbackGuard
        highestEpoch = Locked(state.epoch)
    }

    static func guardKey(_ storeID: [UInt8]) -> String { "store:" + Hex.encode(storeID) }

    /// Makes a new store at `path` (which must not exist): its tables, a
    /// new key ring sealed under `secret`, and index root version 1. The
    /// file is made 0600 (its WAL and shared memory take its mode).
    /// `rollbackGuard` keeps the store's highest epoch outside the file,
    /// so that an older copy of its state put back is refused
    /// (`rolledBack`): ``defaultRollbackGuard`` unless told, nil for none.
    /// On Apple platforms its files are given the Data Protection class
    /// `completeUntilFirstUserAuthentication` (``StoreFileProtection``).
    public static func create(
        sqlite path: String, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) throws -> RecordStore {
        try schema.validate()
        try createPrivateFile(path)
        do {
            let store = try create(
                in: try SQLiteBackend(path: path), schema: schema, secret: secret, kdf: kdf,
                rollbackGuard: rollbackGuard)
            try protect(path, .completeUntilFirstUserAuthentication)
            return store
        } catch {
            // Nothing was committed: leave no empty file behind.
            for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
            throw error
        }
    }

    /// Makes the tables and the metadata of a new store in `backend`'s database.
    package static func create(
        in backend: any StoreBackend, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    )
        throws -> RecordStore
    {
        try schema.validate()
        let state = try backend.write(exclusive: true) { db in
            guard try !db.tableExists(StoreSQL.metaTable) else {
                throw CofferError(.refused, "\(backend.location) holds a Coffer store already")
            }
            for table in schema.tables {
                for statement in StoreSQL.create(table, db.dialect) { try db.execute(statement) }
            }
            return try initialise(db, schema: schema, secret: secret, kdf: kdf)
        }
        try rollbackGuard?.reset(guardKey(state.keys.storeID), to: state.epoch)
        return RecordStore(state: state, backend: backend, rollbackGuard: rollbackGuard)
    }

    /// Writes the metadata of a new store into `db`: store id, key ring,
    /// index root 1, record-set key, schema, epoch 1; and the record-set
    /// digest of the tables as they are (empty, or an adopted database's).
    static func initialise(_ db: any StoreConnection, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF)
        throws -> StoreState
    {
        let storeID = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        let ringFile = try KeyRingFile(keyRing: KeyRing(), secret: secret, kdf: kdf)
        let keys = try StoreKeys(
            storeID: storeID, keyRing: ringFile.keyRing, indexRoots: [1: SymmetricKey(size: .bits256)], current: 1)
        try db.execute(StoreSQL.createMeta(db.dialect))
        try db.execute(TenantKeys.createTable(db.dialect))
        for (name, value) in [("format", Array(format.utf8)), ("store_id", storeID)] {
            try db.execute(
                "INSERT INTO \(StoreSQL.metaTable) (name, value) VALUES (?, ?)",
                [name.databaseValue, Data(value).databaseValue])
        }
        var state = StoreState(epoch: 0, schema: schema, keys: keys, ringFile: ringFile, job: nil)
        try state.startRecordSet(db)
        try state.save(db, over: nil)
        return state
    }

    /// Opens an existing store with `secret`. A wrong secret is
    /// `wrongPassword`; a file that is not a store is `malformed`; a state
    /// changed without the store's keys is `stateAuthenticationFailed`; an
    /// older state than one `rollbackGuard` saw written is `rolledBack`
    /// (``acceptCurrentState(sqlite:secret:rollbackGuard:)`` takes it when
    /// a backup was put back on purpose).
    public static func open(
        sqlite path: String, secret: UnlockSecret,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) throws -> RecordStore {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CofferError(.io, "there is no store at \(path)")
        }
        return try open(try SQLiteBackend(path: path), secret: secret, rollbackGuard: rollbackGuard)
    }

    /// Accepts the state the store at `path` holds now, though older than
    /// one already written (a backup restored on purpose): it must still
    /// verify under the store's keys. The rows are taken as they stand too:
    /// each table's record-set digest is counted again from them. The
    /// guard's mark becomes the resulting epoch, which is returned.
    @discardableResult
    public static func acceptCurrentState(
        sqlite path: String, secret: UnlockSecret, rollbackGuard: any RollbackGuard = RecordStore.defaultRollbackGuard
    ) throws -> UInt64 {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CofferError(.io, "there is no store at \(path)")
        }
        return try acceptCurrentState(try SQLiteBackend(path: path), secret: secret, rollbackGuard: rollbackGuard)
    }

    package static func acceptCurrentState(
        _ backend: any StoreBackend, secret: UnlockSecret, rollbackGuard: any RollbackGuard
    ) throws -> UInt64 {
        let store = try open(backend, secret: secret, rollbackGuard: nil)
        try store.countRecordSetAgain()
        let state = store.state.withLock { $0 }
        try rollbackGuard.reset(guardKey(state.keys.storeID), to: state.epoch)
        return state.epoch
    }

    package static func open(
        _ backend: any StoreBackend, secret: UnlockSecret,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) throws -> RecordStore {
        func meta(_ db: any StoreConnection) throws -> [String: [UInt8]] {
            guard try db.tableExists(StoreSQL.metaTable) else {
                throw CofferError(
                    .malformed, "\(backend.location) is not a Coffer store (no \(StoreSQL.metaTable) table)")
            }
            return try StoreState.meta(db)
        }
        // The mark is read before the state it is checked against (marks are
        // raised only after a commit), so a writer racing this open never
        // makes a false alarm. The store id, which never changes, names it.
        let mark = try rollbackGuard.flatMap { guardian in
            let storeID = try backend.read { db in
                try db.tableExists(StoreSQL.metaTable)
                    ? db.data("SELECT value FROM \(StoreSQL.metaTable) WHERE name = 'store_id'") : nil
            }
            return try storeID.flatMap { try guardian.highWaterMark(for: guardKey(Array($0))) }
        }
        let state = try StoreState.load(try backend.read { try meta($0) }, where: backend.location) {
            try KeyRingFile(contents: $0, secret: secret)
        }
        if let mark, state.epoch < mark { throw rolledBack(backend.location, epoch: state.epoch, mark: mark) }
        // Trust on first use, as key rings and keychains do (security review
        // 4, H1): the epoch just verified becomes this process's mark, so
        // every process that used the store — not only the one that last
        // changed its state — refuses an older state put back later.
        if let rollbackGuard, mark.map({ state.epoch > $0 }) ?? true {
            try rollbackGuard.raise(guardKey(state.keys.storeID), to: state.epoch)
        }
        let store = RecordStore(state: state, backend: backend, rollbackGuard: rollbackGuard)
        try store.keepRecordSet()
        return store
    }

    static func rolledBack(_ location: String, epoch: UInt64, mark: UInt64) -> CofferError {
        CofferError(
            .rolledBack,
            "the state of the store at \(location) is epoch \(epoch), but epoch \(mark) was already written: an older copy of it was put back"
        )
    }

    static func rootContext(_ version: UInt16, keys: StoreKeys) throws -> SealingContext {
        try SealingContext(
            parts: [
                Array("coffer store v1 index root".utf8), keys.storeID,
                withUnsafeBytes(of: version.bigEndian, Array.init),
            ])
    }

    static func sealRoot(_ root: SymmetricKey, version: UInt16, keys: StoreKeys) throws -> [UInt8] {
        Array(try keys.keyRing.seal(root.withUnsafeBytes { Array($0) }, context: try rootContext(version, keys: keys)))
    }

    static func openRoot(_ sealed: [UInt8], version: UInt16, keys: StoreKeys) throws -> SymmetricKey {
        let opened = try keys.keyRing.open(sealed, context: try rootContext(version, keys: keys))
        guard opened.count == 32 else { throw CofferError(.malformed, "index root \(version) is not 32 bytes") }
        return SymmetricKey(data: opened)
    }
}
