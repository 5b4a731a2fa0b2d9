import Coffer
import Foundation

/// A `Codable` type kept as the records of one table, each stored property
/// a field: the store's schema says which fields are sealed, bound and
/// indexed, the type says nothing about it (as a GRDB record type names
/// its table and leaves the columns to migrations).
///
/// ```swift
/// struct Present: SealedRecord {
///     static let storeTable = "presents"
///     var id: Int64?          // assigned by the store when nil
///     var toWhom: String      // clear: searched and ordered by the database
///     var description: String // sealed in the schema
/// }
///
/// let scarf = try store.put(Present(id: nil, toWhom: "Grandma", description: "a knitted scarf"))
/// let all = try store.fetchAll(Present.self, Present.query.order(by: "toWhom"))
/// let forGrandma = try store.fetchAll(Present.self, Present.query.filter("toWhom", equals: "Grandma"))
/// let howMany = try store.fetchCount(Present.self)
/// ```
///
/// How each Swift type is stored is ``StoreValue/init(encoding:)``'s
/// rule; an optional property is null when nil. A record whose field does
/// not decode as its property's type is `invalidArgument`, naming the field.
public protocol SealedRecord: Codable, Sendable {
    /// The name of the schema's table holding this type.
    static var storeTable: String { get }

    /// Takes the primary key the store assigned when the record was put
    /// with none (as GRDB's `didInsert`). The default decodes the record
    /// again from its fields and the key; a type sets its property
    /// instead, and a put hands the key back without that decoding:
    ///
    /// ```swift
    /// mutating func didInsert(_ inserted: StoreInsertion) { id = inserted.id.integerValue }
    /// ```
    mutating func didInsert(_ inserted: StoreInsertion) throws
}

/// What a put of a record without a primary key gave it (``SealedRecord/didInsert(_:)``).
public struct StoreInsertion: Sendable {
    /// The primary key the store assigned.
    public let id: StoreValue
    /// The primary key's field.
    public let primaryKey: String
    /// The record's fields as it was put, the key included.
    public let fields: StoreRecord
}

extension SealedRecord {
    /// Every record of this type's table: the start of a query.
    public static var query: StoreQuery { StoreQuery(storeTable) }

    /// The record's fields as the dictionary API takes them.
    public func storeRecord() throws -> StoreRecord { try RecordCoding.record(of: self) }

    /// A value from the dictionary API's record.
    public init(storeRecord record: StoreRecord) throws {
        self = try RecordCoding.value(Self.self, from: record, table: Self.storeTable)
    }

    /// `query` itself, refused when it asks for another table.
    static func checked(_ query: StoreQuery?) throws -> StoreQuery {
        guard let query else { return Self.query }
        guard query.table == storeTable else {
            throw CofferError(
                .invalidArgument, "\(Self.self) is kept in \(storeTable), but the query asks for \(query.table)")
        }
        return query
    }

    /// Decodes the record again from its fields and its key.
    public mutating func didInsert(_ inserted: StoreInsertion) throws {
        self = try RecordCoding.value(Self.self, from: inserted.fields, table: Self.storeTable)
    }
}

extension RecordStore {
    /// Inserts `record` and returns it as stored: an integer primary key
    /// left nil is the one the store assigned.
    @discardableResult
    public func put<R: SealedRecord>(_ record: R) throws -> R {
        try put(contentsOf: [record])[0]
    }

    /// Inserts every record in one transaction and returns them as stored.
    @discardableResult
    public func put<R: SealedRecord>(contentsOf records: [R]) throws -> [R] {
        try write { transaction in try transaction.put(contentsOf: records) }
    }

    /// The record of type `R` whose primary key is `key`, or nil.
    public func get<R: SealedRecord>(_ type: R.Type, id key: StoreValue) throws -> R? {
        try read { transaction in try transaction.get(type, id: key) }
    }

    /// The records `query` asks for (every record of `R`'s table when nil).
    public func fetchAll<R: SealedRecord>(_ type: R.Type, _ query: StoreQuery? = nil) throws -> [R] {
        try read { transaction in try transaction.fetchAll(type, query) }
    }

    /// The first record `query` asks for, or nil.
    public func fetchOne<R: SealedRecord>(_ type: R.Type, _ query: StoreQuery? = nil) throws -> R? {
        let query = try R.checked(query)
        return try fetchAll(type, query.limit(1, offset: query.offset)).first
    }

    /// How many records `query` matches (every record of `R`'s table when nil).
    public func fetchCount<R: SealedRecord>(_ type: R.Type, _ query: StoreQuery? = nil) throws -> Int {
        try fetchCount(try R.checked(query))
    }

    /// Writes every field of `record` over the stored one with its primary
    /// key (a nil optional becomes null; fields of the table the type does
    /// not have keep their values). False when there is no such record.
    @discardableResult
    public func update<R: SealedRecord>(_ record: R) throws -> Bool {
        try write { transaction in try transaction.update(record) }
    }

    /// Deletes the record of type `R` whose primary key is `key`; false when there was none.
    @discardableResult
    public func delete<R: SealedRecord>(_ type: R.Type, id key: StoreValue) throws -> Bool {
        try delete(R.storeTable, id: key)
    }
}

extension StoreTransaction {
    @discardableResult
    public func put<R: SealedRecord>(_ record: R) throws -> R { try put(contentsOf: [record])[0] }

    @discardableResult
    public func put<R: SealedRecord>(contentsOf records: [R]) throws -> [R] {
        let encoded = try records.map { try $0.storeRecord() }
        let keys = try put(contentsOf: encoded, into: R.storeTable)
        let table = try schema.table(R.storeTable)
        // A record that gave its key is stored as it is; one the store gave
        // a key takes it (didInsert), never decoded from what it encoded.
        return try zip(records, zip(encoded, keys)).map { record, stored in
            var (fields, key) = stored
            guard (fields[table.primaryKey] ?? .null).isNull else { return record }
            fields[table.primaryKey] = key
            var inserted = record
            try inserted.didInsert(StoreInsertion(id: key, primaryKey: table.primaryKey, fields: fields))
            return inserted
        }
    }

    public func get<R: SealedRecord>(_ type: R.Type, id key: StoreValue) throws -> R? {
        try get(R.storeTable, id: key).map { try R(storeRecord: $0) }
    }

    public func fetchAll<R: SealedRecord>(_ type: R.Type, _ query: StoreQuery? = nil) throws -> [R] {
        try fetchAll(try R.checked(query)).map { try R(storeRecord: $0) }
    }

    public func fetchCount<R: SealedRecord>(_ type: R.Type, _ query: StoreQuery? = nil) throws -> Int {
        try fetchCount(try R.checked(query))
    }

    @discardableResult
    public func update<R: SealedRecord>(_ record: R) throws -> Bool {
        let table = try schema.table(R.storeTable)
        var fields = try record.storeRecord()
        guard let key = fields[table.primaryKey], key != .null else {
            throw CofferError(.invalidArgument, "\(R.self) has no primary key \(table.primaryKey) to update by")
        }
        // The type's own fields (those its decoding asks for) are all
        // written: a nil optional it left out is null. Learnt from the type
        // alone when it decodes from placeholders, so the row is read and
        // opened once, by the update; else from the stored record.
        let names: [String]
        if let properties = try? RecordProbe.properties(of: R.self) {
            names = properties.map(\.name)
        } else {
            guard let stored = try get(R.storeTable, id: key) else { return false }
            names = Array(try RecordCoding.fieldsRead(by: R.self, from: stored, table: table.name))
        }
        for name in names where fields[name] == nil && table.field(name) != nil { fields[name] = .null }
        fields[table.primaryKey] = nil
        return try update(R.storeTable, id: key, set: fields) != nil
    }
}
