import Coffer
import Crypto
import Foundation
import GRDB

/// Seals many rows of one table, the same bytes as ``StoreKeys`` makes one
/// at a time (docs/store.md), with what does not change from row to row
/// worked out once: each cell's context up to the primary key, each
/// index's HMAC key schedule. A row's context, plaintext and index
/// messages are built straight into byte buffers, not from part arrays.
struct RowSealer: Sendable {
    struct Cell: Sendable {
        let context: CellContext
        let indexes: [Index]
        var field: String { context.field }
    }

    struct Index: Sendable {
        let index: StoreSchema.Index
        /// The indexed field, then the `with` fields.
        let inputs: [String]
        let mac: HMAC<SHA256>
    }

    private(set) var keys: StoreKeys
    let table: StoreSchema.Table
    let version: UInt16
    private(set) var cells: [Cell]
    /// The names of ``seal(_:key:life:)``'s values, in order: the row's
    /// life, then each sealed field and its indexes that are columns (not
    /// token indexes).
    let columns: [String]
    /// How a new row's element in the record set is computed (nil: the
    /// store keeps no digest), and where its life and each sealed field
    /// sit among ``columns``.
    let recordSet: RecordSetTable?
    let elementPositions: (life: Int?, fields: [Int])

    init(
        keys: StoreKeys, table: StoreSchema.Table, fields: [StoreSchema.Field], version: UInt16,
        state: StoreState? = nil
    ) throws {
        self.keys = keys
        self.table = table
        self.version = version
        var cells: [Cell] = []
        // A row with no sealed field has no cell to bind, and maybe no life column (an adopted table).
        var columns = fields.isEmpty ? [] : [StoreSQL.lifeColumn]
        for field in fields {
            let context = try CellContext(storeID: keys.storeID, table: table, field: field)
            let indexes = try field.indexes.map {
                Index(
                    index: $0, inputs: [field.name] + $0.with,
                    mac: try keys.indexMAC(table: table.name, index: $0.name, version: version))
            }
            cells.append(Cell(context: context, indexes: indexes))
            columns.append(field.name)
            columns += field.indexes.filter { $0.tokens == nil }.map(\.name)
        }
        self.cells = cells
        self.columns = columns
        let plan = try state?.recordSet?.table(table, migrating: state?.migrating(table.name))
        recordSet = plan
        elementPositions = (
            columns.firstIndex(of: StoreSQL.lifeColumn), plan?.fields.map { columns.firstIndex(of: $0) ?? -1 } ?? []
        )
    }

    /// The same sealer under another tenant's keys: only the index HMACs
    /// change (the contexts, columns and record-set plan do not), so a
    /// batch of many tenants makes each one's sealer cheaply.
    func rekeyed(_ keys: StoreKeys) throws -> RowSealer {
        var copy = self
        copy.keys = keys
        copy.cells = try cells.map { cell in
            Cell(
                context: cell.context,
                indexes: try cell.indexes.map {
                    Index(
                        index: $0.index, inputs: $0.inputs,
                        mac: try keys.indexMAC(table: table.name, index: $0.index.name, version: version))
                })
        }
        return copy
    }

    /// The row's life, sealed cells and index values in ``columns``'
    /// order, and its token entries by index.
    func seal(_ record: StoreRecord, key: StoreValue, life: [UInt8]) throws -> (
        values: [DatabaseValue], tokens: [String: [Data]]
    ) {
        guard life.count == StoreKeys.lifeSize else {
            throw CofferError(.malformed, "the life of a \(table.name) row is \(life.count) bytes")
        }
        var values: [DatabaseValue] = []
        values.reserveCapacity(columns.count)
        if !cells.isEmpty { values.append(Data(life).databaseValue) }
        var tokens: [String: [Data]] = [:]
        var context: [UInt8] = []
        var plaintext: [UInt8] = []
        for cell in cells {
            let value = record[cell.field] ?? .null
            guard value.isNull || value.type == cell.context.type else {
                throw CofferError(
                    .invalidArgument,
                    "\(table.name).\(cell.field) holds \(cell.context.type), not \(value.kindName)")
            }
            try cell.context.build(key: key, life: life, record: record, into: &context)
            plaintext.removeAll(keepingCapacity: true)
            value.encode(into: &plaintext)
            values.append(try keys.keyRing.seal(plaintext, context: context).databaseValue)
            for plan in cell.indexes {
                if let splitter = plan.index.tokens {
                    tokens[plan.index.name] = try keys.tokenEntries(
                        record[cell.field] ?? .null, tokens: splitter, transforms: plan.index.transforms,
                        table: table.name, index: plan.index.name, bits: plan.index.bits, version: version
                    ).map { Data($0) }
                } else {
                    values.append(try indexValue(plan, record))
                }
            }
        }
        return (values, tokens)
    }

    /// Version ‖ the truncated HMAC of the transformed inputs, or null
    /// when an input has no text (``StoreKeys/indexInput(_:transforms:)``).
    func indexValue(_ plan: Index, _ record: StoreRecord) throws -> DatabaseValue {
        guard
            let texts = StoreKeys.indexInput(
                plan.inputs.map { record[$0] ?? .null }, transforms: plan.index.transforms)
        else { return .null }
        return try Self.indexValue(texts, mac: plan.mac, bits: plan.index.bits, version: version).databaseValue
    }

    /// Version ‖ the first ⌈bits/8⌉ bytes of `mac` over the texts encoded
    /// as a `SealingContext` of text values, the bits past `bits` cleared:
    /// the one place an index value is made (``StoreKeys/indexValue(_:table:index:bits:version:)``
    /// calls it too).
    static func indexValue(_ texts: [String], mac: HMAC<SHA256>, bits: Int, version: UInt16) throws -> Data {
        var message = CellContext.magic
        for text in texts {
            let utf8 = text.utf8
            try CellContext.checkPart(utf8.count + 1)
            withUnsafeBytes(of: UInt32(utf8.count + 1).bigEndian) { message += $0 }
            message.append(UInt8(ascii: "t"))
            message += utf8
        }
        var mac = mac
        // As one raw buffer, so HMAC hashes it in place.
        message.withUnsafeBytes { mac.update(data: $0) }
        let kept = (bits + 7) / 8
        let code = mac.finalize()
        // At most 10 bytes: Data keeps them inline, with no allocation.
        var stored = Data(count: 2 + kept)
        stored.withUnsafeMutableBytes { (bytes: UnsafeMutableRawBufferPointer) in
            bytes[0] = UInt8(version >> 8)
            bytes[1] = UInt8(truncatingIfNeeded: version)
            code.withUnsafeBytes { for offset in 0..<kept { bytes[2 + offset] = $0[offset] } }
            // The bits past `bits` are cleared.
            bytes[1 + kept] &= UInt8(0xFF) << (kept * 8 - bits)
        }
        return stored
    }
}
