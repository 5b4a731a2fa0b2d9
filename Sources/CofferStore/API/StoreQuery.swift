import Coffer
import Foundation

/// A request for the records of one table: conditions, an order, a limit
/// and an offset, built step by step as GRDB's query interface builds one,
/// and run with `RecordStore.fetchAll(_:)` or `RecordStore.fetchCount(_:)`.
///
/// ```swift
/// let all = try store.fetchAll(StoreQuery("presents").order(by: "toWhom"))
/// let grandma = try store.fetchAll(StoreQuery("presents").filter("toWhom", equals: "Grandma"))
/// let page = try store.fetchAll(StoreQuery("presents").order(by: "id", descending: true).limit(20, offset: 40))
/// let howMany = try store.fetchCount(StoreQuery("presents"))
/// ```
///
/// Conditions are equalities, as `RecordStore.find(_:where:)` takes
/// them (clear fields compared by the database, sealed ones through a
/// blind index and checked once opened), ``StorePredicate``s on clear
/// fields (ranges, `in`, prefixes, parts, null tests, `&&`, `||`), and
/// tokens of sealed fields with a token index. Only clear fields can be ordered
/// by: the database cannot sort what it cannot read. Text is ordered by its
/// UTF-8 bytes and null comes first (last when descending), on SQLite and
/// PostgreSQL alike; records equal on every ordering are in primary key
/// order, so pages never overlap.
public struct StoreQuery: Sendable, Hashable {
    /// One field to order by.
    public struct Ordering: Sendable, Hashable {
        public var field: String
        public var descending: Bool
        public init(field: String, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }
    }

    public var table: String
    /// Field → the value it must equal; empty for every record.
    public var conditions: StoreRecord
    /// Conditions on clear fields beyond equality, all of which must hold.
    public var predicates: [StorePredicate]
    /// Sealed field → a token its token index must hold.
    public var tokens: [String: String]
    public var ordering: [Ordering]
    /// At most this many records; nil for all of them.
    public var limit: Int?
    /// Records skipped before the first one returned.
    public var offset: Int

    /// Every record of `table`, in primary key order.
    public init(_ table: String) {
        self.table = table
        conditions = [:]
        predicates = []
        tokens = [:]
        ordering = []
        limit = nil
        offset = 0
    }

    /// Only the records whose `field` equals `value` (and every earlier condition).
    public func filter(_ field: String, equals value: StoreValue) -> StoreQuery {
        var query = self
        query.conditions[field] = value
        return query
    }

    /// `filter(_:equals:)` with the field named by a record type's coding
    /// key (`Note.CodingKeys.title`): a name the compiler checks.
    public func filter(_ key: some CodingKey, equals value: StoreValue) -> StoreQuery {
        filter(key.stringValue, equals: value)
    }

    /// `order(by:descending:)` with the field named by a coding key.
    public func order(by key: some CodingKey, descending: Bool = false) -> StoreQuery {
        order(by: key.stringValue, descending: descending)
    }

    /// Only the records whose fields equal every value of `conditions`.
    public func filter(_ conditions: StoreRecord) -> StoreQuery {
        var query = self
        query.conditions.merge(conditions) { $1 }
        return query
    }

    /// Only the records `predicate` holds for (and every earlier
    /// condition): ranges, `in`, prefixes and parts of clear fields
    /// (``StorePredicate``).
    ///
    /// ```swift
    /// let query = Note.query.filter(StoreColumn("pages").between(2, and: 10) && StoreColumn("title").hasPrefix("Gro"))
    /// ```
    public func filter(_ predicate: StorePredicate) -> StoreQuery {
        var query = self
        query.predicates.append(predicate)
        return query
    }

    /// Only the records whose sealed `field` holds `token`, found through
    /// its token index (the token transformed as the index transforms
    /// tokens, so "Work" finds "work"), then opened and checked.
    public func filter(_ field: String, hasToken token: String) -> StoreQuery {
        var query = self
        query.tokens[field] = token
        return query
    }

    /// Ordered by `field` (a clear field), after any earlier ordering.
    public func order(by field: String, descending: Bool = false) -> StoreQuery {
        var query = self
        query.ordering.append(Ordering(field: field, descending: descending))
        return query
    }

    /// At most `limit` records, after skipping `offset`.
    public func limit(_ limit: Int, offset: Int = 0) -> StoreQuery {
        var query = self
        query.limit = limit
        query.offset = offset
        return query
    }
}

extension RecordStore {
    /// The records `query` asks for, their sealed fields opened.
    public func fetchAll(_ query: StoreQuery) throws -> [StoreRecord] {
        try read { work in try fetch(query, counting: false, work).records }
    }

    /// How many records `query` matches (its limit and offset applied).
    public func fetchCount(_ query: StoreQuery) throws -> Int {
        try read { work in try fetch(query, counting: true, work).count }
    }

    /// The first record `query` asks for, or nil.
    public func fetchOne(_ query: StoreQuery) throws -> StoreRecord? {
        try fetchAll(query.limit(1, offset: query.offset)).first
    }
}

extension StoreQuery {
    /// The table, its ordering's SQL, and the query's fields checked.
    func checked(_ state: StoreState, _ dialect: StoreDialect) throws -> (table: StoreSchema.Table, orderSQL: String) {
        let table = try state.schema.table(self.table)
        for name in Array(conditions.keys) + Array(tokens.keys) + predicates.flatMap(\.fields)
        where table.field(name) == nil {
            throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
        }
        if let tenant = table.tenant, (conditions[tenant] ?? .null).isNull {
            throw CofferError(
                .invalidArgument,
                "\(table.name) is kept per tenant: a query names its tenant, a condition that \(tenant) equals one"
            )
        }
        guard limit.map({ $0 >= 0 }) ?? true, offset >= 0 else {
            throw CofferError(.invalidArgument, "a query's limit and offset are not negative")
        }
        var terms: [String] = []
        for order in ordering + [Ordering(field: table.primaryKey)] {
            guard let field = table.field(order.field) else {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(order.field) to order by")
            }
            guard !field.sealed else {
                throw CofferError(
                    .invalidArgument,
                    "\(table.name).\(field.name) is sealed: the database cannot order what it cannot read; order by a clear field, or sort the records once fetched"
                )
            }
            terms.append(
                StoreSQL.quoted(field.name) + (field.type == .text && dialect == .postgres ? " COLLATE \"C\"" : "")
                    + (order.descending ? " DESC NULLS LAST" : " ASC NULLS FIRST"))
        }
        return (table, " ORDER BY " + terms.joined(separator: ", "))
    }

    /// SQL's LIMIT and OFFSET, or nothing.
    func limitSQL(_ dialect: StoreDialect) -> String {
        switch (limit, offset) {
        case (nil, 0): ""
        case (nil, let offset): dialect == .sqlite ? " LIMIT -1 OFFSET \(offset)" : " OFFSET \(offset)"
        case (let limit?, let offset): " LIMIT \(limit) OFFSET \(offset)"
        }
    }

    /// Whether `a` comes before `b` in this query's order (records already
    /// fetched, sorted the way the database sorts).
    func precedes(_ a: StoreRecord, _ b: StoreRecord, primaryKey: String) -> Bool {
        // No array built per comparison: the ordering, then the primary key.
        for order in ordering {
            if let before = Self.order(a, b, by: order) { return before }
        }
        return Self.order(a, b, by: Ordering(field: primaryKey)) ?? false
    }

    /// Whether `a` comes before `b` by `order`, or nil when they are equal there.
    static func order(_ a: StoreRecord, _ b: StoreRecord, by order: Ordering) -> Bool? {
        let left = a[order.field] ?? .null
        let right = b[order.field] ?? .null
        guard left != right else { return nil }
        return ascending(left, right) != order.descending
    }

    /// Null, then by type, then by value (``StoreSchema/FieldType``).
    static func ascending(_ a: StoreValue, _ b: StoreValue) -> Bool {
        StoreSchema.FieldType.ascending(a, b)
    }
}
