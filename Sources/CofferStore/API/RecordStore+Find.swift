import Coffer
import Foundation
import GRDB

extension RecordStore {
    /// The records whose `field` equals `value` (see `find(_:where:)`).
    public func find(_ tableName: String, where fieldName: String, equals value: StoreValue) throws -> [StoreRecord] {
        try find(tableName, where: [fieldName: value])
    }

    /// The records whose fields equal every value in `conditions`.
    ///
    /// Clear fields are compared by SQL. Sealed fields are found through the
    /// blind index covering the most of them — a single-field index, or a
    /// compound one whose fields all have a condition: its value for every
    /// active version picks candidates, which are opened. A record is
    /// returned only when each sealed field equals its value under the
    /// transforms of that index (exactly, for a field it does not cover),
    /// so index collisions never reach the caller. A sealed condition no
    /// index covers is refused rather than opening every row. While a field
    /// is being migrated, its rows not sealed yet are searched in the clear.
    /// With no conditions, every record of the table (`fetchAll(_:)`
    /// also orders, limits and counts).
    public func find(_ tableName: String, where conditions: StoreRecord) throws -> [StoreRecord] {
        try fetchAll(StoreQuery(tableName).filter(conditions))
    }

    func find(_ tableName: String, where conditions: StoreRecord, _ work: StoreWork)
        throws -> [StoreRecord]
    {
        try fetch(StoreQuery(tableName).filter(conditions), counting: false, work).records
    }

    /// The records `query` asks for, or with `counting` only their number.
    /// Clear conditions, the order, the limit and the offset are the
    /// database's; with a sealed condition, the candidates its index picks
    /// are opened and checked here, then counted, skipped and limited.
    func fetch(_ query: StoreQuery, counting: Bool, _ work: StoreWork) throws
        -> (records: [StoreRecord], count: Int)
    {
        let (db, state) = (work.db, work.state)
        let (table, order) = try query.checked(state, db.dialect)
        let conditions = query.conditions
        // A tenant's index values are under its own keys; a tenant with
        // none has no records.
        guard let indexKeys = try state.keys(for: table, tenant: table.tenant.map { conditions[$0]! }, db) else {
            return ([], 0)
        }
        // Every row found is of that tenant: its keys are read once, not per row.
        let resolved: ResolvedTenantKeys? = table.tenant.map { [conditions[$0]!.encoded: .success(indexKeys)] }
        var clear: [(StoreSchema.Field, StoreValue)] = []
        var sealed: [String] = []
        for (name, value) in conditions.sorted(by: { $0.key < $1.key }) {
            guard let field = table.field(name) else {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
            }
            if field.sealed { sealed.append(name) } else { clear.append((field, value)) }
        }
        var filters = clear.map { "\(StoreSQL.quoted($0.0.name)) IS ?" }
        var arguments = try clear.map { try StoreSQL.databaseValue($0.1, for: $0.0, table: table.name) }
        for predicate in query.predicates {
            let (sql, values) = try predicate.sql(table, db.dialect)
            filters.append(sql)
            arguments += values
        }
        let tokens = try query.tokens.sorted(by: { $0.key < $1.key }).map { name, token in
            try tokenCondition(table, field: name, token: token, under: indexKeys)
        }
        for token in tokens {
            filters.append(token.sql)
            arguments += token.arguments
        }
        guard !sealed.isEmpty || !tokens.isEmpty else {
            let filter = filters.isEmpty ? "" : " WHERE " + filters.joined(separator: " AND ")
            if counting {
                let count =
                    try db.integer(
                        "SELECT count(*) FROM (SELECT 1 FROM \(StoreSQL.quoted(table.name))\(filter)\(query.limitSQL(db.dialect))) q",
                        arguments) ?? 0
                return ([], Int(count))
            }
            let records = try db.rows("\(select(table))\(filter)\(order)\(query.limitSQL(db.dialect))", arguments).map {
                try state.record(from: $0, table: table, db, resolved: resolved)
            }
            return (records, records.count)
        }
        guard !sealed.isEmpty else {
            // Token conditions alone: their entries pick candidates, which
            // are opened and checked, then skipped and limited here.
            let filter = " WHERE " + filters.joined(separator: " AND ")
            var records = try db.rows("\(select(table))\(filter)\(order)", arguments).map {
                try state.record(from: $0, table: table, db, resolved: resolved)
            }.filter { record in tokens.allSatisfy { $0.matches(record) } }
            records = Array(records.dropFirst(query.offset).prefix(query.limit ?? Int.max))
            return (counting ? [] : records, records.count)
        }
        let usable = table.fields.filter(\.sealed).flatMap { field in
            field.indexes.filter { $0.tokens == nil }.map {
                (field: field, index: $0, parts: [field.name] + $0.with)
            }
        }.filter { $0.parts.allSatisfy { conditions[$0] != nil } }
        guard
            let chosen = usable.max(by: {
                $0.parts.filter(sealed.contains).count < $1.parts.filter(sealed.contains).count
            })
        else {
            throw CofferError(
                .invalidArgument,
                "no blind index of \(table.name) covers \(sealed.joined(separator: ", ")): finding it would open every row; add an index to the schema"
            )
        }
        let wanted = StoreKeys.indexInput(chosen.parts.map { conditions[$0]! }, transforms: chosen.index.transforms)
        let column = StoreSQL.quoted(chosen.index.name)
        var candidates = filters
        var candidateArguments = arguments
        if let wanted {
            let entries = try indexKeys.indexVersions.map {
                Data(
                    try indexKeys.indexValue(
                        wanted, table: table.name, index: chosen.index.name, bits: chosen.index.bits, version: $0)
                ).databaseValue
            }
            candidates.append("\(column) IN (\(entries.map { _ in "?" }.joined(separator: ", ")))")
            candidateArguments += entries
        } else {
            candidates.append("\(column) IS NULL")
        }
        var rows = try db.rows(
            "\(select(table)) WHERE \(candidates.joined(separator: " AND "))\(order)", candidateArguments)
        var resort = false
        if let migrating = state.migrating(table.name), chosen.parts.contains(migrating) {
            // The rows not sealed yet: on SQLite a text or an integer, on
            // PostgreSQL an encoded value (state.unsealed).
            let column = StoreSQL.quoted(migrating)
            filters.append(
                db.dialect == .sqlite
                    ? "typeof(\(column)) NOT IN ('blob', 'null')"
                    : "get_byte(\(column), 0) <> \(SealedValue.version)")
            if let value = conditions[migrating], chosen.index.transforms.isEmpty, value != .null,
                let field = table.field(migrating)
            {
                filters.append("\(column) = ?")
                arguments.append(
                    db.dialect == .sqlite
                        ? try StoreSQL.databaseValue(value, for: field, table: table.name)
                        : Data(value.encoded).databaseValue)
            }
            rows += try db.rows("\(select(table)) WHERE \(filters.joined(separator: " AND "))", arguments)
            resort = true
        }
        var seen = Set<DatabaseValue>()
        rows = rows.filter { seen.insert($0[table.primaryKey] ?? .null).inserted }
        var records = try rows.map { try state.record(from: $0, table: table, db, resolved: resolved) }.filter {
            candidate in
            tokens.allSatisfy { $0.matches(candidate) }
                && sealed.allSatisfy { name in
                    let stored = candidate[name] ?? .null
                    let value = conditions[name]!
                    guard chosen.parts.contains(name),
                        let asked = StoreKeys.indexInput([value], transforms: chosen.index.transforms)
                    else { return stored == value }
                    return StoreKeys.indexInput([stored], transforms: chosen.index.transforms) == asked
                }
        }
        if resort {
            records.sort { query.precedes($0, $1, primaryKey: table.primaryKey) }
        }
        records = Array(records.dropFirst(query.offset).prefix(query.limit ?? Int.max))
        return (counting ? [] : records, records.count)
    }
}
