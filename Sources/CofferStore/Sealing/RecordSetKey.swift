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
    private let macs = Locked([String: HMAC<SHA256>]())

    init(root: SymmetricKey, storeID: [UInt8]) {
        self.root = root
        self.storeID = storeID
    }

    /// HMAC-SHA-256 keyed with HKDF-SHA-256(root, salt: store id,
    /// info: SealingContext("coffer store v1 record set", table)).
    func mac(_ table: String) throws -> HMAC<SHA256> {
        if let known = macs.withLock({ $0[table] }) { return known }
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: root, salt: storeID,
            info: try SealingContext("coffer store v1 record set", table).bytes, outputByteCount: 32)
        let mac = HMAC<SHA256>(key: key)
        macs.withLock { $0[table] = mac }
        return mac
    }

    /// A record's element: the HMAC of its primary key, its life and each
    /// sealed cell that is not null (name and stored bytes), each a tagged,
    /// length-prefixed part; `column` gives the stored values. A clear
    /// value of the field `migrating` (not sealed yet) is left out, so that
    /// beginning a migration changes no element.
    func element(
        _ table: StoreSchema.Table, key: DatabaseValue, migrating: String?, column: (String) -> DatabaseValue?
    ) throws -> RecordSetSum {
        var message: [UInt8] = []
        message.reserveCapacity(256)
        Self.append(key, to: &message)
        Self.append(column(StoreSQL.lifeColumn) ?? .null, to: &message)
        for field in table.fields where field.sealed {
            let value = column(field.name) ?? .null
            if value.isNull { continue }
            if field.name == migrating {
                guard case .blob(let bytes) = value.storage, bytes.first == SealedValue.version else { continue }
            }
            Self.append(.init(Array(field.name.utf8)), to: &message)
            Self.append(value, to: &message)
        }
        var mac = try mac(table.name)
        message.withUnsafeBytes { mac.update(data: $0) }
        return try RecordSetSum(bytes: mac.finalize().withUnsafeBytes { Array($0) })
    }

    /// A column value as one part: a tag (n, i, d, t or b), its length
    /// (4 bytes, big-endian) and its bytes.
    static func append(_ value: DatabaseValue, to message: inout [UInt8]) {
        func part(_ tag: Character, _ bytes: some Collection<UInt8>) {
            message.append(tag.asciiValue!)
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { message += $0 }
            message += bytes
        }
        switch value.storage {
        case .null: part("n", [])
        case .int64(let number): part("i", withUnsafeBytes(of: number.bigEndian, Array.init))
        case .double(let number): part("d", withUnsafeBytes(of: number.bitPattern.bigEndian, Array.init))
        case .string(let text): part("t", Array(text.utf8))
        case .blob(let data): part("b", data)
        }
    }
}

extension DatabaseValue {
    /// Bytes as a BLOB value.
    fileprivate init(_ bytes: [UInt8]) { self = Data(bytes).databaseValue }
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
    /// taking a shard costs no round trip of its own.
    func reserve(_ table: String, _ db: any StoreConnection) {
        guard kept, reserved[table] == nil else { return }
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
