import Coffer
import Foundation
import GRDB

/// A row ready to insert, worked out off the writing thread: which clear
/// fields it leaves null, its clear values then its sealed cells and
/// index values in the order of the INSERT for that shape, and its token
/// entries by index.
struct InsertRow: Sendable {
    let key: StoreValue
    /// Per clear field, whether the row gives it; nil when it gives them
    /// all (so most rows allocate nothing for it).
    let given: [Bool]?
    let values: [DatabaseValue]
    let tokens: [String: [Data]]
    /// Its element in the table's record set (nil: the store keeps none).
    let element: RecordSetSum?

    /// `record`'s row in `table`, with its cells sealed by `sealer`.
    init(
        _ record: StoreRecord, key: StoreValue, table: StoreSchema.Table, clear: [StoreSchema.Field], sealer: RowSealer
    )
        throws
    {
        let sealed = try sealer.seal(record, key: key, life: StoreKeys.newLife())
        var given: [Bool]?
        var values: [DatabaseValue] = []
        values.reserveCapacity(clear.count + sealed.values.count)
        for (offset, field) in clear.enumerated() {
            let value = field.name == table.primaryKey ? key : (record[field.name] ?? .null)
            if value != .null {
                values.append(try StoreSQL.databaseValue(value, for: field, table: table.name))
            } else {
                if given == nil { given = Array(repeating: true, count: clear.count) }
                given![offset] = false
            }
        }
        values += sealed.values
        let positions = sealer.elementPositions
        element = sealer.recordSet?.element(
            key: try StoreSQL.databaseValue(key, for: table.field(table.primaryKey)!, table: table.name),
            life: positions.life.map { sealed.values[$0] } ?? .null
        ) { positions.fields[$0] >= 0 ? sealed.values[positions.fields[$0]] : .null }
        self.key = key
        self.given = given
        self.values = values
        self.tokens = sealed.tokens
    }
}

/// Many rows per statement where a statement costs a round trip
/// (PostgreSQL): a bulk put's rows in one multi-row INSERT per set of
/// fields given, a job's batch in one UPDATE … FROM (VALUES …) per set of
/// columns changed. On SQLite a statement is a function call: one
/// prepared INSERT runs once per row, its values bound without a copy.
extension StoreState {
    /// Inserts rows worked out by ``InsertRow`` from the same `clear`
    /// fields; `columns` names their sealed cells and index values. On
    /// SQLite each run of rows giving the same fields goes through one
    /// prepared INSERT; on PostgreSQL it is one multi-row INSERT (a
    /// statement there costs a round trip).
    func insert(
        _ rows: [InsertRow], clear: [StoreSchema.Field], columns: [String], table: StoreSchema.Table,
        _ db: any StoreConnection
    ) throws {
        var start = rows.startIndex
        while start < rows.endIndex {
            let given = rows[start].given
            var end = start + 1
            while end < rows.endIndex, rows[end].given == given { end += 1 }
            let names = clear.indices.filter { given?[$0] ?? true }.map { clear[$0].name } + columns
            let run = rows[start..<end]
            if db.dialect == .sqlite {
                try db.execute(Self.insertSQL(table: table.name, names: names, rows: 1), eachOf: run.map(\.values))
            } else {
                for part in stride(from: start, to: end, by: 256) {
                    let slice = rows[part..<min(end, part + 256)]
                    try db.execute(
                        Self.insertSQL(table: table.name, names: names, rows: slice.count),
                        slice.flatMap(\.values))
                }
            }
            start = end
        }
    }

    /// `INSERT INTO table (names…) VALUES (?, …)`, with `rows` rows of placeholders.
    static func insertSQL(table: String, names: [String], rows: Int) -> String {
        let row = "(" + names.map { _ in "?" }.joined(separator: ", ") + ")"
        return "INSERT INTO \(StoreSQL.quoted(table)) (\(names.map(StoreSQL.quoted).joined(separator: ", "))) VALUES "
            + Array(repeating: row, count: rows).joined(separator: ", ")
    }
}

extension RecordStore {
    /// Writes a job batch's new columns, each row only if its sealed cells
    /// are still the ones the job read (a writer's change wins); returns
    /// how many values were rewritten. Each row rewritten changes its
    /// element in the record set (`recordSet`).
    func store(
        _ changes: [SealedRow], rows: [[String: DatabaseValue]], table: StoreSchema.Table, state: StoreState,
        _ db: any StoreConnection, recordSet: RecordSetChanges?
    ) throws -> Int {
        func rewrote(_ row: [String: DatabaseValue], _ change: SealedRow) throws {
            recordSet?.replace(
                try state.element(of: row, table: table),
                with: try state.element(of: row.merging(change.columns) { $1 }, table: table), in: table.name)
        }
        guard db.dialect == .postgres else {
            var changed = 0
            for (row, change) in zip(rows, changes) where !change.isEmpty {
                guard try store(change, row: row, table: table, state: state, db) else { continue }
                changed += change.count
                try rewrote(row, change)
            }
            return changed
        }
        var groups: [[String]: [(SealedRow, [String: DatabaseValue])]] = [:]
        for (row, change) in zip(rows, changes) where !change.isEmpty {
            groups[change.columns.keys.sorted(), default: []].append((change, row))
        }
        let keyField = table.field(table.primaryKey)!
        let sealed = table.fields.filter(\.sealed).map(\.name)
        let bytes = StoreDialect.postgres.bytes
        var changed = 0
        for (names, members) in groups.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            // u(k, n0…, o0…): the key, the new columns, the sealed cells as read.
            let types =
                [StoreDialect.postgres.type(of: keyField.type)]
                + Array(repeating: bytes, count: names.count + sealed.count)
            let aliases = ["k"] + names.indices.map { "n\($0)" } + sealed.indices.map { "o\($0)" }
            let first = "(" + types.map { "?::" + $0 }.joined(separator: ", ") + ")"
            let other = "(" + types.map { _ in "?" }.joined(separator: ", ") + ")"
            let target = StoreSQL.quoted(table.name)
            let assignments =
                names.isEmpty
                ? ["\(StoreSQL.quoted(table.primaryKey)) = u.k"]
                : names.enumerated().map { "\(StoreSQL.quoted($0.element)) = u.n\($0.offset)" }
            let conditions =
                ["\(target).\(StoreSQL.quoted(table.primaryKey)) = u.k"]
                + sealed.enumerated().map {
                    "\(target).\(StoreSQL.quoted($0.element)) IS NOT DISTINCT FROM u.o\($0.offset)"
                }
            // At most 1,000 rows per statement: far under PostgreSQL's 65,535 parameters.
            for start in stride(from: 0, to: members.count, by: 1000) {
                let part = members[start..<min(members.count, start + 1000)]
                var values: [DatabaseValue] = []
                for (change, row) in part {
                    values.append(row[table.primaryKey] ?? .null)
                    values += names.map { change.columns[$0]! }
                    values += sealed.map { row[$0] ?? .null }
                }
                let sql =
                    "UPDATE \(target) SET \(assignments.joined(separator: ", ")) FROM (VALUES \(([first] + Array(repeating: other, count: part.count - 1)).joined(separator: ", "))) AS u(\(aliases.joined(separator: ", "))) WHERE \(conditions.joined(separator: " AND ")) RETURNING \(target).\(StoreSQL.quoted(table.primaryKey))"
                let updated = Set(try db.rows(sql, values).compactMap { $0[table.primaryKey] })
                for (change, row) in part {
                    guard let key = row[table.primaryKey], updated.contains(key) else { continue }
                    changed += change.count
                    try rewrote(row, change)
                    try state.writeTokens(
                        change.tokens, key: try StoreSQL.storeValue(key, for: keyField, table: table.name),
                        table: table,
                        db, replacing: true)
                }
            }
        }
        return changed
    }
}
