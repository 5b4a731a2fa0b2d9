import Coffer
import Crypto
import Foundation
import GRDB

/// The keys of one store and the two things they do (docs/store.md):
///
/// - **Sealed cells** are Coffer sealed values under the key ring (its
///   primary seals; every value names its key id), with the context
///   `SealingContext("coffer store v1", store id, table, column, primary
///   key, the row's life, then each bound field's name and value)`. A
///   cell copied to another row, column, table or store, or into a later
///   record with the same primary key, or a bound clear field changed, no
///   longer opens.
/// - **Blind indexes** are HMAC-SHA-256 over the transformed value(s)
///   under a key derived per table and index from an *index root* — never
///   from a field key — truncated to the index's bits, and stored after
///   the root's 2-byte version, so a query can cover every active version.
public struct StoreKeys: Sendable, CustomStringConvertible {
    /// 16 random bytes naming the store; bound into every cell and index key.
    public let storeID: [UInt8]
    /// Seals and opens cells.
    public let keyRing: KeyRing
    /// Index roots by version (32 bytes each).
    let indexRoots: [UInt16: SymmetricKey]
    /// The version new index values are written under.
    public let currentIndexVersion: UInt16
    /// HMACs keyed with the index keys derived so far, by version, table
    /// and index: HKDF and the HMAC key schedule run once per index, not
    /// once per value (each use starts from a copy).
    let derived = Locked([IndexKeyName: HMAC<SHA256>]())
    /// The record-set shards last sealed or opened under these keys
    /// (``RecordSetShardCache``).
    let shardCache = RecordSetShardCache()

    struct IndexKeyName: Hashable, Sendable {
        var version: UInt16
        var table: String
        var index: String
    }

    public init(storeID: [UInt8], keyRing: KeyRing, indexRoots: [UInt16: SymmetricKey], current: UInt16) throws {
        guard storeID.count == 16 else { throw CofferError(.invalidArgument, "a store id is 16 bytes") }
        guard indexRoots[current] != nil, indexRoots.values.allSatisfy({ $0.bitCount == 256 }) else {
            throw CofferError(.invalidArgument, "the current index root is missing, or a root is not 32 bytes")
        }
        self.storeID = storeID
        self.keyRing = keyRing
        self.indexRoots = indexRoots
        currentIndexVersion = current
    }

    /// The versions a query computes index values for.
    public var indexVersions: [UInt16] { indexRoots.keys.sorted() }

    public var description: String {
        "StoreKeys(\(keyRing.keys.count) cell keys, index versions \(indexVersions))"
    }

    func root(_ version: UInt16) throws -> SymmetricKey {
        guard let root = indexRoots[version] else {
            throw CofferError(.keyNotFound, "the store has no index root version \(version)")
        }
        return root
    }

    /// The same store's keys with another key ring, another set of index
    /// roots, or another current version.
    func with(
        keyRing: KeyRing? = nil, indexRoots: [UInt16: SymmetricKey]? = nil, current: UInt16? = nil
    ) throws -> StoreKeys {
        try StoreKeys(
            storeID: storeID, keyRing: keyRing ?? self.keyRing, indexRoots: indexRoots ?? self.indexRoots,
            current: current ?? currentIndexVersion)
    }

    // MARK: Cells

    /// The bytes of a row's life.
    public static let lifeSize = 16

    /// A new row's life: random bytes, never chosen by a caller, from the
    /// pool sealed values draw their nonces from: one system call per
    /// hundred-odd rows, not one per row (a seventh of a bulk put's time
    /// went to getrandom).
    static func newLife() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: lifeSize) { buffer, count in
            NonceSource.shared.nonce(into: UnsafeMutableRawBufferPointer(buffer))
            count = lifeSize
        }
    }

    /// The life of a row read as columns: 16 bytes, or `malformed`; with
    /// `orNew`, a new one for a row that has none yet (a row of an adopted
    /// table whose first field is being sealed).
    static func life(of row: [String: DatabaseValue], table: String, orNew: Bool = false) throws -> [UInt8] {
        let stored = row[StoreSQL.lifeColumn] ?? .null
        if orNew && stored.isNull { return newLife() }
        guard case .blob(let bytes) = stored.storage, bytes.count == lifeSize else {
            throw CofferError(.malformed, "a row of \(table) has sealed cells but no life (\(StoreSQL.lifeColumn))")
        }
        return Array(bytes)
    }

    /// The context a cell is sealed with: the store, table, column, the
    /// row's primary key and life (16 bytes, docs/store.md), and the bound
    /// fields' names and values.
    public func context(
        table: String, column: String, primaryKey: StoreValue, life: [UInt8],
        bound: [(name: String, value: StoreValue)]
    ) throws -> SealingContext {
        guard life.count == Self.lifeSize else {
            throw CofferError(.malformed, "the life of a \(table) row is \(life.count) bytes, not \(Self.lifeSize)")
        }
        // Through the one builder the store seals and opens with (CellContext).
        let cell = try CellContext(
            storeID: storeID, table: table, column: column, type: primaryKey.type ?? .text, bound: bound.map(\.name))
        var record: StoreRecord = [:]
        for (name, value) in bound { record[name] = value }
        return SealingContext(
            encoded: try cell.bytes(key: primaryKey, life: life, record: record), count: 6 + 2 * bound.count)
    }

    /// The value of a sealed cell whose context is `context`'s bytes.
    func openCell(_ sealed: [UInt8], contextBytes context: [UInt8], table: String, column: String) throws -> StoreValue
    {
        let opened: Data
        do { opened = try keyRing.open(sealed, context: context) } catch let error as CofferError {
            throw error.prefixed("the sealed \(table).\(column) of this row does not open")
        }
        return try StoreValue(encoded: opened)
    }

    public func sealCell(_ value: StoreValue, context: SealingContext) throws -> [UInt8] {
        Array(try keyRing.seal(value.encoded, context: context))
    }

    /// The value of a sealed cell: a cell that does not open here (moved,
    /// a bound field changed, damaged) is `payloadAuthenticationFailed`,
    /// naming the table and column but never the value.
    public func openCell(_ sealed: [UInt8], context: SealingContext, table: String, column: String) throws
        -> StoreValue
    {
        try openCell(sealed, contextBytes: context.bytes, table: table, column: column)
    }

    // MARK: Blind indexes

    /// The HMAC key of index `index` of `table` at `version`:
    /// HKDF-SHA-256(root, salt: store id, info: SealingContext("coffer store v1 index key", table, index)).
    public func indexKey(table: String, index: String, version: UInt16) throws -> SymmetricKey {
        let info = try SealingContext("coffer store v1 index key", table, index).bytes
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: try root(version), salt: storeID, info: info, outputByteCount: 32)
    }

    /// An HMAC keyed with ``indexKey(table:index:version:)``, ready for a message.
    func indexMAC(table: String, index: String, version: UInt16) throws -> HMAC<SHA256> {
        let name = IndexKeyName(version: version, table: table, index: index)
        if let known = derived.withLock({ $0[name] }) { return known }
        let mac = HMAC<SHA256>(key: try indexKey(table: table, index: index, version: version))
        derived.withLock { $0[name] = mac }
        return mac
    }

    /// The transformed texts of an index over `values` (the indexed field's
    /// value, then the `with` fields'), or nil when one is null, bytes, or
    /// transformed to nothing: such a row has no entry in this index.
    public static func indexInput(_ values: [StoreValue], transforms: [IndexTransform]) -> [String]? {
        var texts: [String] = []
        for value in values {
            guard var text = value.indexText else { return nil }
            for transform in transforms {
                guard let next = transform.apply(text) else { return nil }
                text = next
            }
            texts.append(text)
        }
        return texts
    }

    /// The stored index value: version (2 bytes, big-endian) ‖ the first
    /// ⌈bits/8⌉ bytes of HMAC-SHA-256(key, SealingContext(texts as text
    /// values)), with the bits past `bits` cleared.
    public func indexValue(_ texts: [String], table: String, index: String, bits: Int, version: UInt16) throws
        -> [UInt8]
    {
        guard StoreSchema.indexBits.contains(bits) else {
            throw CofferError(.invalidArgument, "an index keeps 1 to 64 bits, not \(bits)")
        }
        // The one encoding, shared with the bulk path (RowSealer).
        return Array(
            try RowSealer.indexValue(
                texts, mac: try indexMAC(table: table, index: index, version: version), bits: bits, version: version))
    }

    /// The entries of a token index for `value`: the distinct index values
    /// of its distinct tokens (``IndexTokens/tokens(of:transforms:)``; two
    /// tokens that collide make one entry), sorted; none for null, bytes or
    /// a value with no token.
    public func tokenEntries(
        _ value: StoreValue, tokens: IndexTokens, transforms: [IndexTransform], table: String, index: String,
        bits: Int, version: UInt16
    ) throws -> [[UInt8]] {
        guard let text = value.indexText else { return [] }
        let entries = try tokens.tokens(of: text, transforms: transforms).map {
            try indexValue([$0], table: table, index: index, bits: bits, version: version)
        }
        return Array(Set(entries)).sorted { $0.lexicographicallyPrecedes($1) }
    }
}
