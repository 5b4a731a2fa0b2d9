import Coffer
import Crypto
import Foundation
import GRDB

/// What the store's `coffer_meta` table says at one epoch: the schema, the
/// unlocked keys, and the job under way. Every change to them (a rotation,
/// a reindex, a migration) writes the new metadata and adds one to the
/// epoch in the same transaction; every transaction of every process reads
/// the epoch first and reloads when it moved, so no process writes under a
/// key or a schema that another has moved past.
struct StoreState: Sendable {
    var epoch: UInt64
    var schema: StoreSchema
    var keys: StoreKeys
    var ringFile: KeyRingFile
    var job: StoreJob?
    /// The names of the schema migrations applied (``StoreMigrator``), in order.
    var migrations: [String] = []
    /// The key of the record-set digest (``RecordSetDigest``); nil in a
    /// store made before it, until its first open by this version.
    var recordSet: RecordSetKey?
    /// Tenants' keys opened lately (``TenantKeyCache``), shared by every
    /// state this store handle loads.
    var tenantCache = TenantKeyCache()

    static let epochName = "epoch"
    /// The row that authenticates all the others (docs/store.md, "The store's state").
    static let sealName = "state_seal"

    /// The metadata rows by name. A row that is not a name and bytes was
    /// not written by a store: it is refused, not skipped.
    static func meta(_ db: any StoreConnection) throws -> [String: [UInt8]] {
        var meta: [String: [UInt8]] = [:]
        for row in try db.rows("SELECT name, value FROM \(StoreSQL.metaTable)") {
            guard case .string(let name) = row["name"]?.storage, case .blob(let value) = row["value"]?.storage
            else {
                throw CofferError(
                    .stateAuthenticationFailed, "the store's state holds a row that is not a name and bytes")
            }
            meta[name] = Array(value)
        }
        return meta
    }

    /// SHA-256 over every metadata row but the seal, in the order of their
    /// names' bytes, each name and value prefixed with its length.
    static func digest(_ meta: [String: [UInt8]]) throws -> [UInt8] {
        var hash = SHA256()
        for (name, value) in meta.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) })
        where name != sealName {
            for part in [Array(name.utf8), value] {
                withUnsafeBytes(of: UInt32(part.count).bigEndian) { hash.update(bufferPointer: $0) }
                hash.update(data: part)
            }
        }
        return Array(hash.finalize())
    }

    static func sealContext(storeID: [UInt8]) throws -> SealingContext {
        try SealingContext(parts: [Array("coffer store v1 state".utf8), storeID])
    }

    /// Seals the digest of the metadata rows as they stand in `db` (in the
    /// transaction that wrote them) under the key ring's primary key.
    static func reseal(_ db: any StoreConnection, keys: StoreKeys) throws {
        let sealed = try keys.keyRing.seal(
            try digest(try meta(db)), context: try sealContext(storeID: keys.storeID))
        try db.execute(
            "INSERT INTO \(StoreSQL.metaTable) (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            [sealName.databaseValue, Data(sealed).databaseValue])
    }

    /// Refuses metadata whose seal is missing, does not open under
    /// `keyRing`, or was made over other rows: someone without the keys
    /// changed, added or removed a row, or mixed rows of two states.
    static func verify(_ meta: [String: [UInt8]], storeID: [UInt8], keyRing: KeyRing, where path: String) throws {
        let refused = CofferError(
            .stateAuthenticationFailed,
            "the state of the store at \(path) (its schema, keys or job) was changed without the store's keys")
        guard let sealed = meta[sealName] else { throw refused }
        let opened: Data
        do { opened = try keyRing.open(sealed, context: try sealContext(storeID: storeID)) } catch { throw refused }
        guard ConstantTime.equal(opened, try digest(meta)) else { throw refused }
    }

    static func epoch(_ db: any StoreConnection) throws -> UInt64 {
        guard
            let data = try db.data(
                "SELECT value FROM \(StoreSQL.metaTable) WHERE name = ?", [epochName.databaseValue])
        else { return 0 }
        guard data.count == 8 else { throw CofferError(.malformed, "the store's epoch is not 8 bytes") }
        return data.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// The state the rows say, the key ring opened by `unlock`.
    static func load(_ meta: [String: [UInt8]], where path: String, unlock: ([UInt8]) throws -> KeyRingFile) throws
        -> StoreState
    {
        guard meta["format"] == Array(RecordStore.format.utf8), let storeID = meta["store_id"],
            let ring = meta["key_ring"], let schemaJSON = meta["schema"], let versionBytes = meta["index_version"],
            versionBytes.count == 2
        else {
            throw CofferError(.malformed, "\(path) is not a Coffer store of format \"\(RecordStore.format)\"")
        }
        let ringFile = try unlock(ring)
        // Nothing else in the rows is read before they are known to be the store's own.
        try verify(meta, storeID: storeID, keyRing: ringFile.keyRing, where: path)
        let current = UInt16(versionBytes[0]) << 8 | UInt16(versionBytes[1])
        let unsealing = try StoreKeys(
            storeID: storeID, keyRing: ringFile.keyRing, indexRoots: [0: SymmetricKey(size: .bits256)], current: 0)
        var roots: [UInt16: SymmetricKey] = [:]
        for (name, sealed) in meta where name.hasPrefix("index_root.") {
            guard let version = UInt16(name.dropFirst("index_root.".count)) else { continue }
            roots[version] = try RecordStore.openRoot(sealed, version: version, keys: unsealing)
        }
        let epoch = meta[epochName].map { $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } } ?? 0
        let job = try meta["job"].map { try StoreJob(json: $0) }
        let migrations = try meta["migrations"].map { try JSONDecoder().decode([String].self, from: Data($0)) } ?? []
        let recordSet = try meta[RecordSetDigest.keyName].map { sealed in
            RecordSetKey(root: try openRecordSetKey(sealed, keys: unsealing), storeID: storeID)
        }
        return StoreState(
            epoch: epoch, schema: try StoreSchema(json: schemaJSON),
            keys: try StoreKeys(storeID: storeID, keyRing: ringFile.keyRing, indexRoots: roots, current: current),
            ringFile: ringFile, job: job, migrations: migrations, recordSet: recordSet)
    }

    /// Writes the rows that changed from `old` (all of them when nil) and
    /// adds one to the epoch. Runs inside the write transaction that made
    /// the change; a changed key ring must have had its generation raised,
    /// and then every index root is sealed again under its primary.
    mutating func save(_ db: any StoreConnection, over old: StoreState?) throws {
        func put(_ name: String, _ value: [UInt8]) throws {
            try db.execute(
                "INSERT INTO \(StoreSQL.metaTable) (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                [name.databaseValue, Data(value).databaseValue])
        }
        let ringChanged = ringFile.generation != old?.ringFile.generation
        if ringChanged { try put("key_ring", Array(try ringFile.contents())) }
        for version in keys.indexVersions where ringChanged || old?.keys.indexVersions.contains(version) != true {
            try put("index_root.\(version)", try RecordStore.sealRoot(keys.root(version), version: version, keys: keys))
        }
        for version in old?.keys.indexVersions ?? [] where !keys.indexVersions.contains(version) {
            try db.execute(
                "DELETE FROM \(StoreSQL.metaTable) WHERE name = ?", ["index_root.\(version)".databaseValue])
        }
        if let recordSet, ringChanged || old?.recordSet?.root != recordSet.root {
            try put(RecordSetDigest.keyName, try Self.sealRecordSetKey(recordSet.root, keys: keys))
            if let old, old.recordSet?.root == recordSet.root {
                try RecordSetDigest.reseal(db, tables: old.schema.digestNames, old: old.keys, keys: keys)
            }
        }
        if keys.currentIndexVersion != old?.keys.currentIndexVersion {
            try put("index_version", withUnsafeBytes(of: keys.currentIndexVersion.bigEndian, Array.init))
        }
        try put("schema", Array(try JSONEncoder().encode(schema)))
        if migrations != old?.migrations ?? [] { try put("migrations", Array(try JSONEncoder().encode(migrations))) }
        if let job {
            try put("job", try job.json())
        } else {
            try db.execute("DELETE FROM \(StoreSQL.metaTable) WHERE name = 'job'")
        }
        epoch = (old?.epoch ?? 0) + 1
        try put(Self.epochName, withUnsafeBytes(of: epoch.bigEndian, Array.init))
        try Self.reseal(db, keys: keys)
    }

    static func recordSetKeyContext(storeID: [UInt8]) throws -> SealingContext {
        try SealingContext(parts: [Array("coffer store v1 record set key".utf8), storeID])
    }

    static func sealRecordSetKey(_ root: SymmetricKey, keys: StoreKeys) throws -> [UInt8] {
        Array(
            try keys.keyRing.seal(
                root.withUnsafeBytes { Array($0) }, context: try recordSetKeyContext(storeID: keys.storeID)))
    }

    static func openRecordSetKey(_ sealed: [UInt8], keys: StoreKeys) throws -> SymmetricKey {
        let opened = try keys.keyRing.open(sealed, context: try recordSetKeyContext(storeID: keys.storeID))
        guard opened.count == 32 else { throw CofferError(.malformed, "the record-set key is not 32 bytes") }
        return SymmetricKey(data: opened)
    }

    /// The clear value of a cell of `field` while it is being migrated and
    /// this row is not sealed yet; nil for a sealed cell. SQLite keeps the
    /// value as it was (text or an integer, in a column that takes any
    /// type); PostgreSQL, whose columns are typed, keeps it in the BYTEA
    /// column as its ``StoreValue/encoded`` form, whose tag (`t`, `i`) is
    /// never a sealed value's version byte (1). Null is a clear null.
    func unsealed(_ stored: DatabaseValue, field: StoreSchema.Field, table: StoreSchema.Table) throws -> StoreValue? {
        guard field.name == migrating(table.name) else { return nil }
        switch stored.storage {
        case .blob(let bytes):
            guard let tag = bytes.first, tag != SealedValue.version else { return nil }
            let value = try StoreValue(encoded: bytes)
            guard value.type == field.type || value.isNull else {
                throw CofferError(
                    .malformed, "\(table.name).\(field.name) of this row holds neither its value nor a sealed cell")
            }
            return value
        default: return try StoreSQL.storeValue(stored, for: field, table: table.name)
        }
    }

    /// The field of `table` being migrated from clear to sealed, if any.
    func migrating(_ table: String) -> String? {
        guard let job, job.kind == .migrate, job.tables.first == table else { return nil }
        return job.field
    }
}
