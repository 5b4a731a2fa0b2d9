import Coffer
import Crypto
import Foundation
import GRDB

/// A number modulo 2²⁵⁶, as four 64-bit limbs, most significant first:
/// the sum of a record set's elements (docs/store.md, "The record set").
struct RecordSetSum: Equatable, Sendable {
    var limbs: [UInt64] = [0, 0, 0, 0]

    init() {}

    /// 32 bytes, big-endian.
    init(bytes: some Collection<UInt8>) throws {
        guard bytes.count == 32 else { throw CofferError(.malformed, "a record-set sum is 32 bytes") }
        let array = Array(bytes)
        limbs = (0..<4).map { limb in array[limb * 8..<limb * 8 + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
    }

    var bytes: [UInt8] { limbs.flatMap { withUnsafeBytes(of: $0.bigEndian, Array.init) } }

    static func + (a: Self, b: Self) -> Self {
        var result = Self()
        var carry: UInt64 = 0
        for limb in (0..<4).reversed() {
            let (partial, first) = a.limbs[limb].addingReportingOverflow(b.limbs[limb])
            let (total, second) = partial.addingReportingOverflow(carry)
            result.limbs[limb] = total
            carry = (first ? 1 : 0) + (second ? 1 : 0)
        }
        return result
    }

    /// The additive inverse: 2²⁵⁶ − self.
    static prefix func - (a: Self) -> Self {
        var inverted = Self()
        inverted.limbs = a.limbs.map { ~$0 }
        var one = Self()
        one.limbs[3] = 1
        return inverted + one
    }

    static func - (a: Self, b: Self) -> Self { a + -b }
}

/// How many records a set holds and the sum of their elements; a shard
/// of the digest holds one (its count may wrap: a record put through one
/// shard can be deleted through another).
struct RecordSetTally: Equatable, Sendable {
    var count: UInt64 = 0
    var sum = RecordSetSum()

    var isZero: Bool { self == RecordSetTally() }

    mutating func add(_ element: RecordSetSum) {
        count &+= 1
        sum = sum + element
    }

    mutating func remove(_ element: RecordSetSum) {
        count &-= 1
        sum = sum - element
    }

    static func + (a: Self, b: Self) -> Self { Self(count: a.count &+ b.count, sum: a.sum + b.sum) }
}

/// The key a store's record-set elements are computed under: 32 random
/// bytes made with the digest, kept in the state sealed under the key ring
/// as the index roots are, and an HMAC per table derived from it.
struct RecordSetKey: Sendable {
    let root: SymmetricKey
    let storeID: [UInt8]
    private let tables = Locked([TableName: RecordSetTable]())

    private struct TableName: Hashable, Sendable {
        var table: String
        var migrating: String?
    }

    init(root: SymmetricKey, storeID: [UInt8]) {
        self.root = root
        self.storeID = storeID
    }

    /// What `table`'s elements are computed with (worked out once per
    /// table and field being migrated): HMAC-SHA-256 keyed with
    /// HKDF-SHA-256(root, salt: store id, info: SealingContext("coffer
    /// store v1 record set", table)), and its sealed fields' name parts.
    func table(_ table: StoreSchema.Table, migrating: String?) throws -> RecordSetTable {
        let name = TableName(table: table.name, migrating: migrating)
        // The cached plan stands while the table's sealed fields are the
        // same, in order (an altered schema has others).
        if let known = tables.withLock({ $0[name] }),
            known.fields.elementsEqual(table.fields.lazy.filter(\.sealed).map(\.name))
        {
            return known
        }
        let sealed = table.fields.filter(\.sealed).map(\.name)
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: root, salt: storeID,
            info: try SealingContext("coffer store v1 record set", table.name).bytes, outputByteCount: 32)
        let made = RecordSetTable(
            mac: HMAC<SHA256>(key: key), fields: sealed, migrating: sealed.firstIndex { $0 == migrating })
        tables.withLock { $0[name] = made }
        return made
    }

    /// A record's element (``RecordSetTable/element(key:life:cell:)``),
    /// the row's stored values given by column name.
    func element(
        _ table: StoreSchema.Table, key: DatabaseValue, migrating: String?, column: (String) -> DatabaseValue?
    ) throws -> RecordSetSum {
        let plan = try self.table(table, migrating: migrating)
        return plan.element(key: key, life: column(StoreSQL.lifeColumn) ?? .null) { column(plan.fields[$0]) ?? .null }
    }
}

/// One table's element function: the HMAC of a record's primary key, its
/// life and each sealed cell that is not null (name and stored bytes), each
/// a part: a tag (n, i, d, t or b), its length (4 bytes, big-endian) and
/// its bytes (an integer or a real as 8 bytes, big-endian). A clear value
/// of the field being migrated (not sealed yet) is left out, so that
/// beginning a migration changes no element. The message is built in one
/// buffer, each field's name part made once, and hashed in one update.
struct RecordSetTable: Sendable {
    let mac: HMAC<SHA256>
    /// The sealed fields, in schema order.
    let fields: [String]
    /// The position among them of the field being migrated.
    let migrating: Int?
    /// Each field's name as its part.
    let names: [[UInt8]]

    init(mac: HMAC<SHA256>, fields: [String], migrating: Int?) {
        self.mac = mac
        self.fields = fields
        self.migrating = migrating
        names = fields.map { name in
            var part: [UInt8] = []
            Self.append(tag: UInt8(ascii: "b"), Array(name.utf8), to: &part)
            return part
        }
    }

    /// `cell(i)` is the stored value of `fields[i]`.
    func element(key: DatabaseValue, life: DatabaseValue, cell: (Int) -> DatabaseValue) -> RecordSetSum {
        var message: [UInt8] = []
        message.reserveCapacity(512)
        Self.append(key, to: &message)
        Self.append(life, to: &message)
        for index in fields.indices {
            let value = cell(index)
            if value.isNull { continue }
            if index == migrating {
                guard case .blob(let bytes) = value.storage, bytes.first == SealedValue.version else { continue }
            }
            message += names[index]
            Self.append(value, to: &message)
        }
        var mac = mac
        message.withUnsafeBytes { mac.update(data: $0) }
        var sum = RecordSetSum()
        mac.finalize().withUnsafeBytes { bytes in
            for limb in 0..<4 {
                sum.limbs[limb] = (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[limb * 8 + $1]) }
            }
        }
        return sum
    }

    static func append(tag: UInt8, _ bytes: some Collection<UInt8>, to message: inout [UInt8]) {
        let count = UInt32(bytes.count)
        message.append(tag)
        message.append(UInt8(count >> 24))
        message.append(UInt8(count >> 16 & 0xff))
        message.append(UInt8(count >> 8 & 0xff))
        message.append(UInt8(count & 0xff))
        message.append(contentsOf: bytes)
    }

    static func append(_ value: DatabaseValue, to message: inout [UInt8]) {
        switch value.storage {
        case .null: append(tag: UInt8(ascii: "n"), EmptyCollection(), to: &message)
        case .int64(let number):
            withUnsafeBytes(of: number.bigEndian) { append(tag: UInt8(ascii: "i"), $0, to: &message) }
        case .double(let number):
            withUnsafeBytes(of: number.bitPattern.bigEndian) { append(tag: UInt8(ascii: "d"), $0, to: &message) }
        case .string(let text): append(tag: UInt8(ascii: "t"), text.utf8, to: &message)
        case .blob(let data): append(tag: UInt8(ascii: "b"), data, to: &message)
        }
    }
}

extension StoreState {
    /// The element of a row read as columns, or nil when the store keeps no
    /// digest (a store made before it, until opened by this version).
    func element(of row: [String: DatabaseValue], table: StoreSchema.Table) throws -> RecordSetSum? {
        guard let recordSet else { return nil }
        return try recordSet.element(
            table, key: row[table.primaryKey] ?? .null, migrating: migrating(table.name), column: { row[$0] })
    }
}

/// What one transaction changed in each table's record set, added to one
/// shard of each table's digest before it commits (``RecordSetDigest``).
final class RecordSetChanges {
    private(set) var tallies: [String: RecordSetTally] = [:]
    /// Whether the store keeps a digest (nothing is reserved when not).
    let kept: Bool
    /// Each table's shard, asked for before the transaction's first change
    /// to it and read when the changes are added (``reserve(_:_:)``).
    private(set) var reserved: [String: () throws -> [[String: DatabaseValue]]] = [:]

    init(kept: Bool) { self.kept = kept }

    /// Asks now for the shard of `table` this transaction will add to:
    /// on PostgreSQL the query travels with the writes that follow, so
    /// taking a shard costs no round trip of its own. (SQLite has no round
    /// trip to save; its shard is read when the changes are added.)
    func reserve(_ table: String, _ db: any StoreConnection) {
        guard kept, db.dialect == .postgres, reserved[table] == nil else { return }
        reserved[table] = db.prefetch(RecordSetDigest.pickSQL(db.dialect), [table.databaseValue])
    }

    func add(_ element: RecordSetSum?, to table: String) {
        guard let element else { return }
        tallies[table, default: RecordSetTally()].add(element)
    }

    func remove(_ element: RecordSetSum?, from table: String) {
        guard let element else { return }
        tallies[table, default: RecordSetTally()].remove(element)
    }

    /// A row changed in place: its old element out, its new one in.
    func replace(_ old: RecordSetSum?, with new: RecordSetSum?, in table: String) {
        guard old != new else { return }
        remove(old, from: table)
        add(new, to: table)
    }
}
