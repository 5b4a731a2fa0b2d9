import Coffer
import Crypto
import Foundation
import GRDB

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

    static let format = "coffer store v1"

    /// The tables and fields, as of the last transaction (a migration
    /// changes them).
    public var schema: StoreSchema { state.withLock { $0.schema } }

    /// The job begun and not finished (rotate, reindex or migrate), if any.
    public func pendingJob() throws -> StoreJob? { try read { db, _ in try StoreJob.fetch(db) } }

    init(state: StoreState, backend: any StoreBackend) {
        self.state = Locked(state)
        self.backend = backend
    }

    /// Makes a new store at `path` (which must not exist): its tables, a
    /// new key ring sealed under `secret`, and index root version 1.
    public static func create(
        sqlite path: String, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt
    ) throws -> RecordStore {
        try schema.validate()
        guard !FileManager.default.fileExists(atPath: path) else {
            throw CofferError(.refused, "\(path) already exists; a new store needs a new file")
        }
        return try create(in: try SQLiteBackend(path: path), schema: schema, secret: secret, kdf: kdf)
    }

    /// Makes the tables and the metadata of a new store in `backend`'s database.
    package static func create(
        in backend: any StoreBackend, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF
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
        return RecordStore(state: state, backend: backend)
    }

    /// Writes the metadata of a new store into `db`: store id, key ring,
    /// index root 1, schema, epoch 1.
    static func initialise(_ db: any StoreConnection, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF)
        throws -> StoreState
    {
        let storeID = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        let ringFile = try KeyRingFile(keyRing: KeyRing(), secret: secret, kdf: kdf)
        let keys = try StoreKeys(
            storeID: storeID, keyRing: ringFile.keyRing, indexRoots: [1: SymmetricKey(size: .bits256)], current: 1)
        try db.execute(StoreSQL.createMeta(db.dialect))
        for (name, value) in [("format", Array(format.utf8)), ("store_id", storeID)] {
            try db.execute(
                "INSERT INTO \(StoreSQL.metaTable) (name, value) VALUES (?, ?)",
                [name.databaseValue, Data(value).databaseValue])
        }
        var state = StoreState(epoch: 0, schema: schema, keys: keys, ringFile: ringFile, job: nil)
        try state.save(db, over: nil)
        return state
    }

    /// Opens an existing store with `secret`. A wrong secret is
    /// `wrongPassword`; a file that is not a store is `malformed`.
    public static func open(sqlite path: String, secret: UnlockSecret) throws -> RecordStore {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CofferError(.io, "there is no store at \(path)")
        }
        return try open(try SQLiteBackend(path: path), secret: secret)
    }

    package static func open(_ backend: any StoreBackend, secret: UnlockSecret) throws -> RecordStore {
        let meta: [String: [UInt8]] = try backend.read { db in
            guard try db.tableExists(StoreSQL.metaTable) else {
                throw CofferError(
                    .malformed, "\(backend.location) is not a Coffer store (no \(StoreSQL.metaTable) table)")
            }
            return try StoreState.meta(db)
        }
        let state = try StoreState.load(meta, where: backend.location) {
            try KeyRingFile(contents: $0, secret: secret)
        }
        return RecordStore(state: state, backend: backend)
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
