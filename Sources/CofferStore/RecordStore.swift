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
    public let schema: StoreSchema
    let keys: StoreKeys
    let pool: DatabasePool

    static let format = "coffer store v1"

    static func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        return configuration
    }

    init(schema: StoreSchema, keys: StoreKeys, pool: DatabasePool) {
        self.schema = schema
        self.keys = keys
        self.pool = pool
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
        let storeID = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        let ringFile = try KeyRingFile(keyRing: KeyRing(), secret: secret, kdf: kdf)
        let root = SymmetricKey(size: .bits256)
        let keys = try StoreKeys(storeID: storeID, keyRing: ringFile.keyRing, indexRoots: [1: root], current: 1)
        let pool = try openPool(path)
        try pool.write { db in
            try db.execute(sql: StoreSQL.createMeta())
            let meta: [(String, [UInt8])] = [
                ("format", Array(format.utf8)), ("store_id", storeID), ("key_ring", Array(try ringFile.contents())),
                ("index_root.1", try sealRoot(root, version: 1, keys: keys)), ("index_version", [0, 1]),
                ("schema", Array(try JSONEncoder().encode(schema))),
            ]
            for (name, value) in meta {
                try db.execute(
                    sql: "INSERT INTO \(StoreSQL.metaTable) (name, value) VALUES (?, ?)",
                    arguments: [name, Data(value)])
            }
            for table in schema.tables {
                for statement in StoreSQL.create(table) { try db.execute(sql: statement) }
            }
        }
        return RecordStore(schema: schema, keys: keys, pool: pool)
    }

    /// Opens an existing store with `secret`. A wrong secret is
    /// `wrongPassword`; a file that is not a store is `malformed`.
    public static func open(sqlite path: String, secret: UnlockSecret) throws -> RecordStore {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CofferError(.io, "there is no store at \(path)")
        }
        let pool = try openPool(path)
        let meta: [String: [UInt8]] = try pool.read { db in
            guard try db.tableExists(StoreSQL.metaTable) else {
                throw CofferError(.malformed, "\(path) is not a Coffer store (no \(StoreSQL.metaTable) table)")
            }
            var meta: [String: [UInt8]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, value FROM \(StoreSQL.metaTable)") {
                guard let name = row["name"] as String?, let value = row["value"] as Data? else { continue }
                meta[name] = Array(value)
            }
            return meta
        }
        guard meta["format"] == Array(format.utf8), let storeID = meta["store_id"], let ring = meta["key_ring"],
            let schemaJSON = meta["schema"], let versionBytes = meta["index_version"], versionBytes.count == 2
        else {
            throw CofferError(.malformed, "\(path) is not a Coffer store of format \"\(format)\"")
        }
        let keyRing = try KeyRingFile(contents: ring, secret: secret).keyRing
        let current = UInt16(versionBytes[0]) << 8 | UInt16(versionBytes[1])
        let unsealing = try StoreKeys(
            storeID: storeID, keyRing: keyRing, indexRoots: [0: SymmetricKey(size: .bits256)], current: 0)
        var roots: [UInt16: SymmetricKey] = [:]
        for (name, sealed) in meta where name.hasPrefix("index_root.") {
            guard let version = UInt16(name.dropFirst("index_root.".count)) else { continue }
            roots[version] = try openRoot(sealed, version: version, keys: unsealing)
        }
        let keys = try StoreKeys(storeID: storeID, keyRing: keyRing, indexRoots: roots, current: current)
        return RecordStore(schema: try StoreSchema(json: schemaJSON), keys: keys, pool: pool)
    }

    static func openPool(_ path: String) throws -> DatabasePool {
        do { return try DatabasePool(path: path, configuration: configuration()) } catch let error as DatabaseError {
            throw CofferError(
                .io, "cannot open the store \(path): \(error.message ?? "SQLite error \(error.resultCode)")")
        }
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
