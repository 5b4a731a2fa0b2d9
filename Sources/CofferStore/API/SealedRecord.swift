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

    /// The record with the primary key the store gave it.
    static func stored(_ record: StoreRecord, key: StoreValue, table: StoreSchema.Table) throws -> Self {
        var record = record
        record[table.primaryKey] = key
        return try RecordCoding.value(Self.self, from: record, table: table.name)
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
        return try zip(encoded, keys).map { try R.stored($0, key: $1, table: table) }
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
        guard let stored = try get(R.storeTable, id: key) else { return false }
        // The type's own fields: those a decoding of it asks for.
        for name in try RecordCoding.fieldsRead(by: R.self, from: stored, table: table.name) where fields[name] == nil {
            fields[name] = .null
        }
        fields[table.primaryKey] = nil
        return try update(R.storeTable, id: key, set: fields) != nil
    }
}
