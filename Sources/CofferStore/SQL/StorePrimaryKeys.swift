import Coffer
import Foundation
import GRDB

extension StoreState {
    /// The records' primary keys: given, or for an integer key left out,
    /// one past the largest in the table and the batch (what SQLite would
    /// pick), so that every cell can be sealed before its row is written.
    func primaryKeys(for records: [StoreRecord], table: StoreSchema.Table, _ db: any StoreConnection) throws
        -> [StoreValue]
    {
        let (keys, last) = try Self.assignKeys(to: records, table: table) {
            try db.lockKeys(of: table.name)
            return try Self.highestKey(table, db)
        }
        if let last, db.dialect == .postgres {
            // PostgreSQL's identity does not move for keys given in the
            // INSERT: it is set to the last one here (SQLite's
            // AUTOINCREMENT follows every insert by itself).
            _ = try db.rows(
                "SELECT setval(seq, ?) FROM (SELECT pg_get_serial_sequence(?, ?) AS seq) s WHERE seq IS NOT NULL",
                [last.databaseValue, StoreSQL.quoted(table.name).databaseValue, table.primaryKey.databaseValue])
        }
        return keys
    }

    /// The keys of `records`: each one's own, or for an integer key left
    /// out, the next past `highest()` (asked once, only if needed) and
    /// every key the records give; also the last key assigned.
    static func assignKeys(
        to records: [StoreRecord], table: StoreSchema.Table, highest: () throws -> Int64
    ) throws -> (keys: [StoreValue], last: Int64?) {
        let keyField = table.field(table.primaryKey)!
        var next: Int64?
        var keys: [StoreValue] = []
        keys.reserveCapacity(records.count)
        for record in records {
            if let key = record[table.primaryKey], key != .null {
                keys.append(key)
                continue
            }
            guard keyField.type == .integer else {
                throw CofferError(.invalidArgument, "\(table.name) needs its primary key \(table.primaryKey)")
            }
            if next == nil {
                let given =
                    records.compactMap { $0[table.primaryKey]?.integerValue }.max() ?? 0
                let floor = max(try highest(), given)
                guard floor < Int64.max else {
                    throw CofferError(.refused, "\(table.name) has used every integer primary key")
                }
                next = floor + 1
            }
            keys.append(.integer(next!))
            next! += 1
        }
        return (keys, next.map { $0 - 1 })
    }

    /// The highest integer key the table holds or ever held (0 when none).
    static func highestKey(_ table: StoreSchema.Table, _ db: any StoreConnection) throws -> Int64 {
        let stored =
            try db.integer("SELECT max(\(StoreSQL.quoted(table.primaryKey))) FROM \(StoreSQL.quoted(table.name))") ?? 0
        return max(stored, try highestKeyEverUsed(table, db) ?? 0)
    }

    /// The highest integer key the table ever held, deleted rows' too, when
    /// it keeps one (a table the store made; an adopted one may not).
    static func highestKeyEverUsed(_ table: StoreSchema.Table, _ db: any StoreConnection) throws -> Int64? {
        switch db.dialect {
        case .sqlite:
            guard try db.tableExists("sqlite_sequence") else { return nil }
            return try db.integer("SELECT seq FROM sqlite_sequence WHERE name = ?", [table.name.databaseValue])
        case .postgres:
            return try db.integer(
                "SELECT pg_sequence_last_value(seq::regclass) FROM (SELECT pg_get_serial_sequence(?, ?) AS seq) s WHERE seq IS NOT NULL",
                [StoreSQL.quoted(table.name).databaseValue, table.primaryKey.databaseValue])
        }
    }
}
