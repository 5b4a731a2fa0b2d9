import Coffer
import Foundation

/// The one builder of a sealed cell's context (docs/store.md, "Sealed
/// cells"): `SC1`, then, each length-prefixed, "coffer store v1", the store
/// id, table, column, the row's primary key (encoded), its life, and each
/// bound field's name and value (encoded) — the tenant field first in a
/// table kept per tenant. What does not change from row
/// to row (everything before the primary key, the bound names) is worked
/// out once; a row's part goes straight into a byte buffer. Sealing
/// (``RowSealer``), opening (``StoreState/record(from:table:opening:)``),
/// the jobs and ``StoreKeys/context(table:column:primaryKey:life:bound:)``
/// all build through it, so `put` cannot write what `get` cannot open.
struct CellContext: Sendable {
    let field: String
    let type: StoreSchema.FieldType
    /// `SC1` ‖ the parts before the primary key, length-prefixed.
    let prefix: [UInt8]
    /// Bound fields: the name's length-prefixed bytes, and the field.
    let bound: [(name: [UInt8], field: String)]

    /// The context of `field`'s cells in `table`. A table kept per tenant
    /// binds its tenant field first, before the fields `field` binds, so a
    /// cell moved to another tenant's row does not open there.
    init(storeID: [UInt8], table: StoreSchema.Table, field: StoreSchema.Field) throws {
        try self.init(
            storeID: storeID, table: table.name, column: field.name, type: field.type,
            bound: Self.bound(field, table: table))
    }

    /// The fields a cell of `field` binds: the table's tenant, then `bind`.
    static func bound(_ field: StoreSchema.Field, table: StoreSchema.Table) -> [String] {
        guard let tenant = table.tenant else { return field.bind }
        return [tenant] + field.bind.filter { $0 != tenant }
    }

    init(storeID: [UInt8], table: String, column: String, type: StoreSchema.FieldType, bound names: [String]) throws {
        var prefix = Self.magic
        for part in [Array("coffer store v1".utf8), storeID, Array(table.utf8), Array(column.utf8)] {
            try Self.append(part: part, to: &prefix)
        }
        field = column
        self.type = type
        self.prefix = prefix
        bound = try names.map { name in
            var bytes: [UInt8] = []
            try Self.append(part: Array(name.utf8), to: &bytes)
            return (bytes, name)
        }
    }

    /// The context of this cell in the row keyed `key`, of life `life`,
    /// whose bound fields' values `record` holds, written over `bytes`.
    func build(key: StoreValue, life: [UInt8], record: StoreRecord, into bytes: inout [UInt8]) throws {
        bytes.removeAll(keepingCapacity: true)
        bytes += prefix
        try Self.append(encoded: key, to: &bytes)
        try Self.append(part: life, to: &bytes)
        for (name, field) in bound {
            bytes += name
            try Self.append(encoded: record[field] ?? .null, to: &bytes)
        }
    }

    /// As ``build(key:life:record:into:)``, a new buffer.
    func bytes(key: StoreValue, life: [UInt8], record: StoreRecord) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try build(key: key, life: life, record: record, into: &bytes)
        return bytes
    }

    /// What every ``SealingContext`` encoding starts with.
    static let magic = Array("SC1".utf8)

    /// ``SealingContext``'s limit on a part, kept here too.
    static func checkPart(_ count: Int) throws {
        guard count <= 1 << 20 else {
            throw CofferError(.invalidArgument, "a context part is at most 1 MiB, not \(count) bytes")
        }
    }

    /// A context part: its length, 4 bytes big-endian, then its bytes.
    static func append(part: [UInt8], to bytes: inout [UInt8]) throws {
        try checkPart(part.count)
        withUnsafeBytes(of: UInt32(part.count).bigEndian) { bytes += $0 }
        bytes += part
    }

    /// A value's ``StoreValue/encoded`` form as a context part.
    static func append(encoded value: StoreValue, to bytes: inout [UInt8]) throws {
        let count = value.encodedCount
        try checkPart(count)
        withUnsafeBytes(of: UInt32(count).bigEndian) { bytes += $0 }
        value.encode(into: &bytes)
    }
}
